"""inrpd, first cut: answers from static routes over UDP and TCP, EDNS,
malformed input, config checking and SIGHUP reload.

Run with: /usr/bin/python3 -m pytest tests/integration (INRPD=path/to/inrpd).
"""

import os
import re
import shutil
import signal
import socket
import struct
import subprocess
import threading
import time

import dns.edns
import dns.flags
import dns.message
import dns.name
import dns.opcode
import dns.query
import dns.rcode
import dns.rdataclass
import dns.rdatatype
import pytest

from conftest import REPO, free_port, loopback_addr, reap_orphans, run_inrpd, wait_for

ROUTES = """
answer-ttl 7;
route "www.example.content" {
    server 127.0.0.10;
    server 2001:db8::10;
    server 127.0.0.11;
    server 2001:db8::11;
}
route "shop.example.content" { server 127.0.0.20; server 127.0.0.21; }
route "eu.shop.example.content" { server 127.0.0.30; }
route "v6only.example.content" { server 2001:db8::60; }
"""

# 16 IPv6 servers (the most a route takes) under a ~200-byte name: the
# AAAA answer is ~670 bytes, over 512 but under an EDNS size of 1232.
BIG_NAME = ".".join(["a" * 63, "b" * 63, "c" * 63, "big", "content"])
BIG_ROUTE = 'route "big.content" {\n' + "".join(
    f"    server 2001:db8::{i + 1:x};\n" for i in range(16)) + "}\n"


def addrs(resp, rdtype):
    out = []
    for rrset in resp.answer:
        if rrset.rdtype == dns.rdatatype.from_text(rdtype):
            out.extend(rd.address for rd in rrset)
    return out


def frame(msg):
    wire = msg.to_wire() if hasattr(msg, "to_wire") else msg
    return struct.pack(">H", len(wire)) + wire


def recv_exact(sock, n):
    buf = b""
    while len(buf) < n:
        chunk = sock.recv(n - len(buf))
        if not chunk:
            raise ConnectionError(f"closed after {len(buf)} of {n} bytes")
        buf += chunk
    return buf


def recv_frame(sock):
    (n,) = struct.unpack(">H", recv_exact(sock, 2))
    return recv_exact(sock, n)


def header(qid=0x1111, f1=0x01, f2=0, qd=1, an=0, ns=0, ar=0):
    return struct.pack(">HBBHHHH", qid, f1, f2, qd, an, ns, ar)


QNAME_WIRE = b"\x03www\x07example\x07content\x00"
A_IN = struct.pack(">HH", 1, 1)


@pytest.fixture
def d(inrpd_factory):
    return inrpd_factory(ROUTES + BIG_ROUTE)


# ---- answers ----

def test_a_and_aaaa_for_routed_name(d):
    r = d.udp("www.example.content", "A")
    assert r.rcode() == dns.rcode.NOERROR
    assert addrs(r, "A") == ["127.0.0.10", "127.0.0.11"]          # ranked, preferred first
    assert all(rrset.ttl == 7 for rrset in r.answer)               # answer-ttl
    assert r.answer[0].name == dns.name.from_text("www.example.content")

    r = d.udp("www.example.content", "AAAA")
    assert r.rcode() == dns.rcode.NOERROR
    assert addrs(r, "AAAA") == ["2001:db8::10", "2001:db8::11"]
    assert addrs(r, "A") == []


def test_longest_suffix(d):
    # below a routed name: that route
    assert addrs(d.udp("cart.shop.example.content"), "A") == ["127.0.0.20", "127.0.0.21"]
    assert addrs(d.udp("x.y.www.example.content", "AAAA"), "AAAA") == ["2001:db8::10", "2001:db8::11"]
    # a longer suffix with its own route wins for its subtree
    assert addrs(d.udp("eu.shop.example.content"), "A") == ["127.0.0.30"]
    assert addrs(d.udp("basket.eu.shop.example.content"), "A") == ["127.0.0.30"]
    # a label that merely ends like a routed one is not below it
    assert d.udp("xshop.example.content").rcode() == dns.rcode.REFUSED


