"""dnstap query logs: inrpd writes Frame Streams to a real reader
(fstrm_capture), and dnstap-ldns decodes what it wrote: clients' queries
and answers over UDP and TCP, forwarded queries with the next hop's
address, identity and version; over TLS and HTTPS (decoded by
tests/tools/tapdump, protobuf-c's reader: dnstap-ldns 0.2 cannot name
DOT) as the client a PROXY header carried.  Without a reader, answers go
on and the messages are counted as dropped; a reader that goes away and
comes back is written to again."""

import json
import os
import pathlib
import re
import signal
import socket
import struct
import subprocess
import threading

import dns.message
import dns.query
import pytest

from conftest import ENV, free_port, loopback_addr, run_inrpd, wait_for
from test_inrpd_forward import counters, router
from test_inrpd_proxy import STREAM, header
from tlstest import TlsOverSocket, client_context, doh_exchange, dot_exchange, start
import prom

SERVER = "127.0.0.98"


class Capture:
    """fstrm_capture reading dnstap from a unix socket into a file."""

    def __init__(self, sock, out):
        self.out = out
        self.log = open(str(out) + ".log", "wb")
        self.proc = subprocess.Popen(
            ["fstrm_capture", "-t", "protobuf:dnstap.Dnstap", "-u", str(sock), "-w", str(out)],
            stdin=subprocess.DEVNULL, stdout=self.log, stderr=self.log, env=ENV)
        wait_for(lambda: sock.exists() or self.proc.poll() is not None, 10, "fstrm_capture's socket")
        assert self.proc.poll() is None, open(str(out) + ".log").read()

    def stop(self, sig=signal.SIGTERM):
        if self.proc.poll() is None:
            self.proc.send_signal(sig)
            try:
                self.proc.wait(timeout=10)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()
                raise AssertionError("fstrm_capture did not stop on SIGTERM")
        self.log.close()

    def messages(self):
        """Every message in the file, as dnstap-ldns's YAML: dicts of its plain fields."""
        r = subprocess.run(["dnstap-ldns", "-y", "-r", str(self.out)], capture_output=True, text=True,
                           timeout=30)
        assert r.returncode == 0, r.stderr
        found = []
        for doc in r.stdout.split("\n---"):
            fields = dict(re.findall(r'^\s*(\w+): "?([^"\n|]*?)"?$', doc, re.M))
            if fields:
                m = re.search(r"^\s*;(\S+)\s+IN\s+(\w+)", doc, re.M)
                fields["question"] = (m.group(1), m.group(2)) if m else None
                found.append(fields)
        return found

    def decoded(self):
        """Every message, read by protobuf-c (tests/tools/tapdump): dicts, messages as dnspython's."""
        tool = pathlib.Path(os.environ.get("CR_BUILD", pathlib.Path(__file__).parents[2] / "build"))
        r = subprocess.run([str(tool / "tests" / "tools" / "tapdump"), str(self.out)], capture_output=True,
                           text=True, timeout=30)
        assert r.returncode == 0, r.stderr
        found = [json.loads(line) for line in r.stdout.splitlines()]
        for m in found:
            for k in ("query_message", "response_message"):
                if k in m:
                    m[k] = dns.message.from_wire(bytes.fromhex(m[k]))
        return found


@pytest.fixture
def capture():
    started = []

    def start(sock, out):
        c = Capture(sock, out)
        started.append(c)
        return c
    yield start
    for c in started:
        c.stop()


def tap_body(sock, body=""):
    return (f'dnstap {{ socket-path "{sock}"; identity "tap-test"; version "tap-version 1"; }}\n'
            f'route "local.content" {{ server {SERVER}; }}\n' + body)


def tapped(factory, tmp_path, sock, body="", **kw):
    return router(factory, tmp_path, tap_body(sock, body), **kw)


def ask(d, name, tcp=False, source_port=0):
    q = dns.message.make_query(name, "A")
    if tcp:
        return dns.query.tcp(q, d.addr, port=d.port, timeout=5, source="127.0.0.1", source_port=source_port)
    return dns.query.udp(q, d.addr, port=d.port, timeout=5, source="127.0.0.1", source_port=source_port)


