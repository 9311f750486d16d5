"""Verification budgets (docs/SIGNATURES.md, Budgets): a peer flooding new
forged signatures gets its share of the workers and of the loop and no more,
its session is not read faster than its routes are checked (TCP holds the
rest), and a good peer's routes and our own signed announcements go through
during the flood."""

import os
import random
import socket
import threading
import time

from conftest import SANITIZED, free_port, wait_for
import nbrp_client as nc
from prom import scrape, value
import sigtest as st
from test_nbrpd import SERVER_FAR, establish, unique_addrs
from test_nbrpd_signatures import GOOD, Fed, routes_to, signed, sroute  # noqa: F401  (signed: a fixture)

MARK = b"\xa5" * 64


def forgeries(n, peer, updates, per):
    """UPDATE frames of `per` routes from `peer` (path peer, y), each with a valid origin
    attestation and y's hop, and peer's own hop signature a marker to be replaced by new bytes
    before each send: [(frame, marker offsets)]."""
    out = []
    for u in range(updates):
        routes = []
        for i in range(per):
            name = f"bad{u}-{i}.{GOOD}"
            _, atts = sroute(n, name, path=(peer, "y"))
            hop = st.attestation(MARK, int(time.time()) + 3600, for_key=n.fed.keys["r1"].pk[:4])
            routes.append(st.route_with(name, n.x_addr, 5353, [peer, "y"], [hop, atts[1], atts[2]]))
        f = bytearray(nc.frame(nc.update(routes=routes)))
        offs, at = [], 0
        while (at := f.find(MARK, at)) >= 0:
            offs.append(at)
            at += len(MARK)
        out.append((f, offs))
    return out


class Flood:
    """Sends new forgeries (each signature never seen: a verification each) as fast as the
    socket takes them, without blocking; counts what it sent and how often TCP held it back."""

    def __init__(self, sock, frames):
        self.sock, self.frames = sock, frames
        self.sent = self.updates = self.blocked = self.bytes = 0
        self.stop = threading.Event()
        self.t = threading.Thread(target=self.run, daemon=True)
        self.t.start()

    def run(self):
        rnd = random.Random(7)
        self.sock.setblocking(False)
        i = 0
        while not self.stop.is_set():
            f, offs = self.frames[i % len(self.frames)]
            for o in offs:
                f[o:o + 64] = rnd.randbytes(64)
                f[o + 63] &= 0x0F       # a canonical S: libsodium does the whole verification
            view = memoryview(f)
            while view and not self.stop.is_set():
                try:
                    k = self.sock.send(view)
                    view = view[k:]
                    self.bytes += k
                except BlockingIOError:
                    self.blocked += 1
                    time.sleep(0.005)
                except OSError:
                    return
            if not view:
                self.sent += len(offs)
                self.updates += 1
            i += 1

    def end(self):
        self.stop.set()
        self.t.join(30)


def open_peer(n, name, addr):
    p = nc.Peer(n.addr, n.port, addr)
    p.send(nc.open_msg(name))
    assert p.recv_until(nc.OPEN) is not None and p.recv_until(nc.KEEPALIVE) is not None
    p.send(nc.keepalive())
    assert p.recv_until(nc.END_OF_RIB) is not None
    p.send(nc.end_of_rib())
    return p


def rss_kib(pid):
    with open(f"/proc/{pid}/status") as f:
        return next(int(line.split()[1]) for line in f if line.startswith("VmRSS:"))