def test_case_insensitive_and_question_echoed(d):
    r = d.udp("wWw.ExAmPlE.CoNtEnT", "A")
    assert r.rcode() == dns.rcode.NOERROR
    assert addrs(r, "A") == ["127.0.0.10", "127.0.0.11"]
    # the client's spelling comes back, in the question and the answer owner
    assert r.question[0].name.to_text() == "wWw.ExAmPlE.CoNtEnT."
    assert r.answer[0].name.to_text() == "wWw.ExAmPlE.CoNtEnT."


def test_header_bits(d):
    for flags in (dns.flags.RD, 0):
        q = dns.message.make_query("www.example.content", "A", flags=flags)
        q.id = 0x2468
        r = dns.query.udp(q, d.addr, port=d.port, timeout=2)
        assert r.id == 0x2468
        assert r.flags & dns.flags.QR
        assert r.flags & dns.flags.RA                  # a resolver
        assert not r.flags & dns.flags.AA
        assert not r.flags & dns.flags.TC
        assert bool(r.flags & dns.flags.RD) == bool(flags & dns.flags.RD)
        assert r.opcode() == dns.opcode.QUERY
        assert r.edns == -1                             # no OPT without one in the query


def test_refused_for_unrouted_names(d):
    for name in ("nowhere.example", "example.content", "content", "."):
        r = d.udp(name, "A")
        assert r.rcode() == dns.rcode.REFUSED, name
        assert r.answer == []
        assert r.question[0].name == dns.name.from_text(name)


def soa_of(r):
    assert [x.rdtype for x in r.authority] == [dns.rdatatype.SOA], r
    return r.authority[0]


def test_nodata(d):
    # other types of a routed name: NODATA with the route's SOA (RFC 2308), never REFUSED
    r = d.udp("www.example.content", "MX")
    assert r.rcode() == dns.rcode.NOERROR and r.answer == []
    soa = soa_of(r)
    assert str(soa.name) == "www.example.content." and soa[0].minimum == soa.ttl
    # routed, but no server of that family
    r = d.udp("shop.example.content", "AAAA")
    assert r.rcode() == dns.rcode.NOERROR and r.answer == []
    soa_of(r)
    r = d.udp("v6only.example.content", "A")
    assert r.rcode() == dns.rcode.NOERROR and r.answer == []
    soa_of(r)
    assert addrs(d.udp("v6only.example.content", "AAAA"), "AAAA") == ["2001:db8::60"]


def test_class_other_than_in_refused(d):
    r = d.udp("www.example.content", "A", rdclass=dns.rdataclass.CH)
    assert r.rcode() == dns.rcode.REFUSED


# ---- TCP ----

def test_tcp_answers(d):
    r = d.tcp("www.example.content", "A")
    assert addrs(r, "A") == ["127.0.0.10", "127.0.0.11"]
    assert r.flags & dns.flags.RA
    assert d.tcp("nowhere.example").rcode() == dns.rcode.REFUSED


def test_tcp_half_close_still_answered(d):
    q = dns.message.make_query("eu.shop.example.content", "A")
    with socket.create_connection((d.addr, d.port), timeout=5) as s:
        s.sendall(frame(q))
        s.shutdown(socket.SHUT_WR)                      # done sending
        r = dns.message.from_wire(recv_frame(s))
        assert s.recv(100) == b""                       # then the server closes
    assert r.id == q.id and addrs(r, "A") == ["127.0.0.30"]


def test_tcp_largest_message(d):
    """A 65535-byte message (the most 2 bytes can frame) is read whole,
    answered FORMERR, and the connection goes on."""
    big = header(qid=4321) + QNAME_WIRE + A_IN
    big += b"\x00" * (65535 - len(big))                 # trailing junk: malformed
    with socket.create_connection((d.addr, d.port), timeout=5) as s:
        s.sendall(frame(big))
        r = dns.message.from_wire(recv_frame(s))
        assert r.id == 4321 and r.rcode() == dns.rcode.FORMERR
        q = dns.message.make_query("www.example.content", "A")
        s.sendall(frame(q))
        assert addrs(dns.message.from_wire(recv_frame(s)), "A") == ["127.0.0.10", "127.0.0.11"]


