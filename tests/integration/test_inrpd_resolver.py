"""inrpd as an ISP's resolver (issue 16): routed names are ours (NODATA
with an SOA, configured records, never the upstream's NXDOMAIN), retries
on SERVFAIL and REFUSED from a hop, NOTIMP, NSID and Extended DNS
Errors.  Real inrpd processes, a real Unbound, dnspython, dig and kdig."""

import os
import subprocess

import dns.edns
import dns.flags
import dns.message
import dns.opcode
import dns.query
import dns.rcode
import dns.rdataclass
import dns.rdatatype
import pytest

from conftest import free_port, loopback_addr, wait_for
from test_inrpd_forward import (SERVER, Unbound, addrs, counters, hops, inrp_query_option,
                                router, route_via)

NSID = 3
EDE = 15

# Unbound says the content names do not exist: what a public resolver says
# of names that live only in content routing.
UPSTREAM_DATA = [
    "upstream.test. 300 IN SOA ns.upstream.test. admin.upstream.test. 1 3600 600 86400 300",
    "a.upstream.test. 300 IN A 192.0.2.1",
]
UPSTREAM_EXTRA = ['local-zone: "content." static']


@pytest.fixture
def upstream(tmp_path):
    u = Unbound(tmp_path, UPSTREAM_DATA, UPSTREAM_EXTRA)
    yield u
    u.stop()


def ede_of(r):
    """(info-code, extra-text) of the Extended DNS Error in r, or None."""
    for o in r.options:
        if o.otype == EDE:
            return int(o.code), o.text
    return None


def option(r, code):
    for o in r.options:
        if o.otype == code:
            return bytes(o.data)
    return None


def soa_only(r):
    assert r.rcode() == dns.rcode.NOERROR and r.answer == [], r
    assert [x.rdtype for x in r.authority] == [dns.rdatatype.SOA], r
    return r.authority[0]


RECORDS = f'''route "shop.content" {{ server {SERVER}; }}
route "rec.shop.content" {{
    server {SERVER};
    record HTTPS "1 . alpn=h2,h3";
    record TXT "\\"v=content one\\"";
    record TXT second;
}}
'''


@pytest.fixture
def path(inrpd_factory, tmp_path, upstream):
    """first -> mid -> last, the last next to the servers; every router has
    the NXDOMAIN-saying Unbound as its upstream."""
    up = f"upstream {upstream.addr} port {upstream.port};\n"
    last = router(inrpd_factory, tmp_path, up + RECORDS)
    mid = router(inrpd_factory, tmp_path, up + route_via("shop.content", last))
    first = router(inrpd_factory, tmp_path, up + route_via("shop.content", mid))
    return first, mid, last


def test_the_upstream_really_says_nxdomain(upstream):
    q = dns.message.make_query("www.shop.content", "A")
    assert dns.query.udp(q, upstream.addr, port=upstream.port, timeout=5).rcode() == dns.rcode.NXDOMAIN


@pytest.mark.parametrize("at", ["last", "first"])
def test_routed_names_are_nodata_never_nxdomain(path, at):
    first, mid, last = path
    d = last if at == "last" else first
    before = [counters(x) for x in path]
    assert addrs(d.udp("www.shop.content")) == [SERVER]
    for qtype in ("AAAA", "MX", "SOA", "HTTPS", "TXT", "CAA"):
        soa = soa_only(d.udp("www.shop.content", qtype))
        assert str(soa.name) == "shop.content." and soa.ttl == soa[0].minimum == 5
    # TCP and a redirect-free name at the route itself
    soa_only(d.tcp("shop.content", "MX"))
    # the SOA of the route's own name is an answer
    r = d.udp("shop.content", "SOA")
    assert r.rcode() == dns.rcode.NOERROR and r.answer[0].rdtype == dns.rdatatype.SOA
    after = [counters(x) for x in path]
    # no routed question reached the upstream; the last router answered them all
    for b, a in zip(before, after):
        assert a["fallback"] == b["fallback"]
    assert after[2]["nodata"] - before[2]["nodata"] == 7
    if d is first:
        assert after[0]["forwarded"] - before[0]["forwarded"] == 9


@pytest.mark.parametrize("at", ["last", "first"])
def test_configured_records_are_answered(path, at):
    first, mid, last = path
    d = last if at == "last" else first
    r = d.udp("www.rec.shop.content", "HTTPS")
    assert r.rcode() == dns.rcode.NOERROR and not r.authority
    (rrset,) = r.answer
    assert rrset.rdtype == dns.rdatatype.HTTPS and str(rrset.name) == "www.rec.shop.content."
    assert rrset[0].priority == 1 and "alpn=\"h2,h3\"" in rrset[0].to_text()
    # types it has none of: NODATA as anywhere else
    assert str(soa_only(d.udp("www.rec.shop.content", "MX")).name) == "rec.shop.content."
    r = d.udp("rec.shop.content", "TXT")
    assert sorted(b"".join(x.strings) for x in r.answer[0]) == [b"second", b"v=content one"]
    # dig and kdig, as a user would
    out = subprocess.run(["dig", "+short", "+tries=1", "+time=5", "-p", str(d.port), f"@{d.addr}",
                          "a.rec.shop.content", "HTTPS"], capture_output=True, text=True, timeout=30)
    assert out.stdout.split()[:2] == ["1", "."], out
    out = subprocess.run(["kdig", "+short", "+retry=0", "+timeout=5", "-p", str(d.port), f"@{d.addr}",
                          "b.rec.shop.content", "TXT"], capture_output=True, text=True, timeout=30)
    assert '"second"' in out.stdout and '"v=content one"' in out.stdout, out


