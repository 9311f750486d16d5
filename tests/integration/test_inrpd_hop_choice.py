"""Choosing among ranked next hops (inrpd/forward.c): hops within a band of
the cheapest expected latency go by FIB rank, a slower one is left, a hop
left is probed once per hop-probe-interval so it is taken back when it is
fast again, and a looping hop's SERVFAIL moves the query to the next
candidate.  Real inrpd processes; a hop is made slow by a delaying UDP
relay in front of it."""

import heapq
import selectors
import socket
import struct
import threading
import time

import dns.rcode
import pytest

from conftest import free_port, loopback_addr, wait_for
from test_inrpd_forward import SERVER, addrs, counters, fixed_router, hops, inrpc_json, router, route_via

OTHER = "127.0.0.98"
PROBE = "hop-probe-interval 200ms;\n"


class DelayRelay:
    """Stands on its own address in front of a real inrpd and passes each
    query on after `delay` seconds (answers come back at once), so the hop
    behind it looks as slow as the test says.  Counts the queries."""

    def __init__(self, backend):
        self.backend = (backend.addr, backend.port)
        self.delay = 0.0
        self.count = 0
        self.error = None
        self.addr = loopback_addr()
        self.port = free_port(self.addr)
        self.front = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
        self.front.bind((self.addr, self.port))
        self.back = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
        self.back.bind(("127.0.0.1", 0))
        self.clients = {}                       # DNS id -> who asked
        self.due = []                           # (when, seq, query) to pass on
        self.wake_r, self.wake_w = socket.socketpair()
        self.sel = selectors.DefaultSelector()
        for s in (self.front, self.back, self.wake_r):
            self.sel.register(s, selectors.EVENT_READ)
        self.thread = threading.Thread(target=self._serve, daemon=True)
        self.thread.start()

    def _serve(self):
        try:
            self._loop()
        except Exception as e:                  # reported by stop()
            self.error = e

    def _loop(self):
        seq = 0
        while True:
            now = time.monotonic()
            while self.due and self.due[0][0] <= now:
                self.back.sendto(heapq.heappop(self.due)[2], self.backend)
            timeout = self.due[0][0] - now if self.due else None
            for key, _ in self.sel.select(timeout):
                s = key.fileobj
                if s is self.wake_r:
                    return
                wire, src = s.recvfrom(65535)
                qid = struct.unpack(">H", wire[:2])[0]
                if s is self.front:
                    self.count += 1
                    self.clients[qid] = src
                    seq += 1
                    heapq.heappush(self.due, (time.monotonic() + self.delay, seq, wire))
                elif qid in self.clients:
                    self.front.sendto(wire, self.clients.pop(qid))

    def stop(self):
        self.wake_w.send(b"x")
        self.thread.join(10)
        for s in (self.front, self.back, self.wake_r, self.wake_w):
            s.close()
        self.sel.close()
        assert self.error is None, f"relay failed: {self.error!r}"


@pytest.fixture
def relays():
    started = []

    def start(backend):
        r = DelayRelay(backend)
        started.append(r)
        return r
    yield start
    for r in started:
        r.stop()


