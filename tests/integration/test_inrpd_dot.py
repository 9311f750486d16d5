"""DNS over TLS (RFC 7858): the same answers as over UDP for routed,
forwarded and fallback names (kdig and dnsperf as clients), pipelined
queries answered out of order, EDNS padding, ALPN dot, TLS 1.1 refused,
session resumption, a renewed certificate taken on reload without
dropping open connections, idle timeout and connection limit, a client
that speaks no TLS, and the configuration's errors."""

import os
import re
import shutil
import signal
import socket
import ssl
import subprocess
import time

import dns.edns
import dns.exception
import dns.message
import dns.query
import dns.rcode
import pytest

from conftest import free_port, loopback_addr, run_inrpd, wait_for
from prom import scrape, value
from test_inrpd_forward import LOCAL_DATA, addrs, unbound  # noqa: F401 (fixture)
from tlstest import SERVER_NAME, DotClient, client_context, same_answer, start, tls_counters

ROUTED = 'route "www.example.content" { server 127.0.0.10; server 127.0.0.11; }\n'


def kdig(d, name, rdtype="A", *opts):
    r = subprocess.run(["kdig", f"@{d.addr}", "-p", str(d.dot_port), "+tls", f"+tls-ca={d.certs.ca}",
                        f"+tls-hostname={SERVER_NAME}", *opts, name, rdtype],
                       capture_output=True, text=True, timeout=30)
    assert r.returncode == 0, r.stdout + r.stderr
    return r.stdout


def test_routed_forwarded_and_fallback_names_answer_as_over_udp(inrpd_factory, tmp_path, unbound):
    u = unbound(LOCAL_DATA)
    far = inrpd_factory('route "svc.far.content" { server 127.0.0.77; }\n')
    d = start(inrpd_factory, tmp_path, ROUTED + f"upstream {u.addr} port {u.port};\n"
              f'route "far.content" {{ router {far.addr} port {far.port}; }}\n')
    c = DotClient(d)
    for name, rdtype in (("www.example.content", "A"), ("www.example.content", "TXT"),
                         ("svc.far.content", "A"), ("a.upstream.test", "A"), ("mx.upstream.test", "MX"),
                         ("nothing.upstream.test", "A")):
        over_tls = c.ask(name, rdtype)
        assert same_answer(over_tls, d.udp(name, rdtype)), (name, rdtype, over_tls)
    assert addrs(c.ask("svc.far.content")) == ["127.0.0.77"]
    assert addrs(c.ask("a.upstream.test")) == ["192.0.2.1"]
    c.close()
    # a real client: kdig over TLS, its certificate check included
    assert "127.0.0.10" in kdig(d, "www.example.content") and "192.0.2.1" in kdig(d, "a.upstream.test")
    t = tls_counters(d)
    assert t["queries"] >= 8 and t["answered"] == t["queries"] and t["local"] >= 2
    assert t["forwarded"] >= 1 and t["fallback"] >= 1 and t["handshakes"] >= 3


def test_pipelined_queries_are_answered_out_of_order(inrpd_factory, tmp_path):
    hole = ("127.0.0.1", free_port("127.0.0.1"))        # bound by nobody: the hop never answers
    d = start(inrpd_factory, tmp_path, ROUTED + "query-timeout 1s;\n"
              f'route "slow.content" {{ router {hole[0]} port {hole[1]}; }}\n')
    c = DotClient(d)
    slow = dns.message.make_query("x.slow.content", "A")
    fast = [dns.message.make_query("www.example.content", "A") for _ in range(5)]
    c.send(slow, *fast)
    got = [c.recv() for _ in range(6)]
    assert [m.id for m in got[:5]] == [m.id for m in fast]
    assert all(addrs(m) == ["127.0.0.10", "127.0.0.11"] for m in got[:5])
    assert got[5].id == slow.id and got[5].rcode() == dns.rcode.SERVFAIL
    c.close()