def test_record_configuration_errors(inrpd_factory):
    from conftest import run_inrpd
    import pathlib
    import tempfile
    bad = {
        'record A "192.0.2.1";': "addresses come from the servers",
        'record HTTPS "not a record";': "record HTTPS",
        'record BOGUS "x";': "record BOGUS",
    }
    with tempfile.TemporaryDirectory() as tmp:
        conf = pathlib.Path(tmp) / "c.conf"
        for line, why in bad.items():
            conf.write_text(f'listen 127.0.0.1 port 5353;\nroute "x.content" {{\n'
                            f'  server 192.0.2.9;\n  {line}\n}}\n')
            r = run_inrpd("-t", "-c", str(conf))
            assert r.returncode != 0 and why in r.stderr and "c.conf:4" in r.stderr, r.stderr
        conf.write_text('listen 127.0.0.1 port 5353;\nroute "x.content" {\n'
                        '  router 192.0.2.9;\n  record TXT "x";\n}\n')
        r = run_inrpd("-t", "-c", str(conf))
        assert r.returncode != 0 and "no server" in r.stderr, r.stderr


# ---- retries ----

def test_a_servfailing_middle_router_is_routed_around(inrpd_factory, tmp_path):
    dest = router(inrpd_factory, tmp_path, f'route "svc.retry.content" {{ server {SERVER}; }}\n')
    dead = loopback_addr()
    # mid's only route is dead: it answers SERVFAIL once its short budget is spent
    mid = router(inrpd_factory, tmp_path,
                 f'query-timeout 200ms;\nroute "retry.content" {{ router {dead} port {free_port(dead)}; }}\n')
    alt = router(inrpd_factory, tmp_path, route_via("retry.content", dest))
    first = router(inrpd_factory, tmp_path, route_via("retry.content", mid, alt))
    r = first.udp("a.svc.retry.content", timeout=5)
    assert r.rcode() == dns.rcode.NOERROR and addrs(r) == [SERVER]
    assert counters(mid)["servfail"] == 1
    assert counters(first)["hop_failed"] == 1
    h = hops(first)
    assert h[(mid.addr, mid.port)]["failures"] == 1 and h[(alt.addr, alt.port)]["answers"] == 1


def test_a_refusing_hop_is_routed_around(inrpd_factory, tmp_path):
    # an Unbound that refuses everyone stands where a next router should be
    refusing = Unbound(tmp_path, UPSTREAM_DATA, ["access-control: 127.0.0.0/8 refuse"])
    try:
        dest = router(inrpd_factory, tmp_path, f'route "svc.refuse.content" {{ server {SERVER}; }}\n')
        first = router(inrpd_factory, tmp_path,
                       f'route "refuse.content" {{\n    router {refusing.addr} port {refusing.port};\n'
                       f'    router {dest.addr} port {dest.port};\n}}\n')
        r = first.udp("svc.refuse.content", timeout=5)
        assert addrs(r) == [SERVER]
        assert hops(first)[(refusing.addr, refusing.port)]["failures"] == 1
        # every alternate failing is our SERVFAIL, saying why
        q = dns.message.make_query("svc.refuse.content", "A", use_edns=0, options=[
            inrp_query_option(exclude=[SERVER])])
        r = dns.query.udp(q, first.addr, port=first.port, timeout=5)
        assert r.rcode() == dns.rcode.SERVFAIL
        assert ede_of(r) == (22, "no reachable route")
    finally:
        refusing.stop()


def test_a_servfailing_upstream_falls_to_the_next(inrpd_factory, tmp_path, upstream):
    refusing = Unbound(tmp_path, UPSTREAM_DATA, ["access-control: 127.0.0.0/8 refuse"])
    try:
        d = router(inrpd_factory, tmp_path,
                   f"upstream {refusing.addr} port {refusing.port};\n"
                   f"upstream {upstream.addr} port {upstream.port};\n")
        assert addrs(d.udp("a.upstream.test", use_edns=0)) == ["192.0.2.1"]
        # the refusing one is asked once, not again in the second round
        assert hops(d)[(refusing.addr, refusing.port)]["queries"] == \
            hops(d)[(refusing.addr, refusing.port)]["failures"]
        upstream.stop()
        r = d.udp("other.upstream.test", use_edns=0, timeout=5)     # not a cached question
        assert r.rcode() == dns.rcode.SERVFAIL and ede_of(r) == (22, "every upstream failed")
    finally:
        refusing.stop()


def test_a_loop_is_not_retried_along_the_same_hop(inrpd_factory, tmp_path):
    from test_inrpd_forward import fixed_router
    a, b = loopback_addr(), loopback_addr()
    pa, pb = free_port(a), free_port(b)
    dest = router(inrpd_factory, tmp_path, f'route "svc.lp.content" {{ server {SERVER}; }}\n')
    # first's preferred route goes to b, whose route comes back to first: a loop
    first = fixed_router(inrpd_factory, tmp_path,
                         f'route "lp.content" {{\n    router {b} port {pb};\n'
                         f'    router {dest.addr} port {dest.port};\n}}\n', a, pa)
    loop = fixed_router(inrpd_factory, tmp_path, f'route "lp.content" {{ router {a} port {pa}; }}\n', b, pb)
    r = first.udp("svc.lp.content", timeout=5)
    assert addrs(r) == [SERVER]
    c = counters(first)
    assert c["loops"] == 1 and c["hop_failed"] == 1
    assert hops(first)[(b, pb)]["queries"] == 1
    assert counters(loop)["servfail"] == 1
    # the loop itself, seen by a router client: SERVFAIL, status loop, and why
    q = dns.message.make_query("svc.lp.content", "A", use_edns=0, options=[inrp_query_option()])
    r = dns.query.udp(q, loop.addr, port=loop.port, timeout=5)
    assert r.rcode() == dns.rcode.NOERROR      # first routes around it again


# ---- NOTIMP, NSID, extended errors ----

@pytest.mark.parametrize("opcode", [dns.opcode.NOTIFY, dns.opcode.UPDATE, dns.opcode.STATUS, 3, 15])
def test_unknown_opcodes_are_notimp_with_ra_and_cd_clear(inrpd_factory, opcode):
    d = inrpd_factory(f'route "x.content" {{ server {SERVER}; }}\n')
    q = dns.message.make_query("x.content", "SOA")
    q.set_opcode(opcode)
    q.flags |= dns.flags.CD
    wire = d.udp_raw(q.to_wire())
    assert wire is not None
    assert wire[3] & 0x0f == dns.rcode.NOTIMP
    assert wire[2] & 0x80 and (wire[2] >> 3) & 0x0f == opcode     # QR, opcode echoed
    assert wire[3] & 0x80 == 0 and wire[3] & 0x10 == 0              # RA, CD clear


