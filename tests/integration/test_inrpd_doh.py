"""DNS over HTTPS (RFC 8484): kdig (POST and GET), curl (--doh-url, and
100 requests multiplexed on one HTTP/2 connection) and dnsperf as
clients; the same answers as over UDP for routed, forwarded and fallback
names; Cache-Control from the answer's TTL; each malformed request its
status, counted, and the daemon serving on; ALPN h2 required."""

import base64
import http.server
import re
import shutil
import signal
import socket
import ssl
import subprocess
import threading

import dns.message
import dns.rcode
import pytest

from conftest import wait_for
from prom import scrape, value
from test_inrpd_forward import LOCAL_DATA, addrs, unbound  # noqa: F401 (fixture)
from tlstest import SERVER_NAME, client_context, same_answer, start, tls_counters

ROUTED = 'route "www.example.content" { server 127.0.0.10; server 127.0.0.11; }\n'


def https(d):
    return tls_counters(d, "https")


def url(d, path="/dns-query"):
    return f"https://{SERVER_NAME}:{d.doh_port}{path}"


def curl(d, *args, timeout=60):
    """curl against d's DoH listener (dns.test resolved to it, our CA trusted)."""
    return subprocess.run(["curl", "-s", "--http2", "--resolve", f"{SERVER_NAME}:{d.doh_port}:{d.addr}",
                           "--cacert", str(d.certs.ca), *args], capture_output=True, timeout=timeout)


def status_of(d, *args):
    r = curl(d, "-o", "/dev/null", "-w", "%{http_code}", *args)
    return int(r.stdout)


def b64url(wire):
    return base64.urlsafe_b64encode(wire).rstrip(b"=").decode()


def kdig(d, name, rdtype="A", method="+https"):
    r = subprocess.run(["kdig", f"@{d.addr}", "-p", str(d.doh_port), method, f"+tls-ca={d.certs.ca}",
                        f"+tls-hostname={SERVER_NAME}", name, rdtype], capture_output=True, text=True, timeout=30)
    assert r.returncode == 0, r.stdout + r.stderr
    return r.stdout


def doh_get(d, name, rdtype="A"):
    q = dns.message.make_query(name, rdtype)
    q.id = 0            # RFC 8484 4.1: cache friendly
    r = curl(d, "-D", "-", "-o", "-", url(d) + "?dns=" + b64url(q.to_wire()))
    head, _, body = r.stdout.partition(b"\r\n\r\n")
    return head.decode(), dns.message.from_wire(body)


def test_routed_forwarded_and_fallback_names_answer_as_over_udp(inrpd_factory, tmp_path, unbound):
    u = unbound(LOCAL_DATA)
    far = inrpd_factory('route "svc.far.content" { server 127.0.0.77; }\n')
    d = start(inrpd_factory, tmp_path, ROUTED + f"upstream {u.addr} port {u.port};\n"
              f'route "far.content" {{ router {far.addr} port {far.port}; }}\n', dot=False, doh=True)
    for name, rdtype in (("www.example.content", "A"), ("svc.far.content", "A"), ("a.upstream.test", "A"),
                         ("mx.upstream.test", "MX"), ("nothing.upstream.test", "A")):
        head, over_https = doh_get(d, name, rdtype)
        assert " 200" in head.splitlines()[0]
        assert same_answer(over_https, d.udp(name, rdtype)), (name, rdtype, over_https)
    # kdig: POST (+https) and GET (+https-get)
    for method in ("+https", "+https-get"):
        assert "127.0.0.10" in kdig(d, "www.example.content", method=method)
        assert "127.0.0.77" in kdig(d, "svc.far.content", method=method)
        assert "192.0.2.1" in kdig(d, "a.upstream.test", method=method)
    t = https(d)
    assert t["queries"] == t["answered"] == t["http_200"] == 11
    assert t["forwarded"] >= 1 and t["fallback"] >= 1


def test_cache_control_is_the_answers_smallest_ttl(inrpd_factory, tmp_path, unbound):
    u = unbound(LOCAL_DATA)
    d = start(inrpd_factory, tmp_path, ROUTED + "answer-ttl 7;\n" + f"upstream {u.addr} port {u.port};\n",
              dot=False, doh=True)
    head, r = doh_get(d, "www.example.content")
    assert addrs(r) and re.search(r"(?im)^cache-control: max-age=7\r?$", head), head
    assert re.search(r"(?im)^content-type: application/dns-message\r?$", head), head
    head, r = doh_get(d, "a.upstream.test")
    ttl = min(rr.ttl for rr in r.answer)
    assert re.search(rf"(?im)^cache-control: max-age={ttl}\r?$", head), (head, ttl)
    # a negative answer: the SOA's minimum
    head, r = doh_get(d, "nothing.upstream.test")
    assert r.rcode() == dns.rcode.NXDOMAIN
    age = int(re.search(r"(?im)^cache-control: max-age=(\d+)", head).group(1))
    assert 0 < age <= 300


