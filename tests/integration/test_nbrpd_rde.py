"""nbrpd's route decision engine under load: hundreds of peers, big tables
moving while hold timers run, and a peer that stops reading.  Real nbrpd,
real nbrp-updgen sessions (the same session code), on 127.0.0.0/8."""

import json
import random
import signal
import socket
import subprocess
import threading
import time

import nbrp_client as nc
import os

from conftest import ENV, INRPD, SANITIZED, UPDGEN, rss_kib, wait_for

INRPC = os.path.join(os.path.dirname(INRPD), "inrpc")


def updgen(*args):
    return subprocess.Popen([UPDGEN, *args], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=ENV)


def finish(proc, timeout):
    try:
        out, err = proc.communicate(timeout=timeout)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
    return proc.returncode, out, err


def kill_all(procs):
    for p in procs:
        if p is not None and p.poll() is None:
            p.kill()
            p.wait()


def fib_status(ctl):
    r = subprocess.run([INRPC, "-s", str(ctl), "--json", "show", "status"], capture_output=True, text=True,
                       timeout=30, env=ENV)
    assert r.returncode == 0, r.stderr
    return json.loads(r.stdout)["fib_channel"]


def addr_plus(base, i):
    n = int.from_bytes(socket.inet_aton(base), "big") + i
    return socket.inet_ntoa(n.to_bytes(4, "big"))


def router(nbrpd_factory, name, addr, peers, extra=""):
    body = (f'router-name "{name}";\nlisten {addr} port 1790;\ninrp-address {addr} port 53;\n{extra}'
            + "".join(f'peer "{p}" {{ address {a}; passive; }}\n' for p, a in peers))
    return nbrpd_factory(name, body)


def test_five_hundred_passive_peers_each_get_the_whole_table(nbrpd_factory):
    k, names = 500, (20000 if SANITIZED else 200000)
    net = random.randint(1, 120) * 2                  # random: runs elsewhere on the machine do not clash
    gen, first = f"127.3.{net}.9", f"127.3.{net + 1}.0"     # sink i at first + i
    peers = [("gen", gen)] + [(f"sink{i}", addr_plus(first, i)) for i in range(1, k + 1)]
    n = router(nbrpd_factory, "dut", f"127.3.{net}.1", peers, "hold-time 30s;\n")
    sinks = updgen("sink", "--router", f"127.3.{net}.1:1790", "--name", "sink", "--local", first, "--sinks", str(k),
                   "--expect", str(names), "--timeout", "240", "--json")
    src = None
    try:
        wait_for(lambda: n.json("show", "status")["established"] == k, 60, "500 sessions")
        src = updgen("source", "--router", f"127.3.{net}.1", "--name", "gen", "--local", gen, "--names", str(names),
                     "--seed", "5", "--linger", "600", "--json")
        rc, out, err = finish(sinks, 300)
        assert rc == 0, err
        report = json.loads(out)
        assert len(report["sinks"]) == k
        assert all(s["names"] == names and s["withdrawn"] == 0 for s in report["sinks"])
        peers = n.peers()
        assert peers["gen"]["names"] == names
        assert peers["gen"]["flaps"] == 0
    finally:
        kill_all([sinks, src])