def test_nsid_is_opt_in_and_names_the_router(inrpd_factory, tmp_path, upstream):
    on = router(inrpd_factory, tmp_path, f'nsid yes;\nroute "x.content" {{ server {SERVER}; }}\n'
                f"upstream {upstream.addr} port {upstream.port};\n")
    off = router(inrpd_factory, tmp_path, f'route "x.content" {{ server {SERVER}; }}\n')
    ask = [dns.edns.GenericOption(NSID, b"")]
    rid = on.conf.read_text().split('router-id "')[1].split('"')[0].encode()
    for name in ("x.content", "a.upstream.test", "nowhere.content"):
        r = on.udp(name, use_edns=0, options=ask)
        assert option(r, NSID) == rid, name
    assert option(on.udp("x.content", use_edns=0), NSID) is None        # not asked
    assert option(off.udp("x.content", use_edns=0, options=ask), NSID) is None
    out = subprocess.run(["dig", "+nsid", "+tries=1", "+time=5", "-p", str(on.port), f"@{on.addr}",
                          "x.content"], capture_output=True, text=True, timeout=30)
    assert f'NSID: {" ".join(f"{b:02x}" for b in rid)}' in out.stdout, out.stdout


def test_extended_errors_say_why(inrpd_factory, tmp_path, upstream):
    other = loopback_addr()
    d = router(inrpd_factory, tmp_path,
               f"upstream {upstream.addr} port {upstream.port};\nallow-recursion {other}/32;\n"
               'route "self.content" { redirect "self.content.x"; }\n'
               'route "content.x" { redirect "self.content"; }\n')
    # outside allow-recursion: Prohibited
    r = d.udp("a.upstream.test", use_edns=0)
    assert r.rcode() == dns.rcode.REFUSED and ede_of(r) == (18, "recursion not allowed")
    # a class we do not serve: Not Supported
    r = d.udp("a.upstream.test", use_edns=0, rdclass="CH")
    assert r.rcode() == dns.rcode.REFUSED and ede_of(r) == (21, "class not supported")
    # a redirect loop: no route reaches servers
    r = d.udp("self.content", use_edns=0)
    assert r.rcode() == dns.rcode.SERVFAIL and ede_of(r) == (22, "no reachable route")
    # our own id in the path: the INRP loop
    from test_inrpd_forward import fnv1a64
    q = dns.message.make_query("self.content", "A", use_edns=0,
                               options=[inrp_query_option(path=[fnv1a64("r0")])])
    r = dns.query.udp(q, d.addr, port=d.port, timeout=5)
    assert r.rcode() == dns.rcode.SERVFAIL and ede_of(r) == (0, "INRP loop")
    # hop limit spent
    fwd = router(inrpd_factory, tmp_path, route_via("hl.content", d))
    q = dns.message.make_query("hl.content", "A", use_edns=0, options=[inrp_query_option(hop_limit=0)])
    r = dns.query.udp(q, fwd.addr, port=fwd.port, timeout=5)
    assert r.rcode() == dns.rcode.SERVFAIL and ede_of(r) == (0, "INRP hop limit")
    # no upstream at all: Not Authoritative
    r = fwd.udp("a.upstream.test", use_edns=0)
    assert r.rcode() == dns.rcode.REFUSED and ede_of(r) == (20, "no upstream resolver")
    # a client without EDNS gets the rcode alone
    assert not fwd.udp("a.upstream.test").options


# ---- the packet cache ----

CACHE_DATA = UPSTREAM_DATA + [
    "ttl.upstream.test. 300 IN A 192.0.2.7",
    "short.upstream.test. 1 IN A 192.0.2.8",
]


def inrpc(d, *words):
    from test_inrpd_forward import INRPC
    from conftest import ENV
    r = subprocess.run([INRPC, "-s", str(d.ctl), *words], capture_output=True, text=True,
                       timeout=30, env=ENV)
    assert r.returncode == 0, r.stderr
    return r.stdout


def cache_stats(d):
    from test_inrpd_forward import inrpc_json
    return inrpc_json(d, "show", "cache")


def asked(d, u):
    """Queries this inrpd sent to upstream u."""
    return hops(d).get((u.addr, u.port), {"queries": 0})["queries"]


@pytest.fixture
def cached(inrpd_factory, tmp_path, unbound_for_cache):
    """One worker, so every UDP query meets the same cache shard."""
    u = unbound_for_cache
    d = router(inrpd_factory, tmp_path, f"upstream {u.addr} port {u.port};\n", workers=1)
    return d, u


@pytest.fixture
def unbound_for_cache(tmp_path):
    u = Unbound(tmp_path, CACHE_DATA, UPSTREAM_EXTRA)
    yield u
    u.stop()


def ttl_of(r):
    return r.answer[0].ttl


def test_a_second_question_is_answered_from_the_cache(cached):
    d, u = cached
    r1 = d.udp("ttl.upstream.test")
    n = asked(d, u)
    r2 = d.udp("TTL.Upstream.Test")
    assert addrs(r2) == ["192.0.2.7"] and str(r2.question[0].name) == "TTL.Upstream.Test."
    assert asked(d, u) == n and counters(d)["cached"] == 1
    # NXDOMAIN with its SOA too, and the upstream is not needed for either any more
    assert d.udp("none.upstream.test").rcode() == dns.rcode.NXDOMAIN
    u.stop()
    assert addrs(d.udp("ttl.upstream.test")) == ["192.0.2.7"]
    r = d.udp("none.upstream.test")
    assert r.rcode() == dns.rcode.NXDOMAIN and r.authority[0].rdtype == dns.rdatatype.SOA
    s = cache_stats(d)
    assert s["hits"] == 3 and s["entries"] >= 2 and s["stores"] >= 2 and s["capacity"] > 0
    assert ttl_of(r1) == 300


