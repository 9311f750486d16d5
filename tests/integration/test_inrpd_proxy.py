"""The PROXY protocol v2 in front of inrpd (proxy-protocol-from): from a
proxy's address every datagram and connection carries a header, and the
client it names is the one allow-recursion and RRL act on; from anywhere
else a header is refused; a malformed or truncated one drops the datagram
or closes the connection, each counted by its reason.  The headers are
written by hand here, and dnsdist (useProxyProtocol) is a real sender."""

import json
import shutil
import socket
import struct
import subprocess
import time

import dns.message
import dns.query
import dns.rcode
import pytest

from conftest import ENV, free_port, loopback_addr, run_inrpd, wait_for
from prom import scrape, value
from test_inrpd_basic import ipv6_loopback
from test_inrpd_forward import SERVER, Unbound, addrs, inrpc_json, router

SIG = b"\r\n\r\n\x00\r\nQUIT\n"
LOCAL, PROXY = 0, 1
STREAM, DGRAM = 1, 2
ROUTE = f'route "x.content" {{ server {SERVER}; }}\n'
UPSTREAM_DATA = [
    "upstream.test. 300 IN SOA ns.upstream.test. admin.upstream.test. 1 3600 600 86400 300",
    "a.upstream.test. 300 IN A 192.0.2.1",
]


def header(src, sport=4242, dst="127.0.0.1", dport=53, transport=DGRAM, command=PROXY, tlvs=b"",
           version=2):
    """A v2 header carrying src:sport (IPv4 or IPv6)."""
    fam = socket.AF_INET6 if ":" in src else socket.AF_INET
    body = socket.inet_pton(fam, src) + socket.inet_pton(fam, dst) + struct.pack(">HH", sport, dport) + tlvs
    return (SIG + bytes([version << 4 | command, (0x20 if fam == socket.AF_INET6 else 0x10) | transport])
            + struct.pack(">H", len(body)) + body)


def local_header():
    return SIG + bytes([0x20, 0x00]) + struct.pack(">H", 0)


def query(name="x.content", rdtype="A"):
    return dns.message.make_query(name, rdtype)


def counters(d, transport):
    return inrpc_json(d, "show", "counters")[transport]


def delta(before, after):
    return {k: after[k] - before[k] for k in after if after[k] != before[k]}


class ProxyUdp:
    """A proxy's UDP socket: datagrams from its address, a header in front."""

    def __init__(self, d, source):
        self.d = d
        self.s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
        self.s.bind((source, 0))

    def ask(self, wire, timeout=5.0):
        """Sends the bytes; the response, or None when inrpd took the
        datagram (counted in queries) and sent nothing."""
        before = counters(self.d, "udp")["queries"]
        self.s.sendto(wire, (self.d.addr, self.d.port))
        wait_for(lambda: counters(self.d, "udp")["queries"] > before, 10, "inrpd to take the datagram")
        self.s.settimeout(timeout)
        try:
            return dns.message.from_wire(self.s.recv(65535))
        except socket.timeout:
            return None

    def close(self):
        self.s.close()


def tcp_exchange(d, source, wire, timeout=5.0):
    """Connects from source, sends the bytes; the first answer, or None if
    inrpd closed the connection instead."""
    with socket.create_connection((d.addr, d.port), timeout=timeout, source_address=(source, 0)) as s:
        s.sendall(wire)
        try:
            prefix = s.recv(2)
            if len(prefix) < 2:
                return None
            n = struct.unpack(">H", prefix)[0]
            data = b""
            while len(data) < n:
                chunk = s.recv(n - len(data))
                if not chunk:
                    return None
                data += chunk
            return dns.message.from_wire(data)
        except ConnectionResetError:
            return None


def framed(msg):
    w = msg.to_wire()
    return struct.pack(">H", len(w)) + w


@pytest.fixture
def upstream(tmp_path):
    u = Unbound(tmp_path, UPSTREAM_DATA)
    yield u
    u.stop()


def proxied(inrpd_factory, tmp_path, proxy, body):
    """An inrpd that takes PROXY headers from the address proxy (never
    127.0.0.1: the fixture's readiness probe comes from there, plain)."""
    return router(inrpd_factory, tmp_path, f"proxy-protocol-from {proxy}/32;\n" + body, workers=1)


