"""inrpd as a content router: hop-by-hop forwarding along static FIBs,
alternates on timeout, exclusions, loops, redirects, the fallback to a
real upstream resolver (Unbound) with its access control, and truncated
answers asked again over TCP for TCP clients."""

import json
import os
import selectors
import socket
import struct
import subprocess
import threading

import dns.edns
import dns.flags
import dns.message
import dns.name
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
    """(status, load_ms, router_id, origin) from the INRP option of a response, or None."""
    for o in resp.options:
        if o.otype == INRP_OPTION:
            data = o.to_wire() if hasattr(o, "to_wire") else o.data
            data = bytes(data)
            assert len(data) == 20 and data[0] == 1 and data[1] == 2
            return (data[2], struct.unpack(">I", data[4:8])[0], struct.unpack(">Q", data[8:16])[0],
                    struct.unpack(">I", data[16:20])[0])
    return None


def fnv1a64(s):
    h = 0xcbf29ce484222325
    for b in s.encode():
        h = ((h ^ b) * 0x100000001b3) & 0xFFFFFFFFFFFFFFFF
    return h


@pytest.fixture
def chain(inrpd_factory, tmp_path):
    """r0 -> r1 -> r2 -> r3 -> r4, the last with the server for svc.chain.content;
    no packet cache, so every query walks the whole chain."""
    last = router(inrpd_factory, tmp_path, f'route "svc.chain.content" {{ server {SERVER} load 9; }}\n')
    rs = [last]
    for _ in range(4):
        rs.insert(0, router(inrpd_factory, tmp_path, "cache-size 0;\n" + route_via("chain.content", rs[0])))
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
    status, load, rid, origin = inrp_response(r)
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
    # alt's configured load keeps it second until mid fails, whatever the RTTs
    second = router(inrpd_factory, tmp_path, common +
                    f'route "alt.content" {{\n    router {mid.addr} port {mid.port};\n'
                    f'    router {alt.addr} port {alt.port} load 1000;\n}}\n')
    first = router(inrpd_factory, tmp_path, common + route_via("alt.content", second))
    assert addrs(first.udp("a.svc.alt.content")) == [SERVER]
    assert counters(alt)["forwarded"] == 0      # the preferred route is taken while it works

    mid.kill()
    r = first.udp("b.svc.alt.content", timeout=10)
    assert r.rcode() == dns.rcode.NOERROR and addrs(r) == [SERVER]
    assert counters(alt)["forwarded"] == 1
    assert hops(second)[(mid.addr, mid.port)]["timeouts"] == 1
    # within one timeout: second's answer reached first before first's own ran out
    assert hops(first)[(second.addr, second.port)]["timeouts"] == 0
    assert counters(first)["servfail"] == 0
    # the dead hop is now held down: the next query goes straight to the alternate
    assert addrs(first.udp("c.svc.alt.content")) == [SERVER]
    assert hops(second)[(mid.addr, mid.port)]["timeouts"] == 1
    assert counters(alt)["forwarded"] == 2