def test_ttls_count_down(cached):
    from conftest import wait_for
    d, u = cached
    assert ttl_of(d.udp("ttl.upstream.test")) == 300
    n = asked(d, u)
    wait_for(lambda: ttl_of(d.udp("ttl.upstream.test")) < 300, 5, "the TTL to count down")
    assert asked(d, u) == n


def test_cookies_padding_and_id_do_not_split_the_key(cached):
    d, u = cached
    d.udp("ttl.upstream.test", use_edns=0)
    n = asked(d, u)
    for opts in ([dns.edns.GenericOption(10, b"\x01\x02\x03\x04\x05\x06\x07\x08")],
                 [dns.edns.GenericOption(12, b"\x00" * 40)],
                 [dns.edns.GenericOption(10, b"12345678"), dns.edns.GenericOption(12, b"")]):
        assert addrs(d.udp("ttl.upstream.test", use_edns=0, options=opts)) == ["192.0.2.7"]
    # and dig, with its own cookie and id
    out = subprocess.run(["dig", "+short", "+cookie", "+tries=1", "+time=5", "-p", str(d.port),
                          f"@{d.addr}", "ttl.upstream.test"], capture_output=True, text=True, timeout=30)
    assert out.stdout.split() == ["192.0.2.7"]
    assert asked(d, u) == n
    # the DO bit and CD do split it: their answers differ
    d.udp("ttl.upstream.test", use_edns=0, want_dnssec=True)
    assert asked(d, u) == n + 1


def test_a_route_change_and_a_flush_drop_a_names_answers(cached, tmp_path):
    d, u = cached
    body = f"upstream {u.addr} port {u.port};\n"
    assert addrs(d.udp("ttl.upstream.test")) == ["192.0.2.7"]
    assert addrs(d.udp("ttl.upstream.test")) == ["192.0.2.7"]
    # a route for the name now: the cached upstream answer is not served
    mark = d.reload(f'control "{d.ctl}";\nrouter-id "r0";\n' + body +
                    f'route "ttl.upstream.test" {{ server {SERVER}; }}\n', workers=1)
    d.wait_log("reload", start=mark)
    from conftest import wait_for
    wait_for(lambda: addrs(d.udp("ttl.upstream.test")) == [SERVER], 5, "the route to be used")
    # flush NAME drops that name and below, nothing else
    d.udp("a.upstream.test")
    d.udp("none.upstream.test")
    n = asked(d, u)
    assert "flushed" in inrpc(d, "flush", "cache", "a.upstream.test")
    d.udp("a.upstream.test")
    d.udp("none.upstream.test")
    assert asked(d, u) == n + 1
    inrpc(d, "flush", "cache")
    d.udp("none.upstream.test")
    assert asked(d, u) == n + 2


def test_forwarded_answers_are_cached_and_exclusions_bypass(inrpd_factory, tmp_path):
    last = router(inrpd_factory, tmp_path, f'route "svc.fc.content" {{ server {SERVER}; server 127.0.0.98; }}\n')
    first = router(inrpd_factory, tmp_path, route_via("fc.content", last), workers=1)
    for _ in range(3):
        assert addrs(first.udp("svc.fc.content")) == [SERVER, "127.0.0.98"]
    assert counters(last)["local"] == 1 and counters(first)["cached"] == 2
    # a router client gets the answering router's INRP option from the cache too
    from test_inrpd_forward import inrp_response, fnv1a64
    q = dns.message.make_query("svc.fc.content", "A", options=[inrp_query_option()])
    r = dns.query.udp(q, first.addr, port=first.port, timeout=5)
    assert addrs(r) == [SERVER, "127.0.0.98"] and inrp_response(r)[2] == fnv1a64("r0")
    assert counters(last)["local"] == 1
    # exclusions ask for another answer: past the cache, both ways
    q = dns.message.make_query("svc.fc.content", "A", options=[inrp_query_option(exclude=[SERVER])])
    for _ in range(2):
        assert addrs(dns.query.udp(q, first.addr, port=first.port, timeout=5)) == ["127.0.0.98"]
    assert counters(last)["local"] == 3


def test_servfail_is_held_briefly(inrpd_factory, tmp_path):
    dead = loopback_addr()
    d = router(inrpd_factory, tmp_path, f"query-timeout 300ms;\nupstream {dead} port {free_port(dead)};\n",
               workers=1)
    before = counters(d)
    r = d.udp("x.upstream.test", timeout=5)
    assert r.rcode() == dns.rcode.SERVFAIL
    r = d.udp("x.upstream.test", timeout=5, use_edns=0)
    assert r.rcode() == dns.rcode.SERVFAIL and ede_of(r) == (22, "every upstream failed")
    c = counters(d)
    assert c["cached"] - before["cached"] == 1 and c["fallback"] - before["fallback"] == 1


def test_a_held_servfail_is_asked_again_soon_and_never_given_to_a_router(inrpd_factory, tmp_path):
    from conftest import wait_for
    dead = loopback_addr()
    # held for an hour, but asked again within a fraction of a second: a
    # path that heals while routes converge is used at once
    d = router(inrpd_factory, tmp_path, f"query-timeout 100ms;\ncache-servfail-ttl 1h;\n"
               f'route "x.dead.content" {{ router {dead} port {free_port(dead)}; }}\n', workers=1)
    assert d.udp("x.dead.content", timeout=5).rcode() == dns.rcode.SERVFAIL
    n = counters(d)["forwarded"]
    wait_for(lambda: d.udp("x.dead.content", timeout=5).rcode() == dns.rcode.SERVFAIL and
             counters(d)["forwarded"] > n, 5, "the name asked again")
    # a router client holds its own: it is not given ours
    n = counters(d)["forwarded"]
    q = dns.message.make_query("x.dead.content", "A", options=[inrp_query_option()])
    assert dns.query.udp(q, d.addr, port=d.port, timeout=5).rcode() == dns.rcode.SERVFAIL
    assert counters(d)["forwarded"] == n + 1


