"""Signed aggregates (docs/SIGNATURES.md, docs/NBRP.md Attestations): the
origin signs an aggregate's name, version and member digest; a router
checks the digest against the members when it has stored that version.
Real nbrpd and inrpd, the fixtures of the signature and aggregate tests."""

import signal
from types import SimpleNamespace

import pytest

from conftest import stop_all, wait_for
import nbrp_client as nc
import sigtest as st
from test_aggregate_xfr import AGG as XAGG, Server, aggtool, names, served, servers  # noqa: F401  (served, servers: fixtures)
from test_nbrpd import SERVER_FAR, answer, establish, net  # noqa: F401  (net: a fixture)
from test_nbrpd_aggregates import AGG, agg_view, line_with_aggregate, version_of, write_members
from test_nbrpd_signatures import GOOD, signed, sroute  # noqa: F401  (signed: a fixture)

MISMATCH = "member digest mismatch"
UNAUTH = "unauthorised member"


def agg_routes(n, agg):
    """The aggregate's routes as `show route` gives them, best first ([] if none)."""
    for e in n.json("show", "route") or []:
        if e["aggregate"] and e["name"].rstrip(".") == agg:
            return e["routes"]
    return []


def with_extra(net, more):
    """The net fixture with more configuration for each router."""
    return lambda names_, edges, extra=None, **kw: net(
        names_, edges, extra={n: (extra or {}).get(n, "") + more[n] for n in names_}, **kw)


def test_a_chain_of_routers_passes_a_signed_aggregate_and_its_new_versions(net, tmp_path):
    """r3 defines and signs the aggregate; r2 and r1 verify it, fetch it, check its members and
    sign their hops; r1's inrpd answers a member through the chain."""
    routers = ["r1", "r2", "r3"]
    anchor, keys = st.Key(), {n: st.Key() for n in routers}
    trust = tmp_path / "trust"
    # the origin signs the aggregate and may originate its members (docs/NBRP.md, An aggregate's members)
    st.trust_file(trust, anchor, keys, [(AGG, keys["r3"]), ("example", keys["r3"])])
    extra = {}
    for n in routers:
        keys[n].write(tmp_path / f"{n}.key")
        extra[n] = f'key-file "{tmp_path}/{n}.key";\ntrust-anchor "{anchor.text}";\ntrust-file "{trust}";\n'
    edges = list(zip(routers, routers[1:]))
    peer_extra = {(a, b): "signatures require; " for x, y in edges for a, b in ((x, y), (y, x))}
    members = [f"m{i}.site{i % 13}.example" for i in range(2000)]
    rs, defs, _ = line_with_aggregate(with_extra(net, extra), tmp_path, routers, "r3", members,
                                      peer_extra=peer_extra)
    v1 = version_of(rs["r3"])
    wait_for(lambda: version_of(rs["r1"]) == v1, 30, "r1 to store the aggregate")
    wait_for(lambda: answer(rs["r1"], "www.m1999.site10.example") == [SERVER_FAR], 10, "r1's inrpd to answer")
    for n, path in (("r2", ["r3"]), ("r1", ["r2", "r3"])):
        best = agg_routes(rs[n].nbrpd, AGG)[0]
        assert best["path"] == path and best["signatures"] == "valid", (n, best)
        assert best["aggregate_version"] == v1

    # a new version: signed again at r3, checked at each router when stored
    write_members(defs, members[100:] + ["fresh.example"])
    assert rs["r3"].nbrpd.nbrc("reload").returncode == 0
    v2 = version_of(rs["r3"])
    assert v2 == (v1 + 1) % 2**32
    wait_for(lambda: (agg_routes(rs["r1"].nbrpd, AGG) or [{}])[0].get("aggregate_version") == v2, 30,
             "r1 to be offered the new version")
    wait_for(lambda: answer(rs["r1"], "fresh.example") == [SERVER_FAR], 10, "the new member answered")
    assert agg_routes(rs["r1"].nbrpd, AGG)[0]["signatures"] == "valid"
    assert agg_view(rs["r1"])["version"] == v2
    assert rs["r3"].nbrpd.json("show", "status")["origins_signed"] >= 2
    for n, peer in (("r1", "r2"), ("r2", "r3")):
        p = rs[n].nbrpd.peers()[peer]
        assert p["state"] == "Established" and p["invalid_by_reason"][MISMATCH] == 0, (n, p)
        assert p["routes_by_state"]["invalid"] == 0, (n, p)


