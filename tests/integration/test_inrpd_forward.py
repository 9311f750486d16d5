"""inrpd as a content router: hop-by-hop forwarding along static FIBs,
alternates on timeout, exclusions, loops, redirects, and the fallback to a
real upstream resolver (Unbound) with its access control."""

import json
import os
import socket
import struct
import subprocess
import threading
import time

import dns.edns
import dns.flags
import dns.message
import dns.query
import dns.rcode
import dns.rdatatype
import dns.rrset
import pytest

from conftest import ENV, INRPD, free_port, loopback_addr, wait_for

INRPC = os.path.join(os.path.dirname(INRPD), "inrpc")
INRP_OPTION = 65100
SERVER = "127.0.0.99"


def inrpc_json(d, *words):
    r = subprocess.run([INRPC, "-s", str(d.ctl), "--json", *words], capture_output=True,
                       text=True, timeout=30, env=ENV)
    assert r.returncode == 0, r.stderr
    return json.loads(r.stdout)


def counters(d):
    c = inrpc_json(d, "show", "counters")
    return {k: c["udp"][k] + c["tcp"][k] for k in c["udp"]}


def hops(d):
    return {(h["addr"], h["port"]): h for h in inrpc_json(d, "show", "hops")}


def router(factory, tmp_path, body, **kw):
    """An inrpd with a control socket; body may be a function of nothing."""
    n = len(list(tmp_path.glob("ctl-*")))
    ctl = tmp_path / f"ctl-{n}"
    d = factory(f'control "{ctl}";\nrouter-id "r{n}";\n' + body, **kw)
    d.ctl = ctl
    return d


def route_via(name, *nexts):
    lines = "".join(f"    router {n.addr} port {n.port};\n" for n in nexts)
    return f'route "{name}" {{\n{lines}}}\n'


def addrs(resp):
    return [rd.address for rrset in resp.answer if rrset.rdtype == dns.rdatatype.A for rd in rrset]


def inrp_query_option(exclude=(), hop_limit=16, path=(), budget_ms=0):
    data = struct.pack(">BBBBBBH", 1, 1, hop_limit, len(path), len(exclude), 0, budget_ms)
    for rid in path:
        data += struct.pack(">Q", rid)
    for a in exclude:
        data += b"\x01" + socket.inet_aton(a)
    return dns.edns.GenericOption(INRP_OPTION, data)


def inrp_response(resp):
    """(status, load_ms, router_id) from the INRP option of a response, or None."""
    for o in resp.options:
        if o.otype == INRP_OPTION:
            data = o.to_wire() if hasattr(o, "to_wire") else o.data
            data = bytes(data)
            assert len(data) == 16 and data[0] == 1 and data[1] == 2
            return data[2], struct.unpack(">I", data[4:8])[0], struct.unpack(">Q", data[8:16])[0]
    return None


def fnv1a64(s):
    h = 0xcbf29ce484222325
    for b in s.encode():
        h = ((h ^ b) * 0x100000001b3) & 0xFFFFFFFFFFFFFFFF
    return h


@pytest.fixture
def chain(inrpd_factory, tmp_path):
    """r0 -> r1 -> r2 -> r3 -> r4, the last with the server for svc.chain.content."""
    last = router(inrpd_factory, tmp_path, f'route "svc.chain.content" {{ server {SERVER} load 9; }}\n')
    rs = [last]
    for _ in range(4):
        rs.insert(0, router(inrpd_factory, tmp_path, route_via("chain.content", rs[0])))
    return rs


def test_five_hop_chain_answers_through_every_hop(chain):
    first = chain[0]
    r = first.udp("www.svc.chain.content")
    assert r.rcode() == dns.rcode.NOERROR and addrs(r) == [SERVER]
    assert r.flags & dns.flags.RA and not r.flags & dns.flags.AA
    assert first.tcp("www.svc.chain.content").answer == r.answer
    out = subprocess.run(["dig", "+short", "+tries=1", "+time=5", "-p", str(first.port),
                          f"@{first.addr}", "WWW.Svc.Chain.Content", "A"],
                         capture_output=True, text=True, timeout=30)
    assert out.stdout.split() == [SERVER], out
    # every hop forwarded each of the three queries once; the last answered them
    for d in chain[:-1]:
        c = counters(d)
        assert c["forwarded"] == 3 and c["local"] == 0 and c["servfail"] == 0, c
    assert counters(chain[-1])["local"] == 3
    # each hop's next hop shows three answers, no timeouts and the load the server has
    for d, nxt in zip(chain, chain[1:]):
        h = hops(d)[(nxt.addr, nxt.port)]
        assert h["answers"] == 3 and h["timeouts"] == 0 and h["srtt_us"] > 0
        assert h["load_ms"] == 9