def test_serve_stale_when_every_upstream_is_down(inrpd_factory, tmp_path, unbound_for_cache):
    from conftest import wait_for
    u = unbound_for_cache
    d = router(inrpd_factory, tmp_path, f"query-timeout 300ms;\ncache-serve-stale 1h;\n"
               f"upstream {u.addr} port {u.port};\n", workers=1)
    assert ttl_of(d.udp("short.upstream.test")) == 1
    u.stop()
    # once expired, and the upstream gone: the stale answer, with a TTL of 30 s (RFC 8767)
    r = wait_for(lambda: (lambda r: r if r.answer and r.answer[0].ttl == 30 else None)(
        d.udp("short.upstream.test", timeout=5)), 10, "a stale answer")
    assert addrs(r) == ["192.0.2.8"]
    assert counters(d)["stale"] >= 1 and cache_stats(d)["stale_hits"] >= 1
    # without serve-stale: SERVFAIL
    assert d.udp("none.upstream.test", timeout=5).rcode() == dns.rcode.SERVFAIL


# ---- DNS cookies and rate limiting ----

COOKIE = 10


def cookie_opt(client, server=b""):
    return dns.edns.GenericOption(COOKIE, client + server)


def server_cookie(r):
    data = option(r, COOKIE)
    assert data is not None and len(data) == 24, r
    return data[8:]


def test_cookies_are_made_checked_and_badcookie(inrpd_factory):
    d = inrpd_factory(f'route "x.content" {{ server {SERVER}; }}\n')
    cc = b"\x11\x22\x33\x44\x55\x66\x77\x88"
    r = d.udp("x.content", use_edns=0, options=[cookie_opt(cc)])
    assert option(r, COOKIE)[:8] == cc
    sc = server_cookie(r)
    assert sc[0] == 1 and sc[1:4] == b"\0\0\0"            # RFC 9018: version 1
    # our own cookie back: accepted, and a fresh one given
    r = d.udp("x.content", use_edns=0, options=[cookie_opt(cc, sc)])
    assert r.rcode() == dns.rcode.NOERROR and addrs(r) == [SERVER]
    # someone else's, or ours for another client cookie: BADCOOKIE with a good one
    bad = bytearray(sc)
    bad[-1] ^= 1
    for c, s in ((cc, bytes(bad)), (b"\x99" * 8, sc)):
        r = d.udp("x.content", use_edns=0, options=[cookie_opt(c, s)])
        assert r.rcode() == 23 and option(r, COOKIE)[:8] == c                 # BADCOOKIE
        r2 = d.udp("x.content", use_edns=0, options=[cookie_opt(c, server_cookie(r))])
        assert r2.rcode() == dns.rcode.NOERROR
    # a malformed cookie option is FORMERR (RFC 7873 5.2.2)
    for data in (b"short", b"\x01" * 12, b"\x01" * 41):
        r = d.udp("x.content", use_edns=0, options=[dns.edns.GenericOption(COOKIE, data)])
        assert r.rcode() == dns.rcode.FORMERR, data
    # dig's cookie handling agrees: no "bad cookie" complaint, a server cookie seen
    out = subprocess.run(["dig", "+cookie", "+tries=1", "+time=5", "-p", str(d.port), f"@{d.addr}",
                          "x.content"], capture_output=True, text=True, timeout=30)
    assert "COOKIE:" in out.stdout and "(good)" in out.stdout, out.stdout


def test_a_shared_secret_makes_routers_agree(inrpd_factory):
    secret = 'cookie-secret "000102030405060708090a0b0c0d0e0f";\n'
    a = inrpd_factory(secret + f'route "x.content" {{ server {SERVER}; }}\n')
    b = inrpd_factory(secret + f'route "x.content" {{ server {SERVER}; }}\n')
    cc = b"anycast!"
    sc = server_cookie(a.udp("x.content", use_edns=0, options=[cookie_opt(cc)]))
    # the same client address asks b: the cookie is good there too
    assert b.udp("x.content", use_edns=0, options=[cookie_opt(cc, sc)]).rcode() == dns.rcode.NOERROR


def flood(d, source, n, cookie=None, name="x.content", options=()):
    """n queries from source at once; returns (answers, truncated), every
    answer inrpd sent counted: it waits until inrpd has taken all n and
    then for each one not dropped, however slow the machine."""
    import socket
    before = counters(d)
    with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as s:
        s.bind((source, 0))
        s.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 1 << 20)
        for i in range(n):
            opts = ([cookie_opt(*cookie)] if cookie else []) + list(options)
            q = dns.message.make_query(name, "A", use_edns=0 if opts else None, options=opts)
            s.sendto(q.to_wire(), (d.addr, d.port))
        wait_for(lambda: counters(d)["queries"] - before["queries"] >= n, 30, f"inrpd to take {n} queries")
        sent = n - (counters(d)["rrl_dropped"] - before["rrl_dropped"])
        s.settimeout(10)
        answers = truncated = 0
        for _ in range(sent):
            wire = s.recv(4096)
            answers += 1
            truncated += bool(wire[2] & 0x02)
        return answers, truncated


