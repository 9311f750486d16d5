"""Signed routes into nbrpd (docs/SIGNATURES.md, docs/NBRP.md Attestations):
a hand-written peer (nbrp_client) sends routes signed by the test's own
implementation of the attestation format (sigtest.py); nbrpd checks them
on its worker threads and keeps, rejects or ranks them by their state."""

import subprocess
import threading
import time
from types import SimpleNamespace

import pytest

from conftest import NBRPD, SANITIZED, free_port, wait_for
from fibchan_client import _len_field
import nbrp_client as nc
from prom import scrape, value
import sigtest as st
from test_nbrpd import SERVER_FAR, answer, connect, establish, net, unique_addrs  # noqa: F401  (net: a fixture)

GOOD = "good.example"


class Fed:
    """The keys of a small federation: the anchor, routers r1 (the daemon),
    x (the hand-written peer), y and z (further back in paths), and the
    origin allowed for good.example; rogue is in no trust line."""

    def __init__(self, tmp_path):
        self.anchor = st.Key()
        self.keys = {n: st.Key() for n in ("r1", "x", "y", "z")}
        self.origin, self.rogue, self.stranger = st.Key(), st.Key(), st.Key()
        self.trust = tmp_path / "trust"
        self.write_trust()
        self.key_file = tmp_path / "r1.key"
        self.keys["r1"].write(self.key_file)

    def write_trust(self, origins=None, **kw):
        return st.trust_file(self.trust, self.anchor, self.keys,
                             [(GOOD, self.origin)] if origins is None else origins, **kw)

    def config(self, poll="200ms"):
        return (f'key-file "{self.key_file}";\ntrust-anchor "{self.anchor.text}";\n'
                f'trust-file "{self.trust}";\ntrust-poll {poll};\nsignature-workers 2;\n')


@pytest.fixture
def signed(inrpd_factory, nbrpd_factory, tmp_path):
    """r1 with one passive peer x whose signatures are `mode`."""
    fed = Fed(tmp_path)
    x_addr, r1_addr = unique_addrs(2)
    port, dns_port = free_port(r1_addr), free_port(r1_addr)
    fib = tmp_path / "r1.fib"
    inrpd = inrpd_factory(f'fib-channel "{fib}";\n', addr=r1_addr, port=dns_port)

    def start(mode, extra=""):
        n = nbrpd_factory("r1", f'router-name "r1";\nlisten {r1_addr} port {port};\n{extra}'
                          f"inrp-address {r1_addr} port {dns_port};\nhold-time 30s;\n"
                          f'fib-channel "{fib}";\n{fed.config()}'
                          f'peer "x" {{ address {x_addr} port 1; passive; signatures {mode}; authentication none; }}\n')
        n.addr, n.port, n.x_addr, n.inrpd, n.fed = r1_addr, port, x_addr, inrpd, fed
        return n
    return start


def sroute(n, name, path=("x", "y"), origin=None, receiver=None, **kw):
    fed = n.fed
    return st.signed_route(name, n.x_addr, 5353, list(path), fed.keys, origin or fed.origin,
                           receiver or fed.keys["r1"], **kw)


def invalid_by_reason(n):
    return n.peers()["x"]["invalid_by_reason"]


def test_valid_routes_are_kept_and_each_attack_is_rejected_with_its_reason(signed):
    mport = free_port("127.0.0.1")
    n = signed("require", extra=f"metrics 127.0.0.1 port {mport};\n")
    p = establish(n)
    fed = n.fed
    ok, _ = sroute(n, f"a.{GOOD}")
    p.send(nc.update(routes=[ok]))
    wait_for(lambda: n.route(f"a.{GOOD}") is not None, 10, "the valid route")
    r = n.route(f"a.{GOOD}")[0]
    assert r["signatures"] == "valid" and r["signature_reason"] == "" and r["path"] == ["x", "y"]
    # nothing refused yet: the peer's line counts states and names no reasons
    line = n.nbrc("show", "peers").stdout
    assert "signatures: valid 1" in line and "(" not in line, line

    attacks = []
    # an origin the trust file does not list for the suffix
    attacks.append(sroute(n, f"b.{GOOD}", origin=fed.rogue)[0])
    # a changed byte in the path: y renamed z after signing
    body, atts = sroute(n, f"c.{GOOD}")
    attacks.append(st.route_with(f"c.{GOOD}", n.x_addr, 5353, ["x", "z"], atts))
    # a hop removed: y's signature taken out with y (the origin signed y as the first router,
    # and x signed over y's link: bad signatures)
    body, atts = sroute(n, f"d.{GOOD}")
    attacks.append(st.route_with(f"d.{GOOD}", n.x_addr, 5353, ["x"], [atts[0], atts[2]]))
    # a route signed for another router, replayed to r1
    attacks.append(sroute(n, f"e.{GOOD}", receiver=fed.keys["z"])[0])
    # expired
    attacks.append(sroute(n, f"f.{GOOD}", expiry=int(time.time()) - 10, timestamp=int(time.time()) - 100)[0])
    # a router without a key in the trust file
    keys = dict(fed.keys, w=fed.stranger)
    attacks.append(st.signed_route(f"g.{GOOD}", n.x_addr, 5353, ["x", "w"], keys, fed.origin, fed.keys["r1"])[0])
    for bad in attacks:
        p.send(nc.update(routes=[bad]))
    # a valid signature over another name
    body, atts = sroute(n, f"h.{GOOD}")
    p.send(nc.update(routes=[st.route_with(f"i.{GOOD}", n.x_addr, 5353, ["x", "y"], atts)]))
    # a hop added: z inserted with a signature of its own over y's
    body, atts = sroute(n, f"j.{GOOD}")
    forged, fatts = sroute(n, f"j.{GOOD}", path=("x", "z", "y"))
    p.send(nc.update(routes=[st.route_with(f"j.{GOOD}", n.x_addr, 5353, ["x", "z", "y"],
                                           [atts[0], fatts[1], atts[1], atts[2]])]))
    # and a name nobody may originate is not-found
    p.send(nc.update(routes=[sroute(n, "elsewhere.example")[0]]))
    # a later valid route behind them all
    p.send(nc.update(routes=[sroute(n, f"z.{GOOD}")[0]]))
    wait_for(lambda: n.route(f"z.{GOOD}") is not None, 10, "the last valid route")
    got = invalid_by_reason(n)
    assert got["unauthorised origin"] == 1 and got["replayed to another peer"] == 1, got
    assert got["expired"] == 1 and got["unknown key"] == 1, got
    assert got["bad signature"] == 3, got          # the changed path, the hop removed, the other name
    assert got["path mismatch"] == 1, got          # the hop added: y's signature is for x, not z
    states = n.peers()["x"]["routes_by_state"]
    assert states == {"valid": 2, "invalid": 8, "not-found": 1, "unverified": 0}, states
    for name in "bcdefgij":
        assert n.route(f"{name}.{GOOD}") is None, name
    assert n.route("elsewhere.example") is None
    assert n.route(f"a.{GOOD}")[0]["signatures"] == "valid"
    assert n.peers()["x"]["state"] == "Established"
    log = n.log()
    # each refusal named: the peer, the name, the state and the reason
    assert f"peer x: route for e.{GOOD}. rejected: invalid: replayed to another peer" in log, log
    assert f"peer x: route for b.{GOOD}. rejected: invalid: unauthorised origin" in log, log
    # the same counts in Prometheus (promtool checks the text)
    m = scrape("127.0.0.1", mport)
    assert value(m, "nbrpd_peer_invalid_routes_total", peer="x", reason="bad signature") == 3
    assert value(m, "nbrpd_peer_invalid_routes_total", peer="x", reason="replayed to another peer") == 1
    assert value(m, "nbrpd_peer_signed_routes_total", peer="x", state="valid") == 2
    assert value(m, "nbrpd_peer_signed_routes_total", peer="x", state="not-found") == 1
    p.close()


