"""nbrpd: NBRP sessions between content routers, the decision, propagation,
and the FIB pushed to inrpd.  Each router is a real nbrpd with a real
inrpd on its own 127.0.0.x address; clients ask the inrpds with dnspython."""

import random
import threading
import time

import dns.message
import dns.query
import dns.rcode
import dns.rdatatype
import pytest

from conftest import free_port, wait_for
import nbrp_client as nc

SERVER_NEAR, SERVER_FAR = "127.0.0.98", "127.0.0.99"


def unique_addrs(n):
    return [f"127.0.{random.randint(1, 250)}.{x}" for x in random.sample(range(2, 250), n)]


class Router:
    pass


def network(inrpd_factory, nbrpd_factory, tmp_path, names, edges, content=None, extra=None,
            peer_extra=None):
    """Starts one inrpd and one nbrpd per name; edges are (a, b) sessions;
    content maps a router to `content` statements; extra to more config."""
    content = content or {}
    extra = extra or {}
    peer_extra = peer_extra or {}
    routers = {}
    for name, addr in zip(names, unique_addrs(len(names))):
        r = Router()
        r.name, r.addr = name, addr
        r.nbrp_port, r.dns_port = free_port(addr), free_port(addr)
        r.fib = tmp_path / f"{name}.fib"
        routers[name] = r
    for r in routers.values():
        r.inrpd = inrpd_factory(f'fib-channel "{r.fib}";\nfib-grace-time 30s;\n',
                                addr=r.addr, port=r.dns_port)
    for r in routers.values():
        body = (f'router-name "{r.name}";\nlisten {r.addr} port {r.nbrp_port};\n'
                f"inrp-address {r.addr} port {r.dns_port};\nhold-time 3s;\nconnect-retry 100ms;\n"
                f'fib-channel "{r.fib}";\n' + extra.get(r.name, "") + content.get(r.name, ""))
        for a, b in edges:
            if r.name in (a, b):
                other = routers[b if a == r.name else a]
                body += (f'peer "{other.name}" {{ address {other.addr} port {other.nbrp_port}; '
                         f'{peer_extra.get((r.name, other.name), "")}}}\n')
        r.nbrpd = nbrpd_factory(r.name, body)
    return routers


def path_of(r, name):
    routes = r.nbrpd.route(name)
    return routes[0]["path"] if routes else None


def answer(r, name, timeout=5):
    resp = dns.query.udp(dns.message.make_query(name, "A"), r.addr, port=r.dns_port, timeout=timeout)
    if resp.rcode() != dns.rcode.NOERROR:
        return dns.rcode.to_text(resp.rcode())
    return [rd.address for rrset in resp.answer if rrset.rdtype == dns.rdatatype.A for rd in rrset]


def wait_path(r, name, path, timeout=20):
    wait_for(lambda: path_of(r, name) == path, timeout, f"{r.name}: {name} via {path}")


def established(r, peer):
    return r.nbrpd.peers()[peer]["state"] == "Established"


@pytest.fixture
def net(inrpd_factory, nbrpd_factory, tmp_path):
    return lambda *a, **kw: network(inrpd_factory, nbrpd_factory, tmp_path, *a, **kw)


def test_a_line_of_three_routes_queries_to_the_far_server(net):
    rs = net(["r1", "r2", "r3"], [("r1", "r2"), ("r2", "r3")],
             content={"r3": f'content "svc.content" {{ server {SERVER_FAR} load 5; }}\n'})
    wait_path(rs["r1"], "svc.content", ["r2", "r3"])
    assert path_of(rs["r2"], "svc.content") == ["r3"]
    best = rs["r1"].nbrpd.route("svc.content")[0]
    assert best["from"] == "r2" and best["next_hop"] == f"{rs['r2'].addr} port {rs['r2'].dns_port}"
    # inrpd at r1 answers through r2's and r3's inrpds
    wait_for(lambda: answer(rs["r1"], "www.svc.content") == [SERVER_FAR], 10, "r1's inrpd to answer")
    assert answer(rs["r2"], "www.svc.content") == [SERVER_FAR]
    peers = rs["r2"].nbrpd.peers()
    assert peers["r1"]["state"] == peers["r3"]["state"] == "Established"
    assert peers["r3"]["names"] == 1 and peers["r1"]["names"] == 0