@pytest.mark.parametrize("transport", ["udp", "tcp"])
def test_the_carried_client_is_what_allow_recursion_sees(inrpd_factory, tmp_path, upstream, transport):
    """The proxy itself may use the upstream; a client it speaks for outside
    allow-recursion may not, and one inside may, though the datagrams all
    come from the proxy.  LOCAL (a health check) is the proxy's own."""
    proxy = loopback_addr()
    mport = free_port("127.0.0.1")
    d = proxied(inrpd_factory, tmp_path, proxy,
                f"upstream {upstream.addr} port {upstream.port};\n"
                f"allow-recursion 192.0.2.0/24;\nallow-recursion {proxy}/32;\n"
                f"metrics 127.0.0.1 port {mport};\n")
    q = query("a.upstream.test")
    if transport == "udp":
        p = ProxyUdp(d, proxy)
        ask = lambda hdr: p.ask(hdr + q.to_wire())              # noqa: E731
    else:
        ask = lambda hdr: tcp_exchange(d, proxy, hdr + framed(q))  # noqa: E731
    kind = DGRAM if transport == "udp" else STREAM
    before = counters(d, transport)
    inside = ask(header("192.0.2.77", transport=kind))
    assert inside.rcode() == dns.rcode.NOERROR and addrs(inside) == ["192.0.2.1"]
    outside = ask(header("198.51.100.7", transport=kind))
    assert outside.rcode() == dns.rcode.REFUSED
    v6 = ask(header("2001:db8::7", dst="2001:db8::53", transport=kind))
    assert v6.rcode() == dns.rcode.REFUSED
    health = ask(local_header())
    assert health.rcode() == dns.rcode.NOERROR and addrs(health) == ["192.0.2.1"]
    c = delta(before, counters(d, transport))
    assert c["proxy_accepted"] == 4 and c["acl_refused"] == 2
    assert not any(k.startswith("proxy_") and k != "proxy_accepted" for k in c)
    if transport == "udp":
        p.close()
    text = scrape("127.0.0.1", mport)
    assert value(text, "inrpd_proxy_accepted_total", transport=transport) >= 4


def test_rrl_budgets_are_per_carried_client(inrpd_factory, tmp_path):
    """Two clients behind one proxy: one flooding runs out of its budget,
    the other, from the same proxy address, keeps all of its own."""
    proxy = loopback_addr()
    rate = 5
    d = proxied(inrpd_factory, tmp_path, proxy,
                f"allow-recursion 10.0.0.0/8;\nrrl-rate {rate};\nrrl-slip 0;\n" + ROUTE)
    p = ProxyUdp(d, proxy)
    p.s.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 1 << 20)

    def flood(client, n):
        before = counters(d, "udp")
        t0 = time.monotonic()
        for _ in range(n):
            p.s.sendto(header(client) + query().to_wire(), (d.addr, d.port))
        wait_for(lambda: counters(d, "udp")["queries"] - before["queries"] >= n, 30, "inrpd to take the flood")
        elapsed = time.monotonic() - t0
        c = delta(before, counters(d, "udp"))
        got = n - c.get("rrl_dropped", 0)
        p.s.settimeout(10)
        for _ in range(got):
            p.s.recv(4096)
        return got, c, rate * (1 + elapsed) + 1

    got, c, most = flood("192.0.2.10", 60)
    assert 0 < got <= most and got < 60 and c["proxy_accepted"] == 60
    # another client through the same proxy, at once: its own budget.  Two
    # prefixes share one if they hash to one of the table's 4096 entries
    # (rrl.c), so of two others at least one is on its own.
    full = []
    for other in ("198.51.100.10", "203.0.113.10"):
        got, c, _ = flood(other, rate)
        full.append(got == rate and "rrl_dropped" not in c)
    assert any(full), full
    p.close()


def test_header_from_elsewhere_is_refused(inrpd_factory, tmp_path):
    """Only proxy-protocol-from may speak for others: a header from another
    address is dropped (UDP) or closes the connection (TCP), counted, and a
    plain query from that address is answered as usual."""
    proxy, other = loopback_addr(), loopback_addr()
    while other == proxy:
        other = loopback_addr()
    d = proxied(inrpd_factory, tmp_path, proxy, ROUTE)
    p = ProxyUdp(d, other)
    before = counters(d, "udp")
    assert p.ask(header("192.0.2.1") + query().to_wire(), timeout=0.5) is None
    assert addrs(p.ask(query().to_wire())) == [SERVER]
    c = delta(before, counters(d, "udp"))
    assert c["proxy_refused"] == 1 and c["dropped"] == 1 and "proxy_accepted" not in c
    p.close()

    before = counters(d, "tcp")
    assert tcp_exchange(d, other, header("192.0.2.1", transport=STREAM) + framed(query())) is None
    assert addrs(tcp_exchange(d, other, framed(query()))) == [SERVER]
    wait_for(lambda: counters(d, "tcp")["proxy_refused"] > before["proxy_refused"], 10, "the refusal counted")
    c = delta(before, counters(d, "tcp"))
    assert c["proxy_refused"] == 1 and c["queries"] == 1


