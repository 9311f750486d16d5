"""Versions bound to signatures (docs/AGGREGATES.md, "Which version, from
where"): a transfer source is whatever address a route names, and the
routes' `aggregate_source` is signed by nobody.  A malicious source
answers a valid route for version 3 with a forged newer version (serial
3 + 2^31 - 1), with forged members under the real serial, or with a
version other than the one offered: each is refused before anything is
stored, counted, named in the log and in `nbrc show aggregate`, and
inrpd never answers a forged member; the real version is then fetched
and routed.  A forged version stored before any valid route named one
(from a route without signatures) is thrown away and fetched whole, and
the next version is a diff on the real one; a forged diff is refused
like a forged set; and a newer version offered by a peer with
signatures off does not displace the one valid routes name.

Real nbrpd and inrpd; the peer is hand-written (nbrp_client, sigtest),
the sources are aggtool's transfer server."""

import json
import signal
import socket
import threading
from types import SimpleNamespace

import dns.exception
import dns.flags
import dns.message
import dns.rdatatype
import dns.rrset
import pytest

from conftest import free_port, wait_for
import nbrp_client as nc
import sigtest as st
from test_aggregate_xfr import AGG, aggtool, names, servers, write_members  # noqa: F401  (servers: a fixture)
from test_nbrpd import answer, establish, unique_addrs
from test_nbrpd_signatures import GOOD, signed  # noqa: F401  (signed: a fixture)
from test_nbrpd_signed_aggregates import agg_routes

REAL = names(20, 1020)                  # version 3, as the origin signed it
FORGED = ["victim.example.", "m500.example."] + names(5000, 5010)
HIJACKED = "victim.example"             # only among the forged members
FORGED_NEWER = (3 + 2**31 - 1) % 2**32
SERVER = "192.0.2.77"                   # what the next hop answers for a member


class Serving:
    """A socket served by a thread of its own until close(): run() handles one event
    (timing out every 0.2 s so the thread sees close)."""

    def serve(self, sock):
        self.sock = sock
        self.sock.settimeout(0.2)
        self.stop = threading.Event()
        self.thread = threading.Thread(target=self.loop, daemon=True)
        self.thread.start()

    def loop(self):
        while not self.stop.is_set():
            self.run()

    def close(self):
        self.stop.set()
        self.thread.join(5)
        self.sock.close()


class NextHop(Serving):
    """The aggregate's next hop: a DNS server on the peer's address answering every A query with
    SERVER, so that a member inrpd routes through the aggregate is seen answered."""

    def __init__(self, addr):
        self.addr, self.port = addr, free_port(addr)
        sock = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
        sock.bind((addr, self.port))
        self.serve(sock)

    def run(self):
        try:
            data, peer = self.sock.recvfrom(65535)
            q = dns.message.from_wire(data)
        except (socket.timeout, dns.exception.DNSException):
            return
        r = dns.message.make_response(q)
        r.flags |= dns.flags.AA
        if q.question and q.question[0].rdtype == dns.rdatatype.A:
            r.answer.append(dns.rrset.from_text(q.question[0].name, 0, "IN", "A", SERVER))
        self.sock.sendto(r.to_wire(), peer)