def test_updates_of_a_peer_are_applied_in_order(signed):
    """A withdrawal right behind a route still being verified is not overtaken."""
    n = signed("require")
    p = establish(n)
    names = [f"n{i}.{GOOD}" for i in range(200)]
    routes = [sroute(n, m)[0] for m in names]
    p.send(nc.update(routes=routes), nc.update(withdrawn=names[:100]))
    p.send(nc.update(routes=[sroute(n, f"last.{GOOD}")[0]]))
    wait_for(lambda: n.route(f"last.{GOOD}") is not None, 20, "the last route")
    assert n.json("show", "route", "count")["names"] == 101
    assert n.route(names[0]) is None and n.route(names[150])[0]["signatures"] == "valid"
    p.close()


def test_a_session_that_ends_while_its_routes_are_verified(signed):
    """The waiting UPDATEs are dropped with the session; the next session starts clean."""
    n = signed("require")
    for attempt in range(3):
        p = establish(n)
        p.send(nc.update(routes=[sroute(n, f"n{i}.{GOOD}")[0] for i in range(300)]),
               nc.update(withdrawn=[f"n{i}.{GOOD}" for i in range(10)]))
        p.close()
        wait_for(lambda: n.peers()["x"]["state"] != "Established", 10, "the session to end")
        wait_for(lambda: n.json("show", "route", "count")["names"] == 0, 10, "no routes left")
    p = establish(n)
    p.send(nc.update(routes=[sroute(n, f"a.{GOOD}")[0]]))
    wait_for(lambda: n.route(f"a.{GOOD}") is not None, 10, "a route of the new session")
    p.close()


def test_prefer_keeps_others_below_valid_ones(signed):
    n = signed("prefer")
    p = establish(n)
    fed = n.fed
    p.send(nc.update(routes=[sroute(n, f"a.{GOOD}")[0], sroute(n, f"b.{GOOD}", origin=fed.rogue)[0],
                             nc.route(["plain.example"], n.x_addr, 5353, ["x"])]))
    wait_for(lambda: n.route("plain.example") is not None, 10, "the routes")
    a, b, plain = n.route(f"a.{GOOD}")[0], n.route(f"b.{GOOD}")[0], n.route("plain.example")[0]
    assert a["signatures"] == "valid" and a["local_pref"] == 100
    assert b["signatures"] == "invalid" and b["signature_reason"] == "unauthorised origin"
    assert b["local_pref"] == 0
    assert plain["signatures"] == "not-found" and plain["local_pref"] == 0
    p.close()


def test_a_key_file_others_can_read_is_refused(tmp_path):
    fed = Fed(tmp_path)
    fed.key_file.chmod(0o640)
    conf = tmp_path / "nbrpd.conf"
    conf.write_text(f'router-name "r1";\ninrp-address 127.0.0.1 port 53;\n{fed.config()}'
                    f'peer "x" {{ address 127.0.0.2; signatures require; }}\n')
    r = subprocess.run([NBRPD, "-f", "-c", str(conf)], capture_output=True, text=True, timeout=30)
    assert r.returncode == 1
    assert f"{fed.key_file}: mode 0640" in r.stderr, r.stderr
    # a peer with signatures needs a key
    conf.write_text('router-name "r1";\ninrp-address 127.0.0.1 port 53;\n'
                    'peer "x" { address 127.0.0.2; signatures prefer; }\n')
    r = subprocess.run([NBRPD, "-t", "-c", str(conf)], capture_output=True, text=True, timeout=30)
    assert r.returncode == 1 and "signatures need 'key-file'" in r.stderr, r.stderr


