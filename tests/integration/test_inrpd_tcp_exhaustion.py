"""TCP exhaustion (RFC 7766 6.2.3): slow clients holding every one of
inrpd's TCP connections, idle or trickling bytes, must not lock a new
client out.  At tcp-max-connections a newcomer closes the connection idle
the longest (counted tcp_evicted); one with a query in flight is not
idle, and when every connection has one the newcomer is refused (counted
tcp_full).  Bytes that never complete a query do not keep a connection
open past tcp-idle-timeout."""

import select
import socket
import struct
import threading

import dns.message
import dns.rcode

from conftest import free_port, wait_for
from prom import scrape, value
from test_inrpd_basic import addrs, frame, recv_frame
from test_inrpd_control import counters

LIMIT = 4
ROUTES = 'route "www.example.content" { server 127.0.0.10; }\n'


def query(name="www.example.content"):
    return frame(dns.message.make_query(name, "A"))


def closed_by_server(c):
    """True once the server has closed c (EOF or reset); False while it is open."""
    if not select.select([c], [], [], 0)[0]:
        return False
    try:
        return c.recv(100) == b""
    except ConnectionError:
        return True


class Trickler:
    """A client that sends one byte of a never-ending query every interval."""

    def __init__(self, addr, port, interval=0.1, declared=4096):
        self.sock = socket.create_connection((addr, port), timeout=10)
        self.sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        self.interval = interval
        self.declared = declared
        self.sent = 0
        self.closed = threading.Event()
        self.stop = threading.Event()
        self.thread = threading.Thread(target=self._run, daemon=True)

    def start(self):
        self.thread.start()
        return self

    def _run(self):
        data = struct.pack(">H", self.declared) + bytes(self.declared)
        while not self.stop.is_set() and self.sent < len(data):
            try:
                self.sock.sendall(data[self.sent:self.sent + 1])
            except OSError:
                self.closed.set()
                return
            self.sent += 1
            self.stop.wait(self.interval)

    def close(self):
        self.stop.set()
        self.thread.join()
        self.sock.close()


def test_slow_clients_do_not_lock_out_a_new_one(inrpd_factory, tmp_path):
    sock = tmp_path / "inrpd.ctl"
    mport = free_port("127.0.0.1")
    d = inrpd_factory(f'control "{sock}";\nmetrics 127.0.0.1 port {mport};\n'
                      f"tcp-max-connections {LIMIT};\ntcp-idle-timeout 60s;\n" + ROUTES)
    # The limit filled by slow clients: each asks once (so it is surely
    # accepted), then half stay silent and half trickle bytes.
    idle, tricklers = [], []
    try:
        for i in range(LIMIT):
            if i % 2 == 0:
                c = socket.create_connection((d.addr, d.port), timeout=10)
                idle.append(c)
            else:
                t = Trickler(d.addr, d.port)
                tricklers.append(t)
                c = t.sock
            c.sendall(query())
            assert addrs(dns.message.from_wire(recv_frame(c)), "A") == ["127.0.0.10"]
        for t in tricklers:
            t.start()
        slow = [idle[0], tricklers[0].sock, idle[1], tricklers[1].sock]  # oldest query first

        # Each newcomer is answered and stays; each closes the slow client
        # idle the longest, never one that asked after it.
        for n in range(1, LIMIT + 1):
            c = socket.create_connection((d.addr, d.port), timeout=10)
            idle.append(c)
            c.sendall(query())
            assert addrs(dns.message.from_wire(recv_frame(c)), "A") == ["127.0.0.10"]
            assert counters(sock)["tcp"]["tcp_evicted"] == n
            wait_for(lambda: closed_by_server(slow[n - 1]), 10, f"slow client {n} to be closed")
            assert not any(closed_by_server(s) for s in slow[n:])
        assert counters(sock)["tcp"]["tcp_full"] == 0
        samples = scrape("127.0.0.1", mport)
        assert value(samples, "inrpd_tcp_evicted_total", transport="tcp") >= LIMIT
        assert value(samples, "inrpd_tcp_full_total", transport="tcp") == 0
    finally:
        for t in tricklers:
            t.close()
        for c in idle:
            c.close()


def test_a_connection_with_a_query_in_flight_is_not_evicted(inrpd_factory, tmp_path):
    sock = tmp_path / "inrpd.ctl"
    dead = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)     # a next router that never answers
    dead.bind(("127.0.0.1", 0))
    d = inrpd_factory(f'control "{sock}";\ntcp-max-connections 2;\nquery-timeout 3s;\n' + ROUTES +
                      f'route "far.example.content" {{ router 127.0.0.1 port {dead.getsockname()[1]}; }}\n')
    busy = [socket.create_connection((d.addr, d.port), timeout=10) for _ in range(2)]
    try:
        for c in busy:
            c.sendall(query("far.example.content"))
        wait_for(lambda: counters(sock)["tcp"]["forwarded"] == 2, 10, "both queries in flight")
        # no idle connection to close: the newcomer is refused, the busy ones kept
        with socket.create_connection((d.addr, d.port), timeout=10) as c:
            try:
                c.sendall(query())
                assert c.recv(100) == b""
            except ConnectionError:
                pass
        assert counters(sock)["tcp"]["tcp_full"] == 1
        assert counters(sock)["tcp"]["tcp_evicted"] == 0
        for c in busy:     # the hop never answers: SERVFAIL at the deadline, on the same connection
            assert dns.message.from_wire(recv_frame(c)).rcode() == dns.rcode.SERVFAIL
        # answered, they are idle now, and a newcomer may close one of them
        with socket.create_connection((d.addr, d.port), timeout=10) as c:
            c.sendall(query())
            assert addrs(dns.message.from_wire(recv_frame(c)), "A") == ["127.0.0.10"]
        assert counters(sock)["tcp"]["tcp_evicted"] == 1
    finally:
        for c in busy:
            c.close()
        dead.close()


def test_a_trickling_client_is_closed_by_the_idle_timeout(inrpd_factory):
    d = inrpd_factory(ROUTES + "tcp-idle-timeout 500ms;\n")
    # 4 KiB at a byte every 50 ms would take over three minutes to complete
    t = Trickler(d.addr, d.port, interval=0.05).start()
    try:
        wait_for(lambda: t.closed.is_set() or closed_by_server(t.sock), 60,
                 "the trickling client to be closed")
        assert t.sent < t.declared
    finally:
        t.close()
    # and the server is not worse for it
    with socket.create_connection((d.addr, d.port), timeout=10) as c:
        c.sendall(query())
        assert addrs(dns.message.from_wire(recv_frame(c)), "A") == ["127.0.0.10"]