@pytest.fixture
def world(signed, servers, tmp_path):
    """r1 (nbrpd, inrpd) with peer x (`signatures mode`), the real source serving version 3 of
    agg.example, and source(serial, members) starting another (the attacker's)."""
    made = []

    def source(serial, members, label):
        state, file = tmp_path / label, tmp_path / f"{label}.txt"
        write_members(file, members)
        aggtool("define", state, AGG, file, serial)
        s = servers(state, file)
        s.members_file = file
        return s

    def start(mode, with_z=False):
        """with_z: a second peer, z, with signatures off."""
        real = source(3, REAL, "real")
        z_addr = unique_addrs(1)[0]
        z_conf = f'peer "z" {{ address {z_addr} port 1; passive; signatures off; }}\n' if with_z else ""
        n = signed(mode, extra=f'state-dir "{tmp_path}/state";\n{z_conf}')
        fed = n.fed
        fed.write_trust(origins=[(GOOD, fed.origin), (AGG, fed.origin), ("example", fed.origin)])
        wait_for(lambda: " read: 4 routers, 3 origins" in n.log(), 10, "the trust file polled")
        hop = NextHop(n.x_addr)
        made.append(hop)
        p = establish(n)
        z = None
        if with_z:
            z = nc.Peer(n.addr, n.port, z_addr)
            z.send(nc.open_msg("z"))
            assert z.recv_until(nc.OPEN) is not None and z.recv_until(nc.KEEPALIVE) is not None
            z.send(nc.keepalive())
            assert z.recv_until(nc.END_OF_RIB) is not None
            z.send(nc.end_of_rib())
            made.append(z)
        p.send(nc.end_of_rib())         # inrpd's FIB is in service once every peer's table is in

        def route(src, version=3, members=REAL, signed_=True):
            at = f"{src.addr} {src.port}"
            if not signed_:
                return st.route_with(AGG, n.x_addr, hop.port, ["x", "y"], [], aggregate=AGG, version=version,
                                     source=at)
            return st.signed_route(AGG, n.x_addr, hop.port, ["x", "y"], fed.keys, fed.origin, fed.keys["r1"],
                                   aggregate=AGG, version=version, source=at,
                                   digest=st.member_digest(members))[0]
        def view():
            """`show aggregate` (an aggregate no route named yet: {})."""
            r = n.nbrc("--json", "show", "aggregate", AGG)
            return json.loads(r.stdout) if r.returncode == 0 else {}
        dns_at = SimpleNamespace(addr=n.addr, dns_port=n.inrpd.port)
        return SimpleNamespace(n=n, p=p, z=z, z_addr=z_addr, hop=hop, real=real, source=source, route=route, view=view,
                               ask=lambda name: answer(dns_at, name))
    yield start
    for h in made:
        h.close()


class Spy(Serving):
    """A TCP front for a transfer source that counts the connections it is asked for, and passes
    each on to the source (so that what it serves would be fetched)."""

    def __init__(self, to):
        self.to = (to.addr, to.port)
        self.addr = unique_addrs(1)[0]
        self.port = free_port(self.addr)
        self.connections = 0
        self.serve(socket.create_server((self.addr, self.port)))

    def run(self):
        try:
            c, _ = self.sock.accept()
        except socket.timeout:
            return
        self.connections += 1
        u = socket.create_connection(self.to)
        for a, b in ((c, u), (u, c)):
            threading.Thread(target=self.pipe, args=(a, b), daemon=True).start()

    @staticmethod
    def pipe(a, b):
        try:
            while data := a.recv(65536):
                b.sendall(data)
        except OSError:
            pass
        for s in (a, b):
            try:
                s.shutdown(socket.SHUT_RDWR)
            except OSError:
                pass


@pytest.fixture
def spy():
    made = []

    def start(to):
        made.append(Spy(to))
        return made[-1]
    yield start
    for s in made:
        s.close()


def real_version_routed(w):
    """The attacker's source replaced by the real one in the route: version 3 fetched and routed."""
    w.p.send(nc.update(routes=[w.route(w.real)]))
    wait_for(lambda: w.view()["version"] == 3, 20, "the real version stored")
    wait_for(lambda: w.ask("m500.example") == [SERVER], 10, "a real member answered")
    assert w.ask(HIJACKED) == "REFUSED"
    assert w.view()["members"] == len(REAL)
    assert agg_routes(w.n, AGG)[0]["signatures"] == "valid"


