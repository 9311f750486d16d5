"""nbrpd in larger topologies, and the decision's load rules end to end: a
full mesh, a long line, a withdrawal at the origin, load threshold, load
radius, distance against local preference.  Routers are real nbrpd and
inrpd pairs (test_nbrpd.network); the origins of names are either a
router's `content` or a hand-written NBRP peer (nbrp_client.Peer)
connecting to router r1, which has it configured as a passive peer."""

import random
import time

import dns.exception
import dns.message
import dns.query
import pytest

from conftest import free_port, wait_for
import nbrp_client as nc
from test_inrpd_forward import fnv1a64, inrp_query_option, inrp_response
from test_nbrpd import SERVER_FAR, answer, net, path_of, wait_path  # noqa: F401  (net: the fixture)

SERVER = SERVER_FAR


def origin_addr():
    """An address for a fake origin: 127.1.x.y never clashes with the
    routers' 127.0.x.y (test_nbrpd.unique_addrs) or conftest's 127.0.0.x."""
    return f"127.1.{random.randint(1, 250)}.{random.randint(2, 250)}"


def passive_peer(name, addr, extra=""):
    """r1's config for a fake origin: it connects to us, we never to it."""
    return f'peer "{name}" {{ address {addr} port 1; passive; {extra}}}\n'


def line(n):
    names = [f"r{i}" for i in range(1, n + 1)]
    return names, list(zip(names, names[1:]))


class Origin:
    """A hand-written NBRP peer that originates names at router r: the
    session is established with hold time 0 (so it owes no KEEPALIVEs)
    and its END-OF-RIB sent at once (so r does not wait for it)."""

    def __init__(self, r, name, addr):
        self.name, self.addr = name, addr

        def connect():
            try:
                return nc.Peer(r.addr, r.nbrp_port, addr)
            except ConnectionRefusedError:
                return None
        self.peer = wait_for(connect, 10, f"{r.name} to accept {name}'s connection", interval=0.05)
        self.peer.send(nc.open_msg(name, hold_time=0))
        assert self.peer.recv_until(nc.OPEN) is not None, f"{r.name} closed on {name}'s OPEN"
        assert self.peer.recv_until(nc.KEEPALIVE) is not None
        self.peer.send(nc.keepalive())
        assert self.peer.recv_until(nc.END_OF_RIB) is not None
        self.peer.send(nc.end_of_rib())
        wait_for(lambda: r.nbrpd.peers()[name]["state"] == "Established", 10, f"{name} established")

    def route(self, names, path=None, load_ms=0, next_hop=None):
        """A Route for the names; the next hop defaults to this peer's
        address, port 5353 (for tests that never query through it)."""
        addr, port = next_hop or (self.addr, 5353)
        return nc.route(names, addr, port, path or [self.name], load_ms=load_ms)

    def update(self, routes=(), withdrawn=()):
        self.peer.send(nc.update(routes=routes, withdrawn=withdrawn))

    def close(self):
        self.peer.close()


@pytest.fixture
def origin():
    """origin(router, name, addr) -> an established Origin; closed at teardown."""
    made = []

    def start(r, name, addr):
        o = Origin(r, name, addr)
        made.append(o)
        return o
    yield start
    for o in made:
        o.close()


def load_of(r, name):
    routes = r.nbrpd.route(name)
    return routes[0]["load_ms"] if routes else None


def answers(r, name, want, timeout=5):
    """For wait_for: r's inrpd answers name with the addresses want."""
    try:
        return answer(r, name, timeout=timeout) == want
    except dns.exception.Timeout:
        return False


# ---- topologies ----

def test_a_full_mesh_prefers_the_direct_path_and_ranks_the_two_hop_ones(net):
    names = ["r1", "r2", "r3", "r4"]
    rs = net(names, [(a, b) for i, a in enumerate(names) for b in names[i + 1:]],
             content={"r1": f'content "mesh.content" {{ server {SERVER}; }}\n'})

    def converged(name):
        routes = rs[name].nbrpd.route("mesh.content") or []
        best = [x["path"] for x in routes if x["rank"] == 1]
        alternates = sorted(x["path"] for x in routes if x["rank"] > 1)
        want = sorted([other, "r1"] for other in names[1:] if other != name)
        return best == [["r1"]] and alternates == want and len(routes) == 3

    for name in names[1:]:
        wait_for(lambda: converged(name), 20, f"{name}: the direct path and two 2-hop alternates")
    for name in names[1:]:
        best = rs[name].nbrpd.route("mesh.content")[0]
        assert best["best"] and best["from"] == "r1"
        assert best["next_hop"] == f"{rs['r1'].addr} port {rs['r1'].dns_port}"
    assert rs["r1"].nbrpd.route("mesh.content")[0]["from"] == ""        # its own content
    for name in names:
        wait_for(lambda: answers(rs[name], "www.mesh.content", [SERVER]), 10, f"{name}'s inrpd to answer")