def test_inrp_option_in_the_answer_names_the_answering_router(chain):
    q = dns.message.make_query("www.svc.chain.content", "A", use_edns=0,
                               options=[inrp_query_option()])
    r = dns.query.udp(q, chain[0].addr, port=chain[0].port, timeout=5)
    assert addrs(r) == [SERVER]
    status, load, rid = inrp_response(r)
    assert (status, load, rid) == (0, 9, fnv1a64("r0"))
    # a plain client gets no INRP option back
    r = chain[0].udp("www.svc.chain.content", use_edns=0)
    assert inrp_response(r) is None


def test_a_dead_middle_hop_is_routed_around_within_one_timeout(inrpd_factory, tmp_path):
    timeout_ms = 1000
    common = f"query-timeout {timeout_ms}ms;\n"
    dest = router(inrpd_factory, tmp_path, common + f'route "svc.alt.content" {{ server {SERVER}; }}\n')
    mid = router(inrpd_factory, tmp_path, common + route_via("alt.content", dest))
    alt = router(inrpd_factory, tmp_path, common + route_via("alt.content", dest))
    second = router(inrpd_factory, tmp_path, common + route_via("alt.content", mid, alt))
    first = router(inrpd_factory, tmp_path, common + route_via("alt.content", second))
    assert addrs(first.udp("a.svc.alt.content")) == [SERVER]
    assert counters(alt)["forwarded"] == 0      # the preferred route is taken while it works

    mid.kill()
    t0 = time.monotonic()
    r = first.udp("b.svc.alt.content", timeout=5)
    elapsed = time.monotonic() - t0
    assert r.rcode() == dns.rcode.NOERROR and addrs(r) == [SERVER]
    assert elapsed < timeout_ms / 1000, elapsed
    assert counters(alt)["forwarded"] == 1
    assert hops(second)[(mid.addr, mid.port)]["timeouts"] == 1
    # the dead hop is now held down: the next query goes straight to the alternate
    assert addrs(first.udp("c.svc.alt.content")) == [SERVER]
    assert hops(second)[(mid.addr, mid.port)]["timeouts"] == 1
    assert counters(alt)["forwarded"] == 2


def test_all_alternates_dead_is_servfail_in_time(inrpd_factory, tmp_path):
    dead = [loopback_addr() for _ in range(2)]
    body = "query-timeout 300ms;\n" + 'route "gone.content" {\n' + "".join(
        f"    router {a} port {free_port(a)};\n" for a in dead) + "}\n"
    d = router(inrpd_factory, tmp_path, body)
    t0 = time.monotonic()
    r = d.udp("x.gone.content", timeout=5)
    assert r.rcode() == dns.rcode.SERVFAIL
    assert time.monotonic() - t0 < 2
    c = counters(d)
    assert c["servfail"] == 1
    assert sum(h["timeouts"] for h in hops(d).values()) == 2


def test_exclusion_skips_the_preferred_server_on_every_hop(inrpd_factory, tmp_path):
    last = router(inrpd_factory, tmp_path,
                  'route "ex.content" { server 127.0.0.97; server 127.0.0.98; server 127.0.0.99; }\n')
    first = router(inrpd_factory, tmp_path, route_via("ex.content", last))
    assert addrs(first.udp("ex.content")) == ["127.0.0.97", "127.0.0.98", "127.0.0.99"]
    for d in (first, last):
        q = dns.message.make_query("ex.content", "A", use_edns=0,
                                   options=[inrp_query_option(exclude=["127.0.0.97"])])
        r = dns.query.udp(q, d.addr, port=d.port, timeout=5)
        assert addrs(r) == ["127.0.0.98", "127.0.0.99"]
    q = dns.message.make_query("ex.content", "A", use_edns=0, options=[
        inrp_query_option(exclude=["127.0.0.97", "127.0.0.98", "127.0.0.99"])])
    r = dns.query.udp(q, first.addr, port=first.port, timeout=5)
    assert r.rcode() == dns.rcode.SERVFAIL