def test_answers_to_padded_queries_are_padded_to_468_byte_blocks(inrpd_factory, tmp_path):
    d = start(inrpd_factory, tmp_path, ROUTED)
    c = DotClient(d)
    padded = dns.message.make_query("www.example.content", "A", use_edns=0,
                                    options=[dns.edns.GenericOption(dns.edns.PADDING, b"\0" * 20)])
    c.send(padded)
    wire = c.recv_wire()
    assert len(wire) % 468 == 0
    r = dns.message.from_wire(wire)
    assert addrs(r) == ["127.0.0.10", "127.0.0.11"]
    assert any(o.otype == dns.edns.PADDING for o in r.options)
    # not padded: no padding back
    c.send(dns.message.make_query("www.example.content", "A", use_edns=0))
    r = c.recv()
    assert not any(o.otype == dns.edns.PADDING for o in r.options)
    c.close()
    # kdig pads its queries when asked to: the answer is one block
    assert "Received 468 B" in kdig(d, "www.example.content", "A", "+padding")


def test_alpn_dot_is_agreed(inrpd_factory, tmp_path):
    d = start(inrpd_factory, tmp_path, ROUTED)
    c = DotClient(d)
    assert c.sock.selected_alpn_protocol() == "dot"
    assert c.sock.version() == "TLSv1.3"
    c.close()
    # TLS 1.2 is spoken too
    c = DotClient(d, client_context(d.certs, maximum=ssl.TLSVersion.TLSv1_2))
    assert c.sock.version() == "TLSv1.2" and addrs(c.ask("www.example.content"))
    c.close()


def test_a_client_offering_only_tls_1_1_is_refused(inrpd_factory, tmp_path):
    d = start(inrpd_factory, tmp_path, ROUTED)
    before = tls_counters(d)
    r = subprocess.run(["openssl", "s_client", "-connect", f"{d.addr}:{d.dot_port}", "-tls1_1",
                        "-cipher", "DEFAULT:@SECLEVEL=0", "-CAfile", str(d.certs.ca)],
                       input="", capture_output=True, text=True, timeout=30)
    assert r.returncode != 0 and "Cipher is (NONE)" in r.stdout + r.stderr
    t = wait_for(lambda: (lambda t: t if t["handshake_version"] > before["handshake_version"] else None)(
        tls_counters(d)), 10, "the refusal counted")
    assert t["handshakes"] == before["handshakes"]
    # the daemon serves on
    c = DotClient(d)
    assert addrs(c.ask("www.example.content"))
    c.close()


@pytest.mark.parametrize("version", [ssl.TLSVersion.TLSv1_3, ssl.TLSVersion.TLSv1_2])
def test_sessions_resume_and_are_counted(inrpd_factory, tmp_path, version):
    d = start(inrpd_factory, tmp_path, ROUTED)
    ctx = client_context(d.certs, maximum=version)
    first = DotClient(d, ctx)
    assert addrs(first.ask("www.example.content"))     # TLS 1.3: the ticket comes after the handshake
    session = first.sock.session
    assert not first.sock.session_reused
    first.close()
    second = DotClient(d, ctx, session=session)
    assert addrs(second.ask("www.example.content"))
    assert second.sock.session_reused
    second.close()
    t = tls_counters(d)
    assert t["handshakes"] == 2 and t["resumed"] == 1


def test_a_renewed_certificate_is_taken_on_reload_and_open_connections_stay(inrpd_factory, tmp_path):
    mport = free_port("127.0.0.1")
    d = start(inrpd_factory, tmp_path, ROUTED + f"metrics 127.0.0.1 port {mport};\n")
    old = DotClient(d)
    assert addrs(old.ask("www.example.content"))       # TLS 1.3: the ticket comes after the handshake
    old_serial = old.sock.getpeercert()["serialNumber"]
    expiry = value(scrape("127.0.0.1", mport), "inrpd_tls_certificate_expiry_seconds")
    assert 9 * 86400 < expiry <= 10 * 86400
    ticket = old.sock.session
    new_serial = d.certs.issue(days=20)
    mark = d.reload(d.conf_fn)
    d.wait_log(r"reloaded", start=mark)
    new = DotClient(d)
    assert int(new.sock.getpeercert()["serialNumber"], 16) == new_serial
    assert int(old_serial, 16) != new_serial
    # the connection from before the reload is still open and answered
    assert addrs(old.ask("www.example.content")) and addrs(new.ask("www.example.content"))
    expiry = value(scrape("127.0.0.1", mport), "inrpd_tls_certificate_expiry_seconds")
    assert 19 * 86400 < expiry <= 20 * 86400
    old.close()
    new.close()
    # a ticket from before the reload still resumes
    again = DotClient(d, old.ctx, session=ticket)
    assert again.sock.session_reused and addrs(again.ask("www.example.content"))
    again.close()