def test_a_slow_preferred_hop_is_left_and_taken_back_when_fast(inrpd_factory, tmp_path, relays):
    a = router(inrpd_factory, tmp_path, f'route "svc.band.content" {{ server {SERVER}; }}\n')
    b = router(inrpd_factory, tmp_path, f'route "svc.band.content" {{ server {OTHER}; }}\n')
    ra, rb = relays(a), relays(b)
    rb.delay = 0.05                     # b works, but is clearly slower than a fast a
    first = router(inrpd_factory, tmp_path, PROBE + route_via("band.content", ra, rb))
    n = iter(range(100000))

    def ask():
        r = first.udp(f"q{next(n)}.svc.band.content", timeout=5)
        assert r.rcode() == dns.rcode.NOERROR, r
        return addrs(r)[0]

    def probes(relay):
        return hops(first)[(relay.addr, relay.port)]["probes"]

    def stores():
        return inrpc_json(first, "show", "cache")["stores"]

    # a fast: a (b is tried once at most, when a's first sample on a loaded
    # machine is slower than what is assumed of a hop never asked)
    wait_for(lambda: [ask() for _ in range(3)] == [SERVER] * 3, 10, "a to be asked")

    # a turns slow: after a few slow samples b is asked instead ...
    ra.delay = 0.2
    wait_for(lambda: ask() == OTHER, 10, "b to take over")
    # ... and once a probe has seen a slow (its first sample replaces the
    # average that just crossed the band), a is asked only as a probe
    wait_for(lambda: ask() and probes(ra) >= 1, 10, "a probe of the slow hop")
    count, before = ra.count, probes(ra)
    wait_for(lambda: ask() and probes(ra) >= before + 2, 10, "two probes of the slow hop")
    assert ra.count - count == probes(ra) - before

    # a fast again: the next probe sees it, and it is first again
    ra.delay = 0.0
    wait_for(lambda: ask() == SERVER, 10, "a to be taken back")
    count, before, stored = rb.count, probes(rb), stores()
    answers = []
    wait_for(lambda: answers.append(ask()) or probes(rb) >= before + 2, 10, "two probes of b")
    assert answers.count(OTHER) == rb.count - count == probes(rb) - before, answers
    # every name was new; a probe's answer went to the client, not into the cache
    assert stores() - stored == answers.count(SERVER)
    assert hops(first)[(ra.addr, ra.port)]["timeouts"] == 0


def test_a_looping_hop_preferred_for_its_speed_still_gets_the_answer_elsewhere(
        inrpd_factory, tmp_path, relays):
    a, b = loopback_addr(), loopback_addr()
    pa, pb = free_port(a), free_port(b)
    dest = router(inrpd_factory, tmp_path, f'route "svc.lp.content" {{ server {SERVER}; }}\n')
    slow = relays(dest)
    slow.delay = 0.03
    # first's best-ranked route is slow; the fast one goes to b, whose route
    # comes back to first: a loop, answered SERVFAIL with INRP status loop
    first = fixed_router(inrpd_factory, tmp_path, "cache-size 0;\n" +
                         f'route "lp.content" {{\n    router {slow.addr} port {slow.port};\n'
                         f'    router {b} port {pb};\n}}\n', a, pa)
    loop = fixed_router(inrpd_factory, tmp_path, f'route "lp.content" {{ router {a} port {pa}; }}\n', b, pb)
    for i in range(8):
        r = first.udp(f"q{i}.svc.lp.content", timeout=5)
        assert r.rcode() == dns.rcode.NOERROR and addrs(r) == [SERVER], r
    h = hops(first)
    # the looping hop is asked once a query at most, its SERVFAIL never reaches the client
    assert h[(b, pb)]["failures"] == h[(b, pb)]["queries"] >= 1
    assert h[(slow.addr, slow.port)]["answers"] == 8
    c = counters(first)
    # first's SERVFAILs were the loop answers to b, none to the client
    assert c["hop_failed"] == c["loops"] == c["servfail"] == h[(b, pb)]["queries"]
    assert counters(loop)["servfail"] == h[(b, pb)]["queries"]


@pytest.mark.parametrize("value,ok", [("100ms", True), ("1h", True), ("99ms", False), ("2h", False),
                                      ("soon", False)])
def test_hop_probe_interval_is_checked(tmp_path, value, ok):
    from conftest import run_inrpd
    conf = tmp_path / "c.conf"
    conf.write_text(f"listen 127.0.0.1 port 5353;\nhop-probe-interval {value};\n")
    r = run_inrpd("-t", "-c", str(conf))
    assert (r.returncode == 0) == ok, r.stderr
    if not ok:
        assert "c.conf:2" in r.stderr, r.stderr