@pytest.mark.parametrize("size", [2, 3])
def test_a_loop_in_the_fibs_is_servfail_without_a_storm(inrpd_factory, tmp_path, size):
    # routers in a ring, each routing the name to the next
    ring = [loopback_addr() for _ in range(size)]
    ports = [free_port(a) for a in ring]
    started = []
    for i in range(size):
        nxt = (i + 1) % size
        body = f'route "ring.content" {{ router {ring[nxt]} port {ports[nxt]}; }}\n'
        started.append(fixed_router(inrpd_factory, tmp_path, body, ring[i], ports[i]))
    before = [counters(d)["queries"] for d in started]     # the readiness probes
    t0 = time.monotonic()
    r = started[0].udp("x.ring.content", timeout=5)
    assert r.rcode() == dns.rcode.SERVFAIL
    assert time.monotonic() - t0 < 1        # found by the path, not by a timeout
    c = [counters(d) for d in started]
    asked = [x["queries"] - b for x, b in zip(c, before)]
    # once round the ring: the first router sees it twice and stops it
    assert asked == [2] + [1] * (size - 1)
    assert c[0]["loops"] == 1 and sum(x["servfail"] for x in c) == 1


def fixed_router(factory, tmp_path, body, addr, port):
    """A router on a chosen address and port (for rings, where each must
    know the next before it starts)."""
    n = len(list(tmp_path.glob("ctl-*")))
    ctl = tmp_path / f"ctl-{n}"
    d = factory(f'control "{ctl}";\nrouter-id "ring{n}";\nlisten {addr} port {port};\n' + body,
                listen=False, addr=addr, port=port)
    d.ctl = ctl
    return d


def test_hop_limit_stops_a_long_chain(inrpd_factory, tmp_path):
    last = router(inrpd_factory, tmp_path, f'route "deep.content" {{ server {SERVER}; }}\n')
    mid = router(inrpd_factory, tmp_path, route_via("deep.content", last))
    first = router(inrpd_factory, tmp_path, "hop-limit 1;\n" + route_via("deep.content", mid))
    before = counters(last)["queries"]
    r = first.udp("deep.content", timeout=5)
    assert r.rcode() == dns.rcode.SERVFAIL
    assert counters(mid)["servfail"] == 1
    assert counters(last)["queries"] == before


def test_redirect_answers_with_the_cname_chain(inrpd_factory, tmp_path):
    last = router(inrpd_factory, tmp_path, f'route "real.content" {{ server {SERVER}; }}\n')
    d = router(inrpd_factory, tmp_path,
               'route "alias.content" { redirect "www.real.content"; }\n'
               'route "alias2.content" { redirect "alias.content"; }\n'
               'route "local.content" { server 127.0.0.50; }\n'
               'route "to-local.content" { redirect "local.content"; }\n'
               'route "self.content" { redirect "a.self.content"; }\n'
               + route_via("real.content", last))
    # redirect to a name served here
    r = d.udp("to-local.content")
    assert [(str(x.name), x.rdtype) for x in r.answer] == [
        ("to-local.content.", dns.rdatatype.CNAME), ("local.content.", dns.rdatatype.A)]
    assert addrs(r) == ["127.0.0.50"]
    # two redirects, then forwarded to the next router; the suffix is rewritten
    for ask in (d.udp, d.tcp):
        r = ask("alias2.content")
        chain = [(str(x.name), str(x[0]) if x.rdtype == dns.rdatatype.CNAME else x[0].address)
                 for x in r.answer]
        assert chain == [("alias2.content.", "alias.content."),
                         ("alias.content.", "www.real.content."),
                         ("www.real.content.", SERVER)]
    r = d.udp("x.alias.content")
    assert [str(x.name) for x in r.answer] == ["x.alias.content.", "x.www.real.content."]
    # a redirect into itself ends, bounded, in SERVFAIL
    assert d.udp("self.content", timeout=5).rcode() == dns.rcode.SERVFAIL


# ---- fallback to a real upstream resolver ----