def test_tcp_pipelined_in_order(d):
    names = ["www.example.content", "eu.shop.example.content", "nowhere.example",
             "cart.shop.example.content"]
    qs = []
    for i, n in enumerate(names):
        q = dns.message.make_query(n, "A")
        q.id = 1000 + i
        qs.append(q)
    with socket.create_connection((d.addr, d.port), timeout=5) as s:
        # all queries in one segment, then all answers, in order
        s.sendall(b"".join(frame(q) for q in qs))
        got = [dns.message.from_wire(recv_frame(s)) for _ in qs]
        # and the connection stays usable
        s.sendall(frame(qs[0]))
        again = dns.message.from_wire(recv_frame(s))
    assert [r.id for r in got] == [1000, 1001, 1002, 1003]
    assert [r.question[0].name.to_text() for r in got] == [n + "." for n in names]
    assert addrs(got[0], "A") == ["127.0.0.10", "127.0.0.11"]
    assert addrs(got[1], "A") == ["127.0.0.30"]
    assert got[2].rcode() == dns.rcode.REFUSED
    assert addrs(got[3], "A") == ["127.0.0.20", "127.0.0.21"]
    assert again.id == 1000


def test_tcp_client_that_does_not_read(d):
    """Many pipelined queries from a client that reads nothing until it has
    sent them all: the server stops reading while its answers queue up
    (instead of buffering without bound), and resumes as they drain."""
    n = 120000                                  # ~4.7 MB of queries, ~8.5 MB of answers
    blob = b"".join(frame(header(qid=i & 0xFFFF) + QNAME_WIRE + A_IN) for i in range(n))
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        # a small receive window keeps the answers out of kernel buffers
        s.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 4096)
        s.settimeout(30)
        s.connect((d.addr, d.port))
        sender = threading.Thread(target=s.sendall, args=(blob,))
        sender.start()
        # the sender blocks once the server holds back; give it time to get there
        sender.join(timeout=2)
        ids = [struct.unpack(">H", recv_frame(s)[:2])[0] for _ in range(n)]
        sender.join()
    assert ids == [i & 0xFFFF for i in range(n)]
    assert d.proc.poll() is None


def test_tcp_query_split_across_segments(d):
    q = dns.message.make_query("www.example.content", "A")
    data = frame(q)
    with socket.create_connection((d.addr, d.port), timeout=5) as s:
        s.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        for i in range(len(data)):
            s.sendall(data[i:i + 1])
        r = dns.message.from_wire(recv_frame(s))
    assert r.id == q.id and addrs(r, "A") == ["127.0.0.10", "127.0.0.11"]


def test_tcp_malformed_gets_formerr_and_zero_length_closes(d):
    with socket.create_connection((d.addr, d.port), timeout=5) as s:
        s.sendall(frame(header(qid=77) + b"\xc0\x0c" + A_IN))
        r = dns.message.from_wire(recv_frame(s))
        assert r.id == 77 and r.rcode() == dns.rcode.FORMERR
        s.sendall(b"\x00\x00")                          # an empty message: not DNS
        assert s.recv(100) == b""                       # the server closed


def test_tcp_idle_timeout(inrpd_factory):
    d = inrpd_factory(ROUTES + "tcp-idle-timeout 300ms;\n")
    with socket.create_connection((d.addr, d.port), timeout=10) as idle:
        t0 = time.monotonic()
        assert idle.recv(100) == b""                    # closed by the server
        assert time.monotonic() - t0 >= 0.25
    # a query restarts the clock; the connection is closed after the answer
    with socket.create_connection((d.addr, d.port), timeout=10) as c:
        c.sendall(frame(dns.message.make_query("www.example.content", "A")))
        assert addrs(dns.message.from_wire(recv_frame(c)), "A")
        assert c.recv(100) == b""