def test_a_trust_file_that_revokes_an_origin_moves_its_names_away(signed):
    """Polled: the stored routes are checked again, no session reset, nothing resent."""
    n = signed("require")
    p = establish(n)
    fed = n.fed
    other = st.Key()
    fed.write_trust(origins=[(GOOD, fed.origin), ("other.example", other)])
    wait_for(lambda: " read: 4 routers, 2 origins" in n.log(), 10, "the trust file polled")
    p.send(nc.update(routes=[sroute(n, f"a.{GOOD}")[0], sroute(n, f"b.{GOOD}")[0],
                             sroute(n, "c.other.example", origin=other)[0]]))
    wait_for(lambda: n.route("c.other.example") is not None, 10, "the valid routes")
    updates_in = n.peers()["x"]["updates_in"]
    # good.example's origin revoked: its names go within a poll, other.example stays
    fed.write_trust(origins=[("other.example", other)])
    wait_for(lambda: n.route(f"a.{GOOD}") is None and n.route(f"b.{GOOD}") is None, 10,
             "the revoked names withdrawn")
    assert n.route("c.other.example")[0]["signatures"] == "valid"
    peers = n.peers()
    assert peers["x"]["state"] == "Established" and peers["x"]["updates_in"] == updates_in
    assert peers["x"]["routes_by_state"]["not-found"] == 2
    # new routes under the new file
    p.send(nc.update(routes=[sroute(n, f"d.{GOOD}")[0]]))
    wait_for(lambda: n.peers()["x"]["routes_by_state"]["not-found"] == 3, 10, "d refused")
    # reload reads it too
    assert n.nbrc("reload").returncode == 0
    wait_for(lambda: n.log().count(" read: 4 routers, 1 origins") >= 2, 10, "the trust file read on reload")
    # a trust file that does not verify changes nothing
    fed.trust.write_text(fed.trust.read_text().replace("other.example", "tampered.example"))
    wait_for(lambda: "keeping the trust data in force" in n.log(), 10, "the bad file refused")
    p.send(nc.update(routes=[sroute(n, "e.other.example", origin=other)[0]]))
    wait_for(lambda: n.route("e.other.example") is not None, 10, "e under the file in force")
    assert n.route("c.other.example")[0]["signatures"] == "valid"
    p.close()


def test_a_route_whose_signatures_expire_is_checked_again(signed):
    n = signed("require", extra="signature-min-lifetime 0s;\n")
    p = establish(n)
    now = int(time.time())
    p.send(nc.update(routes=[sroute(n, f"short.{GOOD}", expiry=now + 2)[0], sroute(n, f"long.{GOOD}")[0]]))
    wait_for(lambda: n.route(f"long.{GOOD}") is not None, 10, "the routes")
    wait_for(lambda: n.route(f"short.{GOOD}") is None, 10, "the expired route withdrawn")
    assert n.peers()["x"]["invalid_by_reason"]["expired"] == 1
    assert n.route(f"long.{GOOD}")[0]["signatures"] == "valid"
    p.close()


def test_prefer_routes_change_state_with_the_trust_file(signed):
    n = signed("prefer")
    p = establish(n)
    fed = n.fed
    p.send(nc.update(routes=[sroute(n, f"a.{GOOD}")[0]]))
    wait_for(lambda: n.route(f"a.{GOOD}") is not None, 10, "the route")
    fed.write_trust(origins=[("other.example", fed.origin)])
    wait_for(lambda: n.route(f"a.{GOOD}")[0]["signatures"] == "not-found", 10, "a not-found")
    assert n.route(f"a.{GOOD}")[0]["local_pref"] == 0
    fed.write_trust()
    wait_for(lambda: n.route(f"a.{GOOD}")[0]["signatures"] == "valid", 10, "a valid again")
    assert n.route(f"a.{GOOD}")[0]["local_pref"] == 100
    p.close()


def test_a_name_set_changes_state_with_the_trust_file_name_by_name(signed):
    """A stored set's names are checked again one by one with the set's digest as stored:
    revoking one suffix moves only its names, and they come back valid without a verification."""
    n = signed("prefer")
    p = establish(n)
    fed = n.fed
    names = [f"a.{GOOD}", f"b.{GOOD}", "c.other.example"]
    fed.write_trust(origins=[(GOOD, fed.origin), ("other.example", fed.origin)])
    wait_for(lambda: "routers" in n.log(), 10, "the new trust file read")
    p.send(nc.update(routes=[sroute(n, names)[0]]))
    wait_for(lambda: all((n.route(x) or [{}])[0].get("signatures") == "valid" for x in names), 10, "the set")
    verified = n.json("show", "status")["signatures_verified"]
    fed.write_trust(origins=[(GOOD, fed.origin)])
    wait_for(lambda: n.route("c.other.example")[0]["signatures"] == "not-found", 10, "c not-found")
    assert all(n.route(x)[0]["signatures"] == "valid" for x in names[:2])
    fed.write_trust(origins=[(GOOD, fed.origin), ("other.example", fed.origin)])
    wait_for(lambda: n.route("c.other.example")[0]["signatures"] == "valid", 10, "c valid again")
    assert n.json("show", "status")["signatures_verified"] == verified
    p.close()


def test_a_chain_of_four_routers_signs_and_verifies_end_to_end(net, tmp_path):
    """r4 originates; r3, r2, r1 each verify what they get and sign a hop for the next."""
    names = ["r1", "r2", "r3", "r4"]
    anchor, keys = st.Key(), {n: st.Key() for n in names}
    trust = tmp_path / "trust"
    st.trust_file(trust, anchor, keys, [("svc.content", keys["r4"]), ("rogue.content", keys["r1"])])
    extra = {}
    for n in names:
        keys[n].write(tmp_path / f"{n}.key")
        extra[n] = (f'key-file "{tmp_path}/{n}.key";\ntrust-anchor "{anchor.text}";\n'
                    f'trust-file "{trust}";\n')
    edges = [("r1", "r2"), ("r2", "r3"), ("r3", "r4")]
    peer_extra = {(a, b): "signatures require; " for x, y in edges for a, b in ((x, y), (y, x))}
    rs = net(names, edges, extra=extra, peer_extra=peer_extra,
             content={"r4": f'content "svc.content" {{ server {SERVER_FAR} load 5; }}\n'
                            f'content "two.svc.content" {{ server {SERVER_FAR}; }}\n'
                            f'content "other.content" {{ server {SERVER_FAR}; }}\n',
                      "r3": f'content "rogue.content" {{ server {SERVER_FAR}; }}\n'})
    wait_for(lambda: (rs["r1"].nbrpd.route("svc.content") or [{}])[0].get("path") == ["r2", "r3", "r4"], 20,
             "svc.content at r1 through the chain")
    for n, path in (("r3", ["r4"]), ("r2", ["r3", "r4"]), ("r1", ["r2", "r3", "r4"])):
        best = rs[n].nbrpd.route("svc.content")[0]
        assert best["path"] == path and best["signatures"] == "valid", (n, best)
    # two names r4 may originate, signed as one set: both verify through one chain
    wait_for(lambda: (rs["r1"].nbrpd.route("two.svc.content") or [{}])[0].get("signatures") == "valid", 10,
             "two.svc.content valid at r1")
    assert rs["r1"].nbrpd.peers()["r2"]["invalid_by_reason"]["bad signature"] == 0
    wait_for(lambda: answer(rs["r1"], "www.svc.content") == [SERVER_FAR], 10, "r1's inrpd to answer")
    # names the trust file gives no origin: not-found, refused at the first router
    assert rs["r3"].nbrpd.route("other.content") is None
    assert rs["r3"].nbrpd.peers()["r4"]["routes_by_state"]["not-found"] >= 1
    # r3 may not originate rogue.content (r1's key may): r2 refuses it
    wait_for(lambda: rs["r2"].nbrpd.peers()["r3"]["invalid_by_reason"]["unauthorised origin"] >= 1, 10,
             "r2 to refuse rogue.content")
    assert rs["r2"].nbrpd.route("rogue.content") is None
    st2 = rs["r2"].nbrpd.json("show", "status")
    assert st2["signatures"] and st2["trust_file"] and st2["hops_signed"] >= 1 and st2["signatures_verified"] >= 3
    # r4: the set of svc.content and two.svc.content, and other.content (no origin line) alone
    assert rs["r4"].nbrpd.json("show", "status")["origins_signed"] >= 2
    assert rs["r1"].nbrpd.route("svc.content")[0]["signatures"] == "valid"
    for n in names[:-1]:
        peers = rs[n].nbrpd.peers()
        assert all(p["state"] == "Established" for p in peers.values()), (n, peers)