def test_all_alternates_dead_is_servfail_in_time(inrpd_factory, tmp_path):
    dead = [loopback_addr() for _ in range(2)]
    body = "query-timeout 300ms;\n" + 'route "gone.content" {\n' + "".join(
        f"    router {a} port {free_port(a)};\n" for a in dead) + "}\n"
    d = router(inrpd_factory, tmp_path, body)
    r = d.udp("x.gone.content", timeout=10)
    assert r.rcode() == dns.rcode.SERVFAIL
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
    r = started[0].udp("x.ring.content", timeout=10)
    assert r.rcode() == dns.rcode.SERVFAIL
    # found by the path, not by a timeout
    assert sum(h["timeouts"] for d in started for h in hops(d).values()) == 0
    c = [counters(d) for d in started]
    asked = [x["queries"] - b for x, b in zip(c, before)]
    # once round the ring: the first router sees it twice and stops it
    assert asked == [2] + [1] * (size - 1)
    # the loop's SERVFAIL is not retried (no alternate): each router on the way back
    # fails once, after the first one's answer to itself
    assert c[0]["loops"] == 1 and sum(x["hop_failed"] for x in c) == size
    assert sum(x["servfail"] for x in c) == size + 1


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
    def __init__(self, tmp_path, local_data, extra=()):
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
        ] + [f"  {line}" for line in extra] + [f"  local-data: '{rr}'" for rr in local_data]
        conf.write_text("\n".join(lines) + "\n")
        self.log = self.dir / "unbound.log"
        with open(self.log, "wb") as log:
            self.proc = subprocess.Popen(["unbound", "-d", "-c", str(conf)], stdin=subprocess.DEVNULL,
                                         stdout=log, stderr=log, env=ENV)

        def answers():
            if self.proc.poll() is not None:
                raise AssertionError(f"unbound exited: {self.log.read_text()}")
            try:
                q = dns.message.make_query("a.upstream.test", "A")
                dns.query.udp(q, self.addr, port=self.port, timeout=0.2)
                return True
            except Exception:
                return False
        try:
            wait_for(answers, 30, "unbound to answer")
        except BaseException:
            self.stop()                 # no caller has it yet to stop
            raise

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

    def start(local_data, extra=()):
        """extra: more "server:" lines, e.g. "max-udp-size: 1232"."""
        u = Unbound(tmp_path, local_data, extra)
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
    # a content name is ours: A from the FIB, other types never from the upstream
    assert addrs(d.udp("www.example.content")) == [SERVER]
    r = d.udp("www.example.content", "TXT")
    assert r.rcode() == dns.rcode.NOERROR and r.answer == []
    assert [x.rdtype for x in r.authority] == [dns.rdatatype.SOA]
    c = counters(d)
    assert c["fallback"] == before["fallback"] and c["local"] - before["local"] == 2
    assert hops(d)[(u.addr, u.port)]["answers"] == c["fallback"]
    assert c["fallback"] >= 6


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
    dead_port = free_port(dead)
    d = router(inrpd_factory, tmp_path,
               f"query-timeout 600ms;\nupstream {dead} port {dead_port};\n"
               f"upstream {u.addr} port {u.port};\n")
    assert addrs(d.udp("a.upstream.test", timeout=10)) == ["192.0.2.1"]
    timed_out = hops(d)[(dead, dead_port)]["timeouts"]
    assert timed_out >= 1
    u.stop()
    # another question: the first one's answer is in the cache
    assert d.udp("mx.upstream.test", "MX", timeout=10).rcode() == dns.rcode.SERVFAIL
    assert hops(d)[(dead, dead_port)]["timeouts"] > timed_out


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
    d = router(inrpd_factory, tmp_path, f"max-pending 1;\nquery-timeout 5s;\n"
               f'route "slow.content" {{ router {dead} port {free_port(dead)}; }}\n', workers=1)
    result = {}
    t = threading.Thread(target=lambda: result.setdefault("r", d.udp("a.slow.content", timeout=40)))
    t.start()
    wait_for(lambda: counters(d)["forwarded"] == 1, 10, "the first query in flight")
    r = d.udp("b.slow.content", timeout=10)
    assert r.rcode() == dns.rcode.SERVFAIL
    # at once: the first query is still waiting for its hop
    assert t.is_alive() and counters(d)["servfail"] == 1
    assert counters(d)["pending_full"] == 1
    t.join(45)
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


# ---- truncated answers asked again over TCP ----

def big_txt(owner, count, length):
    """count TXT records of about length bytes each, distinct."""
    return [f'{owner} 300 IN TXT "{i:03d} {"x" * (length - 4)}"' for i in range(count)]


def txt_count(resp):
    return sum(len(x) for x in resp.answer if x.rdtype == dns.rdatatype.TXT)