def test_a_reload_with_a_bad_certificate_keeps_the_old_one(inrpd_factory, tmp_path):
    d = start(inrpd_factory, tmp_path, ROUTED)
    before = DotClient(d).sock.getpeercert()["serialNumber"]
    d.certs.cert.write_text("-----BEGIN CERTIFICATE-----\nnot a certificate\n-----END CERTIFICATE-----\n")
    mark = d.reload(d.conf_fn)
    d.wait_log(r"reload failed, keeping the running configuration: .*inrpd\.conf:\d+: tls-certificate",
               start=mark)
    c = DotClient(d)
    assert c.sock.getpeercert()["serialNumber"] == before and addrs(c.ask("www.example.content"))
    c.close()


def test_certificate_errors_name_the_line(tmp_path):
    conf = tmp_path / "inrpd.conf"
    conf.write_text("listen 127.0.0.1 port 5353;\nlisten-tls 127.0.0.1 port 8853;\n"
                    f'tls-certificate "{tmp_path}/missing.pem";\ntls-key "{tmp_path}/missing.key";\n')
    r = run_inrpd("-t", "-c", str(conf))
    assert r.returncode == 1 and re.search(r"inrpd\.conf:3: tls-certificate: cannot read", r.stderr), r.stderr
    conf.write_text("listen 127.0.0.1 port 5353;\nlisten-tls 127.0.0.1 port 8853;\n")
    r = run_inrpd("-t", "-c", str(conf))
    assert r.returncode == 1 and "inrpd.conf:2: listen-tls needs 'tls-certificate' and 'tls-key'" in r.stderr
    conf.write_text("listen 127.0.0.1 port 5353;\nlisten-tls 127.0.0.1 port 8853;\n"
                    f'tls-certificate "{tmp_path}/c.pem";\n')
    r = run_inrpd("-t", "-c", str(conf))
    assert r.returncode == 1 and "inrpd.conf:3: 'tls-certificate' and 'tls-key' go together" in r.stderr
    for bad, why in (("listen-tls 127.0.0.1 port 0;", "port"), ("listen-tls 127.0.0.1 8853;", "expected"),
                     ('https-path "dns-query";', "https-path"), ('https-path "/a?b";', "https-path")):
        conf.write_text(f"listen 127.0.0.1 port 5353;\n{bad}\n")
        r = run_inrpd("-t", "-c", str(conf))
        assert r.returncode == 1 and "inrpd.conf:2:" in r.stderr and why in r.stderr, (bad, r.stderr)


def test_idle_connections_make_room_and_handshakes_time_out(inrpd_factory, tmp_path):
    d = start(inrpd_factory, tmp_path, ROUTED + "tcp-max-connections 2;\ntcp-idle-timeout 1s;\n")
    # a client that connects and never says a word is closed after the idle timeout
    mute = socket.create_connection((d.addr, d.dot_port), timeout=10)
    assert mute.recv(100) == b""
    wait_for(lambda: tls_counters(d)["handshake_timeout"] == 1, 10, "the handshake timeout counted")
    mute.close()
    # at the limit a newcomer closes the connection idle the longest
    a, b = DotClient(d), DotClient(d)
    assert addrs(a.ask("www.example.content")) and addrs(b.ask("www.example.content"))
    c = DotClient(d)
    assert addrs(c.ask("www.example.content"))
    with pytest.raises((ConnectionError, ssl.SSLError, OSError)):
        a.ask("www.example.content")
    assert addrs(b.ask("www.example.content"))
    t = tls_counters(d)
    assert t["evicted"] == 1 and t["connections"] == 2
    for x in (a, b, c):
        x.close()
    wait_for(lambda: tls_counters(d)["connections"] == 0, 10, "the connections closed")


