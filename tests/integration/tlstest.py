"""What the DNS over TLS and HTTPS tests share: a throwaway CA and server
certificates made with openssl in the test's directory, inrpd started with
DoT and DoH listeners on free ports, and a DoT client on Python's ssl
(TLS versions, session resumption and ALPN under the test's control)."""

import socket
import ssl
import struct
import subprocess

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