def test_tcp_connection_limit(inrpd_factory):
    d = inrpd_factory(ROUTES + "tcp-max-connections 2;\n")
    c1 = socket.create_connection((d.addr, d.port), timeout=5)
    c2 = socket.create_connection((d.addr, d.port), timeout=5)
    try:
        # both accepted connections work
        for c in (c1, c2):
            c.sendall(frame(dns.message.make_query("www.example.content", "A")))
            assert addrs(dns.message.from_wire(recv_frame(c)), "A")
        # over the limit: the newcomer is answered, the one idle the longest (c1) closed
        with socket.create_connection((d.addr, d.port), timeout=5) as c3:
            c3.sendall(frame(dns.message.make_query("www.example.content", "A")))
            assert addrs(dns.message.from_wire(recv_frame(c3)), "A")
        try:
            assert c1.recv(100) == b""
        except ConnectionResetError:
            pass
        c2.sendall(frame(dns.message.make_query("eu.shop.example.content", "A")))
        assert addrs(dns.message.from_wire(recv_frame(c2)), "A") == ["127.0.0.30"]
    finally:
        c1.close()
        c2.close()
    # with those gone there is room again
    wait_for(lambda: tcp_answers(d), 10, "a TCP connection to be accepted again")


def tcp_answers(d):
    try:
        with socket.create_connection((d.addr, d.port), timeout=2) as c:
            c.sendall(frame(dns.message.make_query("www.example.content", "A")))
            return bool(addrs(dns.message.from_wire(recv_frame(c)), "A"))
    except (ConnectionError, socket.timeout):
        return False


def ipv6_loopback():
    try:
        with socket.socket(socket.AF_INET6, socket.SOCK_DGRAM) as s:
            s.bind(("::1", 0))
        return True
    except OSError:
        return False


def test_wildcard_and_ipv6_listen(inrpd_factory):
    """A wildcard listener answers from the address the query went to
    (dnspython rejects a reply from any other source); ::1 over UDP and TCP."""
    if not ipv6_loopback():
        pytest.skip("no IPv6 loopback")
    d = inrpd_factory(lambda addr, port: f"listen 0.0.0.0 port {port};\nlisten ::1 port {port};\n"
                      + ROUTES, listen=False)
    for addr in (d.addr, "127.0.0.1", "::1"):
        q = dns.message.make_query("www.example.content", "AAAA")
        r = dns.query.udp(q, addr, port=d.port, timeout=2)      # raises on a foreign source
        assert addrs(r, "AAAA") == ["2001:db8::10", "2001:db8::11"]
        r = dns.query.tcp(q, addr, port=d.port, timeout=2)
        assert addrs(r, "AAAA") == ["2001:db8::10", "2001:db8::11"]


# ---- EDNS ----

def test_edns_badvers(d):
    q = dns.message.make_query("www.example.content", "A")
    q.use_edns(1)             # make_query(use_edns=1) takes the 1 for True: version 0
    assert q.edns == 1
    r = dns.query.udp(q, d.addr, port=d.port, timeout=2)
    assert r.rcode() == dns.rcode.BADVERS
    assert r.edns == 0                                  # the version we speak
    assert r.answer == []


def test_edns_unknown_option_ignored(d):
    opts = [dns.edns.GenericOption(65001, b"\x08\x02cr"),
            dns.edns.GenericOption(10, bytes(range(8)))]           # a client cookie
    r = d.udp("www.example.content", "A", use_edns=0, payload=4096, options=opts)
    assert r.rcode() == dns.rcode.NOERROR
    assert addrs(r, "A") == ["127.0.0.10", "127.0.0.11"]
    assert r.edns == 0
    assert r.payload == 1232                            # ours: edns-udp-size default
    # the unknown option is not echoed; the cookie gets ours (RFC 7873)
    assert [o.otype for o in r.options] == [10]
    assert bytes(r.options[0].data)[:8] == bytes(range(8)) and len(r.options[0].data) == 24


def test_edns_do_bit_copied(d):
    r = d.udp("www.example.content", "A", use_edns=0, want_dnssec=True)
    assert r.ednsflags & dns.flags.DO
    r = d.udp("www.example.content", "A", use_edns=0)
    assert not r.ednsflags & dns.flags.DO


