"""Origin withdrawals (docs/NBRP.md): an origin that withdraws a name
stamps the withdrawal with its announcement's origin_seq, and every router
drops each route for the name that ends at that origin with that stamp or
an older one, whoever sent it, instead of trying the stale paths one after
another; what it dropped it passes on.  A real nbrpd, peers played by hand
(tests/integration/nbrp_client.py)."""

import pytest

from conftest import free_port, wait_for
import nbrp_client as nc
from test_nbrpd import unique_addrs

PEERS = ("a", "b", "l")


@pytest.fixture
def hub(nbrpd_factory, tmp_path):
    """r1 with passive peers a, b and l, each at its own address; content
    own.content of its own when asked."""
    addrs = unique_addrs(len(PEERS) + 1)
    r1_addr, peer_addrs = addrs[0], dict(zip(PEERS, addrs[1:]))
    port = free_port(r1_addr)

    def start(content=True):
        body = (f'router-name "r1";\nlisten {r1_addr} port {port};\n'
                f"inrp-address {r1_addr} port 53;\n")
        if content:
            body += 'content "own.content" { server 127.0.0.98; }\n'
        body += "".join(f'peer "{p}" {{ address {a} port 1; passive; }}\n' for p, a in peer_addrs.items())
        n = nbrpd_factory("r1", body)
        n.addr, n.port, n.peer_addrs = r1_addr, port, peer_addrs
        return n
    return start


def establish(n, name, dump=None):
    """A session as peer name; the UPDATEs of the table dump go to dump (a list), parsed."""
    p = nc.Peer(n.addr, n.port, n.peer_addrs[name])
    p.send(nc.open_msg(name))
    assert p.recv_until(nc.OPEN) is not None
    assert p.recv_until(nc.KEEPALIVE) is not None
    p.send(nc.keepalive())
    while True:
        kind, body = p.recv()
        if kind == nc.END_OF_RIB:
            return p
        if kind == nc.UPDATE and dump is not None:
            dump.append(parse(body))


def updates(p):
    """The next UPDATE's (routes, withdrawn, origin withdrawals) as text."""
    kind, body = p.recv_until(nc.UPDATE)
    return parse(body)


def parse(body):
    routes, withdrawn, owd = [], [], []
    for num, v in body:
        if num == 1:
            withdrawn.append(nc.text_name(v))
        elif num == 2:
            f = nc.fields(v)
            routes.append({"names": [nc.text_name(x) for k, x in f if k == 1],
                           "path": [x.decode() for k, x in f if k == 4],
                           "origin_seq": next((x for k, x in f if k == 12), 0)})
        elif num == 4:
            f = dict(nc.fields(v))
            owd.append((nc.text_name(f[1]), f[2].decode(), f.get(3, 0)))
    return routes, withdrawn, owd


def routes_until(p, name, pred):
    """Reads UPDATEs until one tells name something pred accepts; returns that UPDATE."""
    while True:
        u = updates(p)
        if pred(u):
            return u