def routes_to(p, want):
    """The Routes a hand-written peer is sent until it has heard of every name in want."""
    got, heard = [], set()
    while not want <= heard:
        m = p.recv()
        assert m is not None, f"closed before {want - heard}"
        if m[0] == nc.UPDATE:
            for k, v in m[1]:
                if k == 2:
                    got.append(v)
                    heard |= {nc.text_name(w) for kk, w in nc.fields(v) if kk == 1}
    return got


def test_a_name_set_is_verified_once_and_passed_on_packed(inrpd_factory, nbrpd_factory, tmp_path):
    """x sends a signed set of names in one Route; r1 verifies its chain once, and tells z
    the names z may hear in one Route with the others listed, which z checks with the
    test's own implementation; altered sets are refused with their reason."""
    fed = Fed(tmp_path)
    x_addr, z_addr, r1_addr = unique_addrs(3)
    port, dns_port = free_port(r1_addr), free_port(r1_addr)
    n = nbrpd_factory("r1", f'router-name "r1";\nlisten {r1_addr} port {port};\n'
                      f"inrp-address {r1_addr} port {dns_port};\nhold-time 30s;\n{fed.config()}"
                      f'peer "x" {{ address {x_addr} port 1; passive; signatures require; authentication none; }}\n'
                      f'peer "z" {{ address {z_addr} port 1; passive; signatures require; authentication none; '
                      f'export deny "c.{GOOD}"; }}\n')
    z = nc.Peer(r1_addr, port, z_addr)
    z.send(nc.open_msg("z"))
    assert z.recv_until(nc.OPEN) is not None and z.recv_until(nc.KEEPALIVE) is not None
    z.send(nc.keepalive())
    assert z.recv_until(nc.END_OF_RIB) is not None
    x = nc.Peer(r1_addr, port, x_addr)
    x.send(nc.open_msg("x"))
    assert x.recv_until(nc.OPEN) is not None and x.recv_until(nc.KEEPALIVE) is not None
    x.send(nc.keepalive())

    routed = [f"{c}.{GOOD}" for c in "abcd"] + ["www.nowhere.example"]
    ok, _ = st.signed_route(routed[:4], x_addr, 5353, ["x", "y"], fed.keys, fed.origin, fed.keys["r1"],
                            others=[f"e.{GOOD}", routed[4]])
    # a name changed after signing, and a name added that the origin did not sign
    fg = [f"f.{GOOD}", f"g.{GOOD}"]
    _, atts = st.signed_route(fg, x_addr, 5353, ["x", "y"], fed.keys, fed.origin, fed.keys["r1"])
    digest = st.member_digest(fg)
    changed = st.route_with([f"f.{GOOD}", f"h.{GOOD}"], x_addr, 5353, ["x", "y"], atts, digest=digest)
    added = st.route_with(fg + [f"i.{GOOD}"], x_addr, 5353, ["x", "y"], atts, digest=digest)
    # a valid route of one name, the old subject, behind them
    single, _ = st.signed_route(f"j.{GOOD}", x_addr, 5353, ["x", "y"], fed.keys, fed.origin, fed.keys["r1"])
    x.send(nc.update(routes=[ok, changed, added, single]))
    wait_for(lambda: n.route(f"j.{GOOD}") is not None, 10, "the routes")
    for name in routed[:4]:
        r = n.route(name)[0]
        assert r["signatures"] == "valid" and r["path"] == ["x", "y"], (name, r)
    for name in ("f", "g", "h", "i", "e"):
        assert n.route(f"{name}.{GOOD}") is None, name
    got = invalid_by_reason(n)
    assert got["member digest mismatch"] == 2, got
    st_ = n.json("show", "status")
    assert st_["signatures_verified"] == 6, st_     # each chain once: the set's and j's, 3 each
    assert st_["chain_bytes"] > 0

    # z: the set's names it may hear in one Route, c (export deny) and e among the others
    routes = routes_to(z, {f"a.{GOOD}.", f"b.{GOOD}.", f"d.{GOOD}.", f"j.{GOOD}."})
    sets = [st.verify(b, fed.keys, fed.keys["z"]) for b in routes]
    by_names = {tuple(sorted(nc.text_name(w) for w in r["names"])): r for r in sets}
    r = by_names[(f"a.{GOOD}.", f"b.{GOOD}.", f"d.{GOOD}.")]
    assert sorted(nc.text_name(w) for w in r["others"]) == [f"c.{GOOD}.", f"e.{GOOD}.", "www.nowhere.example."]
    assert r["path"] == ["r1", "x", "y"] and len(r["atts"]) == 4
    assert by_names[(f"j.{GOOD}.",)]["digest"] is None
    assert n.json("show", "status")["hops_signed"] == 2      # one for the set, one for j
    x.close()
    z.close()