def test_payload_size_honoured(d):
    want = [f"2001:db8::{i + 1:x}" for i in range(16)]
    # no EDNS: 512 bytes, so TC and the question only
    r = d.udp(BIG_NAME, "AAAA")
    assert r.flags & dns.flags.TC
    assert r.answer == []
    assert r.question[0].name == dns.name.from_text(BIG_NAME)
    # EDNS with 512: still truncated, OPT still there
    r = d.udp(BIG_NAME, "AAAA", use_edns=0, payload=512)
    assert r.flags & dns.flags.TC and r.answer == [] and r.edns == 0
    # EDNS with room: the whole answer over UDP
    r = d.udp(BIG_NAME, "AAAA", use_edns=0, payload=4096)
    assert not r.flags & dns.flags.TC
    assert addrs(r, "AAAA") == want
    # TCP has no 512-byte limit
    r = d.tcp(BIG_NAME, "AAAA")
    assert not r.flags & dns.flags.TC
    assert addrs(r, "AAAA") == want


def test_our_udp_size_caps_the_client(inrpd_factory):
    d = inrpd_factory(BIG_ROUTE + "edns-udp-size 600;\n")
    r = d.udp(BIG_NAME, "AAAA", use_edns=0, payload=4096)
    assert r.payload == 600
    assert r.flags & dns.flags.TC and r.answer == []    # ~680 bytes > our 600


# ---- malformed input ----

def good_query_after(d, bad_wire):
    """Sends bad_wire, then a good query, from one socket.  Returns the
    responses received before the good query's (the bad one's, if any)
    and the good query's.  One source socket means one worker, in order,
    so no waiting is needed to know the bad packet got no answer."""
    good = dns.message.make_query("www.example.content", "A")
    good.id = 0x7777 if bad_wire[:2] != b"\x77\x77" else 0x7778
    before = []
    with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as s:
        s.settimeout(5)
        s.sendto(bad_wire, (d.addr, d.port))
        s.sendto(good.to_wire(), (d.addr, d.port))
        while True:
            data = s.recv(65535)
            if len(data) >= 2 and data[:2] == struct.pack(">H", good.id) and data != bad_wire:
                r = dns.message.from_wire(data)
                if r.question and r.question[0].name == good.question[0].name:
                    return before, r
            before.append(data)


@pytest.mark.parametrize("bad,expect", [
    (header()[:5], None),                                           # truncated header
    (header(f1=0x81) + QNAME_WIRE + A_IN, None),                    # QR set: a response
    (header(qid=0x2001) + b"\xc0\x0c" + A_IN, "FORMERR"),           # compression loop
    (header(qid=0x2002) + b"\x03www\xc0\x0c" + A_IN, "FORMERR"),    # pointer back at itself
    (header(qid=0x2003) + b"\x40" + b"x" * 64 + b"\x00" + A_IN, "FORMERR"),   # 64-byte label
    (header(qid=0x2004, qd=2) + QNAME_WIRE + A_IN + QNAME_WIRE + A_IN, "FORMERR"),
    (header(qid=0x2005, qd=0), "FORMERR"),
    (header(qid=0x2006) + QNAME_WIRE[:9], "FORMERR"),              # question cut short
    (header(qid=0x2007, ar=2) + QNAME_WIRE + A_IN + (b"\x00\x00\x29\x04\xd0" + b"\x00" * 6) * 2,
     "FORMERR"),                                                    # two OPT RRs
    (header(qid=0x2008, f1=(5 << 3)) + QNAME_WIRE + A_IN, "NOTIMP"),  # UPDATE
    (bytes.fromhex("20090000ffff") + bytes(range(40, 120)), "FORMERR"),  # garbage
])
def test_malformed(d, bad, expect):
    before, good = good_query_after(d, bad)
    assert addrs(good, "A") == ["127.0.0.10", "127.0.0.11"]     # still answering
    if expect is None:
        assert before == []
        return
    assert len(before) == 1
    r = dns.message.from_wire(before[0])
    assert r.id == struct.unpack(">H", bad[:2])[0]
    assert r.rcode() == dns.rcode.from_text(expect)
    assert r.flags & dns.flags.QR
    assert r.question == []                             # header only
    assert r.opcode() == (bad[2] >> 3) & 0xF


def test_random_garbage_never_kills_it(d):
    rnd = __import__("random").Random(1234)
    with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as s:
        for _ in range(2000):
            s.sendto(bytes(rnd.getrandbits(8) for _ in range(rnd.randint(0, 80))),
                     (d.addr, d.port))
    assert addrs(d.udp("www.example.content"), "A") == ["127.0.0.10", "127.0.0.11"]
    assert d.proc.poll() is None