def test_client_and_forwarded_messages_decode(inrpd_factory, capture, tmp_path):
    sock = tmp_path / "tap.sock"
    cap = capture(sock, tmp_path / "tap.fstrm")
    hop = inrpd_factory(f'route "far.content" {{ server {SERVER}; }}\n')
    d = tapped(inrpd_factory, tmp_path, sock, f'route "far.content" {{ router {hop.addr} port {hop.port}; }}\n')
    d.wait_log("dnstap: connected to")
    base = counters(d)                  # the start's readiness probes are logged too
    port = free_port("127.0.0.1")
    assert [a.address for a in ask(d, "www.local.content", source_port=port).answer[0]] == [SERVER]
    assert [a.address for a in ask(d, "tcp.local.content", tcp=True).answer[0]] == [SERVER]
    assert [a.address for a in ask(d, "www.far.content").answer[0]] == [SERVER]
    assert [a.address for a in ask(d, "tcp.far.content", tcp=True).answer[0]] == [SERVER]
    # 4 client queries and answers, 2 queries to the hop and their answers
    wait_for(lambda: counters(d)["dnstap_sent"] == base["dnstap_sent"] + 12, 10, "12 messages handed over")
    assert counters(d)["dnstap_dropped"] == base["dnstap_dropped"]
    d.stop()                            # the I/O thread writes what it holds
    cap.stop()

    msgs = [m for m in cap.messages() if m["question"][0].endswith(".content.")]
    assert len(msgs) == 12
    assert all(m["identity"] == "tap-test" and m["version"] == "tap-version 1" for m in msgs)
    by = {(m["type"], m["socket_protocol"], m["question"][0]): m for m in msgs}
    want = {
        ("CLIENT_QUERY", "UDP", "www.local.content."), ("CLIENT_RESPONSE", "UDP", "www.local.content."),
        ("CLIENT_QUERY", "TCP", "tcp.local.content."), ("CLIENT_RESPONSE", "TCP", "tcp.local.content."),
        ("CLIENT_QUERY", "UDP", "www.far.content."), ("FORWARDER_QUERY", "UDP", "www.far.content."),
        ("FORWARDER_RESPONSE", "UDP", "www.far.content."), ("CLIENT_RESPONSE", "UDP", "www.far.content."),
        ("CLIENT_QUERY", "TCP", "tcp.far.content."), ("FORWARDER_QUERY", "UDP", "tcp.far.content."),
        ("FORWARDER_RESPONSE", "UDP", "tcp.far.content."), ("CLIENT_RESPONSE", "TCP", "tcp.far.content."),
    }
    assert set(by) == want
    cq = by[("CLIENT_QUERY", "UDP", "www.local.content.")]
    assert (cq["socket_family"], cq["query_address"], cq["query_port"]) == ("INET", "127.0.0.1", str(port))
    assert (cq["response_address"], cq["response_port"]) == (d.addr, str(d.port))
    assert "query_time" in cq and "response_time" not in cq
    cr = by[("CLIENT_RESPONSE", "TCP", "tcp.local.content.")]
    assert cr["response_address"] == d.addr and "response_time" in cr
    for kind in ("FORWARDER_QUERY", "FORWARDER_RESPONSE"):
        f = by[(kind, "UDP", "www.far.content.")]
        assert (f["response_address"], f["response_port"]) == (hop.addr, str(hop.port))
    fr = by[("FORWARDER_RESPONSE", "UDP", "www.far.content.")]
    assert "query_time" in fr and "response_time" in fr


def test_dot_and_doh_are_logged_as_the_client_proxy_carried(inrpd_factory, capture, tmp_path):
    """Queries over TLS and HTTPS, each from a proxy with a PROXY header in
    front of its handshake: CLIENT_QUERY and CLIENT_RESPONSE with the
    socket protocol DOT or DOH and the carried client's address and port."""
    sock = tmp_path / "tap.sock"
    cap = capture(sock, tmp_path / "tap.fstrm")
    proxy = loopback_addr()
    d = start(inrpd_factory, tmp_path, tap_body(sock, f"proxy-protocol-from {proxy}/32;\n"), doh=True)
    d.wait_log("dnstap: connected to")
    base = counters(d)
    for port, alpn, ask_, client, to in ((d.dot_port, "dot", dot_exchange, "192.0.2.77", "192.0.2.53"),
                                         (d.doh_port, "h2", doh_exchange, "2001:db8::77", "2001:db8::53")):
        conn = TlsOverSocket(d.addr, port, client_context(d.certs, alpn=(alpn,)), source=proxy,
                             first=header(client, sport=4242, dst=to, transport=STREAM))
        r = ask_(conn, dns.message.make_query(f"{alpn}.local.content", "A"))
        assert [a.address for a in r.answer[0]] == [SERVER]
        conn.close()
    wait_for(lambda: counters(d)["dnstap_sent"] == base["dnstap_sent"] + 4, 10, "4 messages handed over")
    d.stop()
    cap.stop()

    msgs = [m for m in cap.decoded()
            if str((m.get("query_message") or m.get("response_message")).question[0].name).startswith(
                ("dot.", "h2."))]
    got = {(m["type"], m["socket_protocol"], m.get("query_address"), m.get("query_port")) for m in msgs}
    assert got == {
        ("CLIENT_QUERY", "DOT", "192.0.2.77", 4242), ("CLIENT_RESPONSE", "DOT", "192.0.2.77", 4242),
        ("CLIENT_QUERY", "DOH", "2001:db8::77", 4242), ("CLIENT_RESPONSE", "DOH", "2001:db8::77", 4242),
    }
    assert len(msgs) == 4
    for m in msgs:
        if m["socket_protocol"] == "DOT":
            assert (m["socket_family"], m["response_address"], m["response_port"]) == \
                ("INET", d.addr, d.dot_port)
        else:           # the carried client's family: the listen address (IPv4) is left out
            assert m["socket_family"] == "INET6" and "response_address" not in m
        if m["type"] == "CLIENT_RESPONSE":
            assert [a.address for a in m["response_message"].answer[0]] == [SERVER]