def test_end_of_rib_comes_after_the_routes_that_wait_for_our_signature(nbrpd_factory, tmp_path):
    """A new signed peer's table is complete at END-OF-RIB (a restarting peer sweeps what it was
    not told by then), also for the names whose hop for it the workers are still signing."""
    fed = Fed(tmp_path)
    fed.write_trust([(GOOD, fed.keys["r1"])])
    z_addr, r1_addr = unique_addrs(2)
    port, dns_port = free_port(r1_addr), free_port(r1_addr)
    names = [f"n{i}.{GOOD}" for i in range(20)] + [f"alone{i}.example" for i in range(20)]
    n = nbrpd_factory("r1", f'router-name "r1";\nlisten {r1_addr} port {port};\n'
                      f"inrp-address {r1_addr} port {dns_port};\nhold-time 30s;\n{fed.config()}"
                      f'peer "z" {{ address {z_addr} port 1; passive; signatures require; authentication none; }}\n'
                      + "".join(f'content "{x}" {{ server {SERVER_FAR}; }}\n' for x in names))
    z = nc.Peer(r1_addr, port, z_addr)
    try:
        z.send(nc.open_msg("z"))
        assert z.recv_until(nc.OPEN) is not None and z.recv_until(nc.KEEPALIVE) is not None
        z.send(nc.keepalive())
        heard = set()
        while True:
            m = z.recv()
            assert m is not None, f"closed before END-OF-RIB, heard {len(heard)}"
            if m[0] == nc.END_OF_RIB:
                break
            if m[0] == nc.UPDATE:
                for k, v in m[1]:
                    if k == 2:
                        assert st.verify(v, fed.keys, fed.keys["z"])["path"] == ["r1"]
                        heard |= {nc.text_name(w) for kk, w in nc.fields(v) if kk == 1}
        assert heard == {f"{x}." for x in names}
        assert n.json("show", "status")["hops_signed"] >= 21      # the set's and one a lone name
    finally:
        z.close()


def test_our_content_names_are_signed_as_sets(nbrpd_factory, tmp_path):
    """r1 originates three names as one signed set (one origin signature, one hop for z);
    a reload that adds a name re-signs that set only; z checks what it gets with sigtest."""
    fed = Fed(tmp_path)
    fed.write_trust([(GOOD, fed.keys["r1"])])
    z_addr, r1_addr = unique_addrs(2)
    port, dns_port = free_port(r1_addr), free_port(r1_addr)

    def body(names):
        return (f'router-name "r1";\nlisten {r1_addr} port {port};\n'
                f"inrp-address {r1_addr} port {dns_port};\nhold-time 30s;\n{fed.config()}"
                f'peer "z" {{ address {z_addr} port 1; passive; signatures require; authentication none; }}\n'
                + "".join(f'content "{n}" {{ server {SERVER_FAR}; }}\n' for n in names)
                + f'content "elsewhere.example" {{ server {SERVER_FAR}; }}\n')
    names = [f"{c}.{GOOD}" for c in "abc"]
    n = nbrpd_factory("r1", body(names))
    z = nc.Peer(r1_addr, port, z_addr)
    z.send(nc.open_msg("z"))
    assert z.recv_until(nc.OPEN) is not None and z.recv_until(nc.KEEPALIVE) is not None
    z.send(nc.keepalive())
    want = {f"{x}." for x in names}
    got = [st.verify(b, fed.keys, fed.keys["z"]) for b in routes_to(z, want | {"elsewhere.example."})]
    sets = [r for r in got if r["digest"] is not None]
    assert len(sets) == 1 and {nc.text_name(w) for w in sets[0]["names"]} == want and not sets[0]["others"]
    assert sets[0]["digest"] == st.member_digest(names) and sets[0]["path"] == ["r1"]
    # a name no origin line gives us: signed alone (not in a set that it would make invalid)
    alone = [r for r in got if r["digest"] is None]
    assert [nc.text_name(r["names"][0]) for r in alone] == ["elsewhere.example."]
    status = n.json("show", "status")
    assert status["origins_signed"] == 2 and status["hops_signed"] == 2, status
    # a name more: its set signed again, and z told the four names under the new signature
    names.append(f"d.{GOOD}")
    n.conf.write_text(f'control "{n.ctl}";\n' + body(names))
    assert n.nbrc("reload").returncode == 0
    got = [st.verify(b, fed.keys, fed.keys["z"]) for b in routes_to(z, {f"d.{GOOD}."})]
    r = [r for r in got if r["digest"] is not None][-1]
    assert r["digest"] == st.member_digest(names)
    wait_for(lambda: n.json("show", "status")["origins_signed"] == 3, 10, "the set signed again")
    # the old set's hop signature is not kept once no route is signed in the set
    wait_for(lambda: n.json("show", "status")["hop_signatures_kept"] == 2, 10, "the old set's hop dropped")
    z.close()


def test_an_unsigned_origin_withdrawal_leaves_signed_routes(signed):
    """Peer u (signatures off) sends an origin withdrawal of y's stamp 10 for a name x (signatures
    require) has a valid route for, ending at y with stamp 5: u's own route of it goes, x's stays,
    counted for u, logged and in `show peers`."""
    u_addr = unique_addrs(1)[0]
    n = signed("require", extra=f'peer "u" {{ address {u_addr} port 1; passive; }}\n')
    x = establish(n)
    u = nc.Peer(n.addr, n.port, u_addr)
    u.send(nc.open_msg("u"))
    assert u.recv_until(nc.OPEN) is not None and u.recv_until(nc.KEEPALIVE) is not None
    u.send(nc.keepalive())
    name = f"a.{GOOD}"
    x.send(nc.update(routes=[sroute(n, name, origin_seq=5)[0]]))
    u.send(nc.update(routes=[nc.route([name], u_addr, 5353, ["u", "y"], origin_seq=5)]))
    wait_for(lambda: len(n.route(name) or []) == 2, 10, "both routes")
    u.send(nc.update(origin_withdrawals=[(name, "y", 10)]))
    wait_for(lambda: n.peers()["u"]["origin_withdrawals_refused"] == 1, 10, "the withdrawal counted")
    routes = n.route(name)
    assert [r["from"] for r in routes] == ["x"] and routes[0]["signatures"] == "valid", routes
    assert "peer u: origin withdrawal of a.good.example. by y (stamp 10) not applied to 1 routes" in n.log()
    assert "unsigned origin withdrawals left 1 signed routes" in n.nbrc("show", "peers").stdout
    assert n.peers()["x"]["state"] == "Established" and n.peers()["u"]["state"] == "Established"
    x.close()
    u.close()