def test_the_nearer_server_wins_and_a_killed_router_fails_over(net):
    # r1 - r2 - r3 (far server), and r1 - r4 (near server): the same name twice
    rs = net(["r1", "r2", "r3", "r4"], [("r1", "r2"), ("r2", "r3"), ("r1", "r4")],
             content={"r3": f'content "svc.content" {{ server {SERVER_FAR}; }}\n',
                      "r4": f'content "svc.content" {{ server {SERVER_NEAR}; }}\n'})
    wait_path(rs["r1"], "svc.content", ["r4"])
    routes = rs["r1"].nbrpd.route("svc.content")
    assert [x["path"] for x in routes] == [["r4"], ["r2", "r3"]]     # ranked: both reach inrpd
    wait_for(lambda: answer(rs["r1"], "svc.content") == [SERVER_NEAR], 10, "the near server")
    rs["r4"].nbrpd.kill()
    wait_path(rs["r1"], "svc.content", ["r2", "r3"])
    wait_for(lambda: answer(rs["r1"], "svc.content") == [SERVER_FAR], 10, "the far server")


def test_a_ring_converges_without_loops(net):
    names = ["r0", "r1", "r2", "r3", "r4"]
    rs = net(names, [(names[i], names[(i + 1) % 5]) for i in range(5)],
             content={"r0": f'content "ring.content" {{ server {SERVER_FAR}; }}\n'})
    want = {"r1": ["r0"], "r4": ["r0"], "r2": ["r1", "r0"], "r3": ["r4", "r0"]}
    for name, path in want.items():
        wait_path(rs[name], "ring.content", path)
    for name in want:
        for route in rs[name].nbrpd.route("ring.content"):
            assert name not in route["path"] and len(set(route["path"])) == len(route["path"])
        assert answer(rs[name], "ring.content") == [SERVER_FAR]


def test_disabling_a_peer_withdraws_and_enabling_restores(net):
    rs = net(["r1", "r2"], [("r1", "r2")], content={"r2": f'content "d.content" {{ server {SERVER_FAR}; }}\n'})
    wait_path(rs["r1"], "d.content", ["r2"])
    r = rs["r1"].nbrpd.nbrc("disable", "r2")
    assert r.returncode == 0, r.stderr
    wait_for(lambda: rs["r1"].nbrpd.route("d.content") is None, 10, "the withdrawal")
    wait_for(lambda: answer(rs["r1"], "d.content") == "REFUSED", 10, "inrpd to forget the name")
    assert rs["r1"].nbrpd.peers()["r2"]["state"] == "Disabled"
    assert rs["r1"].nbrpd.nbrc("enable", "r2").returncode == 0
    wait_path(rs["r1"], "d.content", ["r2"])
    assert rs["r1"].nbrpd.nbrc("disable", "nobody").returncode == 1


def test_restarting_nbrpd_does_not_interrupt_answers(net):
    rs = net(["r1", "r2"], [("r1", "r2")], content={"r2": f'content "k.content" {{ server {SERVER_FAR}; }}\n'})
    wait_for(lambda: answer(rs["r1"], "k.content") == [SERVER_FAR], 20, "the route")
    failures, stop = [], threading.Event()

    def ask():
        while not stop.is_set():
            a = answer(rs["r1"], "k.content")
            if a != [SERVER_FAR]:
                failures.append(a)
    t = threading.Thread(target=ask)
    t.start()
    try:
        rs["r1"].nbrpd.kill()               # inrpd keeps its FIB for the grace time
        rs["r1"].nbrpd.restart()
        wait_path(rs["r1"], "k.content", ["r2"])
        wait_for(lambda: rs["r1"].inrpd.log().count("in service") >= 2, 10, "inrpd to take the new epoch")
    finally:
        stop.set()
        t.join(30)
    assert failures == []


# ---- a hand-written peer, good and bad ----

