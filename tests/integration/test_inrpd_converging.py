"""While routes converge: a next router out of step with ours.  It may have
no route yet for a name it gave us a route for (its inrpd a few scheduler
slices behind its nbrpd), or answer from its cache under its old route,
from the name's old origin.  We ask it again after a pause instead of
giving our client a SERVFAIL, or caching the old origin's answer under our
new route for its whole TTL (docs/INRP.md, "Routes converging")."""

import select
import socket
import struct
import threading

import dns.edns
import dns.message
import dns.query
import dns.rcode
import dns.rrset
import pytest

from conftest import free_port, loopback_addr, wait_for
import fibchan_client as fc
from test_inrpd_fibchan import status, wait_synced
from test_inrpd_forward import INRP_OPTION, addrs, counters, inrp_query_option, inrp_response, router
from test_inrpd_resolver import ede_of

OLD, NEW = 0x0b0b0b0b, 0x0c0c0c0c      # origin tags: the name's old origin, and the one our route ends at


def inrp_answer_option(status=0, origin=0, router_id=7):
    return dns.edns.GenericOption(INRP_OPTION, struct.pack(">BBBBIQI", 1, 2, status, 0, 0, router_id, origin))


class NextRouter:
    """A next content router that answers each query as its script says:
    ("no-route",) SERVFAIL with INRP status no-route; ("hold", event) the
    same once the event is set; ("answer", addr, origin) that address from
    that origin.  The last line is repeated."""

    def __init__(self, script):
        self.script, self.asked = list(script), 0
        self.addr = loopback_addr()
        self.port = free_port(self.addr)
        self.sock = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
        self.sock.bind((self.addr, self.port))
        self.stop_r, self.stop_w = socket.socketpair()
        self.thread = threading.Thread(target=self.serve, daemon=True)
        self.thread.start()

    def serve(self):
        while True:
            ready, _, _ = select.select([self.sock, self.stop_r], [], [])
            if self.stop_r in ready:
                return
            wire, peer = self.sock.recvfrom(65535)
            q = dns.message.from_wire(wire)
            step = self.script[min(self.asked, len(self.script) - 1)]
            self.asked += 1
            r = dns.message.make_response(q)
            if step[0] == "hold":                   # no route, once the test says
                step[1].wait(10)
            if step[0] in ("no-route", "hold"):
                r.set_rcode(dns.rcode.SERVFAIL)
                opt = inrp_answer_option(status=4)
            else:
                r.answer.append(dns.rrset.from_text(q.question[0].name, 300, "IN", "A", step[1]))
                opt = inrp_answer_option(origin=step[2])
            r.use_edns(0, 0, 1232, options=[opt])
            self.sock.sendto(r.to_wire(), peer)

    def close(self):
        self.stop_w.send(b"x")
        self.thread.join(5)
        for s in (self.sock, self.stop_r, self.stop_w):
            s.close()


@pytest.fixture
def via_next(inrpd_factory, tmp_path):
    """(router, next): our inrpd, one worker, its FIB from the channel: the
    name routed through a scripted next router, the route ending at NEW."""
    made = []

    def start(*script, conf=""):
        nxt = NextRouter(script)
        made.append(nxt)
        sock, ctl = tmp_path / "fib.sock", tmp_path / "inrpd.ctl"
        d = inrpd_factory(f'fib-channel "{sock}";\ncontrol "{ctl}";\n' + conf, workers=1)
        d.fib_sock, d.ctl = sock, ctl
        ch = fc.FibChannel(sock)
        made.append(ch)
        ch.full_sync(1, fc.update(names=[fc.name_routes(
            "mv.content", [fc.route(nxt.addr, fc.ROUTER, nxt.port, origin=NEW)])]))
        wait_synced(d, 1)
        d.channel = ch
        return d, nxt
    yield start
    for m in made:
        m.close()


def test_a_next_router_without_the_route_yet_is_asked_again(via_next):
    d, nxt = via_next(("no-route",), ("no-route",), ("answer", "192.0.2.12", NEW))
    r = d.udp("www.mv.content")
    assert r.rcode() == dns.rcode.NOERROR and addrs(r) == ["192.0.2.12"]
    assert nxt.asked == 3
    c = counters(d)
    assert c["hop_behind"] == 2 and c["servfail"] == 0 and c["hop_failed"] == 0


def test_a_next_router_that_never_gets_the_route_is_a_failure_after_the_pauses(via_next):
    d, nxt = via_next(("no-route",))
    r = d.udp("www.mv.content", use_edns=0)
    assert r.rcode() == dns.rcode.SERVFAIL and ede_of(r) == (22, "no reachable route")
    assert nxt.asked == 5                      # the first try and four more, 60 ms of pauses
    c = counters(d)
    assert c["hop_behind"] == 4 and c["hop_failed"] == 1


def test_an_answer_from_the_old_origin_is_asked_again_and_the_new_one_cached(via_next):
    d, nxt = via_next(("answer", "192.0.2.11", OLD), ("answer", "192.0.2.12", NEW))
    assert addrs(d.udp("www.mv.content")) == ["192.0.2.12"]
    assert addrs(d.udp("www.mv.content")) == ["192.0.2.12"]
    assert nxt.asked == 2                      # the second from our cache
    c = counters(d)
    assert c["hop_behind"] == 1 and c["cached"] == 1 and c["other_origin"] == 0


