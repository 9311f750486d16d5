"""Started as root with `user "nobody"`, both daemons bind, then run as
nobody with no capability left in any thread, and keep answering and
routing; a reload that would need root again is refused."""

import os
import pathlib
import random
import shutil
import subprocess
import tempfile

import pytest

import netlab
from conftest import Inrpd, Nbrpd, free_port, loopback_addr, run_inrpd, stop_all, wait_for
from test_inrpd_control import inrpc

pytestmark = pytest.mark.skipif(os.geteuid() != 0, reason="not root: nothing to give up")

NOBODY = 65534


@pytest.fixture
def world_dir():
    """Configs and sockets where nobody can read and connect (pytest's tmp_path is root's alone)."""
    d = pathlib.Path(tempfile.mkdtemp(prefix="cr-privdrop-"))
    d.chmod(0o755)
    yield d
    shutil.rmtree(d, ignore_errors=True)


@pytest.fixture
def own_netns():
    """A network namespace of the test's own where ports below 1024 need
    root, whatever the host's ip_unprivileged_port_start (0 in many
    containers).  Named as netlab names its own, so a killed run's is
    removed by the next."""
    ns = f"{netlab.PREFIX}{os.getpid()}x{random.randrange(1 << 24):06x}-privdrop"
    r = subprocess.run(["ip", "netns", "add", ns], capture_output=True, text=True)
    if r.returncode != 0:
        pytest.skip(f"no network namespaces: {r.stderr.strip()}")
    try:
        for cmd in (["ip", "link", "set", "lo", "up"],
                    ["sysctl", "-q", "-w", "net.ipv4.ip_unprivileged_port_start=1024"]):
            subprocess.run(["ip", "netns", "exec", ns, *cmd], check=True)
        with netlab.netns(ns):
            yield ns
    finally:
        subprocess.run(["ip", "netns", "del", ns], check=False)


def status(pid):
    """Every thread's /proc status as {field: value}."""
    out = []
    for task in pathlib.Path(f"/proc/{pid}/task").iterdir():
        fields = {}
        for line in (task / "status").read_text().splitlines():
            k, _, v = line.partition(":")
            fields[k] = v.split()
        out.append(fields)
    return out


def assert_nobody(pid):
    threads = status(pid)
    assert len(threads) >= 1
    for st in threads:
        assert st["Uid"] == [str(NOBODY)] * 4, st["Uid"]
        assert st["Gid"] == [str(NOBODY)] * 4, st["Gid"]
        assert st["Groups"] in ([], [str(NOBODY)]), st["Groups"]
        for cap in ("CapInh", "CapPrm", "CapEff", "CapBnd", "CapAmb"):
            assert int(st[cap][0], 16) == 0, (cap, st[cap])


def test_both_daemons_run_as_nobody(world_dir, own_netns):
    """In a namespace of its own: daemons, queries and sessions all there."""
    started = []
    try:
        fib = world_dir / "inrpd.fib"
        ctl = world_dir / "inrpd.ctl"
        i1 = Inrpd(world_dir, "inrpd")
        started.append(i1)
        i1.addr = loopback_addr()
        i1.port = free_port(i1.addr)
        # with a metrics thread and a static route (FIB writes) too
        i1.start(f'user "nobody";\ncontrol "{ctl}";\nfib-channel "{fib}";\n'
                 f'metrics 127.0.0.1 port {free_port("127.0.0.1")};\n'
                 'route "static.content" { server 127.0.0.78; }\n')
        assert_nobody(i1.proc.pid)

        addr = loopback_addr()
        p1, p2 = free_port(addr), free_port(addr)
        n = {}
        for name, me, other, content in (("r1", p1, p2, "a.content"), ("r2", p2, p1, "b.content")):
            peer = "r2" if name == "r1" else "r1"
            n[name] = Nbrpd(world_dir, name)
            started.append(n[name])
            n[name].start(f'user "nobody";\nrouter-name "{name}";\nlisten {addr} port {me};\n'
                          f"inrp-address {i1.addr} port {i1.port};\nconnect-retry 100ms;\n"
                          + (f'fib-channel "{fib}";\nmetrics 127.0.0.1 port {free_port("127.0.0.1")};\n'
                             if name == "r1" else "")
                          + f'content "{content}" {{ server 127.0.0.77; }}\n'
                          f'peer "{peer}" {{ address {addr} port {other}; }}\n')
            assert_nobody(n[name].proc.pid)

        # routing: r1 learns r2's name over a session both made as nobody
        wait_for(lambda: n["r1"].route("b.content"), 20, "r1 to learn b.content from r2")
        # the FIB channel: r1 (nobody) reached inrpd's socket, inrpd answers from it
        def answers():
            r = i1.udp("a.content")
            return r.answer and r.answer[0][0].address == "127.0.0.77"
        wait_for(answers, 20, "inrpd to answer a.content from nbrpd's routes")
        assert i1.tcp("a.content").answer

        # a reload as nobody works (the file is readable) ...
        assert inrpc(ctl, "reload").returncode == 0
        assert n["r1"].nbrc("reload").returncode == 0
        # ... unless the file wants a privileged port again: refused, the old one kept
        i1.write_config(f'user "nobody";\ncontrol "{ctl}";\nfib-channel "{fib}";\n'
                        f"listen {i1.addr} port 53;\n")
        r = inrpc(ctl, "reload")
        assert r.returncode != 0
        assert "reload refused" in r.stderr and f"listen {i1.addr} port 53 needs root" in r.stderr, r.stderr
        assert i1.udp("a.content").answer
        conf = n["r1"].conf.read_text()
        n["r1"].conf.write_text(conf.replace(f"listen {addr} port {p1};", f"listen {addr} port 179;"))
        r = n["r1"].nbrc("reload")
        assert r.returncode != 0 and "reload refused" in r.stderr, r.stderr
        assert n["r1"].route("b.content")
        assert_nobody(i1.proc.pid)
    finally:
        stop_all(started)


def test_group_needs_user(world_dir):
    conf = world_dir / "inrpd.conf"
    conf.write_text('listen 127.0.0.1 port 5353;\ngroup "nogroup";\n')
    r = run_inrpd("-t", "-c", str(conf))
    assert r.returncode == 1 and "'group' needs 'user'" in r.stderr
    conf.write_text('listen 127.0.0.1 port 5353;\nuser "no-such-user-here";\n')
    r = run_inrpd("-t", "-c", str(conf))
    assert r.returncode == 1 and f"{conf}:2: no user 'no-such-user-here'" in r.stderr