def test_a_flooding_peer_is_read_no_faster_than_its_routes_are_checked(signed):
    """z sends new forgeries as fast as its socket takes them: nbrpd stops reading z while a
    check of z's is with the workers or z's share of the loop turn is used (TCP backpressure:
    z's sends block), z's queue stays at one UPDATE, its memory does not follow what z offers,
    and z gets the low weight; every forgery read is counted invalid and verified once."""
    z_addr = unique_addrs(1)[0]
    mport = free_port("127.0.0.1")
    n = signed("require", extra=f'metrics 127.0.0.1 port {mport};\n'
               f'peer "z" {{ address {z_addr} port 1; passive; signatures require; authentication none; }}\n')
    z = open_peer(n, "z", z_addr)
    frames = forgeries(n, "z", 4, 200)
    rss0 = rss_kib(n.proc.pid)
    flood = Flood(z.sock, frames)
    queued, t_end = [], time.monotonic() + 6
    try:
        while time.monotonic() < t_end or flood.blocked < 10:
            queued.append(n.peers()["z"]["checks_queued"])
            time.sleep(0.05)
            assert time.monotonic() < t_end + 60, "z's socket never blocked"
        rss1 = rss_kib(n.proc.pid)
        zs = n.peers()["z"]
    finally:
        flood.end()
    assert flood.blocked >= 10                  # TCP held z back: nbrpd did not read on
    assert max(queued) <= 1, queued             # a failing peer's UPDATEs are checked one at a time
    assert zs["checks_weight"] == 1, zs
    assert zs["verifications_failed"] > 0 and zs["checks_worker_ms"] > 0, zs
    # what nbrpd holds does not follow what z offered (ASan keeps what is freed in quarantine)
    assert SANITIZED or (rss1 - rss0) * 1024 < 64 << 20, (rss0, rss1, flood.bytes)
    # every forgery z got in was refused for its signature, and none verified twice
    wait_for(lambda: (lambda p: p["updates_in"] == flood.updates and p["checks_queued"] == 0)(n.peers()["z"]),
             60, "all z sent read and checked")
    zs = n.peers()["z"]
    assert zs["routes_by_state"]["valid"] == 0
    assert zs["invalid_by_reason"]["bad signature"] == zs["verifications_failed"], zs
    assert n.route(f"bad0-0.{GOOD}") is None
    m = scrape("127.0.0.1", mport)
    assert value(m, "nbrpd_peer_verifications_failed_total", peer="z") == zs["verifications_failed"]
    assert value(m, "nbrpd_peer_verifications_total", peer="z") == zs["verifications"]
    assert value(m, "nbrpd_peer_checks_throttled_total", peer="z") == zs["checks_throttled"]
    assert value(m, "nbrpd_peer_checks_queued", peer="z") == 0
    assert value(m, "nbrpd_peer_checks_seconds_total", peer="z", where="workers") > 0
    z.close()


def test_a_good_peer_and_our_own_announcements_go_through_a_flood(inrpd_factory, nbrpd_factory, tmp_path):
    """While z floods new forgeries, x's signed routes are all imported valid, and a peer y
    that connects meanwhile is told x's names and our own content names, each with our hop
    signature for y, which y checks with the test's own implementation; z's are refused."""
    fed = Fed(tmp_path)
    fed.write_trust([(GOOD, fed.origin), ("own.example", fed.keys["r1"])])
    x_addr, y_addr, z_addr, r1_addr = unique_addrs(4)
    port, dns_port = free_port(r1_addr), free_port(r1_addr)
    own = [f"o{i}.own.example" for i in range(50)]
    n = nbrpd_factory("r1", f'router-name "r1";\nlisten {r1_addr} port {port};\n'
                      f"inrp-address {r1_addr} port {dns_port};\nhold-time 30s;\n{fed.config()}"
                      + "".join(f'peer "{p}" {{ address {a} port 1; passive; signatures require; authentication none; }}\n'
                                for p, a in (("x", x_addr), ("y", y_addr), ("z", z_addr)))
                      + "".join(f'content "{o}" {{ server {SERVER_FAR}; }}\n' for o in own))
    n.addr, n.port, n.x_addr, n.fed = r1_addr, port, x_addr, fed
    x = open_peer(n, "x", x_addr)
    z = open_peer(n, "z", z_addr)
    good = [f"g{i}.{GOOD}" for i in range(500)]
    updates = [nc.update(routes=[sroute(n, g, path=("x",))[0] for g in good[k:k + 100]])
               for k in range(0, len(good), 100)]
    flood = Flood(z.sock, forgeries(n, "z", 4, 200))
    try:
        wait_for(lambda: n.peers()["z"]["verifications_failed"] > 0, 60, "the flood being verified")
        x.send(*updates)
        wait_for(lambda: n.peers()["x"]["routes_by_state"]["valid"] == len(good), 300, "x's routes valid")
        y = nc.Peer(r1_addr, port, y_addr)
        y.send(nc.open_msg("y"))
        assert y.recv_until(nc.OPEN) is not None and y.recv_until(nc.KEEPALIVE) is not None
        y.send(nc.keepalive())
        want = {f"{g}." for g in good} | {f"{o}." for o in own}
        got = [st.verify(b, fed.keys, fed.keys["y"]) for b in routes_to(y, want)]
        during = n.peers()["z"]["verifications_failed"]
        wait_for(lambda: n.peers()["z"]["verifications_failed"] > during, 60, "the flood still going")
    finally:
        flood.end()
    paths = {tuple(r["path"]) for r in got}
    assert paths == {("r1", "x"), ("r1",)}, paths
    heard = {nc.text_name(w) for r in got for w in r["names"]}
    assert want <= heard
    zs = n.peers()["z"]
    assert zs["routes_by_state"]["valid"] == 0 and zs["checks_weight"] == 1, zs
    assert n.peers()["x"]["checks_weight"] > 1
    assert n.route(f"bad0-0.{GOOD}") is None
    for p in (x, y, z):
        p.close()


