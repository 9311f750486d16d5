"""Server-mode sessions: a content server speaks NBRP itself to the router
it is attached to, announcing its names with itself as the next hop and
its load; the router answers with the server's address and advertises the
names on to its peers as its own."""

import dns.message
import dns.query
import dns.rdatatype

from conftest import free_port, wait_for
import nbrp_client as nc
from test_nbrpd import network, unique_addrs  # noqa: F401


def a_records(addr, port, name):
    r = dns.query.udp(dns.message.make_query(name, "A"), addr, port=port, timeout=5)
    return [rd.address for rrset in r.answer if rrset.rdtype == dns.rdatatype.A for rd in rrset]


def test_a_content_server_announces_its_own_names(inrpd_factory, nbrpd_factory, tmp_path):
    srv = unique_addrs(1)[0]
    rs = network(inrpd_factory, nbrpd_factory, tmp_path, ["r1", "r2"], [("r1", "r2")],
                 extra={"r1": f'peer "srv1" {{ address {srv} port 1; passive; server-mode; }}\n'})
    r1, r2 = rs["r1"], rs["r2"]
    p = nc.Peer(r1.addr, r1.nbrp_port, srv)
    p.send(nc.open_msg("srv1", server_mode=True))
    assert p.recv_until(nc.KEEPALIVE) is not None
    p.send(nc.keepalive())
    assert p.recv_until(nc.END_OF_RIB) is not None      # a server is told no routes
    p.send(nc.update(routes=[nc.route(["video.content"], srv, 0, [], load_ms=12)]), nc.end_of_rib())
    wait_for(lambda: r2.nbrpd.route("video.content") is not None, 20, "the name at r2")
    assert r2.nbrpd.route("video.content")[0]["path"] == ["r1"]
    assert r2.nbrpd.route("video.content")[0]["load_ms"] == 12
    wait_for(lambda: a_records(r1.addr, r1.dns_port, "www.video.content") == [srv], 10, "r1's answer")
    # r2's inrpd hears from its nbrpd on its own time: wait for it too
    wait_for(lambda: a_records(r2.addr, r2.dns_port, "www.video.content") == [srv], 10, "r2's answer")
    p.close()
    wait_for(lambda: r2.nbrpd.route("video.content") is None, 10, "withdrawn with the session")


def test_a_router_opening_as_a_server_is_refused(inrpd_factory, nbrpd_factory, tmp_path):
    x = unique_addrs(1)[0]
    rs = network(inrpd_factory, nbrpd_factory, tmp_path, ["r1"], [],
                 extra={"r1": f'peer "x" {{ address {x} port 1; passive; }}\n'})
    p = nc.Peer(rs["r1"].addr, rs["r1"].nbrp_port, x)
    p.send(nc.open_msg("x", server_mode=True))
    assert p.notification()[:2] == (2, 5)
    p.close()