class HttpServer:
    """A web server on an address a route points at: curl reaches it only by inrpd's DoH answer."""

    def __init__(self, addr):
        class Hello(http.server.BaseHTTPRequestHandler):
            def do_GET(self):
                self.send_response(200)
                self.end_headers()
                self.wfile.write(b"hello from the content server\n")

            def log_message(self, *a):
                pass
        self.srv = http.server.HTTPServer((addr, 0), Hello)
        self.port = self.srv.server_address[1]
        threading.Thread(target=self.srv.serve_forever, daemon=True).start()

    def stop(self):
        self.srv.shutdown()
        self.srv.server_close()


def test_curl_resolves_by_doh(inrpd_factory, tmp_path):
    web = HttpServer("127.0.0.93")
    try:
        d = start(inrpd_factory, tmp_path, 'route "web.example.content" { server 127.0.0.93; }\n',
                  dot=False, doh=True)
        r = curl(d, "--doh-url", url(d), "--max-time", "20",
                 f"http://web.example.content:{web.port}/")
        assert r.stdout == b"hello from the content server\n", r.stderr
        assert https(d)["http_200"] >= 1
    finally:
        web.stop()


def test_malformed_requests_get_their_status_and_are_counted(inrpd_factory, tmp_path):
    d = start(inrpd_factory, tmp_path, ROUTED, dot=False, doh=True)
    q = dns.message.make_query("www.example.content", "A").to_wire()
    big = tmp_path / "big"
    big.write_bytes(q + bytes(70000))
    body = tmp_path / "q"
    body.write_bytes(q)
    ct = ["-H", "content-type: application/dns-message"]
    cases = [
        (400, [url(d) + "?dns=" + b64url(q) + "%%"]),                      # not base64url
        (400, [url(d) + "?dns=" + b64url(q) + "="]),                       # padding is not allowed
        (400, [url(d) + "?dns=AAAA"]),                                     # shorter than a header
        (400, [url(d)]),                                                   # no message at all
        (404, [url(d, "/other") + "?dns=" + b64url(q)]),
        (404, [url(d, "/dns-query/x") + "?dns=" + b64url(q)]),
        (405, ["-X", "PUT", *ct, "--data-binary", f"@{body}", url(d)]),
        (405, ["-X", "DELETE", url(d)]),
        (415, ["-H", "content-type: text/plain", "--data-binary", f"@{body}", url(d)]),
        (415, ["--data-binary", f"@{body}", url(d)]),
        (413, [*ct, "--data-binary", f"@{big}", url(d)]),
        (200, [*ct, "--data-binary", f"@{body}", url(d)]),
        (200, [url(d) + "?ct&dns=" + b64url(q)]),
    ]
    for want, args in cases:
        assert status_of(d, *args) == want, (want, args)
    t = https(d)
    assert (t["http_400"], t["http_404"], t["http_405"], t["http_413"], t["http_415"], t["http_200"]) == \
        (4, 2, 2, 1, 2, 2)
    # the daemon is fine: every transport answers
    assert addrs(d.udp("www.example.content")) and addrs(doh_get(d, "www.example.content")[1])


def test_https_path_is_configurable(inrpd_factory, tmp_path):
    d = start(inrpd_factory, tmp_path, ROUTED + 'https-path "/resolve";\n', dot=False, doh=True)
    q = b64url(dns.message.make_query("www.example.content", "A").to_wire())
    assert status_of(d, url(d, "/resolve") + "?dns=" + q) == 200
    assert status_of(d, url(d) + "?dns=" + q) == 404


def test_a_hundred_streams_on_one_connection_are_all_answered(inrpd_factory, tmp_path):
    d = start(inrpd_factory, tmp_path, ROUTED, dot=False, doh=True)
    urls = []
    for i in range(100):
        q = dns.message.make_query(f"n{i}.www.example.content", "A")
        urls.append(url(d) + "?dns=" + b64url(q.to_wire()))
    cfg = tmp_path / "urls"
    cfg.write_text("".join(f'url = "{u}"\noutput = "{tmp_path}/out{i}"\n' for i, u in enumerate(urls)))
    r = curl(d, "--parallel", "--parallel-max", "100", "-w", "%{http_code} %{num_connects}\n",
             "-K", str(cfg), timeout=120)
    codes = r.stdout.decode().split("\n")
    assert [c.split()[0] for c in codes if c] == ["200"] * 100, r.stdout
    for i in range(100):
        m = dns.message.from_wire((tmp_path / f"out{i}").read_bytes())
        assert str(m.question[0].name) == f"n{i}.www.example.content." and addrs(m)
    t = https(d)
    assert t["http_200"] == 100 and t["handshakes"] == 1