def test_a_three_second_hold_time_holds_while_a_big_table_is_dumped_and_withdrawn(nbrpd_factory):
    names = 100000 if SANITIZED else 1000000
    base = f"127.6.{random.randint(1, 250)}"
    n = router(nbrpd_factory, "dut", f"{base}.1",
               [("gen", f"{base}.9"), ("watch1", f"{base}.21"), ("late1", f"{base}.31")], "hold-time 3s;\n")
    # a peer that keeps time (3 s) from the start, and so sees every change
    watch = updgen("sink", "--router", f"{base}.1:1790", "--name", "watch", "--local", f"{base}.20",
                   "--sinks", "1", "--hold-time", "3", "--json")
    src = late = None
    try:
        wait_for(lambda: n.peers()["watch1"]["state"] == "Established", 20, "the watching session")
        src = updgen("source", "--router", f"{base}.1", "--name", "gen", "--local", f"{base}.9", "--names",
                     str(names), "--seed", "9", "--hold-time", "3", "--linger", "600", "--json")
        wait_for(lambda: n.peers()["gen"]["eor"] and n.peers()["gen"]["names"] == names, 120, "the whole table")
        wait_for(lambda: not n.peers()["watch1"]["dumping"] and n.json("show", "status")["jobs"] == 0, 60,
                 "the changes to reach the watcher")
        # a new peer gets the whole table: a dump over many loop turns
        late = updgen("sink", "--router", f"{base}.1:1790", "--name", "late", "--local", f"{base}.30",
                      "--sinks", "1", "--hold-time", "3", "--expect", str(names), "--timeout", "120", "--json")
        rc, out, err = finish(late, 150)
        assert rc == 0, err
        assert json.loads(out)["sinks"][0]["names"] == names
        # the source goes: its whole table is withdrawn, over many loop turns
        src.send_signal(signal.SIGINT)
        assert finish(src, 30)[0] == 0
        wait_for(lambda: n.json("show", "status")["names"] == 0 and n.json("show", "status")["jobs"] == 0, 120,
                 "the table to be withdrawn")
        peers = n.peers()
        assert peers["watch1"]["state"] == "Established"
        assert peers["watch1"]["flaps"] == 0 and peers["watch1"]["notifications_in"] == 0
        assert peers["watch1"]["notifications_out"] == 0
        watch.send_signal(signal.SIGINT)
        rc, out, err = finish(watch, 30)
        assert rc == 0, err
        got = json.loads(out)["sinks"][0]
        assert got["names"] == names and got["withdrawn"] == names
    finally:
        kill_all([watch, src, late])


def test_a_peer_that_stops_reading_costs_bounded_memory_and_is_ended_by_its_hold_timer(nbrpd_factory):
    names = 300000             # several MB of UPDATEs: more than the kernel's socket buffers hold
    base = f"127.7.{random.randint(1, 250)}"
    n = router(nbrpd_factory, "dut", f"{base}.1", [("gen", f"{base}.9"), ("stuck", f"{base}.40")],
               "hold-time 3s;\n")
    src = updgen("source", "--router", f"{base}.1", "--name", "gen", "--local", f"{base}.9", "--names",
                 str(names), "--seed", "3", "--linger", "600", "--json")
    stuck = None
    try:
        wait_for(lambda: n.peers()["gen"]["eor"] and n.peers()["gen"]["names"] == names, 60, "the table")
        before = rss_kib(n.proc.pid)
        stuck = socket.socket()
        stuck.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 4096)     # fills at once
        stuck.bind((f"{base}.40", 0))
        stuck.connect((f"{base}.1", 1790))
        stuck.sendall(nc.frame(nc.open_msg("stuck", hold_time=3)) + nc.frame(nc.keepalive()))
        wait_for(lambda: n.peers()["stuck"]["state"] == "Established", 10, "the stuck session")
        # it reads nothing more, but keeps saying it is alive: only the send hold timer can end it
        queued = []
        t0 = time.monotonic()
        while n.peers()["stuck"]["state"] == "Established":
            assert time.monotonic() - t0 < 20, "the send hold timer never ended the session"
            stuck.sendall(nc.frame(nc.keepalive()))
            queued.append(n.peers()["stuck"]["queued"])
            time.sleep(0.5)
        assert max(queued) <= (1 << 20) + (1 << 19), queued     # the high-water mark and one slice
        assert "send hold timer" in n.peers()["stuck"]["last_error"]
        if not SANITIZED:
            assert rss_kib(n.proc.pid) - before < 16 * 1024     # 16 MiB: far below the table's size
        assert n.peers()["gen"]["state"] == "Established"
    finally:
        if stuck is not None:
            stuck.close()
        kill_all([src])