def test_a_huge_restart_time_is_capped_and_stale_routes_are_checked_again(signed):
    """x asks 2^32-1 s of graceful restart and is granted max-peer-restart-time (8 s); it vanishes
    without a NOTIFICATION: its routes stay, stale, and a trust file revoking one's origin withdraws
    that one at once (a stale route is checked again like any other); the rest go at the cap."""
    n = signed("require", extra="max-peer-restart-time 8s;\n")
    fed = n.fed
    other = st.Key()
    fed.write_trust(origins=[(GOOD, fed.origin), ("other.example", other)])
    wait_for(lambda: " read: 4 routers, 2 origins" in n.log(), 10, "the trust file polled")
    p = connect(n)
    p.send(nc.open_msg("x", restart_time=2**32 - 1))
    assert p.recv_until(nc.OPEN) is not None and p.recv_until(nc.KEEPALIVE) is not None
    p.send(nc.keepalive())
    assert p.recv_until(nc.END_OF_RIB) is not None
    peer = n.peers()["x"]
    assert peer["restart_time_asked_s"] == 2**32 - 1 and peer["restart_time_s"] == 8, peer
    assert peer["restart_time_capped"] == 1
    assert "peer x: asks 4294967295 s of graceful restart; 8 s granted (max-peer-restart-time)" in n.log()
    p.send(nc.update(routes=[sroute(n, f"a.{GOOD}")[0], sroute(n, "c.other.example", origin=other)[0]]))
    wait_for(lambda: n.route("c.other.example") and n.route(f"a.{GOOD}"), 10, "the routes")
    p.close()                       # no NOTIFICATION: x may be restarting
    wait_for(lambda: n.peers()["x"]["restarting"], 10, "x restarting")
    assert n.route("c.other.example")[0]["stale"] and n.route(f"a.{GOOD}")[0]["stale"]
    # good.example's origin revoked: its stale route is checked again and withdrawn (require)
    fed.write_trust(origins=[("other.example", other)])
    wait_for(lambda: n.peers()["x"]["routes_by_state"]["not-found"] == 1, 10, "the stale route checked again")
    assert n.route(f"a.{GOOD}") is None
    # the others go at the cap, not after 2^32-1 s
    wait_for(lambda: n.route("c.other.example") is None, 40, "the stale routes dropped at the cap")
    assert "peer x: restart time over, dropping its stale routes" in n.log()


def test_a_flood_of_forgeries_and_a_huge_for_key_leave_a_good_peer_flowing(signed):
    """Peer z (signatures require) sends the same 50 forged routes (its own hop's signature
    changed) again and again, and routes whose origin attestation carries a 1,000,000-byte
    for_key, while peer x sends 1,000 good routes: x's routes all arrive, z's are refused and
    counted (a forgery seen before costs no verification), none is in inrpd's FIB.  Prints the
    ratio of x's rate under attack to its rate alone (no timing is asserted)."""
    z_addr = unique_addrs(1)[0]
    n = signed("require", extra=f'peer "z" {{ address {z_addr} port 1; passive; signatures require; authentication none; }}\n')
    x = establish(n)
    x.send(nc.end_of_rib())
    z = nc.Peer(n.addr, n.port, z_addr)
    z.send(nc.open_msg("z"))
    assert z.recv_until(nc.OPEN) is not None and z.recv_until(nc.KEEPALIVE) is not None
    z.send(nc.keepalive())
    assert z.recv_until(nc.END_OF_RIB) is not None
    z.send(nc.end_of_rib())
    batches, per = 10, 100

    def good(tag):
        return [nc.update(routes=[sroute(n, f"{tag}{b}-{i}.{GOOD}")[0] for i in range(per)]) for b in range(batches)]

    def feed(updates):
        """x's names a second, from the first UPDATE sent to the last route valid."""
        before = n.peers()["x"]["routes_by_state"]["valid"]
        t0 = time.monotonic()
        for u in updates:
            x.send(u)
        wait_for(lambda: n.peers()["x"]["routes_by_state"]["valid"] == before + batches * per, 120,
                 "x's routes valid")
        return batches * per / (time.monotonic() - t0)

    alone = feed(good("calm"))
    forged = []
    for i in range(50):
        _, atts = sroute(n, f"bad{i}.{GOOD}", path=("z", "y"))
        hop = bytearray(atts[0])
        hop[4] ^= 1                 # a byte of z's own signature
        forged.append(st.route_with(f"bad{i}.{GOOD}", z_addr, 5353, ["z", "y"], [bytes(hop), atts[1], atts[2]]))
    flood = nc.update(routes=forged)
    _, atts = sroute(n, f"huge.{GOOD}", path=("z", "y"))
    huge = nc.update(routes=[st.route_with(f"huge.{GOOD}", z_addr, 5353, ["z", "y"],
                                           [atts[0], atts[1], atts[2] + _len_field(6, b"\xee" * 1000000)])])
    sent = {"flood": 0, "huge": 0}
    stop = threading.Event()

    def attack():
        while not stop.is_set():
            z.send(flood)
            sent["flood"] += 1
            if sent["flood"] % 10 == 0:
                z.send(huge)
                sent["huge"] += 1
    t = threading.Thread(target=attack)
    t.start()
    try:
        loaded = feed(good("loaded"))
    finally:
        stop.set()
        t.join(60)
    print(f"\nx's rate alone {alone:.0f}/s, under attack {loaded:.0f}/s: ratio {loaded / alone:.2f}; "
          f"z sent {sent['flood']} floods of 50 forgeries and {sent['huge']} huge for_keys")
    # every attack refused and counted, nothing of it kept
    wait_for(lambda: n.peers()["z"]["invalid_by_reason"]["bad signature"] == 50 * sent["flood"], 60,
             "every forgery counted")
    wait_for(lambda: n.peers()["z"]["invalid_by_reason"]["malformed attestation"] == sent["huge"], 60,
             "every huge for_key counted")
    status = n.json("show", "status")
    assert status["bad_signatures_cached"] >= 50 * (sent["flood"] - 1), status
    assert n.peers()["z"]["routes_by_state"]["valid"] == 0
    assert n.route(f"bad0.{GOOD}") is None and n.route(f"huge.{GOOD}") is None
    assert status["chain_bytes"] < 2000 * 1024, status      # no megabyte kept
    dns_at = SimpleNamespace(addr=n.addr, dns_port=n.inrpd.port)
    assert answer(dns_at, f"bad0.{GOOD}") == "REFUSED" and answer(dns_at, f"huge.{GOOD}") == "REFUSED"
    assert n.route(f"loaded9-99.{GOOD}")[0]["signatures"] == "valid"
    x.close()
    z.close()