@pytest.mark.parametrize("mode", ["require", "prefer"])
def test_a_forged_newer_version_is_refused_before_it_is_stored(world, mode):
    """The attack of serial arithmetic: the source answers version 3's route with version
    3 + 2^31 - 1 (newer than 3) and its own members."""
    w = world(mode)
    evil = w.source(FORGED_NEWER, FORGED, "evil")
    w.p.send(nc.update(routes=[w.route(evil)]))
    # refused, and tried again later (with backoff), each time refused
    wait_for(lambda: w.view().get("fetch_wrong_version", 0) >= 2, 20, "the forged version refused twice")
    view = w.view()
    assert view["version"] is None and view["members"] == 0, view
    assert view["last_transfer"]["error"] == f"version {FORGED_NEWER} is not the version offered (3); refused"
    log = w.n.log()
    assert (f"aggregate {AGG}. from {evil.addr}#{evil.port}: AXFR failed" in log and
            f"version {FORGED_NEWER} is not the version offered (3); refused; holding version none" in log)
    text = w.n.nbrc("show", "aggregate", AGG).stdout
    assert "not the version offered" in text and str(FORGED_NEWER) in text, text
    assert w.n.json("show", "status")["fetch_wrong_version"] >= 2
    assert w.ask(HIJACKED) == "REFUSED" and w.ask("m500.example") == "REFUSED"
    real_version_routed(w)
    assert w.n.json("show", "aggregate", AGG)["fetch_digest_mismatch"] == 0


@pytest.mark.parametrize("mode", ["require", "prefer"])
def test_forged_members_under_the_real_serial_are_refused_before_they_are_stored(world, mode):
    """The source answers with version 3 itself, but its own members: their digest is not the one
    the origin signed."""
    w = world(mode)
    evil = w.source(3, FORGED, "evil")
    w.p.send(nc.update(routes=[w.route(evil)]))
    wait_for(lambda: w.view().get("fetch_digest_mismatch", 0) >= 1, 20, "the forged members refused")
    view = w.view()
    assert view["version"] is None, view
    msg = "the members of version 3 are not the ones signed (member digest mismatch); refused"
    assert view["last_transfer"]["error"] == msg, view
    assert f"aggregate {AGG}. from {evil.addr}#{evil.port}: AXFR failed" in w.n.log() and msg in w.n.log()
    text = w.n.nbrc("show", "aggregate", AGG).stdout
    assert "member digest mismatch" in text and "not the ones signed" in text, text
    assert w.n.json("show", "status")["fetch_digest_mismatch"] >= 1
    assert w.ask(HIJACKED) == "REFUSED" and w.ask("m500.example") == "REFUSED"
    # the route is right (its signature is good); what was served is not
    assert w.n.peers()["x"]["routes_by_state"]["valid"] >= 1
    real_version_routed(w)


@pytest.mark.parametrize("served_version", [2, 4])
def test_a_version_other_than_the_one_offered_is_refused(world, served_version):
    """The route offers version 3; the source has an older or a newer one (real-looking members)."""
    w = world("require")
    evil = w.source(served_version, names(20, 1020 + served_version) + ["victim.example."], "other")
    w.p.send(nc.update(routes=[w.route(evil)]))
    wait_for(lambda: w.view().get("fetch_wrong_version", 0) >= 1, 20, "the other version refused")
    view = w.view()
    assert view["version"] is None, view
    why = f"version {served_version} is not the version offered (3); refused"
    assert view["last_transfer"]["error"] == why and why in w.n.log(), view
    assert w.ask(HIJACKED) == "REFUSED"
    real_version_routed(w)


