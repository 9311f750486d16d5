"""Logs an operator can use: journald's format when systemd reads stderr,
and the log level changed on the control socket without a reload."""

import os
import re
import socket
import subprocess

from conftest import ENV, INRPD, STOP_TIMEOUT, free_port, wait_for
from test_inrpd_control import inrpc, with_control


def run_with_stderr(tmp_path, conf_text, journal):
    """inrpd -f with stderr on a file; JOURNAL_STREAM names that file when journal."""
    conf = tmp_path / "inrpd.conf"
    conf.write_text(conf_text)
    log = tmp_path / "inrpd.log"
    with open(log, "wb") as f:
        st = os.fstat(f.fileno())
        env = dict(ENV)
        env["JOURNAL_STREAM"] = f"{st.st_dev}:{st.st_ino}" if journal else f"{st.st_dev}:{st.st_ino + 1}"
        p = subprocess.Popen([INRPD, "-f", "-c", str(conf)], stdin=subprocess.DEVNULL, stdout=f, stderr=f,
                             env=env)
    try:
        wait_for(lambda: "started" in log.read_text(), 15, "inrpd to start")
    finally:
        p.terminate()
        assert p.wait(timeout=STOP_TIMEOUT) == 0, log.read_text()
    return log.read_text()


def test_journal_stream_gets_priorities_and_no_timestamp(tmp_path):
    addr = "127.0.0.1"
    text = run_with_stderr(tmp_path, f"listen {addr} port {free_port(addr)};\nworkers 1;\n", journal=True)
    lines = text.splitlines()
    assert any(re.fullmatch(r"<6>inrpd \S+ started: .*", ln) for ln in lines), text
    assert all(re.match(r"<[3467]>", ln) for ln in lines), text
    assert not re.search(r"\d{4}-\d\d-\d\dT", text)


def test_other_stderr_keeps_timestamps(tmp_path):
    """JOURNAL_STREAM inherited but stderr redirected elsewhere: the usual format."""
    addr = "127.0.0.1"
    text = run_with_stderr(tmp_path, f"listen {addr} port {free_port(addr)};\nworkers 1;\n", journal=False)
    assert re.search(r"^\d{4}-\d\d-\d\dT\S+Z inrpd info: inrpd \S+ started", text, re.M), text
    assert "<6>" not in text


def idle_tcp_connection(d):
    """A TCP connection that sends nothing until inrpd closes it."""
    with socket.create_connection((d.addr, d.port), timeout=5) as s:
        assert s.recv(1) == b""


def test_inrpc_set_log_level(inrpd_factory, tmp_path):
    sock, body = with_control(tmp_path, "tcp-idle-timeout 100ms;\n")
    d = inrpd_factory(body)
    idle_tcp_connection(d)                      # closed at info level: not logged
    r = inrpc(sock, "set", "log-level", "debug")
    assert r.returncode == 0 and "log level debug" in r.stdout, r.stderr
    d.wait_log(r"info: log level debug \(was info\)")
    mark = len(d.log())
    idle_tcp_connection(d)
    d.wait_log("debug: tcp: closing idle connection", start=mark)
    assert d.log().count("closing idle connection") == 1
    r = inrpc(sock, "set", "log-level", "loud")
    assert r.returncode != 0 and "unknown log level 'loud'" in r.stderr
    # a reload applies the file's level again
    inrpc(sock, "reload")
    mark = len(d.log())
    idle_tcp_connection(d)
    inrpc(sock, "set", "log-level", "debug")        # a marker after the close
    d.wait_log("log level debug", start=mark)
    assert "closing idle connection" not in d.log()[mark:]


def test_nbrc_set_log_level(nbrpd_factory):
    dead = free_port("127.0.0.1")
    n = nbrpd_factory("r1", f'router-name "r1";\nlisten 127.0.0.1 port {free_port("127.0.0.1")};\n'
                            f"inrp-address 127.0.0.1 port 53;\nconnect-retry 100ms;\n"
                            f'peer "r2" {{ address 127.0.0.1 port {dead}; }}\n')
    r = n.nbrc("set", "log-level", "debug")
    assert r.returncode == 0, r.stderr
    wait_for(lambda: "debug: peer r2: connect:" in n.log(), 10, "a debug line about the refused connect")
    assert n.nbrc("set", "log-level", "warn").returncode == 0
    assert "set log-level LEVEL" in n.nbrc("help").stdout


def test_journal_gets_startup_errors_as_errors(tmp_path):
    """A start that fails under systemd (-f, stderr the journal) says so at priority err."""
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        port = taken.getsockname()[1]
        conf = tmp_path / "inrpd.conf"
        conf.write_text(f"listen 127.0.0.1 port {port};\n")
        log = tmp_path / "inrpd.log"
        with open(log, "wb") as f:
            st = os.fstat(f.fileno())
            env = dict(ENV, JOURNAL_STREAM=f"{st.st_dev}:{st.st_ino}")
            r = subprocess.run([INRPD, "-f", "-c", str(conf)], stdin=subprocess.DEVNULL, stdout=f, stderr=f,
                               env=env, timeout=30)
    assert r.returncode == 1
    assert re.search(rf"^<3>inrpd: .*127\.0\.0\.1 port {port}.*in use", log.read_text(), re.M), log.read_text()
