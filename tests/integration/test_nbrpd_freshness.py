"""Freshness of signed routes (docs/SIGNATURES.md, Freshness): the origin
signs origin_seq, nbrpd keeps the newest it has seen per name and origin
key and refuses older announcements, so a router that once held a chain
cannot keep announcing it after the origin moved or withdrew the name."""

import time

from conftest import wait_for
import nbrp_client as nc
import sigtest as st
from test_nbrpd_signatures import GOOD, routes_to, signed, sroute  # noqa: F401  (signed: a fixture)
from test_nbrpd_sessions import connect_and_open as establish_signed
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
    n = signed("require", extra=f'peer "z" {{ address {z_addr} port 1; passive; signatures require; authentication none; }}\n')
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
    assert f"peer x: route for {name}. rejected: invalid: stale origin_seq" in n.log()
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


def own_name_told_to_x(signed):
    """r1 (require) originating own.good.example, which the trust file lets its key
    originate; x's session open (whatever r1 dumps: its own names come signed, later) and
    the Route r1 told x, checked by sigtest."""
    n = signed("require", extra='content "own.good.example" { server 127.0.0.98; }\n')
    fed = n.fed
    s0 = n.json("show", "status")["trust_serial"]
    fed.write_trust(origins=[(GOOD, fed.origin), ("own.good.example", fed.keys["r1"])])
    wait_for(lambda: n.json("show", "status")["trust_serial"] > s0, 10, "the new trust file")
    x = establish_signed(n)
    return n, fed, x, st.verify(routes_to(x, {"own.good.example."})[-1], fed.keys, fed.keys["x"])


def test_our_own_names_are_signed_with_their_stamp(signed):
    """r1's own content, told to x: the Route carries the origin_seq r1's origin attestation
    signed (sigtest.verify checks it), and a name announced again is signed newer."""
    n, fed, x, r = own_name_told_to_x(signed)
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


def three_peers(signed, mode="require"):
    """r1 with x and z (signatures `mode`) and u (signatures off), all established."""
    z_addr, u_addr = unique_addrs(2)
    n = signed(mode, extra=f'peer "z" {{ address {z_addr} port 1; passive; signatures {mode}; authentication none; }}\n'
                           f'peer "u" {{ address {u_addr} port 1; passive; }}\n')
    x = establish(n)
    z = peer(n, "z", z_addr)
    u = peer(n, "u", u_addr)
    n.z_addr = z_addr
    return n, x, z, u


def origin_withdrawals_heard(peers, name, timeout=10):
    """The OriginWithdrawals (fields) for name that any of peers hears first."""
    for p in peers:
        p.sock.settimeout(0.2)
    end = time.monotonic() + timeout
    while time.monotonic() < end:
        for p in peers:
            try:
                m = p.recv()
            except OSError:
                continue
            if m and m[0] == nc.UPDATE:
                got = [nc.fields(v) for k, v in m[1] if k == 4]
                got = [f for f in got if dict(f)[1] == st.wire_name(name)]
                if got:
                    return got
    raise AssertionError(f"no origin withdrawal of {name} heard")


def test_a_signed_origin_withdrawal_removes_signed_routes_from_every_peer(signed):
    """The origin's signed withdrawal of stamp 5, relayed by u (signatures off): x's and z's
    signed routes (stamp 5) go, the withdrawal is passed on with its signature, and x
    announcing the withdrawn chain again is refused as stale."""
    n, x, z, u = three_peers(signed)
    fed = n.fed
    name = f"a.{GOOD}"
    x.send(nc.update(routes=[sroute(n, name, origin_seq=5)[0]]))
    z.send(nc.update(routes=[st.signed_route(name, n.z_addr, 5353, ["z", "y"], fed.keys, fed.origin,
                                             fed.keys["r1"], origin_seq=5)[0]]))
    wait_for(lambda: len(n.route(name) or []) == 2, 10, "both signed routes")
    u.send(nc.update(origin_withdrawals=[st.signed_withdrawal(name, "y", 5, fed.origin)]))
    wait_for(lambda: n.route(name) is None, 10, "the signed routes withdrawn")
    # passed on: whichever of x and z was told the other's route hears it, signed by the origin
    got = origin_withdrawals_heard([x, z], name)
    f = st.verify_withdrawal(got[0], fed.origin)
    assert f[3] == 5 and f[2] == b"y"
    x.sock.settimeout(None)
    z.sock.settimeout(None)
    # the withdrawn chain again: refused
    x.send(nc.update(routes=[sroute(n, name, origin_seq=5)[0]]))
    wait_for(lambda: stale(n, "x") == 1, 10, "the replay refused")
    assert n.route(name) is None
    # a newer announcement is taken
    x.send(nc.update(routes=[sroute(n, name, origin_seq=6)[0]]))
    wait_for(lambda: n.route(name) is not None, 10, "the newer announcement")
    assert n.peers()["u"]["origin_withdrawals_forged"] == 0
    for p in (x, z, u):
        p.close()