def test_a_zero_load_does_not_make_a_longer_signed_path_win(signed):
    """x announces a.good.example over 2 routers with load 200 ms, z over 3 with load 0: by
    path length * 50 + load z would win (150 < 300); signed, the path length ranks first."""
    z_addr = unique_addrs(1)[0]
    n = signed("require", extra=f'peer "z" {{ address {z_addr} port 1; passive; signatures require; authentication none; }}\n')
    x = establish(n)
    z = nc.Peer(n.addr, n.port, z_addr)
    z.send(nc.open_msg("z"))
    assert z.recv_until(nc.OPEN) is not None and z.recv_until(nc.KEEPALIVE) is not None
    z.send(nc.keepalive())
    name = f"a.{GOOD}"
    z.send(nc.update(routes=[sroute(n, name, path=("z", "x", "y"), load_ms=0)[0]]))
    x.send(nc.update(routes=[sroute(n, name, load_ms=200)[0]]))
    wait_for(lambda: len(n.route(name) or []) == 2, 10, "both routes")
    routes = n.route(name)
    assert all(r["signatures"] == "valid" for r in routes), routes
    assert [(r["from"], r["rank"]) for r in routes if r["rank"]] == [("x", 1), ("z", 2)], routes
    # two signed paths of one length: the load breaks the tie
    z.send(nc.update(routes=[sroute(n, name, path=("z", "y"), load_ms=100)[0]]))
    wait_for(lambda: [r["from"] for r in n.route(name) if r["rank"] == 1] == ["z"], 10, "z's lower load first")
    x.close()
    z.close()


def utc(t):
    return time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(t))


def test_a_trust_file_only_moves_forward(signed):
    """An older file (its serial not larger: it would bring a revoked origin back), an expired one
    and one not valid yet are each refused, counted and logged, the file in force kept; one near
    its end is warned about, and when it ends every route is checked again (unverified, withdrawn
    under require)."""
    n = signed("require")
    fed = n.fed
    other = st.Key()
    both = [(GOOD, fed.origin), ("other.example", other)]
    old = fed.write_trust(origins=both)
    wait_for(lambda: f"read: 4 routers, 2 origins; serial {old}" in n.log(), 10, "the trust file polled")
    p = establish(n)
    p.send(nc.update(routes=[sroute(n, "c.other.example", origin=other)[0]]))
    wait_for(lambda: n.route("c.other.example") is not None, 10, "the route")
    current = fed.write_trust(origins=[("other.example", other)])         # good.example's origin revoked
    wait_for(lambda: n.json("show", "status")["trust_serial"] == current, 10, "the new file")

    def refused():
        return n.json("show", "status")["trust_files_refused"]
    # the older file, good.example's origin in it
    fed.write_trust(origins=both, serial=old)
    wait_for(lambda: refused()["not newer"] == 1, 10, "the older file refused")
    assert f"serial {old} is not larger than {current}, the file in force's (refused: not newer)" in n.log()
    p.send(nc.update(routes=[sroute(n, f"a.{GOOD}")[0]]))
    wait_for(lambda: n.peers()["x"]["routes_by_state"]["not-found"] == 1, 10, "a revoked origin still revoked")
    assert n.route(f"a.{GOOD}") is None
    # expired, and not valid yet, each with a larger serial
    now = int(time.time())
    fed.write_trust(origins=both, serial=current + 10, valid_from=utc(now - 7200), valid_until=utc(now - 3600))
    wait_for(lambda: refused()["expired"] == 1, 10, "the expired file refused")
    fed.write_trust(origins=both, serial=current + 11, valid_from=utc(now + 3600), valid_until=utc(now + 7200))
    wait_for(lambda: refused()["not yet valid"] == 1, 10, "the future file refused")
    assert "(refused: not yet valid); keeping the trust data in force" in n.log()
    status = n.json("show", "status")
    assert status["trust_serial"] == current and not status["trust_expiring"], status
    assert n.route("c.other.example")[0]["signatures"] == "valid"
    # a file that ends in a few seconds: warned about at once, every route checked again at its end
    fed.write_trust(origins=[("other.example", other)], serial=current + 12, valid_until=utc(now + 4))
    wait_for(lambda: n.json("show", "status")["trust_serial"] == current + 12, 10, "the short file")
    wait_for(lambda: "a newer one is needed before then" in n.log(), 10, "the warning")
    assert n.json("show", "status")["trust_expiring"]
    wait_for(lambda: n.route("c.other.example") is None, 30, "the route withdrawn when the file ended")
    assert "every route is unverified until a newer one is read" in n.log()
    assert n.peers()["x"]["routes_by_state"]["unverified"] == 1
    assert n.peers()["x"]["state"] == "Established"
    p.close()