def test_inrpd_builds_the_new_fib_while_peers_send_their_tables_and_serves_it_at_end_of_rib(nbrpd_factory,
                                                                                           inrpd_factory, tmp_path):
    """The epoch begins when inrpd is there and takes the routes as nbrpd learns them; it is
    put in service when every peer sent END-OF-RIB, with nothing sent again then."""
    base = f"127.8.{random.randint(1, 250)}"
    chan, ctl = tmp_path / "fib.sock", tmp_path / "inrpd.ctl"
    inrpd_factory(f'fib-channel "{chan}";\ncontrol "{ctl}";\n')
    n = router(nbrpd_factory, "dut", f"{base}.1", [("x", f"{base}.9")],
               f'hold-time 30s;\nfib-channel "{chan}";\nfib-sync-wait 600s;\n')
    fib = lambda: fib_status(ctl)   # noqa: E731
    wait_for(lambda: fib()["connected"] and fib()["syncing"], 20, "an epoch to begin at once")
    p = nc.Peer(f"{base}.1", 1790, f"{base}.9")
    try:
        p.send(nc.open_msg("x"))
        assert p.recv_until(nc.OPEN) is not None
        p.send(nc.keepalive())
        names = [f"n{i}.early" for i in range(3000)]
        p.send(nc.update(routes=[nc.route(names, "192.0.2.7", 53, ["x"])]))
        wait_for(lambda: n.json("show", "status")["names"] == 3000, 20, "the names in nbrpd")
        wait_for(lambda: fib()["updates"] >= 1, 20, "the names on their way to the FIB being built")
        st = fib()
        assert st["syncing"] and not st["in_service"] and st["syncs"] == 0
        updates = st["updates"]
        p.send(nc.end_of_rib())
        wait_for(lambda: fib()["syncs"] == 1, 20, "the epoch in service")
        st = fib()
        assert st["names"] == 3000 and st["in_service"] and not st["syncing"]
        assert st["updates"] == updates             # no walk of the table sent them again
    finally:
        p.close()


def test_a_big_table_reaches_inrpd_in_slices_and_changes_during_the_sync_are_not_lost(nbrpd_factory,
                                                                                      inrpd_factory, tmp_path):
    names = 50000 if SANITIZED else 300000
    base = f"127.8.{random.randint(1, 250)}"
    chan = tmp_path / "fib.sock"
    n = router(nbrpd_factory, "dut", f"{base}.1", [("gen", f"{base}.9"), ("gen2", f"{base}.10")],
               f'hold-time 30s;\nfib-channel "{chan}";\nfib-sync-wait 1s;\n')
    src = updgen("source", "--router", f"{base}.1", "--name", "gen", "--local", f"{base}.9", "--names", str(names),
                 "--seed", "4", "--linger", "600", "--json")
    src2 = None
    try:
        wait_for(lambda: n.peers()["gen"]["eor"] and n.peers()["gen"]["names"] == names, 60, "the table")
        # inrpd comes now: the whole table goes over in one epoch, a slice a loop turn, while a
        # second peer adds names (changes during the sync)
        ctl = tmp_path / "inrpd.ctl"
        inrpd_factory(f'fib-channel "{chan}";\ncontrol "{ctl}";\n')
        src2 = updgen("source", "--router", f"{base}.1", "--name", "gen2", "--local", f"{base}.10", "--names",
                      "20000", "--seed", "77", "--linger", "600", "--json")
        fib = lambda: fib_status(ctl)   # noqa: E731
        wait_for(lambda: n.peers()["gen2"]["eor"] and n.peers()["gen2"]["names"] == 20000, 60,
                 "the second table in nbrpd")
        total = n.json("show", "status")["names"]       # the two sets overlap a little (short names)
        assert names < total <= names + 20000
        wait_for(lambda: fib()["syncs"] >= 1 and fib()["names"] == total, 60, "every name in inrpd")
        src.send_signal(signal.SIGINT)
        assert finish(src, 30)[0] == 0
        wait_for(lambda: fib()["names"] == 20000, 60, "the first table withdrawn in inrpd")
    finally:
        kill_all([src, src2])