def test_a_client_without_h2_is_refused(inrpd_factory, tmp_path):
    d = start(inrpd_factory, tmp_path, ROUTED, dot=False, doh=True)
    ctx = client_context(d.certs, alpn=("http/1.1",))
    with socket.create_connection((d.addr, d.doh_port), timeout=10) as raw:
        with ctx.wrap_socket(raw, server_hostname=SERVER_NAME) as s:
            s.sendall(b"GET /dns-query HTTP/1.1\r\nHost: dns.test\r\n\r\n")
            try:
                assert s.recv(100) == b""
            except (ssl.SSLError, ConnectionError):
                pass
    wait_for(lambda: https(d)["alpn_refused"] == 1, 10, "the refusal counted")


def test_dnsperf_over_doh(inrpd_factory, tmp_path):
    if not shutil.which("dnsperf"):
        pytest.fail("dnsperf is missing (scripts/setup installs it)")
    d = start(inrpd_factory, tmp_path, ROUTED, dot=False, doh=True)
    qfile = tmp_path / "queries"
    qfile.write_text("www.example.content A\nx.www.example.content AAAA\n" * 50)
    out = subprocess.run(["dnsperf", "-m", "doh", "-s", d.addr, "-p", str(d.doh_port), "-d", str(qfile),
                          "-n", "4", "-c", "2"], capture_output=True, text=True, timeout=120).stdout
    assert re.search(r"Queries completed:\s+400 ", out), out
    assert re.search(r"Queries lost:\s+0 ", out), out
    assert https(d)["http_200"] == 400


def test_metrics_count_by_transport(inrpd_factory, tmp_path):
    from conftest import free_port
    mport = free_port("127.0.0.1")
    d = start(inrpd_factory, tmp_path, ROUTED + f"metrics 127.0.0.1 port {mport};\n", dot=True, doh=True)
    doh_get(d, "www.example.content")
    assert status_of(d, url(d, "/nope")) == 404
    s = scrape("127.0.0.1", mport)
    assert value(s, "inrpd_queries_total", transport="https") == 1
    assert value(s, "inrpd_queries_total", transport="tls") == 0
    assert value(s, "inrpd_https_responses_total", code="200") == 1
    assert value(s, "inrpd_https_responses_total", code="404") == 1
    assert value(s, "inrpd_tls_handshakes_total", transport="https") == 2
    assert value(s, "inrpd_tls_handshake_failures_total", transport="tls", reason="version") == 0
    assert value(s, "inrpd_tls_certificate_expiry_seconds") > 9 * 86400


# ---- a client that opens streams and never finishes their bodies ----

