"""The PROXY protocol v2 in front of DNS over TLS and HTTPS: the header
comes before the handshake, as dnsdist and HAProxy send it (often in the
ClientHello's segment).  From a proxy-protocol-from address the client it
carries is the one allow-recursion acts on; from elsewhere a header closes
the connection; a header in pieces is waited for, one cut short counted.
The clients are Python's ssl driven over a raw socket (tlstest's
TlsOverSocket) with the header written by hand (test_inrpd_proxy)."""

import socket
import ssl

import dns.message
import dns.rcode
import pytest

from conftest import loopback_addr, wait_for
from test_inrpd_forward import addrs
from test_inrpd_proxy import STREAM, header, local_header, upstream  # noqa: F401 (fixture)
from tlstest import TlsOverSocket, client_context, doh_exchange, dot_exchange, start, tls_counters

ALPN = {"tls": "dot", "https": "h2"}
CLOSED = (ConnectionError, ssl.SSLError, OSError)


def other_than(addr):
    other = loopback_addr()
    while other == addr:
        other = loopback_addr()
    return other


def proxied(inrpd_factory, tmp_path, proxy, body=""):
    return start(inrpd_factory, tmp_path, f"proxy-protocol-from {proxy}/32;\n" + body, doh=True)


def connect(d, transport, first=b"", source="127.0.0.1", split=None):
    port = d.dot_port if transport == "tls" else d.doh_port
    ctx = client_context(d.certs, alpn=(ALPN[transport],))
    return TlsOverSocket(d.addr, port, ctx, first=first, source=source, split=split)


def ask(d, transport, name, **kw):
    """One query on a new connection: the answer."""
    conn = connect(d, transport, **kw)
    try:
        return (dot_exchange if transport == "tls" else doh_exchange)(conn, dns.message.make_query(name, "A"))
    finally:
        conn.close()


def delta(before, after):
    return {k: after[k] - before[k] for k in after if after[k] != before[k]}


def closed_by_server(d, port, source, data):
    """Sends data from source and reads until inrpd closes (or resets) the connection."""
    with socket.create_connection((d.addr, port), timeout=10, source_address=(source, 0)) as s:
        s.sendall(data)
        try:
            while s.recv(4096):
                pass
        except ConnectionResetError:
            pass


@pytest.mark.parametrize("transport", ["tls", "https"])
def test_the_carried_client_is_what_allow_recursion_sees(inrpd_factory, tmp_path, upstream, transport):
    """The header shares the ClientHello's segment, comes in two pieces, or
    comes alone: each time the carried client is the one allow-recursion
    sees (inside: answered from the upstream; outside: REFUSED), and a
    LOCAL header is the proxy's own query."""
    proxy = loopback_addr()
    d = proxied(inrpd_factory, tmp_path, proxy,
                f"upstream {upstream.addr} port {upstream.port};\n"
                f"allow-recursion 192.0.2.0/24;\nallow-recursion {proxy}/32;\n")
    before = tls_counters(d, transport)
    inside = header("192.0.2.77", dst="192.0.2.53", transport=STREAM)
    for split in (None, 7, 17, len(inside) - 1, len(inside)):
        r = ask(d, transport, "a.upstream.test", first=inside, source=proxy, split=split)
        assert r.rcode() == dns.rcode.NOERROR and addrs(r) == ["192.0.2.1"], split
    outside = header("198.51.100.7", dst="192.0.2.53", transport=STREAM)
    assert ask(d, transport, "a.upstream.test", first=outside, source=proxy).rcode() == dns.rcode.REFUSED
    health = ask(d, transport, "a.upstream.test", first=local_header(), source=proxy)
    assert health.rcode() == dns.rcode.NOERROR and addrs(health) == ["192.0.2.1"]
    c = delta(before, tls_counters(d, transport))
    assert c["proxy_accepted"] == 7 and c["acl_refused"] == 1 and c["handshakes"] == 7
    assert not any(k.startswith("proxy_") and k != "proxy_accepted" for k in c)


@pytest.mark.parametrize("transport", ["tls", "https"])
def test_a_header_from_elsewhere_closes_and_a_proxy_must_send_one(inrpd_factory, tmp_path, transport):
    """A header from an address not in proxy-protocol-from closes the
    connection before any TLS, counted proxy_refused; the same client
    without one is served.  The proxy without a header: proxy_missing."""
    proxy = loopback_addr()
    other = other_than(proxy)
    d = proxied(inrpd_factory, tmp_path, proxy, 'route "x.content" { server 127.0.0.9; }\n')
    port = d.dot_port if transport == "tls" else d.doh_port
    before = tls_counters(d, transport)
    with pytest.raises(CLOSED):
        connect(d, transport, first=header("192.0.2.1", transport=STREAM), source=other).close()
    assert addrs(ask(d, transport, "x.content", source=other)) == ["127.0.0.9"]
    with pytest.raises(CLOSED):
        connect(d, transport, source=proxy).close()
    closed_by_server(d, port, proxy, b"\x16\x03\x01")   # a proxy's TLS record, no header
    wait_for(lambda: tls_counters(d, transport)["proxy_missing"] == before["proxy_missing"] + 2, 10,
             "the missing headers counted")
    c = delta(before, tls_counters(d, transport))
    assert c["proxy_refused"] == 1 and c["proxy_missing"] == 2 and c["handshakes"] == 1
    assert "proxy_accepted" not in c and "handshake_not_tls" not in c


@pytest.mark.parametrize("transport", ["tls", "https"])
def test_a_header_cut_short_is_counted_truncated(inrpd_factory, tmp_path, transport):
    """A header the client leaves unfinished: closed at the idle timeout, or
    by the client's going; each counted proxy_truncated, not as a TLS
    handshake failure."""
    proxy = loopback_addr()
    d = proxied(inrpd_factory, tmp_path, proxy, "tcp-idle-timeout 300ms;\n")
    port = d.dot_port if transport == "tls" else d.doh_port
    before = tls_counters(d, transport)
    part = header("192.0.2.1", transport=STREAM)[:17]
    closed_by_server(d, port, proxy, part)                      # idle
    with socket.create_connection((d.addr, port), timeout=10, source_address=(proxy, 0)) as s:
        s.sendall(part)                                         # the client goes
        s.shutdown(socket.SHUT_WR)
        try:
            s.recv(1)
        except ConnectionResetError:
            pass
    wait_for(lambda: tls_counters(d, transport)["proxy_truncated"] == before["proxy_truncated"] + 2, 10,
             "both counted")
    c = delta(before, tls_counters(d, transport))
    assert not any(k.startswith("handshake") for k in c) and "proxy_accepted" not in c
    wait_for(lambda: tls_counters(d, transport)["connections"] == 0, 10, "the connections closed")