def test_a_proxy_without_a_header_is_refused(inrpd_factory, tmp_path):
    proxy = loopback_addr()
    d = proxied(inrpd_factory, tmp_path, proxy, ROUTE)
    p = ProxyUdp(d, proxy)
    before = counters(d, "udp")
    assert p.ask(query().to_wire(), timeout=0.5) is None
    assert addrs(p.ask(header("192.0.2.1") + query().to_wire())) == [SERVER]
    c = delta(before, counters(d, "udp"))
    assert c["proxy_missing"] == 1 and c["proxy_accepted"] == 1
    p.close()
    before = counters(d, "tcp")
    assert tcp_exchange(d, proxy, framed(query())) is None
    wait_for(lambda: counters(d, "tcp")["proxy_missing"] > before["proxy_missing"], 10, "the refusal counted")
    assert counters(d, "tcp")["queries"] == before["queries"]


def tlv(t, value):
    return bytes([t]) + struct.pack(">H", len(value)) + value


V4_BODY = socket.inet_aton("192.0.2.1") + socket.inet_aton("127.0.0.1") + struct.pack(">HH", 4242, 53)
# (counter, header bytes): each malformed case, by its reason
MALFORMED = [
    ("proxy_truncated", header("192.0.2.1")[:20]),
    ("proxy_truncated", SIG[:12] + b"\x21"),
    ("proxy_bad_version", header("192.0.2.1", version=1)),
    ("proxy_bad_command", SIG + b"\x22\x12" + struct.pack(">H", 12) + V4_BODY),
    ("proxy_bad_family", SIG + b"\x21\x02" + struct.pack(">H", 12) + V4_BODY),      # UNSPEC with PROXY
    ("proxy_bad_family", SIG + b"\x21\x32" + struct.pack(">H", 216) + bytes(216)),  # AF_UNIX
    ("proxy_bad_transport", SIG + b"\x21\x10" + struct.pack(">H", 12) + V4_BODY),
    ("proxy_bad_transport", SIG + b"\x21\x13" + struct.pack(">H", 12) + V4_BODY),
    ("proxy_too_long", header("192.0.2.1", tlvs=tlv(0xe0, bytes(600)))),
    ("proxy_short_address", SIG + b"\x21\x12" + struct.pack(">H", 8) + V4_BODY[:8]),
    ("proxy_short_address", SIG + b"\x21\x22" + struct.pack(">H", 12) + V4_BODY),   # IPv6 with IPv4's length
    ("proxy_bad_tlv", header("192.0.2.1", tlvs=b"\x01\x00\x09abc")),
    ("proxy_bad_tlv", header("192.0.2.1", tlvs=b"\x01\x00")),
]


@pytest.mark.parametrize("transport", ["udp", "tcp"])
def test_malformed_headers_drop_or_close_counted_by_reason(inrpd_factory, tmp_path, transport):
    proxy = loopback_addr()
    d = proxied(inrpd_factory, tmp_path, proxy, ROUTE)
    p = ProxyUdp(d, proxy)
    for counter, bad in MALFORMED:
        before = counters(d, transport)
        if counter == "proxy_truncated" and transport == "udp":
            assert p.ask(bad, timeout=0.3) is None
        elif counter == "proxy_truncated":
            # a stream waits for the rest of a header: cut short, it is counted when the client goes
            with socket.create_connection((d.addr, d.port), source_address=(proxy, 0)) as s:
                s.sendall(bad)
        elif transport == "udp":
            assert p.ask(bad + query().to_wire(), timeout=0.3) is None, counter
        else:
            assert tcp_exchange(d, proxy, bad + framed(query())) is None, counter
        wait_for(lambda: counters(d, transport)[counter] > before[counter], 10, f"{counter} counted")
        c = delta(before, counters(d, transport))
        assert c[counter] == 1 and "proxy_accepted" not in c and "answered" not in c, (counter, c)
    # and it still answers what is well made, a TLV or not
    good = header("192.0.2.1", tlvs=tlv(0x01, b"dot") + tlv(0x04, b""))
    if transport == "udp":
        assert addrs(p.ask(good + query().to_wire())) == [SERVER]
    else:
        assert addrs(tcp_exchange(d, proxy, good + framed(query()))) == [SERVER]
    p.close()


