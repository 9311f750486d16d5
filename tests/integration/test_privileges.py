"""Privileges that hold: what nbrpd writes after giving up root (its
state-dir, new stores, compactions) it may write; a FIB channel or
control path that is not a socket, or is another process's, is refused,
not deleted; a second FIB channel sender replaces the first loudly; a
daemon left running as root says so."""

import os

import pytest

from conftest import Inrpd, Nbrpd, free_port, loopback_addr, run_inrpd, stop_all, wait_for
import fibchan_client as fc
from test_inrpd_control import inrpc
from test_ops_privdrop import world_dir  # noqa: F401  (a fixture: a directory nobody can read)

pytestmark = pytest.mark.skipif(os.geteuid() != 0, reason="needs root to give it up")

NOBODY = 65534
ROOT_WARNING = "running as root: set 'user'"


@pytest.fixture
def daemons():
    started = []
    yield started
    stop_all(started)


def members(gen, n):
    """Generation gen renames a fifth of the n members."""
    return "".join(f"m{i}.t{(gen + i) // 5}.example\n" for i in range(n))


def nbrpd_body(name, state, defs, extra=""):
    addr = loopback_addr()
    return (f'user "nobody";\nrouter-name "{name}";\nlisten {addr} port {free_port(addr)};\n'
            f"inrp-address {addr} port {free_port(addr)};\nstate-dir \"{state}\";\n"
            f'aggregate "one.agg" {{ server 127.0.0.77; file "{defs}"; }}\n' + extra)


def agg(n, name):
    v = n.json("show", "aggregate", name)
    return v[0] if isinstance(v, list) else v


def test_nbrpd_as_nobody_stores_compacts_and_creates_stores_after_the_drop(world_dir, daemons):
    """Started as root with `user "nobody"`: the state-dir it creates and the store it
    opens before the drop are handed to nobody, so new versions, compactions (new
    files in the directory) and a store first opened after the drop all work; its
    pid file is written before the drop, where only root may write."""
    n = 3000
    defs, defs2 = world_dir / "one.names", world_dir / "two.names"
    defs.write_text(members(0, n))
    defs2.write_text("x.example\ny.example\n")
    defs.chmod(0o644)
    defs2.chmod(0o644)
    state = world_dir / "state"
    r = Nbrpd(world_dir, "r1")
    daemons.append(r)
    pid_file = world_dir / "nbrpd.pid"          # in a directory only root may write to
    r.start(nbrpd_body("r1", state, defs, f'pid-file "{pid_file}";\n'))
    assert pid_file.read_text().strip() == str(r.proc.pid)
    st = state.stat()
    assert (st.st_uid, st.st_gid, st.st_mode & 0o777) == (NOBODY, NOBODY, 0o700)
    first = agg(r, "one.agg")["version"]
    for gen in range(1, 13):
        defs.write_text(members(gen, n))
        res = r.nbrc("reload")
        assert res.returncode == 0, res.stdout + res.stderr
    view = agg(r, "one.agg")
    assert view["version"] == (first + 12) % 2**32, r.log()
    assert view["compactions"] >= 1 and view["store_errors"] == 0 and view["error"] == ""
    # an aggregate defined by a reload: its store is made after the drop
    r.conf.write_text(r.conf.read_text() + f'aggregate "two.agg" {{ server 127.0.0.77; file "{defs2}"; }}\n')
    assert r.nbrc("reload").returncode == 0
    two = agg(r, "two.agg")
    assert two["members"] == 2 and two["store_errors"] == 0 and two["error"] == ""
    for f in state.iterdir():
        assert f.stat().st_uid == NOBODY, f
    assert "Permission denied" not in r.log()
    assert ROOT_WARNING not in r.log()


def inrpd_conf(tmp_path, name, body):
    d = Inrpd(tmp_path, name)
    d.addr = loopback_addr()
    d.port = free_port(d.addr)
    d.write_config(body)
    return d


def test_a_socket_path_that_is_not_a_socket_is_refused_and_kept(tmp_path):
    precious = tmp_path / "precious"
    precious.write_text("not a socket\n")
    for key in ("fib-channel", "control"):
        d = inrpd_conf(tmp_path, f"i-{key}", f'{key} "{precious}";\n')
        r = run_inrpd("-f", "-c", str(d.conf))
        assert r.returncode == 1
        what = "fib-channel" if key == "fib-channel" else "control socket"
        assert f"{what} {precious} exists and is not a socket: not removed" in r.stderr
        assert precious.read_text() == "not a socket\n"


def test_a_fib_channel_another_inrpd_listens_on_is_refused(tmp_path, inrpd_factory):
    """A second inrpd on a live FIB channel exits at start; the first keeps its
    socket and its connected sender."""
    fib = tmp_path / "shared.fib"
    first = inrpd_factory(f'fib-channel "{fib}";\n')
    ch = fc.FibChannel(fib)
    wait_for(lambda: "sender connected" in first.log(), 10, "the sender")
    d = inrpd_conf(tmp_path, "second", f'fib-channel "{fib}";\n')
    r = run_inrpd("-f", "-c", str(d.conf))
    assert r.returncode == 1
    assert f"fib-channel {fib} is in use by another process" in r.stderr
    # the first still has its socket and its sender, undisturbed by the second's look
    assert "replaces" not in first.log()
    ch.full_sync(1, fc.update(names=[fc.name_routes("kept.content", [fc.route("127.0.0.66")])]))
    wait_for(lambda: [a.address for rr in first.udp("kept.content").answer for a in rr] == ["127.0.0.66"],
             10, "the first inrpd to answer from its channel")
    ch.close()


def test_a_second_fib_channel_sender_replaces_the_first_loudly(tmp_path, inrpd_factory):
    fib, ctl = tmp_path / "i.fib", tmp_path / "i.ctl"
    d = inrpd_factory(f'fib-channel "{fib}";\ncontrol "{ctl}";\n')
    a = fc.FibChannel(fib)
    a.full_sync(1, fc.update(names=[fc.name_routes("a.content", [fc.route("127.0.0.61")])]))
    wait_for(lambda: "sender connected" in d.log(), 10, "the first sender")
    b = fc.FibChannel(fib)
    assert a.closed_by_peer()
    b.full_sync(2, fc.update(names=[fc.name_routes("b.content", [fc.route("127.0.0.62")])]))
    wait_for(lambda: [x.address for rr in d.udp("b.content").answer for x in rr] == ["127.0.0.62"],
             10, "the second sender's routes")
    pid = os.getpid()
    assert (f"a new sender (pid {pid}, uid 0) replaces the connected one (pid {pid}, uid 0)"
            in d.log())
    import json
    st = json.loads(inrpc(ctl, "show", "status", json_out=True).stdout)
    assert st["fib_channel"]["replaced"] == 1 and st["fib_channel"]["connections"] == 2
    a.close()
    b.close()


def test_a_daemon_left_root_says_so(tmp_path, inrpd_factory, nbrpd_factory):
    i = inrpd_factory("")
    wait_for(lambda: ROOT_WARNING in i.log(), 10, "inrpd's warning")
    addr = loopback_addr()
    n = nbrpd_factory("r1", f'router-name "r1";\nlisten {addr} port {free_port(addr)};\n'
                            f"inrp-address {i.addr} port {i.port};\n")
    wait_for(lambda: ROOT_WARNING in n.log(), 10, "nbrpd's warning")