def test_a_key_revoked_while_its_routes_are_verified_leaves_none_valid(signed):
    """Thousands of routes of one origin key arrive (the peer's UPDATEs verified batch after batch
    on the workers); the trust file that revokes the key is installed while a batch is in flight.
    That batch's verdicts, reached under the old file, are not applied: it is checked again under
    the new one, so no route of the revoked key is left valid (require: none kept).  Repeated until
    a batch was seen in flight (`stale_verdicts`), at most three times."""
    n = signed("require")
    fed = n.fed
    other = st.Key()
    p = establish(n)
    per_update, updates = (500, 4) if SANITIZED else (1500, 8)
    for attempt in range(3):
        fed.write_trust(origins=[(GOOD, fed.origin), ("other.example", other)])
        serial = n.json("show", "status")["trust_serial"]
        wait_for(lambda: n.json("show", "status")["trust_serial"] > serial, 10, "the key allowed")
        stale = n.json("show", "status")["stale_verdicts"]
        flood = [nc.update(routes=[sroute(n, f"n{i}.r{attempt}.other.example", origin=other)[0]
                                   for i in range(k * per_update, (k + 1) * per_update)])
                 for k in range(updates)]
        marker = f"m{attempt}.{GOOD}"
        sender = threading.Thread(target=p.send, args=(*flood, nc.update(routes=[sroute(n, marker)[0]])))
        sender.start()
        wait_for(lambda: n.json("show", "route", "count")["names"] > 0, 30, "the first batch applied")
        fed.write_trust(origins=[(GOOD, fed.origin)])                   # other's key revoked
        assert n.nbrc("reload").returncode == 0         # read now, not at the next poll
        sender.join(60)
        wait_for(lambda: n.route(marker) is not None, 60, "every UPDATE applied")
        # whatever was applied before the new file is withdrawn by its walk; nothing after it is kept
        wait_for(lambda: n.json("show", "route", "count")["names"] == attempt + 1, 30,
                 "no route of the revoked key")
        if n.json("show", "status")["stale_verdicts"] > stale:
            break
    else:
        pytest.fail("the trust file never came while a batch was verified")
    assert n.peers()["x"]["state"] == "Established"
    p.close()

def test_a_restart_does_not_take_back_an_older_trust_file(signed, tmp_path):
    """The serial installed is kept in the state-dir: a restarted nbrpd refuses a file older than
    it (a revoked origin brought back by an old file still inside its window), counted and logged,
    and runs with no trust data (unverified: refused under require) until a newer one comes."""
    state = tmp_path / "state"
    n = signed("require", extra=f'state-dir "{state}";\n')
    fed = n.fed
    base = n.json("show", "status")["trust_serial"]
    five = fed.write_trust(serial=base + 5)
    wait_for(lambda: n.json("show", "status")["trust_serial"] == five, 10, "serial 5 installed")
    assert (state / "trust-serial").read_text() == f"{five}\n"
    # the same file after a restart is taken
    assert n.stop() == 0
    n.restart()
    assert n.json("show", "status")["trust_serial"] == five
    # an older file, the origin of good.example still in it, after a restart: refused
    assert n.stop() == 0
    fed.write_trust(serial=five - 1)
    n.restart()
    status = n.json("show", "status")
    assert status["trust_serial"] == 0 and status["trust_files_refused"]["not newer"] == 1, status
    assert (f"serial {five - 1} is lower than {five}, the highest installed before "
            f"({state}/trust-serial; refused: not newer); routes are unverified") in n.log()
    p = establish(n)
    p.send(nc.update(routes=[sroute(n, f"a.{GOOD}")[0]]))
    wait_for(lambda: n.peers()["x"]["routes_by_state"]["unverified"] == 1, 10, "the route checked")
    assert n.route(f"a.{GOOD}") is None
    # a newer file is taken at the next poll, and kept
    six = fed.write_trust(serial=five + 1)
    wait_for(lambda: n.json("show", "status")["trust_serial"] == six, 10, "serial 6 installed")
    assert (state / "trust-serial").read_text() == f"{six}\n"
    p.close()
    # a kept serial that does not read is said so, and the file is taken (then kept again)
    for i, junk in enumerate(("07\n", "x\n", "99999999999999999999\n", f"{six}")):
        assert n.stop() == 0
        (state / "trust-serial").write_text(junk)
        n.restart()
        assert n.log().count(f"{state}/trust-serial: not a serial: any trust file valid now is taken") == i + 1
        assert n.json("show", "status")["trust_serial"] == six
        assert (state / "trust-serial").read_text() == f"{six}\n"


def test_a_new_trust_file_has_the_routes_it_refused_sent_again(signed):
    """Under require a refused route is not kept (show route says why); a trust file that now authorises its origin makes
    nbrpd ask the peer for its table again (ROUTE-REFRESH), and the route, sent again, is taken."""
    n = signed("require")
    p = establish(n)
    fed = n.fed
    other = st.Key()
    route = sroute(n, "c.other.example", origin=other)[0]
    p.send(nc.update(routes=[route]))
    wait_for(lambda: n.peers()["x"]["routes_by_state"]["not-found"] == 1, 10, "the route refused")
    assert n.route("c.other.example") is None
    # not kept, but shown with its reason, as BIRD shows filtered routes
    r = n.nbrc("show", "route", "c.other.example")
    assert r.returncode == 0 and "no route" in r.stdout, r
    assert "refused from x at " in r.stdout and "signatures not-found" in r.stdout, r.stdout
    view = n.json("show", "route", "c.other.example")
    assert view["routes"] == [] and view["refused"][0]["from"] == "x", view
    assert view["refused"][0]["signatures"] == "not-found", view
    fed.write_trust(origins=[(GOOD, fed.origin), ("other.example", other)])
    assert p.recv_until(nc.ROUTE_REFRESH) is not None, "no ROUTE-REFRESH after the new trust file"
    assert n.peers()["x"]["trust_refreshes"] == 1
    assert "peer x: asking for its table again, to check the 1 routes refused so far" in n.log()
    p.send(nc.update(routes=[route]))
    wait_for(lambda: n.route("c.other.example") is not None, 10, "the route taken under the new file")
    assert n.route("c.other.example")[0]["signatures"] == "valid"
    # taken: its refusal is forgotten
    assert "refused" not in n.json("show", "route", "c.other.example")
    p.close()