@pytest.fixture
def lone(inrpd_factory, nbrpd_factory, tmp_path):
    """r1 with one configured (passive) peer "x" at a chosen address."""
    x_addr, r1_addr = unique_addrs(2)
    port, dns_port = free_port(r1_addr), free_port(r1_addr)
    fib = tmp_path / "r1.fib"
    inrpd = inrpd_factory(f'fib-channel "{fib}";\n', addr=r1_addr, port=dns_port)

    def start(peer_extra="", extra="", hold="30s"):
        n = nbrpd_factory("r1", f'router-name "r1";\nlisten {r1_addr} port {port};\n'
                          f"inrp-address {r1_addr} port {dns_port};\nhold-time {hold};\n"
                          f'fib-channel "{fib}";\n{extra}'
                          f'peer "x" {{ address {x_addr} port 1; passive; {peer_extra}}}\n')
        n.addr, n.port, n.x_addr, n.inrpd, n.dns_port = r1_addr, port, x_addr, inrpd, dns_port
        return n
    return start


def connect(n):
    p = nc.Peer(n.addr, n.port, n.x_addr)
    return p


def establish(n):
    p = connect(n)
    p.send(nc.open_msg("x"))
    assert p.recv_until(nc.OPEN) is not None
    assert p.recv_until(nc.KEEPALIVE) is not None
    p.send(nc.keepalive())
    assert p.recv_until(nc.END_OF_RIB) is not None
    return p


@pytest.mark.parametrize("what,send,code,subcode", [
    ("wrong router name", lambda: nc.frame(nc.open_msg("y")), 2, 2),
    ("bad version", lambda: nc.frame(nc.open_msg("x", version=9)), 2, 1),
    ("bad hold time", lambda: nc.frame(nc.open_msg("x", hold_time=1)), 2, 3),
    ("update before open", lambda: nc.frame(nc.update(withdrawn=["a.content"])), 5, 1),
    ("garbage", lambda: nc.frame(b"\xff" * 40), 1, 2),
    ("zero length", lambda: b"\0\0\0\0", 1, 1),
    ("oversize", lambda: b"\x7f\xff\xff\xff" + b"\0" * 64, 1, 1),
])
def test_bad_input_gets_the_right_notification(lone, what, send, code, subcode):
    n = lone()
    p = connect(n)
    p.send_raw(send())
    got = p.notification()
    assert got[:2] == (code, subcode), (what, got)
    assert got[2], "the NOTIFICATION says what was wrong"
    assert p.closed()
    p.close()
    # the daemon stays up and takes a good session afterwards
    p = establish(n)
    assert n.peers()["x"]["state"] == "Established"
    p.close()


def test_routes_from_a_peer_loops_and_treat_as_withdraw(lone):
    n = lone()
    p = establish(n)
    hop = (n.x_addr, 5353)
    p.send(nc.update(routes=[
        nc.route(["a.content", "b.content"], *hop, ["x"], load_ms=7),
        nc.route(["loop.content"], *hop, ["x", "r1", "z"]),            # through us: dropped
    ]))
    wait_for(lambda: n.route("b.content") is not None, 10, "the routes")
    assert n.route("a.content")[0]["path"] == ["x"] and n.route("a.content")[0]["load_ms"] == 7
    assert n.route("loop.content") is None
    # a malformed route (next hop of 3 bytes) withdraws its names, the session stays
    bad = nc._len_field(1, nc.wire_name("a.content")) + nc._len_field(2, b"\x01\x02\x03") + \
        nc._int_field(3, 53) + nc._len_field(4, b"x")
    p.send(nc.update(routes=[bad]))
    wait_for(lambda: n.route("a.content") is None, 10, "treat-as-withdraw")
    assert n.route("b.content") is not None
    peers = n.peers()
    assert peers["x"]["state"] == "Established" and peers["x"]["bad_routes"] == 1
    # withdrawn names go; a session that drops takes the rest with it
    p.send(nc.update(withdrawn=["b.content"]))
    wait_for(lambda: n.route("b.content") is None, 10, "the withdrawal")
    p.send(nc.update(routes=[nc.route(["c.content"], *hop, ["x"])]))
    wait_for(lambda: n.route("c.content") is not None, 10, "c.content")
    wait_for(lambda: n.json("show", "route", "count")["names"] == 1, 10, "one name")
    p.close()
    wait_for(lambda: n.route("c.content") is None, 10, "the session's routes withdrawn")