def test_end_of_rib_after_a_restart_waits_for_the_updates_checked_before_it(signed):
    """x restarts and sends its 400 names again, newly signed, in four UPDATEs with its
    END-OF-RIB right behind them: the UPDATEs are checked ahead (x's routes verify), and the
    sweep of what x did not send again waits for them, so y, told x's names, is never told
    one withdrawn."""
    y_addr = unique_addrs(1)[0]
    n = signed("require", extra=f'peer "y" {{ address {y_addr} port 1; passive; signatures require; authentication none; }}\n')
    names = [f"r{i}.{GOOD}" for i in range(400)]

    def table(seq):
        return [nc.update(routes=[sroute(n, x, path=("x",), origin_seq=seq, timestamp=int(time.time()) - seq)[0]
                                  for x in names[k:k + 100]]) for k in range(0, len(names), 100)]

    def x_session():
        p = nc.Peer(n.addr, n.port, n.x_addr)
        p.send(nc.open_msg("x", restart_time=60))
        assert p.recv_until(nc.OPEN) is not None and p.recv_until(nc.KEEPALIVE) is not None
        p.send(nc.keepalive())
        assert p.recv_until(nc.END_OF_RIB) is not None
        return p
    y = open_peer(n, "y", y_addr)
    x = x_session()
    x.send(*table(1), nc.end_of_rib())
    routes_to(y, {f"{x}." for x in names})
    assert n.peers()["x"]["checks_weight"] > 1
    x.close()                       # no NOTIFICATION: x may be restarting
    wait_for(lambda: n.peers()["x"]["restarting"], 10, "x restarting")
    again = table(2)
    x = x_session()
    x.send(*again, nc.end_of_rib())
    heard, withdrawn = set(), set()
    while len(heard) < len(names):
        m = y.recv()
        assert m is not None, f"y closed, heard {len(heard)} again"
        if m[0] != nc.UPDATE:
            continue
        for k, v in m[1]:
            if k == 1:
                withdrawn.add(nc.text_name(v))
            elif k == 2:
                heard |= {nc.text_name(w) for kk, w in nc.fields(v) if kk == 1}
    assert not withdrawn, sorted(withdrawn)[:5]
    wait_for(lambda: not n.peers()["x"]["restarting"], 10, "x's restart over")
    assert n.peers()["x"]["routes_by_state"]["valid"] == 2 * len(names)
    assert all(not r.get("stale") for r in n.route(names[0]))
    for p in (x, y):
        p.close()