def test_a_proxy_on_ipv6_speaks_for_ipv4_and_ipv6_clients(inrpd_factory, tmp_path, upstream):
    """A proxy on ::1 (a wildcard listener, answers from the address asked)
    names an IPv4 client inside allow-recursion and an IPv6 one outside it."""
    if not ipv6_loopback():
        pytest.skip("no IPv6 loopback")
    ctl = tmp_path / "inrpd.ctl"
    d = inrpd_factory(lambda addr, port:
                      f'control "{ctl}";\nlisten {addr} port {port};\nlisten :: port {port};\n'
                      f"proxy-protocol-from ::1;\nupstream {upstream.addr} port {upstream.port};\n"
                      "allow-recursion 192.0.2.0/24;\n", listen=False, workers=1)
    d.ctl = ctl
    q = query("a.upstream.test")
    before = counters(d, "udp")
    with socket.socket(socket.AF_INET6, socket.SOCK_DGRAM) as s:
        s.settimeout(5)
        for client, rcode in (("192.0.2.5", dns.rcode.NOERROR), ("2001:db8::5", dns.rcode.REFUSED)):
            s.sendto(header(client, dst="192.0.2.53" if "." in client else "2001:db8::53") + q.to_wire(),
                     ("::1", d.port))
            data, src = s.recvfrom(65535)
            assert src[0] == "::1" and dns.message.from_wire(data).rcode() == rcode
    assert delta(before, counters(d, "udp"))["proxy_accepted"] == 2
    # over TCP too
    with socket.create_connection(("::1", d.port), timeout=5) as s:
        s.sendall(header("192.0.2.5", transport=STREAM, dst="192.0.2.53") + framed(q))
        n = struct.unpack(">H", s.recv(2, socket.MSG_WAITALL))[0]
        assert addrs(dns.message.from_wire(s.recv(n, socket.MSG_WAITALL))) == ["192.0.2.1"]


def test_tcp_header_left_unfinished_is_closed_at_the_idle_timeout(inrpd_factory, tmp_path):
    proxy = loopback_addr()
    d = proxied(inrpd_factory, tmp_path, proxy, "tcp-idle-timeout 300ms;\n" + ROUTE)
    before = counters(d, "tcp")
    with socket.create_connection((d.addr, d.port), timeout=10, source_address=(proxy, 0)) as s:
        s.sendall(header("192.0.2.1", transport=STREAM)[:17])
        try:
            assert s.recv(1) == b""
        except ConnectionResetError:
            pass
    c = delta(before, counters(d, "tcp"))
    assert c["proxy_truncated"] == 1 and "queries" not in c


def test_tcp_header_in_pieces_then_pipelined_queries(inrpd_factory, tmp_path):
    """The header may arrive a byte at a time and share a segment with the
    first queries; each query is answered, once, as the carried client."""
    proxy = loopback_addr()
    d = proxied(inrpd_factory, tmp_path, proxy, ROUTE)
    before = counters(d, "tcp")
    hdr = header("192.0.2.1", transport=STREAM)
    with socket.create_connection((d.addr, d.port), timeout=5, source_address=(proxy, 0)) as s:
        s.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        for i in range(len(hdr) - 1):
            s.sendall(hdr[i:i + 1])
            time.sleep(0.002)
        s.sendall(hdr[-1:] + framed(query()) + framed(query()))
        for _ in range(2):
            n = struct.unpack(">H", s.recv(2, socket.MSG_WAITALL))[0]
            assert addrs(dns.message.from_wire(s.recv(n, socket.MSG_WAITALL))) == [SERVER]
    c = delta(before, counters(d, "tcp"))
    assert c["proxy_accepted"] == 1 and c["queries"] == 2


def test_reload_changes_who_is_a_proxy(inrpd_factory, tmp_path):
    proxy = loopback_addr()
    d = proxied(inrpd_factory, tmp_path, proxy, ROUTE)
    p = ProxyUdp(d, proxy)
    assert addrs(p.ask(header("192.0.2.1") + query().to_wire())) == [SERVER]
    mark = d.reload(f'control "{d.ctl}";\nrouter-id "r0";\n' + ROUTE, workers=1)
    d.wait_log("reload", start=mark)

    def plain_answered():
        r = p.ask(query().to_wire(), timeout=0.3)
        return r is not None and addrs(r) == [SERVER]
    wait_for(plain_answered, 10, "the proxy to be an ordinary client")
    before = counters(d, "udp")
    assert p.ask(header("192.0.2.1") + query().to_wire(), timeout=0.3) is None
    assert delta(before, counters(d, "udp"))["proxy_refused"] == 1
    p.close()