def test_max_names_shut_closes_the_session(lone):
    n = lone(peer_extra="max-names 2 shut;")
    p = establish(n)
    hop = (n.x_addr, 5353)
    p.send(nc.update(routes=[nc.route(["a.content", "b.content", "c.content"], *hop, ["x"])]))
    code, sub, text = p.notification()
    assert (code, sub) == (6, 1) and "max-names" in text
    wait_for(lambda: n.json("show", "route", "count")["names"] == 0, 10, "the session's routes gone")
    assert n.peers()["x"]["state"] != "Established"
    p.close()


def test_max_names_refuse_keeps_the_first(lone):
    n = lone(peer_extra="max-names 2 refuse;")
    p = establish(n)
    p.send(nc.update(routes=[nc.route(["a.content", "b.content", "c.content"], n.x_addr, 5353, ["x"])]))
    wait_for(lambda: n.peers()["x"]["names"] == 2, 10, "two names taken")
    assert n.route("c.content") is None
    assert n.peers()["x"]["state"] == "Established"
    p.close()


def test_hold_timer_expires_with_a_notification(lone):
    n = lone(hold="3s")
    p = connect(n)
    p.send(nc.open_msg("x", hold_time=3))
    assert p.recv_until(nc.KEEPALIVE) is not None
    p.send(nc.keepalive())
    assert p.recv_until(nc.END_OF_RIB) is not None
    # then silence: nbrpd keeps sending KEEPALIVEs, and gives up on us after 3 s
    code, sub, _ = p.notification()
    assert (code, sub) == (4, 0)
    p.close()


def test_a_name_that_does_not_parse_resets_the_session(lone):
    n = lone()
    p = establish(n)
    p.send(nc.update(routes=[nc.route(["ok.content"], n.x_addr, 5353, ["x"])]))
    wait_for(lambda: n.route("ok.content") is not None, 10, "the route")
    upper = nc._len_field(1, b"\x02OK\x07content\x00") + nc._len_field(2, b"\x7f\x00\x00\x01") + \
        nc._int_field(3, 53) + nc._len_field(4, b"x")
    p.send(nc.update(routes=[upper]))
    assert p.notification()[:2] == (3, 1)
    wait_for(lambda: n.route("ok.content") is None, 10, "the session's routes withdrawn")
    p.close()


def test_a_notification_behind_writes_in_flight_still_closes(lone):
    """OPEN, KEEPALIVE and a bad UPDATE in one segment: nbrpd's KEEPALIVE
    and table are still being written when it sends the NOTIFICATION.  The
    connection must still close (it stayed open for good, read by no one,
    and kept nbrpd from exiting on SIGTERM)."""
    n = lone()
    p = connect(n)
    upper = nc._len_field(1, b"\x02OK\x07content\x00") + nc._len_field(2, b"\x7f\x00\x00\x01") + \
        nc._int_field(3, 53) + nc._len_field(4, b"x")
    p.send(nc.open_msg("x"), nc.keepalive(), nc.update(routes=[upper]))
    assert p.notification()[:2] == (3, 1)
    assert p.closed()
    p.close()
    assert n.stop() == 0


def test_show_route_json_holds_the_longest_paths(lone):
    n = lone()
    p = establish(n)
    path = ["x"] + [f'{i:02d}"\\' + "n" * 250 for i in range(63)]      # 64 names, quotes and backslashes
    p.send(nc.update(routes=[nc.route(["long.content"], n.x_addr, 5353, path)]))
    wait_for(lambda: n.route("long.content") is not None, 10, "the route")
    assert n.route("long.content")[0]["path"] == path
    everything = n.json("show", "route")
    assert [x["name"] for x in everything] == ["long.content."]
    text = n.nbrc("show", "route", "long.content")
    assert text.returncode == 0 and path[-1] in text.stdout
    p.close()