def test_a_forged_signed_origin_withdrawal_is_refused_and_counted(signed):
    """Signed withdrawals that do not check, from u (signatures off) and from x (require): a key
    the trust file does not give the name, the origin's key claimed with another key's
    signature, a stamp changed after signing, an expired one, a name the origin may not
    originate.  Each refused, counted for its sender and logged; the signed routes stay."""
    n, x, z, u = three_peers(signed)
    fed = n.fed
    name = f"a.{GOOD}"
    x.send(nc.update(routes=[sroute(n, name, origin_seq=5)[0]]))
    wait_for(lambda: n.route(name) is not None, 10, "the signed route")
    good = st.signed_withdrawal(name, "y", 5, fed.origin)
    raised = good.replace(nc.origin_withdrawal(name, "y", 5), nc.origin_withdrawal(name, "y", 9))
    forged = [
        st.signed_withdrawal(name, "y", 5, fed.rogue),                       # unauthorised key
        st.signed_withdrawal(name, "y", 5, fed.rogue, signer=fed.origin),    # the origin's key, not its signature
        raised,                                                              # the stamp raised after signing
        st.signed_withdrawal(name, "y", 5, fed.origin, expiry=int(time.time()) - 10),
        st.signed_withdrawal("other.example", "y", 5, fed.origin),          # not the origin's name
    ]
    u.send(nc.update(origin_withdrawals=forged))
    wait_for(lambda: n.peers()["u"]["origin_withdrawals_forged"] == 5, 10, "u's forgeries counted")
    x.send(nc.update(origin_withdrawals=forged[:2]))
    wait_for(lambda: n.peers()["x"]["origin_withdrawals_forged"] == 2, 10, "x's forgeries counted")
    routes = n.route(name)
    assert [r["from"] for r in routes] == ["x"] and routes[0]["signatures"] == "valid"
    log = n.log()
    assert f"peer u: signed origin withdrawal of {name}. (stamp 5) refused: unauthorised origin" in log
    assert "peer x: signed origin withdrawal of" in log
    assert "signed origin withdrawals refused 5" in n.nbrc("show", "peers").stdout
    # an unsigned one from u still leaves the signed route
    u.send(nc.update(origin_withdrawals=[(name, "y", 5)]))
    wait_for(lambda: n.peers()["u"]["origin_withdrawals_refused"] == 1, 10, "the unsigned one counted")
    assert [r["from"] for r in n.route(name)] == ["x"]
    for p in (x, z, u):
        assert n.peers()[p is x and "x" or p is z and "z" or "u"]["state"] == "Established"
        p.close()


def test_our_own_withdrawal_is_signed(signed):
    """r1 withdraws its own content name: x (require) hears an origin withdrawal signed by r1's
    key, for a stamp no older than the one r1 signed the name with."""
    n, fed, x, r = own_name_told_to_x(signed)
    conf = n.conf.read_text()
    n.conf.write_text(conf.replace('content "own.good.example" { server 127.0.0.98; }\n', ""))
    assert n.nbrc("reload").returncode == 0
    got = origin_withdrawals_heard([x], "own.good.example")
    f = st.verify_withdrawal(got[0], fed.keys["r1"])
    assert f[2] == b"r1" and f[3] >= r["origin_seq"]
    assert n.json("show", "status")["withdrawals_signed"] == 1
    x.close()