class RawH2:
    """Just enough HTTP/2 to be a hostile client: HEADERS, DATA within the
    windows the server grants, and the frames it sends read for them."""

    def __init__(self, d):
        ctx = client_context(d.certs, alpn=("h2",))
        raw = socket.create_connection((d.addr, d.doh_port), timeout=10)
        self.sock = ctx.wrap_socket(raw, server_hostname=SERVER_NAME)
        assert self.sock.selected_alpn_protocol() == "h2"
        self.buf = b""
        self.conn_window = 65535
        self.stream_initial = 65535
        self.stream_window = {}
        self.sock.sendall(b"PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n" + self.frame(4, 0, 0, b""))

    @staticmethod
    def frame(ftype, flags, stream, payload):
        return len(payload).to_bytes(3, "big") + bytes([ftype, flags]) + stream.to_bytes(4, "big") + payload

    def read(self, timeout):
        """Reads the frames that come within timeout; True if any did."""
        self.sock.settimeout(timeout)
        try:
            data = self.sock.recv(65536)
        except (socket.timeout, ssl.SSLWantReadError):
            return False
        if not data:
            raise ConnectionError("closed by the server")
        self.buf += data
        while len(self.buf) >= 9 and len(self.buf) >= 9 + int.from_bytes(self.buf[:3], "big"):
            n = int.from_bytes(self.buf[:3], "big")
            ftype, flags, stream = self.buf[3], self.buf[4], int.from_bytes(self.buf[5:9], "big") & 0x7FFFFFFF
            payload, self.buf = self.buf[9:9 + n], self.buf[9 + n:]
            if ftype == 4 and not flags & 1:             # SETTINGS: ours to acknowledge
                for i in range(0, len(payload), 6):
                    if int.from_bytes(payload[i:i + 2], "big") == 4:         # INITIAL_WINDOW_SIZE
                        new = int.from_bytes(payload[i + 2:i + 6], "big")
                        for s in self.stream_window:
                            self.stream_window[s] += new - self.stream_initial
                        self.stream_initial = new
                self.sock.sendall(self.frame(4, 1, 0, b""))
            elif ftype == 8:                              # WINDOW_UPDATE
                inc = int.from_bytes(payload[:4], "big") & 0x7FFFFFFF
                if stream == 0:
                    self.conn_window += inc
                elif stream in self.stream_window:
                    self.stream_window[stream] += inc
        return True

    def open_post(self, stream):
        block = b""
        for k, v in ((":method", "POST"), (":scheme", "https"), (":path", "/dns-query"),
                     (":authority", SERVER_NAME), ("content-type", "application/dns-message")):
            block += b"\x00" + bytes([len(k)]) + k.encode() + bytes([len(v)]) + v.encode()
        self.sock.sendall(self.frame(1, 4, stream, block))     # END_HEADERS, no END_STREAM
        self.stream_window[stream] = self.stream_initial

    def send_what_is_allowed(self, stream, want):
        """DATA on stream up to want bytes, as far as the windows allow; returns what was sent."""
        sent = 0
        while sent < want:
            n = min(16384, want - sent, self.conn_window, self.stream_window[stream])
            if n <= 0:
                break
            self.sock.sendall(self.frame(0, 0, stream, bytes(n)))
            self.conn_window -= n
            self.stream_window[stream] -= n
            sent += n
        return sent


def test_unfinished_bodies_cannot_pile_up(inrpd_factory, tmp_path):
    """100 streams each sending a 60 KiB body it never ends: flow control
    lets the connection hand inrpd about 256 KiB of them, not 6 MB, and
    other clients are answered meanwhile."""
    from conftest import SANITIZED, rss_kib
    d = start(inrpd_factory, tmp_path, ROUTED, dot=False, doh=True)
    h = RawH2(d)
    while h.read(0.5):
        pass                                        # the server's SETTINGS and window
    rss0 = rss_kib(d.proc.pid)
    sent = 0
    streams = [2 * i + 1 for i in range(100)]
    for s in streams:
        h.open_post(s)
    progress = True
    while progress:
        progress = False
        for s in streams:
            n = h.send_what_is_allowed(s, 60 * 1024 - 0)
            sent += n
            progress |= n > 0
        progress |= h.read(1.0)                     # credit, if the server gives any
        if sent >= 100 * 60 * 1024:
            break
    assert 200 * 1024 <= sent <= 320 * 1024, sent
    if not SANITIZED:                               # ASan's quarantine keeps what was freed
        assert rss_kib(d.proc.pid) - rss0 < 2048
    # another client is served while this one sits on its window
    head, r = doh_get(d, "www.example.content")
    assert " 200" in head.splitlines()[0] and addrs(r)
    h.sock.close()


def test_sigusr1_and_shutdown_log_tls_and_https_counters(inrpd_factory, tmp_path):
    """SIGUSR1 and the stop log a line of counters for each transport: TLS's
    and HTTPS's with their own (handshakes, HTTP statuses) after the
    answer path's."""
    d = start(inrpd_factory, tmp_path, ROUTED, dot=True, doh=True)
    head, r = doh_get(d, "www.example.content")
    assert " 200" in head.splitlines()[0] and addrs(r)
    assert "127.0.0.10" in subprocess.run(
        ["kdig", f"@{d.addr}", "-p", str(d.dot_port), "+tls", f"+tls-ca={d.certs.ca}",
         f"+tls-hostname={SERVER_NAME}", "www.example.content", "A"], capture_output=True, text=True,
        timeout=30).stdout

    def logged(when):
        lines = {t: re.search(rf"{when}: {t}: (.*)", d.log()) for t in ("udp", "tcp", "tls", "https")}
        assert all(lines.values()), d.log()
        return {t: dict(re.findall(r"(\w+) (\d+)", m.group(1))) for t, m in lines.items()}
    d.signal(signal.SIGUSR1)
    d.wait_log("statistics: https: ")
    for when in ("statistics", "stopped"):
        c = logged(when)
        assert c["tls"]["queries"] == "1" and c["tls"]["handshakes"] == "1" and "http_200" not in c["tls"]
        assert c["https"]["queries"] == "1" and c["https"]["http_200"] == "1"
        if when == "statistics":
            assert d.stop() == 0