def test_no_reader_drops_and_counts_and_a_returning_reader_is_written_again(inrpd_factory, capture, tmp_path):
    sock = tmp_path / "tap.sock"
    maddr = loopback_addr()
    mport = free_port(maddr)
    d = tapped(inrpd_factory, tmp_path, sock, f"metrics {maddr} port {mport};\n")
    base = counters(d)                  # the start's readiness probes
    n = 100
    for i in range(n):
        assert ask(d, f"q{i}.local.content").answer
    assert ask(d, "tcp.local.content", tcp=True).answer
    c = counters(d)
    assert c["dnstap_sent"] == 0 and c["dnstap_dropped"] == base["dnstap_dropped"] + 2 * (n + 1)
    status, text = prom.get(maddr, mport)
    samples = prom.parse(text)
    assert status == 200
    assert sum(v for (name, _), v in samples.items() if name == "inrpd_dnstap_dropped_total") == c["dnstap_dropped"]

    # a reader comes: the I/O thread connects within a second or two
    cap = capture(sock, tmp_path / "first.fstrm")
    d.wait_log("dnstap: connected to")
    assert ask(d, "seen.local.content").answer
    wait_for(lambda: counters(d)["dnstap_sent"] == 2, 10, "the messages handed over")

    # it goes away without a word: answers go on, the writer notices and lets go
    cap.stop(signal.SIGKILL)
    mark = len(d.log())

    def noticed():
        ask(d, "gone.local.content")
        return "closed" in d.log()[mark:]
    wait_for(noticed, 20, "the writer to notice the reader is gone", interval=0.2)
    before = counters(d)["dnstap_dropped"]
    assert ask(d, "dropped.local.content").answer
    assert counters(d)["dnstap_dropped"] == before + 2

    # and comes back: written to again
    sock.unlink()
    mark = len(d.log())
    cap = capture(sock, tmp_path / "second.fstrm")
    wait_for(lambda: "dnstap: connected to" in d.log()[mark:], 10, "a second connection")
    sent = counters(d)["dnstap_sent"]
    assert ask(d, "back.local.content").answer
    wait_for(lambda: counters(d)["dnstap_sent"] == sent + 2, 10, "the messages handed over")
    d.stop()
    cap.stop()
    names = {m["question"][0] for m in cap.messages()}
    assert "back.local.content." in names and "dropped.local.content." not in names


def test_reload_keeps_the_running_dnstap(inrpd_factory, capture, tmp_path):
    """dnstap is read at start: a reload that moves it says so, and the
    messages go on to the reader connected."""
    sock = tmp_path / "tap.sock"
    cap = capture(sock, tmp_path / "tap.fstrm")
    d = tapped(inrpd_factory, tmp_path, sock)
    d.wait_log("dnstap: connected to")
    mark = d.reload(f'control "{d.ctl}";\nrouter-id "r0";\n' + tap_body(tmp_path / "other.sock") +
                    'route "new.content" { server 127.0.0.97; }\n')
    wait_for(lambda: "take effect on restart" in d.log()[mark:], 10, "the reload's warning")
    d.wait_log("reloaded", start=mark)
    assert "'dnstap'" in d.log()[mark:]
    assert [a.address for a in ask(d, "www.new.content").answer[0]] == ["127.0.0.97"]
    d.stop()
    cap.stop()
    assert "www.new.content." in {m["question"][0] for m in cap.messages()}


def control_frame(ctype, content_type=b"protobuf:dnstap.Dnstap"):
    """A Frame Streams control frame: escape, length, type, one content-type field."""
    body = struct.pack(">III", ctype, 1, len(content_type)) + content_type
    return struct.pack(">II", 0, len(body)) + body