def test_rrl_limits_a_flood_and_spares_others(inrpd_factory, tmp_path):
    """rrl-rate 10: what a /24 gets in full is bounded by the burst and the
    rate over the flood's duration, however long the machine takes; the
    rest is limited, every second one slipped."""
    import time
    rate = 10
    # the test's clients are loopback addresses: outside allow-recursion here
    d = router(inrpd_factory, tmp_path, f"allow-recursion 10.0.0.0/8;\nrrl-rate {rate};\nrrl-slip 2;\n"
               f'route "x.content" {{ server {SERVER}; }}\n', workers=1)

    def limited_flood(source, n, cookie=None):
        before = counters(d)
        t0 = time.monotonic()
        got, tc = flood(d, source, n, cookie=cookie)
        elapsed = time.monotonic() - t0
        c = counters(d)
        return (got, tc, c["rrl_dropped"] - before["rrl_dropped"], c["rrl_slipped"] - before["rrl_slipped"],
                rate * (1 + elapsed) + 1, c)
    # ten times the rate from one /24 at once
    answers, truncated, dropped, slipped, most, c = limited_flood("127.0.50.1", 100)
    full = answers - truncated
    assert 0 < full <= most                             # the burst, and what refilled meanwhile
    assert dropped + slipped == 100 - full and abs(dropped - slipped) <= 1 and truncated == slipped
    # another /24 is answered meanwhile
    assert flood(d, "127.0.51.1", 5) == (5, 0)
    # a client with our cookie is not limited, from the flooded /24 too
    cc = b"cookie!!"
    r = dns.query.udp(dns.message.make_query("x.content", "A", use_edns=0, options=[cookie_opt(cc)]),
                      d.addr, port=d.port, timeout=10, source="127.0.60.1")
    sc = server_cookie(r)
    got, tc = flood(d, "127.0.60.1", 40, cookie=(cc, sc))
    assert (got, tc) == (40, 0)
    assert counters(d)["cookies"] - c["cookies"] == 40
    # over the limit with a client cookie alone: not TC but BADCOOKIE with
    # ours (RFC 7873 5.2.3), to ask again with as a proven client; and
    # never dropped, whatever rrl-slip says, so it does not wait out a timeout
    c = counters(d)
    got, tc, dropped, slipped, most, after = limited_flood("127.0.62.1", 100, cookie=(cc,))
    assert got == 100 and tc == 0 and dropped == 0
    assert 100 - most <= slipped < 100
    assert after["badcookie"] - c["badcookie"] == slipped


def test_routers_and_exempt_prefixes_are_not_limited(inrpd_factory, tmp_path):
    nxt = loopback_addr()
    d = router(inrpd_factory, tmp_path, "allow-recursion 10.0.0.0/8;\nrrl-rate 5;\nrrl-exempt 127.0.70.0/24;\n"
               f'route "x.content" {{ server {SERVER}; }}\n'
               f'route "y.content" {{ router {nxt} port 53; }}\n', workers=1)
    assert flood(d, nxt, 40) == (40, 0)                 # a next-hop router of ours
    assert flood(d, "127.0.70.9", 40) == (40, 0)        # an exempt prefix
    # an INRP option alone proves nothing
    before = counters(d)
    got, tc = flood(d, "127.0.71.1", 40, options=[inrp_query_option()])
    c = counters(d)
    assert got - tc < 40 and c["rrl_dropped"] + c["rrl_slipped"] > before["rrl_dropped"] + before["rrl_slipped"]


@pytest.mark.parametrize("rrl", ["", "rrl-rate 0;\n"], ids=["rrl-on", "rrl-off"])
def test_answers_to_unproven_clients_stay_small(inrpd_factory, tmp_path, rrl):
    """With RRL off too: there inrpd looks the client's exemption up only
    for an answer that does not fit the cap, and the answer is the same."""
    big = "".join(f'    record TXT "\\"{i}{"x" * 200}\\"";\n' for i in range(3))
    d = router(inrpd_factory, tmp_path, f"allow-recursion 10.0.0.0/8;\n{rrl}rrl-exempt 127.0.81.0/24;\n"
               f'route "x.content" {{\n    server {SERVER};\n{big}}}\n', workers=1)
    q = dns.message.make_query("x.content", "TXT", use_edns=0, payload=4096)
    wire = q.to_wire()
    r = dns.query.udp(q, d.addr, port=d.port, timeout=2, source="127.0.80.1")
    assert r.flags & dns.flags.TC and len(r.to_wire()) <= 3 * len(wire)
    assert counters(d)["amp_truncated"] == 1
    # an answer within the cap is whole, and no more is counted
    r = dns.query.udp(dns.message.make_query("x.content", "A"), d.addr, port=d.port, timeout=2,
                      source="127.0.80.1")
    assert not r.flags & dns.flags.TC and addrs(r) == [SERVER]
    assert counters(d)["amp_truncated"] == 1
    # an exempt prefix gets the whole big answer over UDP
    r = dns.query.udp(q, d.addr, port=d.port, timeout=2, source="127.0.81.1")
    assert not r.flags & dns.flags.TC and len(r.answer[0]) == 3
    assert counters(d)["amp_truncated"] == 1
    # over TCP, or with a valid cookie, the whole answer
    assert len(dns.query.tcp(q, d.addr, port=d.port, timeout=2, source="127.0.80.1").answer[0]) == 3
    cc = b"12345678"
    q = dns.message.make_query("x.content", "TXT", use_edns=0, payload=4096, options=[cookie_opt(cc)])
    sc = server_cookie(dns.query.udp(q, d.addr, port=d.port, timeout=2, source="127.0.80.1"))
    q = dns.message.make_query("x.content", "TXT", use_edns=0, payload=4096, options=[cookie_opt(cc, sc)])
    r = dns.query.udp(q, d.addr, port=d.port, timeout=2, source="127.0.80.1")
    assert not r.flags & dns.flags.TC and len(r.answer[0]) == 3


# ---- glibc's stub resolver as a client ----

def getent_in_namespace(tmp_path, server, name, edns):
    """getent ahosts NAME in a mount namespace whose resolv.conf names server
    (port 53: glibc knows no other) and whose nsswitch.conf asks DNS only."""
    resolv = tmp_path / f"resolv-{edns}.conf"
    resolv.write_text(f"nameserver {server}\noptions attempts:1 timeout:3{' edns0' if edns else ''}\n")
    nss = tmp_path / "nsswitch.conf"
    nss.write_text("hosts: dns\n")
    script = (f"mount --bind {resolv} /etc/resolv.conf && mount --bind {nss} /etc/nsswitch.conf && "
              f"exec getent ahosts {name}")
    return subprocess.run(["unshare", "-m", "--propagation", "private", "sh", "-c", script],
                          capture_output=True, text=True, timeout=30)