@pytest.mark.parametrize("count,length", [(20, 70), (40, 100)])
def test_truncated_upstream_answers_are_asked_again_over_tcp_for_tcp_clients(
        inrpd_factory, tmp_path, unbound, count, length):
    # an Unbound that answers at most 1232 bytes over UDP (the DNS Flag Day
    # 2020 size): 1.5 KB does not fit it though it fits the 4096 we
    # advertise; 4.4 KB fits neither
    u = unbound(LOCAL_DATA + big_txt("big.upstream.test.", count, length),
                extra=["max-udp-size: 1232"])
    d = router(inrpd_factory, tmp_path, f"upstream {u.addr} port {u.port};\n")
    before = hops(d)[(u.addr, u.port)]         # the readiness probe went there too
    r = d.tcp("big.upstream.test", "TXT", timeout=5)
    assert r.rcode() == dns.rcode.NOERROR and not r.flags & dns.flags.TC
    assert txt_count(r) == count
    assert counters(d)["upstream_tcp"] == 1
    # a UDP client gets TC, even with room for all of it: it asks again over TCP
    r = d.udp("big.upstream.test", "TXT", use_edns=0, payload=4096, timeout=5)
    assert r.flags & dns.flags.TC and r.answer == []
    c = counters(d)
    assert c["upstream_tcp"] == 1 and c["upstream_tcp_full"] == 0
    # asked over UDP twice (both TC) and over TCP once, every one answered
    h = hops(d)[(u.addr, u.port)]
    assert h["queries"] - before["queries"] == 3 and h["answers"] - before["answers"] == 3
    assert h["timeouts"] == 0


def test_each_router_on_the_path_asks_over_tcp_for_its_tcp_client(inrpd_factory, tmp_path, unbound):
    """client -TCP-> r0 -UDP-> r1 -UDP-> Unbound (r1 is r0's upstream): r1
    relays TC to r0 (a UDP client), r0 asks r1 again over TCP, and r1, now
    with a TCP client, asks Unbound over TCP: the whole answer comes back
    along the path."""
    u = unbound(LOCAL_DATA + big_txt("big.upstream.test.", 40, 100))
    r1 = router(inrpd_factory, tmp_path, f"upstream {u.addr} port {u.port};\n")
    r0 = router(inrpd_factory, tmp_path, f"upstream {r1.addr} port {r1.port};\n")
    r = r0.tcp("big.upstream.test", "TXT", timeout=5)
    assert not r.flags & dns.flags.TC and txt_count(r) == 40
    assert counters(r0)["upstream_tcp"] == 1 and counters(r1)["upstream_tcp"] == 1
    assert counters(r1)["truncated"] == 0
    assert r0.udp("big.upstream.test", "TXT", timeout=5).flags & dns.flags.TC