def test_a_line_of_ten_forwards_hop_by_hop(net):
    names, edges = line(10)
    rs = net(names, edges, content={"r1": f'content "far.content" {{ server {SERVER}; }}\n'})
    far = rs["r10"]
    wait_path(far, "far.content", [f"r{i}" for i in range(9, 0, -1)], timeout=60)
    assert len(path_of(far, "far.content")) == 9
    # r10's inrpd -> r9's -> ... -> r1's, which answers from its content
    wait_for(lambda: answers(far, "www.far.content", [SERVER], timeout=10), 30,
             "r10's inrpd to answer through nine hops")
    # the answer says whose servers gave it, as nbrpd names r1 (docs/INRP.md)
    q = dns.message.make_query("www.far.content", "A", use_edns=0, options=[inrp_query_option()])
    r = dns.query.udp(q, far.addr, port=far.dns_port, timeout=10)
    assert inrp_response(r)[3] == fnv1a64("r1") & 0xFFFFFFFF


def test_a_withdrawal_at_the_origin_reaches_every_router(net, origin, inrpd_factory):
    x_addr = origin_addr()
    # the origin's own inrpd, where r1's inrpd forwards queries for the name
    x_dns = inrpd_factory(f'route "gone.content" {{ server {SERVER}; }}\n',
                          addr=x_addr, port=free_port(x_addr))
    names, edges = line(3)
    rs = net(names, edges, extra={"r1": passive_peer("x", x_addr)})
    x = origin(rs["r1"], "x", x_addr)
    x.update([x.route(["gone.content"], next_hop=(x_addr, x_dns.port))])
    wait_path(rs["r3"], "gone.content", ["r2", "r1", "x"])
    assert path_of(rs["r1"], "gone.content") == ["x"]
    assert path_of(rs["r2"], "gone.content") == ["r1", "x"]
    wait_for(lambda: answers(rs["r3"], "gone.content", [SERVER]), 10, "r3's inrpd to answer via x")

    x.update(withdrawn=["gone.content"])
    for name in names:
        wait_for(lambda: rs[name].nbrpd.route("gone.content") is None, 10, f"{name} to drop the route")
        assert rs[name].nbrpd.nbrc("show", "route", "gone.content").returncode != 0
    wait_for(lambda: answer(rs["r3"], "gone.content") == "REFUSED", 10, "r3's inrpd to forget the name")
    assert rs["r1"].nbrpd.peers()["x"]["state"] == "Established"      # a withdrawal, not a session drop


# ---- load ----

def test_small_load_changes_are_not_readvertised(net, origin):
    x_addr = origin_addr()
    # load-interval 0: no change is held back for later (test_nbrpd_load.py
    # has the interval), so what r2 has not got by the end it never gets
    knobs = "load-threshold 10;\nload-ms-per-hop 50;\nload-interval 0;\n"
    rs = net(["r1", "r2"], [("r1", "r2")], extra={"r1": knobs + passive_peer("x", x_addr), "r2": knobs})
    r1, r2 = rs["r1"], rs["r2"]
    x = origin(r1, "x", x_addr)
    x.update([x.route(["ld.content"], load_ms=20)])
    wait_for(lambda: load_of(r2, "ld.content") == 20, 10, "r2 to see load 20")
    assert load_of(r1, "ld.content") == 20

    # 25: a change of 5 < 10.  The second name in the same UPDATE proves r1
    # has flushed that UPDATE's changes to r2.
    x.update([x.route(["ld.content"], load_ms=25), x.route(["mark.content"])])
    wait_for(lambda: load_of(r1, "ld.content") == 25, 10, "r1 to see load 25")
    wait_for(lambda: r2.nbrpd.route("mark.content") is not None, 10, "r2 to get the second name")
    assert load_of(r2, "ld.content") == 20

    # 40: a change of 20 >= 10 from the 20 last advertised
    x.update([x.route(["ld.content"], load_ms=40)])
    wait_for(lambda: load_of(r2, "ld.content") == 40, 10, "r2 to see load 40")
    assert load_of(r1, "ld.content") == 40