def test_an_inrpd_that_stops_reading_is_let_go_and_synced_anew_when_it_reads_again(nbrpd_factory,
                                                                                  inrpd_factory, tmp_path):
    """What nbrpd queues for a stopped inrpd is bounded by fib-send-hold-time: the channel is
    closed with it, and the next connection, once inrpd reads again, brings it the whole table."""
    names = 50000 if SANITIZED else 200000      # well past what the socket's buffers hold
    base = f"127.8.{random.randint(1, 250)}"
    chan, ctl = tmp_path / "fib.sock", tmp_path / "inrpd.ctl"
    d = inrpd_factory(f'fib-channel "{chan}";\ncontrol "{ctl}";\nfib-grace-time 600s;\n')
    n = router(nbrpd_factory, "dut", f"{base}.1", [("gen", f"{base}.9")],
               f'hold-time 30s;\nfib-channel "{chan}";\nfib-sync-wait 1s;\nfib-send-hold-time 2s;\n')
    fib = lambda: fib_status(ctl)   # noqa: E731
    wait_for(lambda: fib()["syncs"] == 1, 20, "the first epoch in service")
    src = None
    d.signal(signal.SIGSTOP)
    try:
        src = updgen("source", "--router", f"{base}.1", "--name", "gen", "--local", f"{base}.9",
                     "--names", str(names), "--seed", "5", "--linger", "600", "--json")
        wait_for(lambda: n.peers()["gen"]["names"] == names, 60, "the table in nbrpd")
        wait_for(lambda: n.json("show", "status")["fib_hold_closes"] >= 1, 30, "nbrpd to let inrpd go")
        n.wait_log(r"inrpd read nothing for 2000 ms \(fib-send-hold-time\), \d+ bytes waiting")
        assert n.json("show", "status")["names"] == names       # the routes themselves are kept
    finally:
        d.signal(signal.SIGCONT)
    try:
        wait_for(lambda: fib()["in_service"] and not fib()["syncing"] and fib()["names"] == names, 60,
                 "inrpd synced anew with the whole table")
        assert fib()["syncs"] >= 2
        assert n.json("show", "status")["fib_channel"] == "connected"
    finally:
        kill_all([src])


def test_an_inrpd_slower_than_its_peers_sets_the_pace_without_a_backlog(nbrpd_factory, tmp_path):
    """nbrpd reads no more UPDATEs while more than 4 MiB wait for inrpd: what it holds for an
    inrpd that reads, however slowly, stays a few MiB, and every name gets there."""
    names = 600000 if SANITIZED else 1000000        # 10-16 MB on the FIB channel
    base = f"127.8.{random.randint(1, 250)}"
    chan = tmp_path / "fib.sock"
    listener = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    listener.bind(str(chan))
    listener.listen(1)
    got = {"bytes": 0}

    def slow_inrpd():                               # 2 MB/s, whatever comes
        conn, _ = listener.accept()
        with conn:
            while True:
                chunk = conn.recv(65536)
                if not chunk:
                    return
                got["bytes"] += len(chunk)
                time.sleep(0.03)

    reader = threading.Thread(target=slow_inrpd, daemon=True)
    reader.start()
    n = router(nbrpd_factory, "dut", f"{base}.1", [("gen", f"{base}.9")],
               f'hold-time 30s;\nfib-channel "{chan}";\nfib-sync-wait 1s;\n')
    src = updgen("source", "--router", f"{base}.1", "--name", "gen", "--local", f"{base}.9",
                 "--names", str(names), "--seed", "6", "--linger", "600", "--json")
    try:
        most = 0

        def loaded():
            nonlocal most
            st = n.json("show", "status")
            most = max(most, st["fib_queued_bytes"])
            return st["names"] == names and st["fib_queued_bytes"] == 0
        wait_for(loaded, 120, "every name through the slow reader")
        assert got["bytes"] > 8 << 20                  # it did have to wait for the reader
        assert most <= 6 << 20, most                    # 4 MiB and a turn's flush, not the table
        assert n.json("show", "status")["fib_hold_closes"] == 0
    finally:
        kill_all([src])
        listener.close()