# ---- a real client ----

def test_dig(d):
    dig = shutil.which("dig")
    assert dig, "dig (Debian's dnsutils, scripts/setup installs it) is needed"
    out = subprocess.run([dig, f"@{d.addr}", "-p", str(d.port), "www.example.content", "A",
                          "+short", "+time=2", "+tries=1"],
                         capture_output=True, text=True, timeout=20)
    assert out.returncode == 0, out.stderr
    assert out.stdout.split() == ["127.0.0.10", "127.0.0.11"]
    # dig sends EDNS with a cookie by default; full output shows the header
    out = subprocess.run([dig, f"@{d.addr}", "-p", str(d.port), "cart.shop.example.content",
                          "A", "+tcp", "+time=2", "+tries=1"],
                         capture_output=True, text=True, timeout=20)
    assert out.returncode == 0, out.stderr
    assert "status: NOERROR" in out.stdout
    assert re.search(r"flags: qr rd ra;", out.stdout)
    assert re.search(r"cart\.shop\.example\.content\.\s+7\s+IN\s+A\s+127\.0\.0\.20", out.stdout)


# ---- configuration ----

def test_check_config_ok():
    r = run_inrpd("-t", "-c", str(REPO / "config" / "inrpd.conf"))
    assert r.returncode == 0, r.stderr
    assert "valid" in r.stdout


@pytest.mark.parametrize("body,line,reason", [
    ('listen 127.0.0.1 port 5353;\nroute "a.example" {\n  server 300.1.2.3;\n}\n', 3, ""),
    ('listen 127.0.0.1 port 5353;\nanswer-ttl 5;\nfrobnicate yes;\n', 3, "frobnicate"),
    ('listen 127.0.0.1 port 99999;\n', 1, ""),
    ('listen 127.0.0.1 port 53;\nroute "a.example" { server 192.0.2.1; }\n'
     'route "A.example." { server 192.0.2.2; }\n', 3, "already defined"),
    ('listen 127.0.0.1 port 53;\nroute "a.example" {\n}\n', 2, "no server"),
    ('listen 127.0.0.1 port 53;\nroute "a..example" { server 192.0.2.1; }\n', 2, ""),
    ('listen 127.0.0.1 port 53;\nworkers 0;\n', 2, ""),
    ('listen 127.0.0.1 port 53;\nlog-level loud;\n', 2, ""),
    ('listen 127.0.0.1 port 53;\nroute "x.example" { server 192.0.2.1 weight 3; }\n', 2, "load"),
    ('listen 127.0.0.1 port 53;\nroute "x.example" {\n server 192.0.2.1;\n server 192.0.2.1;\n}\n',
     4, "duplicate"),
    ('listen 127.0.0.1 port 53;\nroute "x.example" {\n redirect "y.example";\n server 192.0.2.1;\n}\n',
     2, "one or the other"),
    ('listen 127.0.0.1 port 53;\nroute "x.example" { redirect "x.example"; }\n', 2, "itself"),
    ('listen 127.0.0.1 port 53;\nroute "x.example" { router 192.0.2.1 port 0; }\n', 2, ""),
    ('listen 127.0.0.1 port 53;\nroute "x.example" { router 192.0.2.1 port 53 port 54; }\n', 2, "twice"),
    ('listen 127.0.0.1 port 53;\nupstream 192.0.2.1 load 5;\n', 2, "port"),
    ('listen 127.0.0.1 port 53;\nupstream 192.0.2.1;\nupstream 192.0.2.1;\n', 3, "duplicate"),
    ('listen 127.0.0.1 port 53;\nallow-recursion 10.0.0.0/33;\n', 2, ""),
    ('listen 127.0.0.1 port 53;\nallow-recursion none;\nallow-recursion 10.0.0.0/8;\n', 3, "none"),
    ('listen 127.0.0.1 port 53;\nhop-limit 0;\n', 2, ""),
    ('listen 127.0.0.1 port 53;\nquery-timeout 10ms;\n', 2, ""),
    ('listen 127.0.0.1 port 53;\nrouter-id "";\n', 2, "router-id"),
    ('listen 127.0.0.1 port 53;\nfib-channel "relative/path";\n', 2, "absolute"),
    ('listen 127.0.0.1 port 53;\nmax-pending 0;\n', 2, ""),
    ('listen 127.0.0.1 port 53;\nrefresh-on-route-change 65537;\n', 2, "between 0 and 65536"),
    ('listen 127.0.0.1 port 53;\nrefresh-on-route-change 1;\nrefresh-on-route-change 2;\n', 3, "given twice"),
])
def test_check_config_errors(tmp_path, body, line, reason):
    conf = tmp_path / "broken.conf"
    conf.write_text(body)
    r = run_inrpd("-t", "-c", str(conf))
    assert r.returncode == 1
    assert f"{conf}:{line}:" in r.stderr, r.stderr
    assert reason in r.stderr
    # starting with it fails the same way
    r = run_inrpd("-f", "-c", str(conf))
    assert r.returncode == 1
    assert f"{conf}:{line}:" in r.stderr


