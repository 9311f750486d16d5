"""What the DNS over TLS and HTTPS tests share: a throwaway CA and server
certificates made with openssl in the test's directory, inrpd started with
DoT and DoH listeners on free ports, and a DoT client on Python's ssl
(TLS versions, session resumption and ALPN under the test's control)."""

import base64
import socket
import ssl
import struct
import subprocess
import time

import dns.message

from conftest import free_port
from test_inrpd_control import counters

SERVER_NAME = "dns.test"


def openssl(*args, cwd):
    subprocess.run(["openssl", *args], cwd=cwd, check=True, capture_output=True, timeout=60)


class Certs:
    """A CA and a server certificate for dns.test and 127.0.0.0/8's addresses asked for."""

    def __init__(self, directory, addrs=()):
        self.dir = directory
        self.dir.mkdir(exist_ok=True)
        self.ca = self.dir / "ca.pem"
        self.cert = self.dir / "cert.pem"
        self.key = self.dir / "key.pem"
        self.addrs = addrs
        openssl("req", "-x509", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:P-256", "-nodes",
                "-keyout", "ca.key", "-out", "ca.pem", "-days", "30", "-subj", "/CN=inrpd test CA",
                cwd=self.dir)
        self.serial = 0
        self.issue(days=10)

    def issue(self, days):
        """A new server certificate (and key) in place of the old, valid for days."""
        self.serial += 1
        sans = ",".join([f"DNS:{SERVER_NAME}"] + [f"IP:{a}" for a in self.addrs])
        (self.dir / "ext").write_text(f"subjectAltName={sans}\n")
        openssl("req", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:P-256", "-nodes",
                "-keyout", "key.new", "-out", "srv.csr", "-subj", f"/CN={SERVER_NAME}", cwd=self.dir)
        openssl("x509", "-req", "-in", "srv.csr", "-CA", "ca.pem", "-CAkey", "ca.key", "-set_serial",
                str(1000 + self.serial), "-out", "cert.new", "-days", str(days), "-extfile", "ext",
                cwd=self.dir)
        (self.dir / "key.new").rename(self.key)
        (self.dir / "cert.new").rename(self.cert)
        return 1000 + self.serial

    def config(self):
        return f'tls-certificate "{self.cert}";\ntls-key "{self.key}";\n'


def start(inrpd_factory, tmp_path, body="", dot=True, doh=False):
    """inrpd with a control socket and DoT and/or DoH listeners; d.dot_port, d.doh_port, d.certs."""
    certs = Certs(tmp_path / "certs", addrs=())
    ports = {}
    ctl = tmp_path / "inrpd.ctl"

    def conf(addr, port):
        text = f'control "{ctl}";\n' + certs.config()
        if dot:
            ports.setdefault("dot", free_port(addr))
            text += f"listen-tls {addr} port {ports['dot']};\n"
        if doh:
            ports.setdefault("doh", free_port(addr))
            text += f"listen-https {addr} port {ports['doh']};\n"
        return text + body
    d = inrpd_factory(conf)
    d.ctl = ctl
    d.certs = certs
    d.conf_fn = conf
    d.dot_port = ports.get("dot")
    d.doh_port = ports.get("doh")
    return d


def client_context(certs, alpn=("dot",), minimum=None, maximum=None):
    ctx = ssl.create_default_context(cafile=str(certs.ca))
    if alpn:
        ctx.set_alpn_protocols(list(alpn))
    if minimum:
        ctx.minimum_version = minimum
    if maximum:
        ctx.maximum_version = maximum
    return ctx


class DotClient:
    """One DoT connection: messages out with their 2-byte length, answers in."""

    def __init__(self, d, ctx=None, session=None, timeout=10):
        self.ctx = ctx or client_context(d.certs)
        raw = socket.create_connection((d.addr, d.dot_port), timeout=timeout)
        self.sock = self.ctx.wrap_socket(raw, server_hostname=SERVER_NAME, session=session)
        self.buf = b""

    def send(self, *msgs):
        self.sock.sendall(b"".join(struct.pack(">H", len(w)) + w
                                   for w in (m.to_wire() if hasattr(m, "to_wire") else m for m in msgs)))

    def recv_wire(self):
        while len(self.buf) < 2 or len(self.buf) < 2 + struct.unpack(">H", self.buf[:2])[0]:
            data = self.sock.recv(65536)
            if not data:
                raise ConnectionError("closed by the server")
            self.buf += data
        n = struct.unpack(">H", self.buf[:2])[0]
        wire, self.buf = self.buf[2:2 + n], self.buf[2 + n:]
        return wire

    def recv(self):
        return dns.message.from_wire(self.recv_wire())

    def ask(self, name, rdtype="A", **kw):
        self.send(dns.message.make_query(name, rdtype, **kw))
        return self.recv()

    def close(self):
        self.sock.close()