class TruncatingUpstream:
    """A fake resolver on one address and port.  Over UDP it answers every
    query with TC and no records.  Over TCP, per query, tcp_mode says:
    "answer" (RECORDS TXT records of about 100 bytes), "silent" (reads,
    never answers), "close" (closes without answering), "wrong-id" (the
    whole answer with another id).  It keeps the queries it got and counts
    the TCP connections accepted and those the other side closed."""

    RECORDS = 40

    def __init__(self, tcp_mode):
        self.tcp_mode = tcp_mode
        self.addr = loopback_addr()
        self.port = free_port(self.addr)
        self.udp = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
        self.udp.bind((self.addr, self.port))
        self.listener = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        self.listener.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        self.listener.bind((self.addr, self.port))
        self.listener.listen(128)
        self.udp_queries, self.tcp_queries = [], []
        self.accepted = self.closed_by_peer = 0
        self.error = None
        self.open = {}                          # connection -> bytes read so far
        self.wake_r, self.wake_w = socket.socketpair()
        self.sel = selectors.DefaultSelector()
        self.sel.register(self.udp, selectors.EVENT_READ, "udp")
        self.sel.register(self.listener, selectors.EVENT_READ, "listen")
        self.sel.register(self.wake_r, selectors.EVENT_READ, "stop")
        self.thread = threading.Thread(target=self._serve, daemon=True)
        self.thread.start()

    def answer(self, q):
        r = dns.message.make_response(q)
        name = q.question[0].name
        r.answer.append(dns.rrset.from_text_list(
            name, 300, "IN", "TXT", [f'"{i:03d} {"y" * 96}"' for i in range(self.RECORDS)]))
        return r

    def _serve(self):
        try:
            self._loop()
        except Exception as e:                 # reported by stop(), at teardown
            self.error = e

    def _loop(self):
        while True:
            for key, _ in self.sel.select():
                if key.data == "stop":
                    return
                if key.data == "udp":
                    wire, src = self.udp.recvfrom(65535)
                    q = dns.message.from_wire(wire)
                    self.udp_queries.append(q)
                    r = dns.message.make_response(q)
                    r.flags |= dns.flags.TC
                    self.udp.sendto(r.to_wire(), src)
                elif key.data == "listen":
                    conn, _ = self.listener.accept()
                    conn.settimeout(5)
                    self.open[conn] = b""
                    self.accepted += 1
                    self.sel.register(conn, selectors.EVENT_READ, "conn")
                else:
                    self._on_conn(key.fileobj)

    def _drop(self, conn):
        self.sel.unregister(conn)
        del self.open[conn]
        conn.close()

    def _on_conn(self, conn):
        try:
            data = conn.recv(65536)
        except OSError:
            data = b""
        if not data:
            self.closed_by_peer += 1
            self._drop(conn)
            return
        buf = self.open[conn] + data
        while len(buf) >= 2 and len(buf) >= 2 + struct.unpack(">H", buf[:2])[0]:
            n = struct.unpack(">H", buf[:2])[0]
            q = dns.message.from_wire(buf[2:2 + n])
            buf = buf[2 + n:]
            self.tcp_queries.append(q)
            if self.tcp_mode == "close":
                self._drop(conn)
                return
            if self.tcp_mode in ("answer", "wrong-id"):
                r = self.answer(q)
                if self.tcp_mode == "wrong-id":
                    r.id = (q.id + 1) % 65536
                wire = r.to_wire(max_size=65535)
                conn.sendall(struct.pack(">H", len(wire)) + wire)
        self.open[conn] = buf

    def queries(self, name):
        """(UDP, TCP) queries for name."""
        want = dns.name.from_text(name)
        return ([q for q in self.udp_queries if q.question[0].name == want],
                [q for q in self.tcp_queries if q.question[0].name == want])

    def stop(self):
        self.wake_w.send(b"x")
        self.thread.join(10)
        for conn in list(self.open):
            conn.close()
        for s in (self.udp, self.listener, self.wake_r, self.wake_w):
            s.close()
        self.sel.close()
        assert self.error is None, f"fake upstream failed: {self.error!r}"


@pytest.fixture
def truncating_upstream():
    started = []

    def start(tcp_mode="answer"):
        u = TruncatingUpstream(tcp_mode)
        started.append(u)
        return u
    yield start
    for u in started:
        u.stop()


def inrp_option_of(q):
    """(hop_limit, path, budget_ms) of a query's INRP option, or None."""
    for o in q.options:
        if o.otype == INRP_OPTION:
            data = bytes(o.to_wire() if hasattr(o, "to_wire") else o.data)
            hop_limit, npath = data[2], data[3]
            (budget,) = struct.unpack(">H", data[6:8])
            path = [struct.unpack(">Q", data[8 + 8 * i:16 + 8 * i])[0] for i in range(npath)]
            return hop_limit, path, budget
    return None


def test_tcp_retry_asks_the_same_question_with_a_fresh_id(inrpd_factory, tmp_path, truncating_upstream):
    u = truncating_upstream("answer")
    d = router(inrpd_factory, tmp_path, f"upstream {u.addr} port {u.port};\nquery-timeout 2s;\n")
    r = d.tcp("big.fake.test", "TXT", timeout=5)
    assert not r.flags & dns.flags.TC and txt_count(r) == TruncatingUpstream.RECORDS
    (uq,), (tq,) = u.queries("big.fake.test")
    assert tq.id != uq.id
    assert tq.question == uq.question and tq.flags & dns.flags.RD and tq.edns == 0
    assert inrp_option_of(tq) is None           # the fallback carries no INRP option
    # one exchange per connection: inrpd closes it once it has the answer
    wait_for(lambda: u.closed_by_peer == 1, 5, "inrpd to close its upstream connection")
    # a UDP client gets the TC answer, and no TCP query is made for it
    r = d.udp("udp.fake.test", "TXT", timeout=5)
    assert r.flags & dns.flags.TC and r.answer == []
    assert u.queries("udp.fake.test")[1] == []
    c = counters(d)
    assert c["upstream_tcp"] == 1 and c["bad_upstream"] == 0 and c["servfail"] == 0


