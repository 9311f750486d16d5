"""nbrpd's configuration: every error names file:line, -t checks without
starting, the example config is valid."""

import subprocess

import pytest

from conftest import ENV, NBRPD, REPO

BASE = 'router-name "r1";\ninrp-address 127.0.0.1 port 53;\n'


def run(*args):
    return subprocess.run([NBRPD, *args], capture_output=True, text=True, timeout=30, env=ENV)


def test_example_config_is_valid():
    r = run("-t", "-c", str(REPO / "config" / "nbrpd.conf"))
    assert r.returncode == 0 and "configuration valid" in r.stdout, r.stderr


@pytest.mark.parametrize("body,line,reason", [
    (BASE + "frobnicate yes;\n", 3, "frobnicate"),
    (BASE + 'router-name "r2";\n', 3, "twice"),
    (BASE + "hold-time 2s;\n", 3, "hold-time"),
    (BASE + 'peer "r2" { port 5; }\n', 3, ""),
    (BASE + 'peer "r2" {\n local-pref 5;\n}\n', 3, "no address"),
    (BASE + 'peer "r1" { address 127.0.0.2; }\n', 3, "own name"),
    (BASE + 'peer "r2" { address 127.0.0.2; }\npeer "r2" { address 127.0.0.3; }\n', 4, "already defined"),
    (BASE + 'peer "r2" { address 127.0.0.2; max-names 10 explode; }\n', 3, ""),
    (BASE + 'peer "r2" { address 127.0.0.2; import maybe "x"; }\n', 3, ""),
    (BASE + 'peer "r2" {\n address 127.0.0.2;\n local-role boss;\n}\n', 5, "rs-client"),
    (BASE + 'peer "r2" { address 127.0.0.2; local-role peer; local-role customer; }\n', 3, "twice"),
    (BASE + 'peer "r2" { address 127.0.0.2; local-role; }\n', 3, "local-role"),
    (BASE + 'peer "r2" { address 127.0.0.2; import allow "a..b"; }\n', 3, "bad name"),
    (BASE + 'content "a.content" { }\n', 3, "no server"),
    (BASE + 'content "a.content" { server 127.0.0.9; }\ncontent "A.content." { server 127.0.0.8; }\n',
     4, "already defined at"),
    (BASE + 'content "a.content" {\n server 127.0.0.9;\n health-check port 80 interval 1s timeout 2s;\n}\n',
     5, "shorter"),
    (BASE + "max-routes 17;\n", 3, ""),
    (BASE + 'fib-channel "relative";\n', 3, "absolute"),
    (BASE + "fib-send-hold-time 500ms;\n", 3, "fib-send-hold-time"),
    (BASE + "fib-send-hold-time 2s;\nfib-send-hold-time 3s;\n", 4, "twice"),
    (BASE + "max-peer-restart-time 2h;\n", 3, "max-peer-restart-time"),
    (BASE + "signature-min-lifetime 7h;\n", 3, "signature-min-lifetime"),
    (BASE + "signature-min-lifetime 1s;\nsignature-min-lifetime 1s;\n", 4, "twice"),
    (BASE + "max-peer-restart-time 5s;\nmax-peer-restart-time 6s;\n", 4, "twice"),
    (BASE + "update-delay 2m;\n", 3, "between 0s and 1m"),
    (BASE + "update-delay soon;\n", 3, "duration"),
    (BASE + "update-delay 100ms;\nupdate-delay 100ms;\n", 4, "twice"),
    (BASE + "withdrawal-delay 61s;\n", 3, "between 0s and 1m"),
    (BASE + "withdrawal-delay 5s;\nwithdrawal-delay 5s;\n", 4, "twice"),
    ('router-name "r1";\n', None, "inrp-address"),
])
def test_config_errors_name_the_line(tmp_path, body, line, reason):
    conf = tmp_path / "nbrpd.conf"
    conf.write_text(body)
    for args in (("-t", "-c", str(conf)), ("-f", "-c", str(conf))):
        r = run(*args)
        assert r.returncode == 1
        if line is not None:
            assert f"{conf}:{line}:" in r.stderr, r.stderr
        assert reason in r.stderr, r.stderr