def test_a_client_that_speaks_no_tls_is_closed_and_counted(inrpd_factory, tmp_path):
    d = start(inrpd_factory, tmp_path, ROUTED)
    with socket.create_connection((d.addr, d.dot_port), timeout=10) as s:
        q = dns.message.make_query("www.example.content", "A").to_wire()
        s.sendall(len(q).to_bytes(2, "big") + q)
        got = b""
        while chunk := s.recv(100):
            got += chunk
        assert got == b"" or got[0] == 0x15, got      # at most a TLS alert, then closed
    wait_for(lambda: tls_counters(d)["handshake_not_tls"] == 1, 10, "the plain client counted")
    c = DotClient(d)
    assert addrs(c.ask("www.example.content"))
    c.close()


def test_dnsperf_over_dot(inrpd_factory, tmp_path):
    if not shutil.which("dnsperf"):
        pytest.fail("dnsperf is missing (scripts/setup installs it)")
    d = start(inrpd_factory, tmp_path, ROUTED)
    qfile = tmp_path / "queries"
    qfile.write_text("www.example.content A\nx.www.example.content AAAA\n" * 50)
    out = subprocess.run(["dnsperf", "-m", "dot", "-s", d.addr, "-p", str(d.dot_port), "-d", str(qfile),
                          "-n", "4", "-c", "2"], capture_output=True, text=True, timeout=120).stdout
    assert re.search(r"Queries completed:\s+400 ", out), out
    assert re.search(r"Queries lost:\s+0 ", out), out
    t = tls_counters(d)
    assert t["answered"] == 400 and t["handshakes"] == 2


# ---- glibc through stubby, a real DoT stub resolver ----

@pytest.mark.skipif(os.geteuid() != 0, reason="not root: a mount namespace and port 53 need it")
def test_glibc_resolves_through_stubby_over_tls(inrpd_factory, tmp_path, unbound):
    from test_inrpd_resolver import getent_in_namespace
    if not shutil.which("stubby"):
        pytest.fail("stubby is missing (scripts/setup installs it)")
    u = unbound(LOCAL_DATA)
    d = start(inrpd_factory, tmp_path, 'route "www.glibc.content" { server 127.0.0.10; }\n'
              f"upstream {u.addr} port {u.port};\n")
    stub = loopback_addr()
    conf = tmp_path / "stubby.yml"
    conf.write_text(f"""resolution_type: GETDNS_RESOLUTION_STUB
dns_transport_list: [ GETDNS_TRANSPORT_TLS ]
tls_authentication: GETDNS_AUTHENTICATION_REQUIRED
tls_ca_file: "{d.certs.ca}"
tls_query_padding_blocksize: 128
idle_timeout: 10000
listen_addresses: [ {stub}@53 ]
appdata_dir: "{tmp_path}"
upstream_recursive_servers:
  - address_data: {d.addr}
    tls_port: {d.dot_port}
    tls_auth_name: "{SERVER_NAME}"
""")
    log = open(tmp_path / "stubby.log", "wb")
    p = subprocess.Popen(["stubby", "-C", str(conf), "-v", "5"], stdin=subprocess.DEVNULL, stdout=log,
                         stderr=log, start_new_session=True)
    try:
        def answers():
            assert p.poll() is None, (tmp_path / "stubby.log").read_text()
            try:
                return dns.query.udp(dns.message.make_query("www.glibc.content", "A"), stub, port=53,
                                     timeout=1).answer
            except dns.exception.Timeout:
                return None
        wait_for(answers, 30, "stubby to answer")
        out = getent_in_namespace(tmp_path, stub, "www.glibc.content", True)
        assert out.returncode == 0 and {x.split()[0] for x in out.stdout.splitlines()} == {"127.0.0.10"}, out
        out = getent_in_namespace(tmp_path, stub, "a.upstream.test", True)
        assert out.returncode == 0 and {x.split()[0] for x in out.stdout.splitlines()} == {"192.0.2.1", "2001:db8::1"}, out
        # it all came over TLS, padded both ways
        t = tls_counters(d)
        assert t["handshakes"] >= 1 and t["local"] >= 1 and t["fallback"] >= 1
    finally:
        p.terminate()
        p.wait(timeout=10)
        log.close()