@pytest.mark.skipif(os.geteuid() != 0, reason="not root: a mount namespace and port 53 need it")
@pytest.mark.parametrize("edns", [False, True])
def test_glibc_resolves_a_routed_and_a_fallback_name(inrpd_factory, tmp_path, upstream, edns):
    addr = loopback_addr()
    d = inrpd_factory(f"upstream {upstream.addr} port {upstream.port};\n"
                      f'route "www.glibc.content" {{ server {SERVER}; }}\n', port=53, addr=addr)
    out = getent_in_namespace(tmp_path, d.addr, "www.glibc.content", edns)
    assert out.returncode == 0, out
    assert {line.split()[0] for line in out.stdout.splitlines()} == {SERVER}, out.stdout
    out = getent_in_namespace(tmp_path, d.addr, "a.upstream.test", edns)
    assert out.returncode == 0, out
    assert {line.split()[0] for line in out.stdout.splitlines()} == {"192.0.2.1"}, out.stdout
    # a content name that does not exist in ordinary DNS is not "no such name" for glibc either
    out = getent_in_namespace(tmp_path, d.addr, "other.www.glibc.content", edns)
    assert out.returncode == 0 and SERVER in out.stdout, out


# ---- routes from nbrpd (the FIB channel) ----

def test_fib_channel_route_changes_reach_the_cache_and_the_rate_limiter(inrpd_factory, tmp_path):
    """A cached forwarded answer is not served once nbrpd moves the name to
    another router; the routers nbrpd names are exempt from rate limiting."""
    import fibchan_client as fc
    from conftest import wait_for
    one = router(inrpd_factory, tmp_path, f'route "svc.fib.content" {{ server {SERVER}; }}\n')
    two = router(inrpd_factory, tmp_path, 'route "svc.fib.content" { server 127.0.0.98; }\n')
    sock = tmp_path / "fib.sock"
    # the test's own queries (from 127.0.0.1) are exempt: it polls faster than the limit
    d = router(inrpd_factory, tmp_path, f'fib-channel "{sock}";\nallow-recursion 10.0.0.0/8;\n'
               "rrl-rate 5;\nrrl-exempt 127.0.0.1/32;\n", workers=1)
    ch = fc.FibChannel(sock)
    ch.full_sync(1, fc.update(names=[fc.name_routes("fib.content", [
        fc.route(one.addr, kind=fc.ROUTER, port=one.port)])]))
    wait_for(lambda: addrs(d.udp("svc.fib.content")) == [SERVER], 10, "the route from the channel")
    assert addrs(d.udp("svc.fib.content")) == [SERVER]
    assert counters(d)["cached"] >= 1
    # nbrpd moves the name: the answer kept for the old route is not served
    ch.send(fc.update(names=[fc.name_routes("fib.content", [fc.route(two.addr, kind=fc.ROUTER, port=two.port)])]))
    wait_for(lambda: addrs(d.udp("svc.fib.content")) == ["127.0.0.98"], 10, "the new route")
    # a router nbrpd told us about is not limited; another address outside the ACL is
    assert flood(d, two.addr, 30) == (30, 0)
    got, tc = flood(d, "127.0.90.1", 30)
    assert got - tc < 30
    ch.close()


# ---- our cookies as a forwarding client (RFC 7873 as the client) ----

class CookieHop:
    """A next hop that speaks cookies: it answers A 192.0.2.55 with, per
    mode, our client cookie and its server cookie ("echo"), another client
    cookie ("wrong"), or BADCOOKIE with a fresh server cookie to any query
    without it, then answers ("badcookie").  It keeps the cookie options
    it was sent."""

    SERVER_COOKIE = bytes(range(16))

    def __init__(self, mode):
        import socket
        import threading
        self.mode = mode
        self.addr = loopback_addr()
        self.port = free_port(self.addr)
        self.sock = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
        self.sock.bind((self.addr, self.port))
        self.sock.settimeout(0.2)
        self.cookies = []
        self.running = True
        self.thread = threading.Thread(target=self._serve, daemon=True)
        self.thread.start()

    def _serve(self):
        import socket
        while self.running:
            try:
                wire, src = self.sock.recvfrom(4096)
            except socket.timeout:
                continue
            q = dns.message.from_wire(wire)
            cookie = option(q, 10)
            self.cookies.append(cookie)
            r = dns.message.make_response(q)
            client = cookie[:8] if cookie else b""
            if self.mode == "wrong":
                client = bytes(b ^ 0xff for b in client)
            r.use_edns(0, options=[dns.edns.GenericOption(10, client + self.SERVER_COOKIE)] if cookie else [])
            if self.mode == "badcookie" and (not cookie or cookie[8:] != self.SERVER_COOKIE):
                r.set_rcode(dns.rcode.BADCOOKIE)        # extended: after use_edns
            else:
                r.answer.append(dns.rrset.from_text(q.question[0].name, 60, "IN", "A", "192.0.2.55"))
            self.sock.sendto(r.to_wire(), src)

    def stop(self):
        self.running = False
        self.thread.join()
        self.sock.close()


@pytest.fixture
def cookie_hop(request):
    hop = CookieHop(request.param)
    yield hop
    hop.stop()


@pytest.mark.parametrize("cookie_hop", ["echo"], indirect=True)
def test_forwarded_queries_carry_our_cookie_and_the_hops(inrpd_factory, tmp_path, cookie_hop):
    d = router(inrpd_factory, tmp_path, f'route "ck.content" {{ router {cookie_hop.addr} port {cookie_hop.port}; }}\n',
               workers=1)
    for i in range(3):
        assert addrs(d.udp(f"n{i}.ck.content", timeout=5)) == ["192.0.2.55"]
    first, *later = cookie_hop.cookies
    # a client cookie alone at first, then with the server cookie it gave
    assert len(first) == 8
    assert later and all(c == first + CookieHop.SERVER_COOKIE for c in later)


@pytest.mark.parametrize("cookie_hop", ["wrong"], indirect=True)
def test_an_answer_with_another_client_cookie_is_not_taken(inrpd_factory, tmp_path, cookie_hop):
    d = router(inrpd_factory, tmp_path, "query-timeout 300ms;\n"
               f'route "ck.content" {{ router {cookie_hop.addr} port {cookie_hop.port}; }}\n', workers=1)
    before = counters(d)
    assert d.udp("x.ck.content", timeout=5).rcode() == dns.rcode.SERVFAIL
    assert counters(d)["bad_upstream"] - before["bad_upstream"] >= 1