def recv_exact(c, n):
    b = b""
    while len(b) < n:
        chunk = c.recv(n - len(b))
        if not chunk:
            raise EOFError("the writer closed during the handshake")
        b += chunk
    return b


def read_control(c):
    """A control frame's type."""
    escape, length = struct.unpack(">II", recv_exact(c, 8))
    assert escape == 0
    return struct.unpack(">I", recv_exact(c, length)[:4])[0]


def test_a_reader_that_stops_reading_costs_the_answers_nothing(inrpd_factory, tmp_path):
    """A collector that shakes hands and then reads nothing: the I/O thread's
    writes block, the workers' queues fill, and every message past them is
    dropped and counted while every query is answered; the writer gives up
    on the reader after its send timeout."""
    sock = tmp_path / "stuck.sock"
    lsn = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    lsn.bind(str(sock))
    lsn.listen(4)
    held, handshake = [], []

    def stuck_reader():
        c, _ = lsn.accept()
        held.append(c)
        handshake.append(read_control(c))       # READY (4)
        c.sendall(control_frame(1))             # ACCEPT
        handshake.append(read_control(c))       # START (2); then nothing is read
    t = threading.Thread(target=stuck_reader, daemon=True)
    t.start()
    try:
        d = tapped(inrpd_factory, tmp_path, sock)
        d.wait_log("dnstap: connected to")
        t.join(10)
        assert handshake == [4, 2]
        base = counters(d)
        n = 3000
        with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as s:
            s.settimeout(5)
            s.connect((d.addr, d.port))
            for i in range(n):
                q = dns.message.make_query(f"q{i}.local.content", "A")
                s.send(q.to_wire())
                assert dns.message.from_wire(s.recv(4096)).answer, f"query {i} unanswered"
        c = counters(d)
        assert c["dnstap_dropped"] > base["dnstap_dropped"]
        assert (c["dnstap_sent"] + c["dnstap_dropped"]) - (base["dnstap_sent"] + base["dnstap_dropped"]) == 2 * n
        d.wait_log("dnstap: .* closed", timeout=20)
    finally:
        for c in held:
            c.close()
        lsn.close()


def test_a_reader_that_never_answers_the_handshake(inrpd_factory, tmp_path):
    """A collector that accepts and says nothing: each attempt ends at the
    handshake's timeout and its connection is closed before the next (no
    descriptor kept per attempt); nothing counts as handed over, every
    message as dropped, and the queries are answered."""
    sock = tmp_path / "mute.sock"
    lsn = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    lsn.bind(str(sock))
    lsn.listen(8)
    lsn.settimeout(30)
    conns = []
    try:
        d = tapped(inrpd_factory, tmp_path, sock)
        for _ in range(3):
            conns.append(lsn.accept()[0])
        for c in conns[:2]:             # READY, then closed by inrpd
            c.settimeout(10)
            assert read_control(c) == 4
            assert c.recv(1) == b""
        base = counters(d)
        for i in range(50):
            assert ask(d, f"m{i}.local.content").answer
        c = counters(d)
        assert c["dnstap_sent"] == 0
        assert c["dnstap_dropped"] == base["dnstap_dropped"] + 100
        assert "connected to" not in d.log()
    finally:
        for c in conns:
            c.close()
        lsn.close()


@pytest.mark.parametrize("block, error", [
    ("dnstap { identity \"x\"; }", "no 'socket-path'"),
    ("dnstap { socket-path \"relative.sock\"; }", "absolute"),
    ("dnstap { socket-path \"/" + "x" * 120 + "\"; }", "long"),
    ("dnstap { socket-path \"/t.sock\"; log-client-query-messages maybe; }", "maybe"),
    ("dnstap { socket-path \"/t.sock\"; identity \"\"; }", "1 to 255"),
    ("dnstap { socket-path \"/t.sock\"; socket-path \"/u.sock\"; }", "socket-path"),
    ("dnstap { socket-path \"/t.sock\"; dnstap-enable yes; }", "dnstap-enable"),
    ("dnstap { socket-path \"/t.sock\"; }\ndnstap { socket-path \"/u.sock\"; }", "given twice"),
])
def test_bad_dnstap_blocks_are_refused_with_file_and_line(tmp_path, block, error):
    conf = tmp_path / "inrpd.conf"
    conf.write_text("listen 127.0.0.1 port 5300;\n" + block + "\n")
    r = run_inrpd("-t", "-c", str(conf))
    assert r.returncode != 0
    assert re.search(rf"inrpd\.conf:\d+: .*{re.escape(error)}", r.stderr, re.I), r.stderr