@pytest.mark.parametrize("mode", ["require", "prefer"])
def test_an_aggregate_whose_members_do_not_match_its_digest_is_invalid(signed, served, tmp_path, mode):
    """A hand-written peer signs version 3 of agg.example over other members than its transfer
    server (aggtool) serves: the version is refused before it is stored (member digest mismatch,
    nothing routed); the right digest is fetched and valid; a wrong one for the version stored
    (verified by a valid route) is invalid at import."""
    start_server, _, _ = served                     # versions 1..3, version 3 = names(20, 1020)
    server = start_server()
    n = signed(mode, extra=f'state-dir "{tmp_path}/state";\n')
    fed = n.fed
    fed.write_trust(origins=[(GOOD, fed.origin), (XAGG, fed.origin), ("example", fed.origin)])
    wait_for(lambda: " read: 4 routers, 3 origins" in n.log(), 10, "the trust file polled")
    p = establish(n)
    source = f"{server.addr} {server.port}"
    dns_at = SimpleNamespace(addr=n.addr, dns_port=n.inrpd.port)

    def agg(members):
        return sroute(n, XAGG, aggregate=XAGG, version=3, source=source, digest=st.member_digest(members))[0]
    bad, good = agg(names(0, 1000)), agg(names(20, 1020))
    p.send(nc.update(routes=[bad, sroute(n, f"a.{GOOD}")[0]]))

    # the members served are checked before they are stored: refused, nothing held or routed
    wait_for(lambda: n.json("show", "aggregate", XAGG)["fetch_digest_mismatch"] >= 1, 20, "the fetch refused")
    assert n.json("show", "aggregate", XAGG)["version"] is None
    assert "the members of version 3 are not the ones signed (member digest mismatch); refused" in n.log()
    assert answer(dns_at, "m500.example") == "REFUSED"
    assert agg_routes(n, XAGG)[0]["signatures"] == "valid"     # what it signs is not what is served
    # the right digest: fetched, stored, valid
    p.send(nc.update(routes=[good]))
    wait_for(lambda: n.json("show", "aggregate", XAGG)["version"] == 3, 20, "version 3 stored")
    assert agg_routes(n, XAGG)[0]["signatures"] == "valid"
    # and a wrong one now that it is stored: invalid at import
    p.send(nc.update(routes=[bad]))
    wait_for(lambda: n.peers()["x"]["invalid_by_reason"][MISMATCH] == 1, 10, "the bad route at import")
    if mode == "require":
        wait_for(lambda: agg_routes(n, XAGG) == [], 10, "the aggregate withdrawn")
        wait_for(lambda: answer(dns_at, "m500.example") == "REFUSED", 10, "its members not routed")
    else:
        r = agg_routes(n, XAGG)[0]
        assert r["signatures"] == "invalid" and r["signature_reason"] == MISMATCH and r["local_pref"] == 0, r
    assert n.json("show", "aggregate", XAGG)["version"] == 3
    # nothing else moved; each check counted once
    peer = n.peers()["x"]
    assert peer["state"] == "Established" and peer["routes_by_state"]["valid"] == 3, peer
    assert peer["routes_by_state"]["invalid"] == 1, peer
    assert n.route(f"a.{GOOD}")[0]["signatures"] == "valid"
    p.close()


