"""meson install --destdir puts binaries, units, users, man pages and the
example configs where an operator looks for them, and systemd-analyze
verify accepts the units as installed."""

import os
import pathlib
import shutil
import subprocess

import pytest

from conftest import INRPD

BUILD = pathlib.Path(os.environ.get("CR_BUILD", pathlib.Path(INRPD).parents[1]))


def meson_option(name):
    import json
    r = subprocess.run(["meson", "introspect", "--buildoptions", str(BUILD)], capture_output=True,
                       text=True, timeout=60, check=True)
    return next(o["value"] for o in json.loads(r.stdout) if o["name"] == name)


@pytest.fixture(scope="module")
def installed(tmp_path_factory):
    dest = tmp_path_factory.mktemp("destdir")
    r = subprocess.run(["meson", "install", "--quiet", "--no-rebuild", "-C", str(BUILD), "--destdir", str(dest)],
                       capture_output=True, text=True, timeout=300)
    assert r.returncode == 0, r.stdout + r.stderr
    prefix = pathlib.Path(meson_option("prefix"))
    return dest, dest / prefix.relative_to("/")


def test_files_in_their_places(installed):
    dest, root = installed
    for path in ["sbin/inrpd", "sbin/nbrpd", "bin/inrpc", "bin/nbrc", "bin/nbrp-updgen", "bin/nbrp-key"]:
        assert os.access(root / path, os.X_OK), path
    for path in ["lib/systemd/system/inrpd.service", "lib/systemd/system/nbrpd.service",
                 "lib/sysusers.d/inrpd.conf", "lib/sysusers.d/nbrpd.conf",
                 "share/man/man8/inrpd.8", "share/man/man5/inrpd.conf.5", "share/man/man8/inrpc.8",
                 "share/man/man8/nbrpd.8", "share/man/man5/nbrpd.conf.5", "share/man/man8/nbrc.8",
                 "share/man/man1/nbrp-updgen.1", "share/man/man1/nbrp-key.1",
                 "share/doc/content-router/examples/inrpd.conf",
                 "share/doc/content-router/examples/nbrpd.conf"]:
        assert (root / path).is_file(), path
    # the installed daemon accepts the installed example
    r = subprocess.run([str(root / "sbin/inrpd"), "-t", "-c",
                        str(root / "share/doc/content-router/examples/inrpd.conf")],
                       capture_output=True, text=True, timeout=30)
    assert r.returncode == 0, r.stderr


@pytest.mark.parametrize("unit", ["inrpd.service", "nbrpd.service"])
def test_systemd_analyze_verify(installed, unit, tmp_path):
    tool = shutil.which("systemd-analyze")
    assert tool, "systemd-analyze (Debian's systemd package) is needed"
    dest, root = installed
    text = (root / "lib/systemd/system" / unit).read_text()
    prefix = meson_option("prefix")
    assert f"ExecStart={prefix}/sbin/" in text and "Type=notify" in text
    # the unit as installed, its paths pointing into the destdir (verify checks they exist)
    (tmp_path / unit).write_text(text.replace(f"={prefix}/sbin/", f"={root}/sbin/"))
    env = dict(os.environ, MANPATH=str(root / "share/man"), SYSTEMD_LOG_LEVEL="notice")
    r = subprocess.run([tool, "verify", str(tmp_path / unit)], capture_output=True, text=True,
                       env=env, timeout=120)
    assert r.returncode == 0 and r.stdout + r.stderr == "", r.stdout + r.stderr
    for line in ("CapabilityBoundingSet=CAP_NET_BIND_SERVICE", "AmbientCapabilities=CAP_NET_BIND_SERVICE",
                 "NoNewPrivileges=yes", "ProtectSystem=strict", "ExecReload=/bin/kill -HUP $MAINPID"):
        assert line in text.splitlines(), line
    assert f"ExecStartPre={prefix}/sbin/{unit.split('.')[0]} -t -c" in text
    # the sandboxing holds: systemd's own exposure score stays "OK" (1.8-1.9 of 10 today)
    r = subprocess.run([tool, "security", "--offline=yes", "--threshold=25", str(tmp_path / unit)],
                       capture_output=True, text=True, env=env, timeout=120)
    assert r.returncode == 0, r.stdout + r.stderr


def test_sysusers_make_the_users(installed, tmp_path):
    """systemd-sysusers accepts the installed files as they are (a colon in
    a GECOS field once made it refuse them) and makes both users, nbrpd in
    inrpd's group for the FIB channel."""
    dest, root = installed
    target = tmp_path / "root"
    (target / "etc").mkdir(parents=True)
    (target / "usr/lib").mkdir(parents=True)
    shutil.copytree(root / "lib/sysusers.d", target / "usr/lib/sysusers.d")
    r = subprocess.run(["systemd-sysusers", f"--root={target}", "inrpd.conf", "nbrpd.conf"],
                       capture_output=True, text=True, timeout=60)
    assert r.returncode == 0 and "not a valid" not in r.stderr, r.stderr
    users = {line.split(":")[0] for line in (target / "etc/passwd").read_text().splitlines()}
    assert {"inrpd", "nbrpd"} <= users
    groups = {g[0]: g[3].split(",") for g in
              (line.split(":") for line in (target / "etc/group").read_text().splitlines())}
    assert "nbrpd" in groups["inrpd"]
