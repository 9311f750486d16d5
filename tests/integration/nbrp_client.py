"""A hand-written NBRP speaker for tests (lib/nbrp/nbrp.proto, docs/NBRP.md):
protobuf encoded and decoded by hand, so the tests share no code with
nbrpd.  Plays a peer (or a broken one) over a real TCP connection."""

import socket
import struct

from fibchan_client import _int_field, _len_field, wire_name

OPEN, KEEPALIVE, UPDATE, NOTIFICATION, END_OF_RIB, ROUTE_REFRESH = range(1, 7)


def open_msg(router_name, hold_time=30, version=1, server_mode=False, restart_time=0):
    body = _int_field(1, version) + _len_field(2, router_name.encode()) + _int_field(3, hold_time)
    body += _int_field(6, 1 if server_mode else 0)
    if restart_time:
        body += _int_field(7, restart_time)
    return _len_field(OPEN, body)


def keepalive():
    return _len_field(KEEPALIVE, b"")


def end_of_rib():
    return _len_field(END_OF_RIB, b"")


def route_refresh():
    return _len_field(ROUTE_REFRESH, b"")


def route(names, next_hop, port, path, load_ms=0, aggregate=None, version=0, source="", origin_seq=0):
    """A Route; with aggregate, that aggregate's (names should then be [aggregate])."""
    body = b"".join(_len_field(1, wire_name(n)) for n in names)
    body += _len_field(2, socket.inet_aton(next_hop)) + _int_field(3, port)
    body += b"".join(_len_field(4, p.encode()) for p in path)
    body += _int_field(5, load_ms)
    if aggregate is not None:
        body += _len_field(6, wire_name(aggregate)) + _int_field(7, version) + _len_field(8, source.encode())
    if origin_seq:
        body += _int_field(12, origin_seq)
    return body


def text_name(wire):
    """A canonical wire name as text with the trailing dot."""
    labels, i = [], 0
    while wire[i]:
        labels.append(wire[i + 1:i + 1 + wire[i]].decode())
        i += 1 + wire[i]
    return ".".join(labels) + "."


def origin_withdrawal(name, origin, origin_seq):
    return _len_field(1, wire_name(name)) + _len_field(2, origin.encode()) + _int_field(3, origin_seq)


def update(routes=(), withdrawn=(), withdrawn_aggregates=(), origin_withdrawals=()):
    """origin_withdrawals: (name, origin, origin_seq) triples, or an OriginWithdrawal's bytes"""
    body = b"".join(_len_field(1, wire_name(n)) for n in withdrawn)
    body += b"".join(_len_field(2, r) for r in routes)
    body += b"".join(_len_field(3, wire_name(n)) for n in withdrawn_aggregates)
    body += b"".join(_len_field(4, w if isinstance(w, bytes) else origin_withdrawal(*w)) for w in origin_withdrawals)
    return _len_field(UPDATE, body)


def frame(msg):
    return struct.pack(">I", len(msg)) + msg


def _varint(data, i):
    shift = value = 0
    while True:
        b = data[i]
        i += 1
        value |= (b & 0x7F) << shift
        shift += 7
        if not b & 0x80:
            return value, i


def fields(data):
    """[(field number, value)]: ints for varints, bytes for length-delimited."""
    out, i = [], 0
    while i < len(data):
        key, i = _varint(data, i)
        num, wt = key >> 3, key & 7
        if wt == 0:
            v, i = _varint(data, i)
        elif wt == 2:
            n, i = _varint(data, i)
            v, i = data[i:i + n], i + n
        else:
            raise ValueError(f"wire type {wt}")
        out.append((num, v))
    return out


class Peer:
    """A TCP connection to nbrpd, from a chosen local address."""

    def __init__(self, addr, port, source):
        self.sock = socket.create_connection((addr, port), timeout=10, source_address=(source, 0))
        self.buf = b""

    @classmethod
    def accept(cls, listener):
        """The next connection to a listening socket: playing the router a peer connects to."""
        p = cls.__new__(cls)
        p.sock, _ = listener.accept()
        p.sock.settimeout(10)
        p.buf = b""
        return p

    def send(self, *msgs):
        self.sock.sendall(b"".join(frame(m) for m in msgs))

    def send_raw(self, data):
        self.sock.sendall(data)

    def recv(self):
        """(kind, fields of the body), or None when the connection closed."""
        while True:
            if len(self.buf) >= 4:
                (n,) = struct.unpack(">I", self.buf[:4])
                if len(self.buf) >= 4 + n:
                    msg, self.buf = self.buf[4:4 + n], self.buf[4 + n:]
                    (kind, body), = fields(msg)
                    return kind, fields(body)
            try:
                chunk = self.sock.recv(65536)
            except ConnectionResetError:
                return None
            if not chunk:
                return None
            self.buf += chunk

    def recv_until(self, kind):
        while True:
            m = self.recv()
            if m is None or m[0] == kind:
                return m

    def notification(self):
        """(code, subcode, text) of the NOTIFICATION that ends the session."""
        m = self.recv_until(NOTIFICATION)
        assert m is not None, "closed without a NOTIFICATION"
        f = dict(m[1])
        return f.get(1, 0), f.get(2, 0), f.get(3, b"").decode()

    def closed(self):
        while True:
            m = self.recv()
            if m is None:
                return True

    def close(self):
        self.sock.close()