@pytest.mark.parametrize("forged", [3, FORGED_NEWER])
def test_a_forged_version_stored_before_a_valid_route_is_thrown_away_and_fetched_whole(world, forged):
    """Under prefer, a route without signatures (the only route) has the forged version fetched and
    stored: nothing signed says otherwise.  Then the valid route for version 3 arrives: what is held
    (version 3 with other members, or a version it does not name, newer) is out of service at once,
    version 3 is fetched whole from the source the valid route names, and version 4 is a diff on it."""
    w = world("prefer")
    evil = w.source(forged, FORGED, "evil")
    w.p.send(nc.update(routes=[w.route(evil, version=forged, signed_=False)]))
    wait_for(lambda: w.view().get("version") == forged, 20, "the unsigned route's version stored")
    wait_for(lambda: w.ask(HIJACKED) == [SERVER], 10, "the forged member routed (nothing signed)")

    w.p.send(nc.update(routes=[w.route(w.real)]))
    wait_for(lambda: w.view()["versions_discarded"] == 1, 20, "the version held thrown away")
    wait_for(lambda: w.view()["version"] == 3 and not w.view()["discarded"], 20, "version 3 fetched whole")
    assert w.view()["last_transfer"]["kind"] == "AXFR", w.view()
    assert (f"aggregate {AGG}.: version {forged} held is not what the valid routes sign (version 3): "
            "out of service, fetched whole") in w.n.log()
    wait_for(lambda: w.ask("m500.example") == [SERVER], 10, "a real member answered")
    wait_for(lambda: w.ask(HIJACKED) == "REFUSED", 10, "the forged member gone")
    assert w.view()["members"] == len(REAL)

    # the origin's next version: a diff on the real base, checked against its signed digest
    v4 = REAL[10:] + ["fresh.example."]
    write_members(w.real.members_file, v4)
    w.real.signal(signal.SIGHUP)
    wait_for(lambda: "as version 4" in w.real.logfile.read_text(), 10, "version 4 served")
    w.p.send(nc.update(routes=[w.route(w.real, version=4, members=v4)]))
    wait_for(lambda: w.view()["version"] == 4, 20, "version 4 stored")
    assert w.view()["last_transfer"]["kind"] == "IXFR", w.view()
    wait_for(lambda: w.ask("fresh.example") == [SERVER], 10, "the new member answered")
    assert w.ask(HIJACKED) == "REFUSED"
    assert w.view()["fetch_digest_mismatch"] == 0


@pytest.mark.parametrize("mode", ["require", "prefer"])
def test_the_version_valid_routes_name_wins_over_a_newer_unsigned_one(world, mode):
    """x's valid route names version 3 (the real source); z, a peer with signatures off, then
    offers 3 + 2^31 - 1 from the attacker's source: newer, but signed by nobody.  The version
    fetched and routed stays 3, and the attacker's source is never asked."""
    w = world(mode, with_z=True)
    evil = w.source(FORGED_NEWER, FORGED, "evil")
    w.p.send(nc.update(routes=[w.route(w.real)]))
    wait_for(lambda: w.view().get("version") == 3, 20, "version 3 stored")
    fetches = w.view()["fetches"]
    # z's route, then a name behind it on the same session: once the name is in, so is the route
    unsigned = st.route_with(AGG, w.z_addr, 5353, ["z", "a", "b"], [], aggregate=AGG, version=FORGED_NEWER,
                             source=f"{evil.addr} {evil.port}")
    w.z.send(nc.update(routes=[unsigned]))
    w.z.send(nc.update(routes=[st.route_with(f"marker.{GOOD}", w.z_addr, 5353, ["z"], [])]))
    wait_for(lambda: w.n.route(f"marker.{GOOD}") is not None, 10, "z's routes imported")
    routes = agg_routes(w.n, AGG)
    assert {r["aggregate_version"] for r in routes} == {3, FORGED_NEWER}, routes
    view = w.view()
    assert view["version"] == 3 and view["offered_version"] == 3 and view["fetches"] == fetches, view
    assert "transfer of" not in evil.logfile.read_text()
    assert w.ask("m500.example") == [SERVER] and w.ask(HIJACKED) == "REFUSED"


def test_a_forged_diff_is_refused_and_the_real_one_applied(world):
    """Version 3 is held (real).  The route for version 4 names a source whose IXFR from 3 adds the
    forged members: the diff is applied to a copy of the set, its digest is not the signed one,
    nothing is stored; the real source's diff is then stored as version 4."""
    w = world("require")
    w.p.send(nc.update(routes=[w.route(w.real)]))
    wait_for(lambda: w.view().get("version") == 3, 20, "version 3 stored")
    v4 = REAL[10:] + ["fresh.example."]
    evil = w.source(3, REAL, "evil")
    write_members(evil.members_file, REAL[10:] + FORGED)
    evil.signal(signal.SIGHUP)
    wait_for(lambda: "as version 4" in evil.logfile.read_text(), 10, "the forged version 4 served")
    w.p.send(nc.update(routes=[w.route(evil, version=4, members=v4)]))
    wait_for(lambda: w.view()["fetch_digest_mismatch"] >= 1, 20, "the forged diff refused")
    view = w.view()
    assert view["version"] == 3 and view["members"] == len(REAL), view
    assert view["last_transfer"]["kind"] == "IXFR", view
    assert "the members of version 4 are not the ones signed (member digest mismatch); refused" in w.n.log()
    assert w.ask(HIJACKED) == "REFUSED" and w.ask("m500.example") == [SERVER]

    write_members(w.real.members_file, v4)
    w.real.signal(signal.SIGHUP)
    wait_for(lambda: "as version 4" in w.real.logfile.read_text(), 10, "the real version 4 served")
    w.p.send(nc.update(routes=[w.route(w.real, version=4, members=v4)]))
    wait_for(lambda: w.view()["version"] == 4, 20, "the real version 4 stored")
    assert w.view()["last_transfer"]["kind"] == "IXFR" and w.view()["members"] == len(v4)
    wait_for(lambda: w.ask("fresh.example") == [SERVER], 10, "the new member answered")
    assert w.ask(HIJACKED) == "REFUSED" and w.ask("m25.example") == "REFUSED"  # gone in version 4