@pytest.mark.parametrize("cookie_hop", ["badcookie"], indirect=True)
def test_badcookie_is_asked_again_with_the_fresh_cookie(inrpd_factory, tmp_path, cookie_hop):
    d = router(inrpd_factory, tmp_path, f'route "ck.content" {{ router {cookie_hop.addr} port {cookie_hop.port}; }}\n',
               workers=1)
    r = d.udp("x.ck.content", timeout=5)
    assert r.rcode() == dns.rcode.NOERROR and addrs(r) == ["192.0.2.55"]
    assert [len(c) for c in cookie_hop.cookies] == [8, 24]


def test_a_router_forwarding_for_its_clients_is_not_rate_limited(inrpd_factory, tmp_path):
    # the last router knows nothing of the first (not a next hop of its
    # routes, outside allow-recursion): the cookies prove its address
    last = router(inrpd_factory, tmp_path, "allow-recursion 10.0.0.0/8;\nrrl-rate 5;\nrrl-slip 0;\n"
                  f'route "rl.content" {{ server {SERVER}; }}\n', workers=1)
    first = router(inrpd_factory, tmp_path, route_via("rl.content", last), workers=1)
    before = counters(last)
    for i in range(40):                  # eight times the rate, names the cache cannot answer
        assert addrs(first.udp(f"n{i}.rl.content", timeout=5)) == [SERVER]
    c = counters(last)
    assert c["rrl_dropped"] == before["rrl_dropped"]
    assert c["cookies"] - before["cookies"] >= 39


def test_a_relayed_answer_is_compressed_like_the_upstreams(inrpd_factory, tmp_path):
    """Twenty MX records under one long suffix fit a 512-byte client from Unbound, which compresses
    their names; inrpd relays them compressed too, so they fit from inrpd as well (no TC)."""
    suffix = "a-rather-long-label.of-an-example-suffix.upstream.test."
    data = [f"big.upstream.test. 300 IN MX {i} mx{i}.{suffix}" for i in range(20)]
    u = Unbound(tmp_path, data, [])
    try:
        q = dns.message.make_query("big.upstream.test", "MX", use_edns=0, payload=512)
        direct = dns.query.udp(q, u.addr, port=u.port, timeout=5)
        assert not direct.flags & dns.flags.TC and len(direct.answer[0]) == 20
        d = inrpd_factory(f"upstream {u.addr} port {u.port};\n")
        r = dns.query.udp(q, d.addr, port=d.port, timeout=5)
        assert not r.flags & dns.flags.TC, "truncated where the upstream's answer fit"
        assert sorted(str(x) for x in r.answer[0]) == sorted(str(x) for x in direct.answer[0])
        assert len(r.to_wire()) <= 512
        # dig reads it the same way
        out = subprocess.run(["dig", f"@{d.addr}", "-p", str(d.port), "+bufsize=512", "+noall", "+answer",
                              "big.upstream.test", "MX"], capture_output=True, text=True, timeout=10).stdout
        assert out.count(f".{suffix}") == 20, out
    finally:
        u.stop()


def chaos(d, name, rdtype="TXT"):
    return d.udp(name, rdtype, rdclass="CH", use_edns=0)


def test_chaos_says_who_and_what_unless_hidden(inrpd_factory):
    """id.server and hostname.bind: the router-id (or identity); version.bind and version.server:
    inrpd's version (or version), as Unbound and BIND answer them; hidden: REFUSED."""
    d = inrpd_factory('router-id "cr7.example.net";\n')
    for name in ("id.server", "hostname.bind"):
        r = chaos(d, name)
        assert r.rcode() == dns.rcode.NOERROR and r.answer[0].rdclass == dns.rdataclass.CH, r
        assert [s.decode() for s in r.answer[0][0].strings] == ["cr7.example.net"]
    for name in ("version.bind", "VERSION.server"):
        r = chaos(d, name)
        assert r.answer[0][0].strings[0].decode().startswith("inrpd "), r
    assert chaos(d, "authors.bind").rcode() == dns.rcode.REFUSED
    out = subprocess.run(["dig", f"@{d.addr}", "-p", str(d.port), "CH", "TXT", "version.bind", "+short"],
                         capture_output=True, text=True, timeout=10).stdout
    assert out.startswith('"inrpd '), out
    d2 = inrpd_factory('identity "resolver-1";\nversion "ISP resolver";\n')
    assert list(chaos(d2, "id.server").answer[0][0].strings) == [b"resolver-1"]
    assert list(chaos(d2, "version.bind").answer[0][0].strings) == [b"ISP resolver"]
    d3 = inrpd_factory('hide-identity yes;\nhide-version yes;\n')
    for name in ("id.server", "hostname.bind", "version.bind", "version.server"):
        assert chaos(d3, name).rcode() == dns.rcode.REFUSED, name
    assert chaos(d3, "version.bind").answer == []


def test_any_over_udp_gets_one_rrset(inrpd_factory):
    """RFC 8482: ANY for a routed name over UDP is answered with the servers' IPv4 addresses
    alone; over TCP (or with minimal-any no) with every record."""
    routes = ('route "any.content" { server 192.0.2.10; server 192.0.2.11; server 2001:db8::10;\n'
              '  record TXT "hello"; }\n')
    d = inrpd_factory(routes)
    r = d.udp("any.content", "ANY")
    assert [x.rdtype for x in r.answer] == [dns.rdatatype.A], r
    assert sorted(str(x) for x in r.answer[0]) == ["192.0.2.10", "192.0.2.11"]
    full = d.tcp("any.content", "ANY")
    assert {x.rdtype for x in full.answer} == {dns.rdatatype.A, dns.rdatatype.AAAA, dns.rdatatype.TXT}, full
    d2 = inrpd_factory("minimal-any no;\n" + routes)
    assert {x.rdtype for x in d2.udp("any.content", "ANY").answer} == \
        {dns.rdatatype.A, dns.rdatatype.AAAA, dns.rdatatype.TXT}