@pytest.mark.parametrize("mode", ["require", "prefer"])
def test_a_member_its_origin_may_not_originate_does_not_take_the_name(signed, tmp_path, mode):
    """The member hijack: x's origin may originate cdn.example and the aggregate's name; version 1
    of its aggregate holds cdn.example names only (valid, routed), version 2 adds www.shop.example
    (the trust file gives shop.example to r1, which originates it) and customer1.example.org
    (nobody's): the route is invalid, unauthorised member, counted, named in the log and in
    `show aggregate`; r1's own content answers www.shop.example and nobody routes
    customer1.example.org (under prefer too, where the route is kept at local preference 0: it
    routes none of its members, so the longer member does not beat our shorter content name)."""
    fed_dir = tmp_path / "server"
    members = tmp_path / "members.txt"
    authorised = ["www.cdn.example.", "api.cdn.example."]
    hijack = authorised + ["www.shop.example.", "customer1.example.org."]
    members.write_text("\n".join(authorised) + "\n")
    aggtool("define", fed_dir, XAGG, members, 1)
    server = Server(tmp_path, fed_dir, members)
    try:
        server.start()
        n = signed(mode, extra=f'state-dir "{tmp_path}/state";\n'
                   f'content "shop.example" {{ server {SERVER_FAR}; }}\n')
        fed = n.fed
        fed.write_trust(origins=[(XAGG, fed.origin), ("cdn.example", fed.origin), ("shop.example", fed.keys["r1"])])
        wait_for(lambda: " read: 4 routers, 3 origins" in n.log(), 10, "the trust file polled")
        p = establish(n)
        p.send(nc.end_of_rib())        # inrpd's FIB from r1 is in service once every peer's table is in
        dns_at = SimpleNamespace(addr=n.addr, dns_port=n.inrpd.port)
        source = f"{server.addr} {server.port}"

        def agg(v, m):
            return sroute(n, XAGG, aggregate=XAGG, version=v, source=source, digest=st.member_digest(m))[0]
        # authorised members: valid, stored, nothing refused
        p.send(nc.update(routes=[agg(1, authorised)]))
        wait_for(lambda: any(a["version"] == 1 for a in n.json("show", "aggregates")), 20, "version 1 stored")
        assert agg_routes(n, XAGG)[0]["signatures"] == "valid"
        assert n.json("show", "aggregate", XAGG)["unauthorised_members"] == 0
        wait_for(lambda: answer(dns_at, "www.shop.example") == [SERVER_FAR], 10, "our content answered")

        # the hijack: version 2 served (the server's SIGHUP) and offered
        members.write_text("\n".join(hijack) + "\n")
        server.signal(signal.SIGHUP)
        wait_for(lambda: "as version 2" in server.logfile.read_text(), 10, "version 2 served")
        p.send(nc.update(routes=[agg(2, hijack)]))
        wait_for(lambda: n.peers()["x"]["invalid_by_reason"][UNAUTH] == 1, 20, "the members checked")
        view = n.json("show", "aggregate", XAGG)
        assert view["version"] == 2 and view["unauthorised_members"] == 2, view
        assert view["unauthorised_first"] in ("www.shop.example.", "customer1.example.org."), view
        assert "2 members its origin may not originate" in n.log()
        text = n.nbrc("show", "aggregate", XAGG).stdout
        assert "2 members its origin may not originate" in text, text
        if mode == "require":
            wait_for(lambda: agg_routes(n, XAGG) == [], 10, "the aggregate withdrawn")
        else:
            r = agg_routes(n, XAGG)[0]
            assert r["signatures"] == "invalid" and r["signature_reason"] == UNAUTH and r["local_pref"] == 0, r
        # our own content answers its name; nobody routes the other
        wait_for(lambda: answer(dns_at, "www.shop.example") == [SERVER_FAR], 10, "our content kept")
        wait_for(lambda: answer(dns_at, "customer1.example.org") == "REFUSED", 10, "the other not routed")
        # the same version again: counted, checked without walking the members again
        p.send(nc.update(routes=[agg(2, hijack)]))
        wait_for(lambda: n.peers()["x"]["invalid_by_reason"][UNAUTH] == 2, 10, "the route at import")
        assert n.log().count("members its origin may not originate") == 1
        # a trust file authorising the origin for both: valid when sent again (a route refused at
        # import keeps no chain to check again)
        fed.write_trust(origins=[(XAGG, fed.origin), ("cdn.example", fed.origin), ("shop.example", fed.origin),
                                 ("example.org", fed.origin)])
        wait_for(lambda: " read: 4 routers, 4 origins" in n.log(), 10, "the new trust file")
        p.send(nc.update(routes=[agg(2, hijack)]))
        wait_for(lambda: (agg_routes(n, XAGG) or [{}])[0].get("signatures") == "valid", 10, "valid now")
        assert n.json("show", "aggregate", XAGG)["unauthorised_members"] == 0
        # example.org revoked: the stored route is checked again, members included, with no UPDATE
        fed.write_trust(origins=[(XAGG, fed.origin), ("cdn.example", fed.origin), ("shop.example", fed.origin)])
        wait_for(lambda: n.peers()["x"]["invalid_by_reason"][UNAUTH] == 3, 10, "the member revoked")
        view = n.json("show", "aggregate", XAGG)
        assert view["unauthorised_members"] == 1 and view["unauthorised_first"] == "customer1.example.org.", view
        if mode == "require":
            wait_for(lambda: agg_routes(n, XAGG) == [], 10, "the aggregate withdrawn")
        else:
            assert agg_routes(n, XAGG)[0]["signature_reason"] == UNAUTH
        assert n.peers()["x"]["state"] == "Established"
        p.close()
    finally:
        stop_all([server])