def test_tcp_retry_to_the_next_router_carries_the_inrp_option(inrpd_factory, tmp_path,
                                                               truncating_upstream):
    u = truncating_upstream("answer")
    d = router(inrpd_factory, tmp_path, "query-timeout 2s;\nhop-limit 9;\n"
               f'route "fake.content" {{ router {u.addr} port {u.port}; }}\n')
    r = d.tcp("big.fake.content", "TXT", timeout=5)
    assert txt_count(r) == TruncatingUpstream.RECORDS and not r.flags & dns.flags.TC
    (uq,), (tq,) = u.queries("big.fake.content")
    hop_limit, path, budget = inrp_option_of(tq)
    assert (hop_limit, path) == (8, [fnv1a64("r0")]) == inrp_option_of(uq)[:2]
    # the TCP attempt has its own share of what is left of the 2 s
    assert 0 < budget < 2000


def test_a_tcp_answer_that_never_comes_moves_on_to_the_next_upstream(inrpd_factory, tmp_path,
                                                                     truncating_upstream):
    silent, good = truncating_upstream("silent"), truncating_upstream("answer")
    # 4 s: the silent upstream's share (half) holds its UDP round and its TCP
    # connection even on a loaded machine
    d = router(inrpd_factory, tmp_path, "query-timeout 4s;\n"
               f"upstream {silent.addr} port {silent.port};\nupstream {good.addr} port {good.port};\n")
    r = d.tcp("slow.fake.test", "TXT", timeout=15)
    assert txt_count(r) == TruncatingUpstream.RECORDS
    # the fake upstreams' threads record what they read in their own time
    wait_for(lambda: len(silent.queries("slow.fake.test")[1]) == 1, 5, "the silent upstream's TCP query")
    assert len(silent.queries("slow.fake.test")[1]) == 1 and len(good.queries("slow.fake.test")[1]) == 1
    assert hops(d)[(silent.addr, silent.port)]["timeouts"] == 1
    # the connection that timed out is closed, not left behind
    wait_for(lambda: silent.closed_by_peer == 1, 5, "the timed-out connection to be closed")
    assert counters(d)["upstream_tcp"] == 2


def test_a_tcp_answer_that_never_comes_is_servfail_within_the_budget(inrpd_factory, tmp_path,
                                                                    truncating_upstream):
    u = truncating_upstream("silent")
    d = router(inrpd_factory, tmp_path, f"query-timeout 600ms;\nupstream {u.addr} port {u.port};\n")
    r = d.tcp("never.fake.test", "TXT", timeout=10)
    assert r.rcode() == dns.rcode.SERVFAIL
    # asked twice, as any upstream: each round UDP then TCP, each connection closed
    assert [len(x) for x in u.queries("never.fake.test")] == [2, 2]
    wait_for(lambda: u.closed_by_peer == 2, 5, "both connections to be closed")
    assert hops(d)[(u.addr, u.port)]["timeouts"] == 2


@pytest.mark.parametrize("mode", ["close", "wrong-id"])
def test_a_failed_tcp_exchange_is_not_taken_and_does_not_wait(inrpd_factory, tmp_path,
                                                             truncating_upstream, mode):
    u = truncating_upstream(mode)
    d = router(inrpd_factory, tmp_path, f"query-timeout 3s;\nupstream {u.addr} port {u.port};\n")
    before = counters(d)
    r = d.tcp("bad.fake.test", "TXT", timeout=10)
    assert r.rcode() == dns.rcode.SERVFAIL and r.answer == []
    assert [len(x) for x in u.queries("bad.fake.test")] == [2, 2]
    c = counters(d)
    assert c["bad_upstream"] - before["bad_upstream"] == 2
    assert c["upstream_tcp"] - before["upstream_tcp"] == 2
    assert hops(d)[(u.addr, u.port)]["timeouts"] == 0
    if mode == "wrong-id":
        wait_for(lambda: u.closed_by_peer == 2, 5, "inrpd to close both connections")


