"""A small FIB channel sender, as nbrpd will be: frames of a 4-byte
big-endian length and a FibMessage (lib/nbrp/fibchannel.proto), protobuf
encoded by hand so the test does not share code with the daemon."""

import socket
import struct

import dns.name

SERVER, ROUTER = 1, 2


def _varint(n):
    out = b""
    while True:
        b = n & 0x7F
        n >>= 7
        if n:
            out += bytes([b | 0x80])
        else:
            return out + bytes([b])


def _len_field(num, payload):
    return _varint(num << 3 | 2) + _varint(len(payload)) + payload


def _int_field(num, value):
    return _varint(num << 3 | 0) + _varint(value) if value else b""


def wire_name(text):
    return dns.name.from_text(text).canonicalize().to_wire()


def route(addr, kind=SERVER, port=0, load_ms=0, origin=0):
    raw = socket.inet_pton(socket.AF_INET6 if ":" in addr else socket.AF_INET, addr)
    return (_int_field(1, kind) + _len_field(2, raw) + _int_field(3, port) +
            _int_field(4, load_ms) + (_int_field(5, origin) if origin else b""))


def name_routes(name, routes=(), redirect=None):
    body = _len_field(1, wire_name(name))
    for r in routes:
        body += _len_field(2, r)
    if redirect:
        body += _len_field(3, wire_name(redirect))
    return body


def aggregate_routes(name, version, routes):
    body = _len_field(1, wire_name(name)) + _int_field(2, version)
    for r in routes:
        body += _len_field(3, r)
    return body


def membership(aggregate, add=(), remove=(), add_packed=(), remove_packed=()):
    body = _len_field(1, wire_name(aggregate))
    for n in add:
        body += _len_field(2, wire_name(n))
    for n in remove:
        body += _len_field(3, wire_name(n))
    if add_packed:
        body += _len_field(4, b"".join(bytes([len(wire_name(n))]) + wire_name(n) for n in add_packed))
    if remove_packed:
        body += _len_field(5, b"".join(bytes([len(wire_name(n))]) + wire_name(n) for n in remove_packed))
    return body


def names_packed(names, routes=()):
    """Many names with the same routes (none: withdrawn), packed [len][wire]."""
    body = _len_field(1, b"".join(bytes([len(wire_name(n))]) + wire_name(n) for n in names))
    for r in routes:
        body += _len_field(2, r)
    return body


def update(names=(), aggregates=(), deleted=(), memberships=(), packed=()):
    body = b"".join(_len_field(1, n) for n in names)
    body += b"".join(_len_field(2, a) for a in aggregates)
    body += b"".join(_len_field(3, wire_name(d)) for d in deleted)
    body += b"".join(_len_field(4, m) for m in memberships)
    body += b"".join(_len_field(5, g) for g in packed)
    return _len_field(2, body)


def sync_begin(epoch):
    return _len_field(1, _int_field(1, epoch))


def sync_end(epoch):
    return _len_field(3, _int_field(1, epoch))


def frame(msg):
    return struct.pack(">I", len(msg)) + msg


class FibChannel:
    def __init__(self, path):
        self.sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        self.sock.settimeout(10)
        self.sock.connect(str(path))

    def send(self, *msgs):
        self.sock.sendall(b"".join(frame(m) for m in msgs))

    def send_raw(self, data):
        self.sock.sendall(data)

    def full_sync(self, epoch, *updates):
        self.send(sync_begin(epoch), *updates, sync_end(epoch))

    def closed_by_peer(self, timeout=10):
        """True once inrpd has closed the connection."""
        self.sock.settimeout(timeout)
        try:
            return self.sock.recv(1) == b""
        except ConnectionResetError:
            return True

    def close(self):
        self.sock.close()