@pytest.mark.parametrize("body, reason", [
    ("proxy-protocol-from 300.0.0.1;\n", "300.0.0.1"),
    ("proxy-protocol-from 127.0.0.0/33;\n", "127.0.0.0/33"),
    ("proxy-protocol-from;\n", "proxy-protocol-from"),
    ("proxy-protocol-from 127.0.0.1 127.0.0.2;\n", "proxy-protocol-from"),
    ("".join(f"proxy-protocol-from 10.0.{i}.0/24;\n" for i in range(65)), "too many proxy-protocol-from"),
])
def test_bad_proxy_protocol_from_is_a_config_error(tmp_path, body, reason):
    conf = tmp_path / "inrpd.conf"
    conf.write_text("listen 127.0.0.1 port 5300;\n" + body)
    r = run_inrpd("-t", "-c", str(conf))
    assert r.returncode != 0
    assert f"{conf}:" in r.stderr and reason in r.stderr, r.stderr


class Dnsdist:
    """dnsdist in front of inrpd: useProxyProtocol on the backend, queries
    to inrpd from its own source address."""

    def __init__(self, tmp_path, backend, source):
        self.addr = loopback_addr()
        self.port = free_port(self.addr)
        self.dir = tmp_path / f"dnsdist-{self.port}"
        self.dir.mkdir()
        conf = self.dir / "dnsdist.conf"
        conf.write_text(
            f'setLocal("{self.addr}:{self.port}")\n'
            'setACL({"127.0.0.0/8"})\n'
            f'newServer({{address="{backend.addr}:{backend.port}", source="{source}", '
            'useProxyProtocol=true, checkName="x.content", checkInterval=1})\n')
        self.log = self.dir / "dnsdist.log"
        with open(self.log, "wb") as log:
            self.proc = subprocess.Popen(["dnsdist", "--supervised", "--disable-syslog", "-C", str(conf)],
                                         stdin=subprocess.DEVNULL, stdout=log, stderr=log, env=ENV,
                                         start_new_session=True)

    def stop(self):
        if self.proc.poll() is None:
            self.proc.terminate()
            try:
                self.proc.wait(timeout=10)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()


@pytest.fixture
def dnsdist(tmp_path):
    if not shutil.which("dnsdist"):
        pytest.fail("dnsdist (Debian's dnsdist package) is needed")
    started = []

    def start(backend, source):
        x = Dnsdist(tmp_path, backend, source)
        started.append(x)
        return x
    yield start
    for x in started:
        x.stop()


def dig(server, port, name, source, tcp=False):
    r = subprocess.run(["dig", f"@{server}", "-p", str(port), "-b", source, "+tries=1", "+time=2",
                        *(["+tcp"] if tcp else []), name, "A"],
                       capture_output=True, text=True, timeout=30)
    return r.stdout


def test_dnsdist_in_front_passes_the_digs_address(inrpd_factory, tmp_path, upstream, dnsdist):
    """dig -> dnsdist -> inrpd, over UDP and TCP: inrpd answers as the
    dig's address, not dnsdist's: allow-recursion names the dig's address
    only, so one dig may use the upstream and another is refused."""
    proxy = loopback_addr()
    allowed, other = loopback_addr(), loopback_addr()
    while len({proxy, allowed, other}) < 3:
        allowed, other = loopback_addr(), loopback_addr()
    d = proxied(inrpd_factory, tmp_path, proxy,
                f"upstream {upstream.addr} port {upstream.port};\nallow-recursion {allowed}/32;\n" + ROUTE)
    x = dnsdist(d, proxy)

    def through(source, tcp=False):
        return dig(x.addr, x.port, "a.upstream.test", source, tcp)
    wait_for(lambda: "status: NOERROR" in through(allowed), 30, "dnsdist to answer through inrpd")
    before = inrpc_json(d, "show", "counters")
    for tcp in (False, True):
        out = through(allowed, tcp)
        assert "status: NOERROR" in out and "192.0.2.1" in out, out
        assert "status: REFUSED" in through(other, tcp)
    # a routed name is answered whoever asks
    assert SERVER in dig(x.addr, x.port, "x.content", other)
    after = inrpc_json(d, "show", "counters")
    for t in ("udp", "tcp"):
        c = delta(before[t], after[t])
        assert c.get("proxy_accepted", 0) >= 2 and c["acl_refused"] == 1, (t, c)
        assert not any(k.startswith("proxy_") and k != "proxy_accepted" for k in c), (t, c)
    # dnsdist's health checks, once a second with a LOCAL header, are taken as its own queries
    def health_checked():
        c = delta(after["udp"], counters(d, "udp"))
        return c if c.get("proxy_accepted", 0) > 0 and c.get("local") == c["proxy_accepted"] else None
    c = wait_for(health_checked, 10, "a health check answered")
    assert not any(k.startswith("proxy_") and k != "proxy_accepted" for k in c), c
