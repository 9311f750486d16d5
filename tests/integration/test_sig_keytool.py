"""nbrp-key: a key file round trip, permissions refused with the file and
its mode, a trust-anchor file signed and checked, and a changed byte or
another anchor refused (docs/SIGNATURES.md)."""

import os
import pathlib
import stat
import subprocess

from conftest import NBRPD

NBRP_KEY = str(pathlib.Path(NBRPD).parent / "nbrp-key")


def key(*args):
    return subprocess.run([NBRP_KEY, *map(str, args)], capture_output=True, text=True, timeout=30)


def test_key_round_trip_and_modes(tmp_path):
    f = tmp_path / "cr1.key"
    r = key("generate", f)
    assert r.returncode == 0, r.stderr
    pub = r.stdout.strip()
    assert len(pub) == 44
    assert stat.S_IMODE(f.stat().st_mode) == 0o600
    assert key("public", f).stdout.strip() == pub
    # never over an existing key
    r = key("generate", f)
    assert r.returncode == 1 and "File exists" in r.stderr
    assert key("public", f).stdout.strip() == pub
    for mode in (0o640, 0o604, 0o660):
        f.chmod(mode)
        r = key("public", f)
        assert r.returncode == 1
        assert f"{f}: mode {mode:04o}" in r.stderr, r.stderr
    f.chmod(0o400)
    assert key("public", f).stdout.strip() == pub
    # two keys differ
    assert key("generate", tmp_path / "other.key").stdout.strip() != pub
    assert key("bogus").returncode == 2


def test_trust_file_signed_and_checked(tmp_path):
    anchor = tmp_path / "anchor.key"
    apub = key("generate", anchor).stdout.strip()
    rpub = key("generate", tmp_path / "cr1.key").stdout.strip()
    trust = tmp_path / "trust"
    trust.write_text("# test\nserial 1\nvalid-from 2026-01-01T00:00:00Z\nvalid-until 2036-01-01T00:00:00Z\n"
                     f"router cr1 {rpub}\norigin example.com {rpub}\n")
    r = key("sign-trust", anchor, trust)
    assert r.returncode == 0, r.stderr
    assert "1 routers, 1 origins" in r.stdout
    assert trust.read_text().splitlines()[-1].startswith("signature ")
    r = key("check-trust", apub, trust)
    assert r.returncode == 0, r.stderr
    # signing again gives the same file (Ed25519 is deterministic)
    before = trust.read_bytes()
    assert key("sign-trust", anchor, trust).returncode == 0
    assert trust.read_bytes() == before
    # another anchor, a changed byte
    r = key("check-trust", rpub, trust)
    assert r.returncode == 1 and "does not verify" in r.stderr
    trust.write_bytes(before.replace(b"example.com", b"example.org"))
    r = key("check-trust", apub, trust)
    assert r.returncode == 1 and f"{trust}:7: the signature does not verify" in r.stderr
    # a bad line is file:line
    trust.write_text("valid-from 2026-01-01T00:00:00Z\nrouter cr1 nope\n")
    r = key("sign-trust", anchor, trust)
    assert r.returncode == 1 and f"{trust}:2: router cr1: the key" in r.stderr
    assert not os.path.exists(f"{trust}.tmp")
