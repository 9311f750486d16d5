"""sd_notify: the daemons tell a NOTIFY_SOCKET of the test's own (as
systemd's would be) READY=1 once they serve, RELOADING=1 then READY=1
around a reload, STOPPING=1 at shutdown."""

import signal
import socket
import subprocess

import dns.message
import dns.query
import pytest

import conftest
from conftest import ENV, INRPD, Inrpd, free_port, loopback_addr, stop_all


@pytest.fixture
def notify_socket(tmp_path, monkeypatch):
    """A unix datagram socket; its path is NOTIFY_SOCKET for daemons started meanwhile."""
    path = str(tmp_path / "notify")
    s = socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM)
    s.bind(path)
    s.settimeout(conftest.START_TIMEOUT)
    monkeypatch.setitem(ENV, "NOTIFY_SOCKET", path)
    yield s
    s.close()


def next_state(sock):
    """The next notification, as {KEY: value}."""
    msg = sock.recv(4096).decode()
    return dict(line.split("=", 1) for line in msg.split("\n") if line)


def test_inrpd_ready_only_when_it_serves(notify_socket, tmp_path):
    d = Inrpd(tmp_path, "inrpd")
    d.addr = loopback_addr()
    d.port = free_port(d.addr)
    ctl = tmp_path / "inrpd.ctl"
    d.write_config(f'control "{ctl}";\nroute "www.example.content" {{ server 127.0.0.10; }}\n')
    d._log = open(d.logfile, "ab")
    d.proc = subprocess.Popen([INRPD, "-f", "-c", str(d.conf)], stdin=subprocess.DEVNULL,
                              stdout=d._log, stderr=d._log, env=ENV)
    try:
        assert next_state(notify_socket) == {"READY": "1"}
        # at READY every listener answers on the first try
        q = dns.message.make_query("www.example.content", "A")
        assert dns.query.udp(q, d.addr, port=d.port, timeout=2).answer
        assert dns.query.tcp(q, d.addr, port=d.port, timeout=2).answer
        with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as c:
            c.connect(str(ctl))
            assert c.recv(100).startswith(b"0001 ")

        d.signal(signal.SIGHUP)
        st = next_state(notify_socket)
        assert st["RELOADING"] == "1" and int(st["MONOTONIC_USEC"]) > 0
        assert next_state(notify_socket) == {"READY": "1"}
        # a broken file: still READY again, running the old config
        d.conf.write_text(d.conf.read_text() + "bogus;\n")
        d.signal(signal.SIGHUP)
        assert "RELOADING" in next_state(notify_socket)
        assert next_state(notify_socket) == {"READY": "1"}
        assert dns.query.udp(q, d.addr, port=d.port, timeout=2).answer

        d.signal(signal.SIGTERM)
        assert next_state(notify_socket) == {"STOPPING": "1"}
        assert d.proc.wait(timeout=conftest.STOP_TIMEOUT) == 0
    finally:
        stop_all([d])


def test_nbrpd_notifies(notify_socket, nbrpd_factory):
    n = nbrpd_factory("r1", f'router-name "r1";\nlisten 127.0.0.1 port {free_port("127.0.0.1")};\n'
                            "inrp-address 127.0.0.1 port 53;\n")
    assert next_state(notify_socket) == {"READY": "1"}
    assert n.nbrc("reload").returncode == 0
    assert "RELOADING" in next_state(notify_socket)
    assert next_state(notify_socket) == {"READY": "1"}
    n.signal(signal.SIGTERM)
    assert next_state(notify_socket) == {"STOPPING": "1"}
    assert n.proc.wait(timeout=conftest.STOP_TIMEOUT) == 0