def tls_counters(d, transport="tls"):
    return counters(d.ctl)[transport]


def same_answer(a, b):
    """The same rcode and records (TTLs aside, counted down in a cache)."""
    def records(m):
        return sorted((str(r.name), r.rdtype, sorted(x.to_text() for x in r)) for r in m.answer + m.authority)
    return a.rcode() == b.rcode() and records(a) == records(b)


class TlsOverSocket:
    """TLS driven by hand over a raw connection (ssl.MemoryBIO), so that
    bytes may go before the handshake (a PROXY header) and share the
    ClientHello's segment, or reach the server split at split."""

    def __init__(self, addr, port, ctx, first=b"", source="127.0.0.1", split=None, timeout=10):
        self.raw = socket.create_connection((addr, port), timeout=timeout, source_address=(source, 0))
        self.raw.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        self.inc, self.out = ssl.MemoryBIO(), ssl.MemoryBIO()
        self.tls = ctx.wrap_bio(self.inc, self.out, server_hostname=SERVER_NAME)
        try:
            self.tls.do_handshake()
        except ssl.SSLWantReadError:
            pass
        data = first + self.out.read()
        if split is not None:
            self.raw.sendall(data[:split])
            time.sleep(0.05)        # most likely read alone; either way the answer must be the same
            data = data[split:]
        self.raw.sendall(data)
        self._pump(self.tls.do_handshake)

    def _pump(self, op):
        while True:
            try:
                r = op()
                self._flush()
                return r
            except ssl.SSLWantReadError:
                self._flush()
                data = self.raw.recv(65536)
                if not data:
                    raise ConnectionError("closed by the server")
                self.inc.write(data)

    def _flush(self):
        data = self.out.read()
        if data:
            self.raw.sendall(data)

    def send(self, data):
        self._pump(lambda: self.tls.write(data))

    def recv(self):
        return self._pump(lambda: self.tls.read(65536))

    def close(self):
        self.raw.close()


def dot_exchange(conn, msg):
    """One query over a DoT connection (TlsOverSocket): its answer."""
    w = msg.to_wire()
    conn.send(struct.pack(">H", len(w)) + w)
    buf = b""
    while len(buf) < 2 or len(buf) < 2 + struct.unpack(">H", buf[:2])[0]:
        buf += conn.recv()
    return dns.message.from_wire(buf[2:2 + struct.unpack(">H", buf[:2])[0]])


def _h2_frame(ftype, flags, stream, payload=b""):
    return struct.pack(">I", len(payload))[1:] + bytes([ftype, flags]) + struct.pack(">I", stream) + payload


def _hpack_literal(name, value):
    """A header as HPACK's literal without indexing, new name, no Huffman (RFC 7541 6.2.2)."""
    def string(s):
        b = s.encode()
        assert len(b) < 127
        return bytes([len(b)]) + b
    return b"\x00" + string(name) + string(value)


def doh_exchange(conn, msg, path="/dns-query"):
    """One GET over an HTTP/2 connection (TlsOverSocket, ALPN h2), by hand: its answer."""
    q = base64.urlsafe_b64encode(msg.to_wire()).rstrip(b"=").decode()
    block = b"".join(_hpack_literal(n, v) for n, v in (
        (":method", "GET"), (":scheme", "https"), (":authority", SERVER_NAME),
        (":path", f"{path}?dns={q}"), ("accept", "application/dns-message")))
    conn.send(b"PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n" + _h2_frame(4, 0, 0) +
              _h2_frame(1, 0x5, 1, block))                 # HEADERS: END_STREAM | END_HEADERS
    buf, body = b"", b""
    while True:
        while len(buf) < 9 or len(buf) < 9 + struct.unpack(">I", b"\0" + buf[:3])[0]:
            buf += conn.recv()
        n = struct.unpack(">I", b"\0" + buf[:3])[0]
        ftype, flags, stream = buf[3], buf[4], struct.unpack(">I", buf[5:9])[0] & 0x7fffffff
        payload, buf = buf[9:9 + n], buf[9 + n:]
        if ftype == 4 and not flags & 1:
            conn.send(_h2_frame(4, 1, 0))                   # SETTINGS ACK
        elif ftype in (3, 7):
            raise ConnectionError(f"HTTP/2 frame type {ftype}: {payload.hex()}")
        elif ftype == 0 and stream == 1:
            body += payload
        if ftype in (0, 1) and stream == 1 and flags & 1:
            return dns.message.from_wire(body)
