"""Freshness of signed routes (docs/SIGNATURES.md, Freshness): the origin
signs origin_seq, nbrpd keeps the newest it has seen per name and origin
key and refuses older announcements, so a router that once held a chain
cannot keep announcing it after the origin moved or withdrew the name."""

import time

from conftest import wait_for
import nbrp_client as nc
import sigtest as st
from test_nbrpd_signatures import GOOD, routes_to, signed, sroute  # noqa: F401  (signed: a fixture)
from test_nbrpd import establish, unique_addrs


def peer(n, name, addr):
    p = nc.Peer(n.addr, n.port, addr)
    p.send(nc.open_msg(name))
    assert p.recv_until(nc.OPEN) is not None and p.recv_until(nc.KEEPALIVE) is not None
    p.send(nc.keepalive())
    return p


def stale(n, who):
    return n.peers()[who]["invalid_by_reason"]["stale origin_seq"]


def test_a_chain_replayed_after_the_origin_moved_the_name_is_refused(signed):
    """x holds the origin's chain for a name (stamp 5); the origin moves the name: a newer stamp
    (9) comes through z.  x's stored route goes (stale), and x announcing the old chain again,
    with a fresh hop of its own, is refused, counted, logged; the newest stamp through x is taken.
    A stamp changed after signing is a bad signature."""
    z_addr = unique_addrs(1)[0]
    n = signed("require", extra=f'peer "z" {{ address {z_addr} port 1; passive; signatures require; }}\n')
    fed = n.fed
    x = establish(n)
    z = peer(n, "z", z_addr)
    name = f"a.{GOOD}"
    old, _ = sroute(n, name, origin_seq=5)
    x.send(nc.update(routes=[old]))
    wait_for(lambda: n.route(name) is not None, 10, "x's route")
    # the origin now announces it through z, newer
    moved, _ = st.signed_route(name, z_addr, 5353, ["z", "y"], fed.keys, fed.origin, fed.keys["r1"], origin_seq=9)
    z.send(nc.update(routes=[moved]))
    wait_for(lambda: [r["from"] for r in n.route(name) or []] == ["z"], 10, "x's older route gone")
    assert stale(n, "x") == 1
    # x replays the old chain with a new hop of its own: refused
    x.send(nc.update(routes=[sroute(n, name, origin_seq=5)[0]]))
    wait_for(lambda: stale(n, "x") == 2, 10, "the replay refused")
    assert [r["from"] for r in n.route(name)] == ["z"]
    assert "peer x: route rejected: invalid: stale origin_seq" in n.log()
    # a stamp raised after signing: the origin's signature no longer holds
    body, atts = sroute(n, name, origin_seq=5)
    x.send(nc.update(routes=[st.route_with(name, n.x_addr, 5353, ["x", "y"], atts, origin_seq=10)]))
    wait_for(lambda: n.peers()["x"]["invalid_by_reason"]["bad signature"] == 1, 10, "the raised stamp refused")
    # the newest stamp through x is as good as z's
    x.send(nc.update(routes=[sroute(n, name, origin_seq=9)[0]]))
    wait_for(lambda: sorted(r["from"] for r in n.route(name) or []) == ["x", "z"], 10, "x's newest taken")
    assert all(r["signatures"] == "valid" for r in n.route(name))
    # another name of the same origin is not concerned
    x.send(nc.update(routes=[sroute(n, f"b.{GOOD}", origin_seq=1)[0]]))
    wait_for(lambda: n.route(f"b.{GOOD}") is not None, 10, "another name")
    st_ = n.json("show", "status")
    assert st_["origin_seqs_kept"] == 2, st_
    assert "newest origin_seqs kept" in n.nbrc("show", "status").stdout
    assert n.peers()["x"]["state"] == "Established" and n.peers()["z"]["state"] == "Established"
    x.close()
    z.close()


def test_our_own_names_are_signed_with_their_stamp(signed):
    """r1's own content, told to x: the Route carries the origin_seq r1's origin attestation
    signed (sigtest.verify checks it), and a name announced again is signed newer."""
    n = signed("require", extra='content "own.good.example" { server 127.0.0.98; }\n')
    fed = n.fed
    s0 = n.json("show", "status")["trust_serial"]
    fed.write_trust(origins=[(GOOD, fed.origin), ("own.good.example", fed.keys["r1"])])
    wait_for(lambda: n.json("show", "status")["trust_serial"] > s0, 10, "the new trust file")
    x = establish_signed(n)
    r = st.verify(routes_to(x, {"own.good.example."})[-1], fed.keys, fed.keys["x"])
    first = r["origin_seq"]
    assert first > 0
    conf = n.conf.read_text()
    n.conf.write_text(conf.replace('content "own.good.example" { server 127.0.0.98; }\n', ""))
    assert n.nbrc("reload").returncode == 0
    wait_for(lambda: n.route("own.good.example") is None, 10, "our name withdrawn")
    n.conf.write_text(conf)
    assert n.nbrc("reload").returncode == 0
    again = st.verify(routes_to(x, {"own.good.example."})[-1], fed.keys, fed.keys["x"])
    assert again["origin_seq"] > first
    x.close()


def establish_signed(n):
    """x's session, whatever r1 dumps (its own names come signed, later)."""
    p = nc.Peer(n.addr, n.port, n.x_addr)
    p.send(nc.open_msg("x"))
    assert p.recv_until(nc.OPEN) is not None
    assert p.recv_until(nc.KEEPALIVE) is not None
    p.send(nc.keepalive())
    return p