UNSIGNED_SOURCE = "unsigned aggregate source"


@pytest.mark.parametrize("mode", ["require", "prefer"])
def test_a_relayed_route_naming_its_own_source_is_never_fetched_from(world, spy, mode):
    """x passes on the origin's valid route for version 3, whose origin signed the real source,
    but names its own: a server serving forged members (behind a spy counting connections).  The
    route is invalid, unsigned aggregate source, counted, logged and in `show aggregate`; under
    require it is refused, under prefer version 3 is fetched from the signed source only.  x then
    changing the signed source as well breaks the origin's signature.  Nobody ever connects to
    x's source, and inrpd never answers a forged member."""
    w = world(mode)
    evil = spy(w.source(3, FORGED, "evil"))
    real_at, evil_at = f"{w.real.addr} {w.real.port}", f"{evil.addr} {evil.port}"
    fed = w.n.fed

    def relayed(signed_source):
        return st.signed_route(AGG, w.n.x_addr, w.hop.port, ["x", "y"], fed.keys, fed.origin, fed.keys["r1"],
                               aggregate=AGG, version=3, source=evil_at, signed_source=signed_source,
                               digest=st.member_digest(REAL))
    w.p.send(nc.update(routes=[relayed(real_at)[0]]))
    wait_for(lambda: w.n.peers()["x"]["invalid_by_reason"][UNSIGNED_SOURCE] == 1, 20, "the route refused")
    assert (f"aggregate {AGG}.: version 3 from peer x names source {evil_at}, not {real_at}, the one its "
            "origin signed") in w.n.log()
    if mode == "require":
        assert agg_routes(w.n, AGG) == []
    else:
        r = agg_routes(w.n, AGG)[0]
        assert r["signatures"] == "invalid" and r["signature_reason"] == UNSIGNED_SOURCE, r
        assert r["local_pref"] == 0 and r["aggregate_source"] == real_at, r
        wait_for(lambda: w.view().get("version") == 3, 20, "version 3 fetched from the signed source")
        assert w.view()["offered_by"] == real_at
        wait_for(lambda: w.ask("m500.example") == [SERVER], 10, "a real member answered")

    if mode == "require":
        # the signed source rewritten too: the origin signed another
        body, atts = relayed(real_at)
        forged = st.route_with(AGG, w.n.x_addr, w.hop.port, ["x", "y"], atts, aggregate=AGG, version=3,
                               source=evil_at, signed_source=evil_at, digest=st.member_digest(REAL))
        w.p.send(nc.update(routes=[forged]))
        wait_for(lambda: w.n.peers()["x"]["invalid_by_reason"]["bad signature"] == 1, 20, "the forgery refused")
        assert agg_routes(w.n, AGG) == []

    real_version_routed(w)
    view = w.view()
    assert view["unsigned_sources"] == 1 and view["fetch_digest_mismatch"] == 0, view
    text = w.n.nbrc("show", "aggregate", AGG).stdout
    assert f"1 signed routes named another source than the one their origin signed ({UNSIGNED_SOURCE})" in text
    assert evil.connections == 0
    assert w.ask(HIJACKED) == "REFUSED"