def test_load_travels_load_radius_hops(net, origin):
    x_addr = origin_addr()
    names, edges = line(4)
    rs = net(names, edges, extra={n: "load-radius 2;\n" + (passive_peer("x", x_addr) if n == "r1" else "")
                                  for n in names})
    x = origin(rs["r1"], "x", x_addr)
    x.update([x.route(["lr.content"], load_ms=30)])
    wait_path(rs["r4"], "lr.content", ["r3", "r2", "r1", "x"])
    # the path length each router holds, and the load it got with it: a
    # router advertises its load only while the path it sends (its own
    # path + 1) is at most load-radius long
    got = {n: (len(path_of(rs[n], "lr.content")), load_of(rs[n], "lr.content")) for n in names}
    assert got == {"r1": (1, 30), "r2": (2, 30), "r3": (3, 0), "r4": (4, 0)}


# ---- the decision ----

def decision_net(net, origin, x_extra=""):
    x_addr, y_addr = origin_addr(), origin_addr()
    while y_addr == x_addr:
        y_addr = origin_addr()
    rs = net(["r1", "r2"], [("r1", "r2")],
             extra={"r1": "load-ms-per-hop 50;\n" + passive_peer("x", x_addr, x_extra) + passive_peer("y", y_addr),
                    "r2": "load-ms-per-hop 50;\n"})
    return rs, origin(rs["r1"], "x", x_addr), origin(rs["r1"], "y", y_addr)


def test_a_longer_path_with_less_load_wins(net, origin):
    rs, x, y = decision_net(net, origin)
    r1 = rs["r1"]
    # x first, so it is the older route: distance still beats age
    x.update([x.route(["dec.content"], load_ms=200)])               # 1 * 50 + 200 = 250
    wait_path(r1, "dec.content", ["x"])
    y.update([y.route(["dec.content"], path=["y", "p", "q"])])      # 3 * 50 + 0 = 150
    wait_path(r1, "dec.content", ["y", "p", "q"])
    routes = r1.nbrpd.route("dec.content")
    assert [(r["rank"], r["from"], r["load_ms"]) for r in routes] == [(1, "y", 0), (2, "x", 200)]
    wait_path(rs["r2"], "dec.content", ["r1", "y", "p", "q"])


def test_show_status_stamps_the_last_time_a_best_route_moved(net, origin):
    """last_best_change: when a best route last went to another peer or
    origin (what scripts/bench topology orders the routers by), not when
    the same route's load changed."""
    x_addr, y_addr = origin_addr(), origin_addr()
    while y_addr == x_addr:
        y_addr = origin_addr()
    knobs = "load-ms-per-hop 50;\nload-threshold 10;\nload-interval 0;\n"
    rs = net(["r1", "r2"], [("r1", "r2")],
             extra={"r1": knobs + passive_peer("x", x_addr) + passive_peer("y", y_addr), "r2": knobs})
    r1, r2 = rs["r1"], rs["r2"]
    stamp = lambda: r1.nbrpd.json("show", "status")["last_best_change"]     # noqa: E731
    assert stamp() is None
    assert "last best route change -" in r1.nbrpd.nbrc("show", "status").stdout
    x, y = origin(r1, "x", x_addr), origin(r1, "y", y_addr)

    t0 = time.time()
    x.update([x.route(["dec.content"], load_ms=200)])
    wait_path(r2, "dec.content", ["r1", "x"])
    first = stamp()
    assert t0 <= first <= time.time()

    # the same route, more load: r2 hears it (r1 has flushed it), the stamp stays
    x.update([x.route(["dec.content"], load_ms=260)])
    wait_for(lambda: load_of(r2, "dec.content") == 260, 10, "r2 to see load 260")
    assert stamp() == first

    # y's shorter route wins (3 * 50 < 50 + 260), and its withdrawal gives x the name back
    t1 = time.time()
    y.update([y.route(["dec.content"], path=["y", "p", "q"])])
    wait_path(r2, "dec.content", ["r1", "y", "p", "q"])
    second = stamp()
    assert t1 <= second <= time.time()
    t2 = time.time()
    y.update(withdrawn=["dec.content"])
    wait_path(r2, "dec.content", ["r1", "x"])
    assert t2 <= stamp() <= time.time()


def test_local_preference_beats_distance(net, origin):
    rs, x, y = decision_net(net, origin, x_extra="local-pref 200;")
    r1 = rs["r1"]
    # y first and shorter: x still wins on local preference
    y.update([y.route(["dec.content"], path=["y", "p", "q"])])      # 150
    wait_path(r1, "dec.content", ["y", "p", "q"])
    x.update([x.route(["dec.content"], load_ms=200)])               # 250, local-pref 200
    wait_path(r1, "dec.content", ["x"])
    routes = r1.nbrpd.route("dec.content")
    assert [(r["rank"], r["from"], r["local_pref"]) for r in routes] == [(1, "x", 200), (2, "y", 100)]
    wait_path(rs["r2"], "dec.content", ["r1", "x"])