def test_stale_paths_from_the_same_origin_go_at_once_and_the_withdrawal_is_passed_on(hub):
    n = hub(content=False)
    a, b, lis = (establish(n, x) for x in PEERS)
    hop = lambda x: (n.peer_addrs[x], 53)  # noqa: E731
    a.send(nc.update(routes=[nc.route(["svc.content"], *hop("a"), ["a", "o"], origin_seq=5)]))
    b.send(nc.update(routes=[nc.route(["svc.content", "other.content"], *hop("b"), ["b", "q", "o"], origin_seq=5),
                             nc.route(["elsewhere.content"], *hop("b"), ["b", "o2"], origin_seq=5)]))
    wait_for(lambda: n.route("elsewhere.content") is not None and n.route("svc.content") is not None and
             len(n.route("svc.content")) == 2, 10, "the routes")
    assert n.route("svc.content")[0]["path"] == ["a", "o"]
    # l was told the best, with the origin's stamp as received
    routes_until(lis, "svc.content", lambda u: any(r["names"] == ["svc.content."] and
                                                 r["path"] == ["r1", "a", "o"] and r["origin_seq"] == 5
                                                 for r in u[0]))

    # o withdrew it: a says so; b's path through q to o is as stale and goes too
    a.send(nc.update(withdrawn=["svc.content"], origin_withdrawals=[("svc.content", "o", 5)]))
    routes, withdrawn, owd = routes_until(lis, "svc.content", lambda u: "svc.content." in u[1])
    assert owd == [("svc.content.", "o", 5)]
    assert not any("svc.content." in r["names"] for r in routes)    # never the stale path through b
    assert n.route("svc.content") is None
    # another name from o, and o2's, are not touched
    assert n.route("other.content")[0]["path"] == ["b", "q", "o"]
    assert n.route("elsewhere.content")[0]["path"] == ["b", "o2"]

    # a newer announcement is taken, and an older withdrawal does not touch it
    b.send(nc.update(routes=[nc.route(["svc.content"], *hop("b"), ["b", "q", "o"], origin_seq=6)]))
    wait_for(lambda: n.route("svc.content") is not None, 10, "the newer announcement")
    a.send(nc.update(origin_withdrawals=[("svc.content", "o", 5), ("other.content", "o2", 9)]))
    b.send(nc.update(routes=[nc.route(["marker.content"], *hop("b"), ["b"])]))
    wait_for(lambda: n.route("marker.content") is not None, 10, "the UPDATEs after")
    assert n.route("svc.content")[0]["path"] == ["b", "q", "o"]
    assert n.route("other.content") is not None             # o2 is not its origin
    # a route without a stamp (an older router's) is never dropped by one
    b.send(nc.update(routes=[nc.route(["plain.content"], *hop("b"), ["b", "o"])]))
    wait_for(lambda: n.route("plain.content") is not None, 10, "the plain route")
    a.send(nc.update(origin_withdrawals=[("plain.content", "o", 1 << 62)]))
    b.send(nc.update(routes=[nc.route(["marker2.content"], *hop("b"), ["b"])]))
    wait_for(lambda: n.route("marker2.content") is not None, 10, "the UPDATEs after")
    assert n.route("plain.content") is not None
    for p in (a, b, lis):
        p.close()


def test_a_router_whose_only_route_went_passes_the_withdrawal_on(hub):
    """The peer that withdraws carried our only route: it goes by the origin
    withdrawal too, so downstream routers, which may hold stale paths to o
    through others, hear it."""
    n = hub(content=False)
    a, lis = establish(n, "a"), establish(n, "l")
    a.send(nc.update(routes=[nc.route(["svc.content"], n.peer_addrs["a"], 53, ["a", "o"], origin_seq=5)]))
    routes_until(lis, "svc.content", lambda u: any(r["names"] == ["svc.content."] for r in u[0]))
    a.send(nc.update(withdrawn=["svc.content"], origin_withdrawals=[("svc.content", "o", 5)]))
    routes, withdrawn, owd = routes_until(lis, "svc.content", lambda u: "svc.content." in u[1])
    assert owd == [("svc.content.", "o", 5)]
    for p in (a, lis):
        p.close()


def test_our_own_withdrawal_is_stamped(hub):
    n = hub()
    dump = []
    lis = establish(n, "l", dump)
    # the table dump: own.content with our stamp
    seq, = [r["origin_seq"] for u in dump for r in u[0] if r["names"] == ["own.content."]]
    assert seq > 0
    conf = n.conf.read_text()
    n.conf.write_text(conf.replace('content "own.content" { server 127.0.0.98; }\n', ""))
    n.nbrc("reload")
    routes, withdrawn, owd = routes_until(lis, "own.content", lambda u: "own.content." in u[1])
    assert owd == [("own.content.", "r1", seq)]
    # announced again: a newer stamp
    n.conf.write_text(conf)
    n.nbrc("reload")
    routes, _, _ = routes_until(lis, "own.content", lambda u: u[0])
    assert routes[0]["names"] == ["own.content."] and routes[0]["origin_seq"] > seq
    lis.close()


def test_a_bad_origin_withdrawal_ends_the_session_with_a_reason(hub):
    n = hub(content=False)
    a = establish(n, "a")
    a.send(nc.update(origin_withdrawals=[("svc.content", "not a name", 5)]))
    code, subcode, text = a.notification()
    assert (code, subcode) == (3, 1) and "origin withdrawal" in text
    a.close()