def tcp_send(s, name, qid, rdtype="TXT"):
    q = dns.message.make_query(name, rdtype)
    q.id = qid
    wire = q.to_wire()
    s.sendall(struct.pack(">H", len(wire)) + wire)


def tcp_recv(s):
    def exactly(n):
        buf = b""
        while len(buf) < n:
            chunk = s.recv(n - len(buf))
            if not chunk:
                raise EOFError
            buf += chunk
        return buf
    (n,) = struct.unpack(">H", exactly(2))
    return dns.message.from_wire(exactly(n))


def reset(s):
    """Closes with a reset: the client is gone.  (A plain close is only a
    half-close to inrpd, which still sends the answers in flight.)"""
    s.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
    s.close()


def test_a_client_going_away_closes_its_upstream_tcp(inrpd_factory, tmp_path, truncating_upstream):
    u = truncating_upstream("silent")
    d = router(inrpd_factory, tmp_path, f"query-timeout 60s;\nupstream {u.addr} port {u.port};\n")
    with socket.create_connection((d.addr, d.port), timeout=10) as s:
        tcp_send(s, "gone.fake.test", 1)
        wait_for(lambda: len(u.queries("gone.fake.test")[1]) == 1, 10, "the upstream TCP query")
        reset(s)
    # long before the query's 60 s (30 s for this attempt): closed for the client, not by a timeout
    wait_for(lambda: u.closed_by_peer == 1, 20, "inrpd to close the upstream connection")
    assert hops(d)[(u.addr, u.port)]["timeouts"] == 0
    assert d.udp("x.fake.test", timeout=5).flags & dns.flags.TC    # still serving


def test_stopping_with_upstream_tcp_in_flight_is_clean(inrpd_factory, tmp_path, truncating_upstream):
    u = truncating_upstream("silent")
    d = router(inrpd_factory, tmp_path, f"query-timeout 10s;\nupstream {u.addr} port {u.port};\n")
    with socket.create_connection((d.addr, d.port), timeout=10) as s:
        tcp_send(s, "stop.fake.test", 1)
        wait_for(lambda: len(u.queries("stop.fake.test")[1]) == 1, 5, "the upstream TCP query")
        assert d.stop() == 0, d.log()           # sanitizer builds: no leak, no use after free
    wait_for(lambda: u.closed_by_peer == 1, 5, "the upstream connection to be closed")


def test_upstream_tcp_connections_are_bounded(inrpd_factory, tmp_path, truncating_upstream):
    limit = 64                                  # TCP_UPSTREAM_MAX in inrpd/tcp.c
    extra = 5
    u = truncating_upstream("silent")
    d = router(inrpd_factory, tmp_path, f"query-timeout 10s;\nupstream {u.addr} port {u.port};\n")
    with socket.create_connection((d.addr, d.port), timeout=10) as s:
        for i in range(limit + extra):
            tcp_send(s, f"q{i}.many.fake.test", i + 1)
        # over the limit, the truncated answer is relayed at once
        got = [tcp_recv(s) for _ in range(extra)]
        assert all(m.flags & dns.flags.TC and m.answer == [] for m in got)
        wait_for(lambda: u.accepted == limit, 5, f"{limit} upstream connections")
        c = counters(d)
        assert c["upstream_tcp"] == limit and c["upstream_tcp_full"] == extra
        reset(s)
    wait_for(lambda: u.closed_by_peer == limit, 5, "every upstream connection to be closed")
    # closed, they count no more against the limit
    with socket.create_connection((d.addr, d.port), timeout=10) as s:
        tcp_send(s, "again.many.fake.test", 1)
        wait_for(lambda: u.accepted == limit + 1, 5, "one more upstream connection")
        reset(s)
    assert counters(d)["upstream_tcp_full"] == extra