class Unbound:
    def __init__(self, tmp_path, local_data):
        self.addr = loopback_addr()
        self.port = free_port(self.addr)
        self.dir = tmp_path / f"unbound-{self.port}"
        self.dir.mkdir()
        conf = self.dir / "unbound.conf"
        lines = [
            "server:",
            f"  interface: {self.addr}",
            f"  port: {self.port}",
            "  do-daemonize: no",
            "  use-syslog: no",
            f'  directory: "{self.dir}"',
            '  chroot: ""',
            '  username: ""',
            '  pidfile: ""',
            "  access-control: 127.0.0.0/8 allow",
            "  do-not-query-localhost: yes",
            "  num-threads: 1",
            "  local-zone: \"upstream.test.\" static",
            "  local-zone: \"invalid.\" static",      # inrpd's readiness probe
        ] + [f"  local-data: '{rr}'" for rr in local_data]
        conf.write_text("\n".join(lines) + "\n")
        self.log = self.dir / "unbound.log"
        with open(self.log, "wb") as log:
            self.proc = subprocess.Popen(["unbound", "-d", "-c", str(conf)], stdin=subprocess.DEVNULL,
                                         stdout=log, stderr=log)

        def answers():
            if self.proc.poll() is not None:
                raise AssertionError(f"unbound exited: {self.log.read_text()}")
            try:
                q = dns.message.make_query("a.upstream.test", "A")
                dns.query.udp(q, self.addr, port=self.port, timeout=0.2)
                return True
            except Exception:
                return False
        wait_for(answers, 30, "unbound to answer")

    def stop(self):
        if self.proc.poll() is None:
            self.proc.terminate()
            try:
                self.proc.wait(timeout=10)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()


@pytest.fixture
def unbound(tmp_path):
    started = []

    def start(local_data):
        u = Unbound(tmp_path, local_data)
        started.append(u)
        return u
    yield start
    for u in started:
        u.stop()


LOCAL_DATA = [
    "upstream.test. 300 IN SOA ns.upstream.test. admin.upstream.test. 1 3600 600 86400 300",
    "a.upstream.test. 300 IN A 192.0.2.1",
    "a.upstream.test. 300 IN AAAA 2001:db8::1",
    "mx.upstream.test. 300 IN MX 10 a.upstream.test.",
    "www.example.content. 300 IN MX 20 a.upstream.test.",
    'www.example.content. 300 IN TXT "from upstream"',
]


def test_names_without_a_route_are_answered_by_the_upstream(inrpd_factory, tmp_path, unbound):
    u = unbound(LOCAL_DATA)
    d = router(inrpd_factory, tmp_path,
               f"upstream {u.addr} port {u.port};\n"
               f'route "www.example.content" {{ server {SERVER}; }}\n')
    for ask in (d.udp, d.tcp):
        r = ask("a.upstream.test", "A")
        assert r.rcode() == dns.rcode.NOERROR and addrs(r) == ["192.0.2.1"]
        r = ask("mx.upstream.test", "MX")
        assert [str(x.exchange) for x in r.answer[0]] == ["a.upstream.test."]
        # unbound's static zone: NXDOMAIN with its SOA relayed
        r = ask("nothing.upstream.test", "A")
        assert r.rcode() == dns.rcode.NXDOMAIN
        assert r.authority and r.authority[0].rdtype == dns.rdatatype.SOA
    before = counters(d)
    # a content name: A from the FIB, other types from the upstream
    assert addrs(d.udp("www.example.content")) == [SERVER]
    r = d.udp("www.example.content", "TXT")
    assert r.answer and b"from upstream" in r.answer[0][0].strings[0]
    c = counters(d)
    assert c["fallback"] - before["fallback"] == 1 and c["local"] - before["local"] == 1
    assert hops(d)[(u.addr, u.port)]["answers"] == c["fallback"]
    assert c["fallback"] >= 7