def test_an_answer_that_stays_from_another_origin_is_relayed_but_never_cached(via_next):
    d, nxt = via_next(("answer", "192.0.2.11", OLD))
    assert addrs(d.udp("www.mv.content")) == ["192.0.2.11"]
    assert nxt.asked == 5
    assert addrs(d.udp("www.mv.content")) == ["192.0.2.11"]
    assert nxt.asked == 10                     # asked again: nothing was cached
    c = counters(d)
    assert c["other_origin"] == 2 and c["cached"] == 0


def test_a_paused_query_goes_on_by_our_new_route(via_next):
    # the next router had withdrawn the name, and so have we meanwhile: the
    # name comes back by another router while the query waits
    released = threading.Event()
    d, old = via_next(("hold", released))
    new = NextRouter([("answer", "192.0.2.14", NEW)])
    try:
        result = []
        client = threading.Thread(target=lambda: result.append(d.udp("www.mv.content", timeout=5)))
        client.start()
        wait_for(lambda: old.asked == 1, 5, "the query at the old next router")
        updates = status(d)["updates"]
        d.channel.send(fc.update(names=[fc.name_routes(
            "mv.content", [fc.route(new.addr, fc.ROUTER, new.port, origin=NEW)])]))
        wait_for(lambda: status(d)["updates"] > updates, 5, "the new route in the FIB")
        released.set()
        client.join(10)
        assert addrs(result[0]) == ["192.0.2.14"]
        assert old.asked == 1 and new.asked == 1
        c = counters(d)
        assert c["hop_behind"] == 1 and c["rerouted"] == 1 and c["refreshed"] == 0
    finally:
        new.close()


def route_via(d, nxt, origin):
    updates = status(d)["updates"]
    d.channel.send(fc.update(names=[fc.name_routes(
        "mv.content", [fc.route(nxt.addr, fc.ROUTER, nxt.port, origin=origin)])]))
    wait_for(lambda: status(d)["updates"] > updates, 5, "the new route in the FIB")


def test_a_question_asked_lately_is_fetched_again_when_its_route_changes(via_next):
    d, old = via_next(("answer", "192.0.2.11", NEW), conf="refresh-on-route-change 256;\n")
    assert addrs(d.udp("www.mv.content")) == ["192.0.2.11"]
    assert addrs(d.udp("www.mv.content")) == ["192.0.2.11"]         # from the cache
    new = NextRouter([("answer", "192.0.2.14", OLD)])
    try:
        route_via(d, new, OLD)
        # asked by us, no client asking: the answer waits in the cache
        wait_for(lambda: counters(d)["refreshed"] == 1 and new.asked == 1, 5, "the refresh")
        cached = counters(d)["cached"]
        assert addrs(d.udp("www.mv.content")) == ["192.0.2.14"]
        assert new.asked == 1 and old.asked == 1
        assert counters(d)["cached"] == cached + 1
    finally:
        new.close()


def test_no_refresh_by_default(via_next):
    d, old = via_next(("answer", "192.0.2.11", NEW))
    assert addrs(d.udp("www.mv.content")) == ["192.0.2.11"]
    new = NextRouter([("answer", "192.0.2.14", OLD)])
    try:
        route_via(d, new, OLD)
        assert addrs(d.udp("www.mv.content")) == ["192.0.2.14"]      # the client pays the trip
        c = counters(d)
        assert new.asked == 1 and c["refreshed"] == 0 and c["cached"] == 0
    finally:
        new.close()


def test_answers_of_unknown_origin_are_cached_as_before(via_next):
    # a router that does not say its origin (the first routers' 16-byte option, or no nbrpd)
    d, nxt = via_next(("answer", "192.0.2.13", 0))
    assert addrs(d.udp("www.mv.content")) == ["192.0.2.13"]
    assert addrs(d.udp("www.mv.content")) == ["192.0.2.13"]
    assert nxt.asked == 1 and counters(d)["hop_behind"] == 0


def test_a_router_asking_for_a_name_without_a_route_hears_no_route(inrpd_factory, tmp_path):
    d = router(inrpd_factory, tmp_path, "")
    assert d.udp("nowhere.content").rcode() == dns.rcode.REFUSED      # a plain client: no upstream
    q = dns.message.make_query("nowhere.content", "A", use_edns=0, options=[inrp_query_option()])
    r = dns.query.udp(q, d.addr, port=d.port, timeout=5)
    assert r.rcode() == dns.rcode.SERVFAIL and inrp_response(r)[0] == 4
    assert counters(d)["no_route"] == 1


def test_our_servers_answers_carry_the_origin_nbrpd_gave_them(inrpd_factory, tmp_path):
    sock = tmp_path / "fib.sock"
    d = router(inrpd_factory, tmp_path, f'fib-channel "{sock}";\n')
    ch = fc.FibChannel(sock)
    try:
        ch.full_sync(1, fc.update(names=[fc.name_routes("here.content", [fc.route("192.0.2.5", origin=NEW)])]))
        wait_synced(d, 1)
        q = dns.message.make_query("here.content", "A", use_edns=0, options=[inrp_query_option()])
        r = dns.query.udp(q, d.addr, port=d.port, timeout=5)
        assert addrs(r) == ["192.0.2.5"] and inrp_response(r)[3] == NEW
    finally:
        ch.close()