def test_missing_config_file(tmp_path):
    r = run_inrpd("-t", "-c", str(tmp_path / "nope.conf"))
    assert r.returncode == 1 and "nope.conf" in r.stderr


def test_command_line():
    r = run_inrpd("--help")
    assert r.returncode == 0 and "-c" in r.stdout
    r = run_inrpd("--version")
    assert r.returncode == 0 and r.stdout.startswith("inrpd ")
    r = run_inrpd()
    assert r.returncode == 1 and "usage" in r.stderr
    r = run_inrpd("-x")
    assert r.returncode == 1


def test_listen_address_in_use(inrpd_factory, tmp_path):
    d = inrpd_factory(ROUTES)
    conf = tmp_path / "second.conf"
    conf.write_text(f"listen {d.addr} port {d.port};\n")
    r = run_inrpd("-f", "-c", str(conf))
    assert r.returncode == 1
    assert "in use" in r.stderr and f"{d.addr} port {d.port}" in r.stderr


def process_gone(pid):
    """True once pid has exited (gone, or a zombie waiting for its reaper)."""
    try:
        with open(f"/proc/{pid}/stat") as f:
            return f.read().rsplit(")", 1)[1].split()[0] == "Z"
    except FileNotFoundError:
        return True


def test_daemon_mode(tmp_path):
    """Without -f: forks, the parent returns once the daemon listens."""
    addr = loopback_addr()
    port = free_port(addr)
    pidfile = tmp_path / "inrpd.pid"
    conf = tmp_path / "daemon.conf"
    conf.write_text(f"listen {addr} port {port};\npid-file \"{pidfile}\";\nworkers 1;\n" + ROUTES)
    r = run_inrpd("-c", str(conf))
    pid = None
    try:
        assert r.returncode == 0, r.stderr
        pid = int(pidfile.read_text())                  # written before the parent returned
        q = dns.message.make_query("www.example.content", "A")
        resp = dns.query.udp(q, addr, port=port, timeout=2)
        assert addrs(resp, "A") == ["127.0.0.10", "127.0.0.11"]
        os.kill(pid, signal.SIGTERM)
        wait_for(lambda: process_gone(pid), 15, "the daemon to exit")
        assert not pidfile.exists()                     # removed on exit
        pid = None
    finally:
        if pid is not None and not process_gone(pid):
            os.kill(pid, signal.SIGKILL)
            wait_for(lambda: process_gone(pid), 15, "the daemon to be killed")
        reap_orphans()
    # a broken config in daemon mode: the error reaches the terminal and the status
    conf.write_text(f"listen {addr} port {port};\nbogus;\n")
    try:
        r = run_inrpd("-c", str(conf))
        assert r.returncode == 1 and f"{conf}:2:" in r.stderr
    finally:
        reap_orphans()


# ---- reload ----