def test_recursion_is_refused_outside_allow_recursion(inrpd_factory, tmp_path, unbound):
    u = unbound(LOCAL_DATA)
    allowed, other = loopback_addr(), loopback_addr()
    while other == allowed:
        other = loopback_addr()
    d = router(inrpd_factory, tmp_path,
               f"upstream {u.addr} port {u.port};\nallow-recursion {allowed}/32;\n"
               f'route "www.example.content" {{ server {SERVER}; }}\n')
    before = counters(d)["acl_refused"]
    q = dns.message.make_query("a.upstream.test", "A")
    r = dns.query.udp(q, d.addr, port=d.port, timeout=5, source=allowed)
    assert addrs(r) == ["192.0.2.1"]
    r = dns.query.udp(q, d.addr, port=d.port, timeout=5, source=other)
    assert r.rcode() == dns.rcode.REFUSED and r.answer == []
    r = dns.query.tcp(q, d.addr, port=d.port, timeout=5, source=other)
    assert r.rcode() == dns.rcode.REFUSED
    # content routing is not recursion: anyone gets the FIB's answers
    q = dns.message.make_query("www.example.content", "A")
    assert addrs(dns.query.udp(q, d.addr, port=d.port, timeout=5, source=other)) == [SERVER]
    assert counters(d)["acl_refused"] - before == 2


def test_default_acl_allows_loopback(inrpd_factory, tmp_path, unbound):
    u = unbound(LOCAL_DATA)
    d = router(inrpd_factory, tmp_path, f"upstream {u.addr} port {u.port};\n")
    assert addrs(d.udp("a.upstream.test")) == ["192.0.2.1"]


def test_dead_upstream_falls_to_the_next_then_servfail(inrpd_factory, tmp_path, unbound):
    u = unbound(LOCAL_DATA)
    dead = loopback_addr()
    d = router(inrpd_factory, tmp_path,
               f"query-timeout 600ms;\nupstream {dead} port {free_port(dead)};\n"
               f"upstream {u.addr} port {u.port};\n")
    assert addrs(d.udp("a.upstream.test", timeout=5)) == ["192.0.2.1"]
    u.stop()
    t0 = time.monotonic()
    assert d.udp("a.upstream.test", timeout=5).rcode() == dns.rcode.SERVFAIL
    assert time.monotonic() - t0 < 3


def test_spoofed_and_garbage_answers_are_ignored(inrpd_factory, tmp_path):
    """A fake upstream that first sends junk, a wrong id and a wrong
    question, then the real answer: only the real one reaches the client."""
    fake_addr = loopback_addr()
    sock = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    sock.bind((fake_addr, 0))
    sock.settimeout(10)
    port = sock.getsockname()[1]
    try:
        # only the test's client may recurse: the readiness probe is refused at once
        client_addr = loopback_addr()
        d = router(inrpd_factory, tmp_path, f"upstream {fake_addr} port {port};\n"
                   f"allow-recursion {client_addr}/32;\n")
        before = counters(d)["bad_upstream"]
        result = {}

        def client():
            q = dns.message.make_query("spoof.upstream.test", "A")
            result["r"] = dns.query.udp(q, d.addr, port=d.port, timeout=5, source=client_addr)
        t = threading.Thread(target=client)
        t.start()
        wire, src = sock.recvfrom(4096)
        q = dns.message.from_wire(wire)
        good = dns.message.make_response(q)
        good.answer.append(dns.rrset.from_text("spoof.upstream.test.", 60, "IN", "A", "192.0.2.77"))
        other_q = dns.message.make_query("other.upstream.test", "A")
        other_q.id = q.id
        wrong_question = dns.message.make_response(other_q)
        wrong_id = dns.message.make_response(q)
        wrong_id.id = (q.id + 1) % 65536
        for junk in (b"\x00", good.to_wire()[:20], wrong_id.to_wire(), wrong_question.to_wire()):
            sock.sendto(junk, src)
        sock.sendto(good.to_wire(), src)
        t.join(10)
        assert addrs(result["r"]) == ["192.0.2.77"]
        assert counters(d)["bad_upstream"] - before == 4
    finally:
        sock.close()


def test_load_reported_back_steers_the_next_choice(inrpd_factory, tmp_path):
    busy = router(inrpd_factory, tmp_path, f'route "lb.content" {{ server {SERVER} load 500; }}\n')
    idle = router(inrpd_factory, tmp_path, 'route "lb.content" { server 127.0.0.98 load 5; }\n')
    first = router(inrpd_factory, tmp_path, route_via("lb.content", busy, idle))
    # FIB rank first: the busy one, until it says how busy it is
    assert addrs(first.udp("a.lb.content")) == [SERVER]
    assert hops(first)[(busy.addr, busy.port)]["load_ms"] == 500
    for name in ("b.lb.content", "c.lb.content"):
        assert addrs(first.udp(name)) == ["127.0.0.98"]
    assert counters(busy)["local"] == 1 and counters(idle)["local"] == 2


def test_pending_limit_answers_servfail_at_once(inrpd_factory, tmp_path):
    dead = loopback_addr()
    d = router(inrpd_factory, tmp_path, f"max-pending 1;\nquery-timeout 3s;\n"
               f'route "slow.content" {{ router {dead} port {free_port(dead)}; }}\n', workers=1)
    result = {}
    t = threading.Thread(target=lambda: result.setdefault("r", d.udp("a.slow.content", timeout=10)))
    t.start()
    wait_for(lambda: counters(d)["forwarded"] == 1, 10, "the first query in flight")
    t0 = time.monotonic()
    r = d.udp("b.slow.content", timeout=10)
    assert r.rcode() == dns.rcode.SERVFAIL and time.monotonic() - t0 < 2
    assert counters(d)["pending_full"] == 1
    t.join(15)
    assert result["r"].rcode() == dns.rcode.SERVFAIL


def test_tcp_pipelined_forwarding_and_half_close(chain):
    first = chain[0]
    names = [f"n{i}.svc.chain.content" for i in range(10)]
    with socket.create_connection((first.addr, first.port), timeout=10) as s:
        for i, n in enumerate(names):
            q = dns.message.make_query(n, "A")
            q.id = i + 1
            wire = q.to_wire()
            s.sendall(struct.pack(">H", len(wire)) + wire)
        s.shutdown(socket.SHUT_WR)          # the answers in flight must still come
        got = {}
        buf = b""
        while True:
            chunk = s.recv(65536)
            if not chunk:
                break
            buf += chunk
        while buf:
            (n,) = struct.unpack(">H", buf[:2])
            m = dns.message.from_wire(buf[2:2 + n])
            got[m.id] = (str(m.question[0].name), addrs(m))
            buf = buf[2 + n:]
    assert got == {i + 1: (n + ".", [SERVER]) for i, n in enumerate(names)}


def test_large_upstream_answers_truncate_for_udp_and_come_whole_over_tcp(inrpd_factory, tmp_path, unbound):
    txt = [f'big.upstream.test. 300 IN TXT "{i:03d} {"x" * 60}"' for i in range(20)]
    u = unbound(LOCAL_DATA + txt)
    d = router(inrpd_factory, tmp_path, f"upstream {u.addr} port {u.port};\n")
    r = d.udp("big.upstream.test", "TXT", use_edns=False)
    assert r.flags & dns.flags.TC and r.answer == []
    r = d.tcp("big.upstream.test", "TXT")
    assert not r.flags & dns.flags.TC and sum(len(x) for x in r.answer) == 20


def test_a_lost_query_to_the_upstream_is_sent_again(inrpd_factory, tmp_path):
    fake_addr, client_addr = loopback_addr(), loopback_addr()
    sock = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    sock.bind((fake_addr, 0))
    sock.settimeout(10)
    port = sock.getsockname()[1]
    try:
        d = router(inrpd_factory, tmp_path, f"upstream {fake_addr} port {port};\n"
                   f"allow-recursion {client_addr}/32;\nquery-timeout 1s;\n")
        result = {}

        def client():
            q = dns.message.make_query("retry.upstream.test", "A")
            result["r"] = dns.query.udp(q, d.addr, port=d.port, timeout=5, source=client_addr)
        t = threading.Thread(target=client)
        t.start()
        first, _ = sock.recvfrom(4096)          # lost
        wire, src = sock.recvfrom(4096)         # sent again after half the budget
        q = dns.message.from_wire(wire)
        assert q.id != dns.message.from_wire(first).id     # a fresh id per attempt
        good = dns.message.make_response(q)
        good.answer.append(dns.rrset.from_text("retry.upstream.test.", 60, "IN", "A", "192.0.2.88"))
        sock.sendto(good.to_wire(), src)
        t.join(10)
        assert addrs(result["r"]) == ["192.0.2.88"]
        h = hops(d)[(fake_addr, port)]
        assert h["queries"] == 2 and h["timeouts"] == 1 and h["answers"] == 1
    finally:
        sock.close()