def test_sighup_reload(inrpd_factory):
    d = inrpd_factory(ROUTES)
    assert addrs(d.udp("www.example.content"), "A") == ["127.0.0.10", "127.0.0.11"]

    d.reload('answer-ttl 30;\nroute "www.example.content" { server 127.0.0.99; }\n'
             'route "new.content" { server 127.0.0.98; }\n')
    wait_for(lambda: addrs(d.udp("www.example.content"), "A") == ["127.0.0.99"], 10,
             "the new route")
    r = d.udp("new.content")
    assert addrs(r, "A") == ["127.0.0.98"] and r.answer[0].ttl == 30
    assert d.udp("shop.example.content").rcode() == dns.rcode.REFUSED     # route removed
    assert addrs(d.tcp("www.example.content"), "A") == ["127.0.0.99"]     # TCP sees it too

    # a broken config: logged with file:line, the running one stays
    mark = d.reload('route "www.example.content" { server 127.0.0.77; }\nroute "bad" {\n'
                    '  server not-an-address;\n}\n')
    m = d.wait_log(r"reload failed.*", start=mark)
    assert f"{d.conf}:5:" in m.group(0)                 # after the listen and workers lines
    assert addrs(d.udp("www.example.content"), "A") == ["127.0.0.99"]
    assert addrs(d.udp("new.content"), "A") == ["127.0.0.98"]


def test_reload_under_load(inrpd_factory):
    """Queries from several threads while the FIB is swapped many times:
    every answer is one of the two configs, never an error."""
    d = inrpd_factory(ROUTES, workers=4)
    configs = ['route "www.example.content" { server 127.0.0.10; }\n',
               'route "www.example.content" { server 127.0.0.11; }\n']
    stop = threading.Event()
    bad = []
    counts = [0]

    def hammer():
        q = dns.message.make_query("www.example.content", "A")
        while not stop.is_set():
            try:
                r = dns.query.udp(q, d.addr, port=d.port, timeout=2)
            except Exception as e:                    # noqa: BLE001 - recorded below
                bad.append(repr(e))
                continue
            got = addrs(r, "A")
            if got not in (["127.0.0.10"], ["127.0.0.11"], ["127.0.0.10", "127.0.0.11"]):
                bad.append(f"{r.rcode()} {got}")
            counts[0] += 1

    threads = [threading.Thread(target=hammer) for _ in range(4)]
    for t in threads:
        t.start()
    try:
        for i in range(20):
            mark = d.reload(configs[i % 2], workers=4)
            d.wait_log(r"reloaded", start=mark)
    finally:
        stop.set()
        for t in threads:
            t.join()
    assert bad == []
    assert counts[0] > 0


# ---- counters ----

def test_counters_logged_at_shutdown(inrpd_factory):
    d = inrpd_factory(ROUTES + BIG_ROUTE)
    # UDP: 2 FORMERR, 1 dropped (a response), 1 truncated
    good_query_after(d, header(qid=1) + b"\xc0\x0c" + A_IN)
    good_query_after(d, header(qid=2, qd=0))
    good_query_after(d, header(f1=0x81) + QNAME_WIRE + A_IN)
    assert d.udp(BIG_NAME, "AAAA").flags & dns.flags.TC
    # TCP: 2 answered, 1 refused, 1 formerr
    with socket.create_connection((d.addr, d.port), timeout=5) as s:
        s.sendall(frame(dns.message.make_query("www.example.content", "A")) +
                  frame(dns.message.make_query("nowhere.example", "A")) +
                  frame(header(qid=3) + b"\xc0\x0c" + A_IN) +
                  frame(dns.message.make_query("shop.example.content", "A")))
        for _ in range(4):
            recv_frame(s)
    assert d.stop() == 0
    line = {t: re.search(rf"stopped: {t}: (.*)", d.log()) for t in ("udp", "tcp")}
    assert all(line.values()), d.log()
    udp = dict(re.findall(r"(\w+) (\d+)", line["udp"].group(1)))
    tcp = dict(re.findall(r"(\w+) (\d+)", line["tcp"].group(1)))
    assert udp["dnstap_dropped"] == "0" and tcp["dnstap_dropped"] == "0"    # the last: not cut short
    assert udp["formerr"] == "2" and udp["dropped"] == "1" and udp["truncated"] == "1"
    assert int(udp["queries"]) >= 7 and int(udp["answered"]) == int(udp["queries"]) - 1
    assert {k: tcp[k] for k in ("queries", "answered", "local", "formerr", "refused", "dropped")} == \
        {"queries": "4", "answered": "4", "local": "2", "formerr": "1", "refused": "1", "dropped": "0"}
