"""Authenticated sessions (`authentication tls`, docs/NBRP.md "Session
authentication"): two real nbrpd speak TLS 1.3, each presenting its router
key, and each refuses a peer whose key is not the trust file's for its
name.  The attacks are mounted for real: a router with the right address
and the wrong key, and a relay on the path that rewrites what r1 sends."""

import select
import socket
import subprocess
import threading

import pytest

from conftest import NBRPD, free_port, wait_for
import sigtest as st
from prom import scrape, value
from test_nbrpd import unique_addrs

SVC = "svc.content"


class Pair:
    """r1 (originates svc.content, next hop its inrp address) and r2, each with its key file
    and the same trust file; r2's key file may hold another key than the trust file's."""

    def __init__(self, tmp_path, nbrpd_factory, r2_key=None):
        self.tmp, self.factory = tmp_path, nbrpd_factory
        self.anchor = st.Key()
        self.keys = {"r1": st.Key(), "r2": st.Key()}
        self.trust = tmp_path / "trust"
        st.trust_file(self.trust, self.anchor, self.keys, [])
        (self.r1_addr, self.r2_addr, self.inrp1, self.relay_addr, self.evil) = unique_addrs(5)
        self.keys["r1"].write(tmp_path / "r1.key")
        (r2_key or self.keys["r2"]).write(tmp_path / "r2.key")
        self.p1, self.p2 = free_port(self.r1_addr), free_port(self.r2_addr)

    def common(self, name):
        return (f'router-name "{name}";\nhold-time 30s;\nconnect-retry 100ms;\n'
                f'key-file "{self.tmp}/{name}.key";\ntrust-anchor "{self.anchor.text}";\n'
                f'trust-file "{self.trust}";\ntrust-poll 200ms;\n')

    def start(self, auth, r2_to=None, metrics_port=None):
        """r1 waits for r2; r2 connects to r2_to (a relay) or to r1."""
        r2_to = r2_to or (self.r1_addr, self.p1)
        metrics = f"metrics {self.r1_addr} port {metrics_port};\n" if metrics_port else ""
        self.r1 = self.factory("r1", self.common("r1") + metrics +
                               f"listen {self.r1_addr} port {self.p1};\ninrp-address {self.inrp1} port 53;\n"
                               f'content "{SVC}" {{ server 127.0.0.99; }}\n'
                               f'peer "r2" {{ address {self.r2_addr}; passive; authentication {auth}; }}\n')
        self.r2 = self.factory("r2", self.common("r2") +
                               f"listen {self.r2_addr} port {self.p2};\ninrp-address {self.r2_addr} port 53;\n"
                               f'content "rogue.content" {{ server 127.0.0.98; }}\n'
                               f'peer "r1" {{ address {r2_to[0]} port {r2_to[1]}; authentication {auth}; }}\n')


def test_two_routers_with_tls_establish_and_exchange_routes(tmp_path, nbrpd_factory):
    p = Pair(tmp_path, nbrpd_factory)
    p.start("tls")
    wait_for(lambda: p.r2.route(SVC), 20, "svc.content at r2")
    assert p.r2.route(SVC)[0]["next_hop"] == f"{p.inrp1} port 53"
    wait_for(lambda: p.r1.route("rogue.content"), 10, "r2's name at r1")
    for r, other in ((p.r1, "r2"), (p.r2, "r1")):
        peer = r.peers()[other]
        assert peer["state"] == "Established" and peer["authentication"] == "tls", peer
        assert peer["session_keys_refused"] == 0 and peer["tls_failures"] == 0, peer
    assert "tls: session keys refused 0, failures 0" in p.r1.nbrc("show", "peers").stdout


def test_the_right_address_with_the_wrong_key_is_refused(tmp_path, nbrpd_factory):
    """r2 connects from its configured address but holds a key the trust file does not give it."""
    p = Pair(tmp_path, nbrpd_factory, r2_key=st.Key())
    mport = free_port(p.r1_addr)
    p.start("tls", metrics_port=mport)
    wait_for(lambda: p.r1.peers()["r2"]["session_keys_refused"] >= 2, 20, "r1 to refuse r2 twice")
    peer = p.r1.peers()["r2"]
    assert peer["state"] != "Established"
    assert "does not match the trust file's key for router \"r2\"" in peer["last_error"], peer
    # r2 is told why, in a NOTIFICATION (OPEN error, bad key)
    wait_for(lambda: "does not match the trust file's key" in p.r2.peers()["r1"]["last_error"], 10,
             "r2 to hear why")
    assert p.r2.peers()["r1"]["notifications_in"] >= 1
    assert "received OPEN: bad key" in p.r2.peers()["r1"]["last_error"]
    assert p.r1.route("rogue.content") is None
    assert p.r1.json("show", "status")["session_keys_refused"] >= 2
    m = scrape(p.r1_addr, mport)
    assert value(m, "nbrpd_peer_session_keys_refused_total", peer="r2") >= 2
    assert value(m, "nbrpd_session_keys_refused_total") >= 2
    assert "session key" in p.r1.log() and "does not match" in p.r1.log()


class Relay:
    """An on-path attacker between r2 and r1: accepts r2's connection, connects to r1 from
    r2's address, and rewrites what r1 sends.  Plain NBRP: r1's next-hop bytes become the
    attacker's.  TLS: once r2 has sent encrypted records (its handshake is done), every
    record r1 sends after its OPEN and KEEPALIVE has a byte flipped: the UPDATEs."""

    def __init__(self, listen, r1, src, find, replace):
        self.r1, self.src, self.find, self.replace = r1, src, find, replace
        self.ls = socket.socket()
        self.ls.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        self.ls.bind(listen)
        self.ls.listen(8)
        self.stop = False
        self.rewrites = 0
        self.t = threading.Thread(target=self.run, daemon=True)
        self.t.start()

    def run(self):
        while not self.stop:
            r, _, _ = select.select([self.ls], [], [], 0.1)
            if r:
                c, _ = self.ls.accept()
                threading.Thread(target=self.pipe, args=(c,), daemon=True).start()

    def pipe(self, c):
        u = socket.socket()
        try:
            u.bind((self.src, 0))
            u.connect(self.r1)
        except OSError:
            c.close()
            return
        down = b""                  # r1 -> r2, not yet passed on (TLS: an incomplete record)
        client_encrypted = False    # r2 sent an encrypted record: its handshake is done
        after = 0                   # r1's records since then
        socks = [c, u]
        try:
            while not self.stop:
                r, _, _ = select.select(socks, [], [], 0.1)
                for s in r:
                    data = s.recv(65536)
                    if not data:
                        return
                    if s is c:
                        client_encrypted = client_encrypted or b"\x17\x03\x03" in data
                        u.sendall(data)
                        continue
                    down += data
                    if down[:1] not in (b"\x14", b"\x15", b"\x16", b"\x17"):
                        if self.find in down:
                            self.rewrites += 1
                        c.sendall(down.replace(self.find, self.replace))
                        down = b""
                        continue
                    out = b""
                    while len(down) >= 5 and len(down) >= 5 + int.from_bytes(down[3:5], "big"):
                        n = 5 + int.from_bytes(down[3:5], "big")
                        rec = bytearray(down[:n])
                        down = down[n:]
                        if client_encrypted and rec[0] == 0x17:
                            after += 1
                            if after > 2:
                                rec[n // 2] ^= 0x01
                                self.rewrites += 1
                        out += rec
                    c.sendall(out)
        finally:
            c.close()
            u.close()

    def close(self):
        self.stop = True
        self.t.join(timeout=5)
        self.ls.close()


@pytest.mark.parametrize("auth", ["none", "tls"])
def test_an_on_path_rewrite_of_a_next_hop(tmp_path, nbrpd_factory, auth):
    p = Pair(tmp_path, nbrpd_factory)
    relay_port = free_port(p.relay_addr)
    relay = Relay((p.relay_addr, relay_port), (p.r1_addr, p.p1), p.r2_addr,
                  socket.inet_aton(p.inrp1), socket.inet_aton(p.evil))
    try:
        p.start(auth, r2_to=(p.relay_addr, relay_port))
        if auth == "none":
            # the control: without authentication the rewrite gets through
            wait_for(lambda: p.r2.route(SVC), 20, "svc.content at r2")
            assert p.r2.route(SVC)[0]["next_hop"] == f"{p.evil} port 53"
            assert relay.rewrites >= 1
            return
        wait_for(lambda: p.r2.peers()["r1"]["tls_failures"] >= 2, 30, "r2 to refuse two rewritten sessions")
        assert relay.rewrites >= 2
        assert p.r2.route(SVC) is None
        peer = p.r2.peers()["r1"]
        # the session came up (OPEN and KEEPALIVE passed untouched); the altered UPDATE ended it
        assert "TLS: Decryption has failed" in peer["last_error"] and peer["flaps"] >= 1, peer
        assert p.r2.json("show", "status")["tls_failures"] >= 2
    finally:
        relay.close()


def test_authentication_config_errors(tmp_path):
    conf = tmp_path / "nbrpd.conf"
    base = 'router-name "r1";\ninrp-address 127.0.0.1 port 53;\n'

    def check(body):
        conf.write_text(base + body)
        return subprocess.run([NBRPD, "-t", "-c", str(conf)], capture_output=True, text=True, timeout=30)
    r = check('peer "x" {\n address 127.0.0.2;\n authentication tls;\n}\n')
    assert r.returncode == 1 and ":3: peer \"x\": authentication tls needs 'key-file'" in r.stderr, r.stderr
    # the default under `signatures require` is tls: the same error names the peer
    r = check('peer "x" { address 127.0.0.2; signatures require; }\n')
    assert r.returncode == 1 and "needs 'key-file'" in r.stderr, r.stderr
    r = check('peer "x" {\n address 127.0.0.2;\n authentication yes;\n}\n')
    assert r.returncode == 1 and ":5:" in r.stderr and "authentication" in r.stderr, r.stderr
    r = check('peer "x" {\n address 127.0.0.2;\n authentication none;\n authentication tls;\n}\n')
    assert r.returncode == 1 and ":6:" in r.stderr, r.stderr
    assert check('peer "x" { address 127.0.0.2; authentication none; }\n').returncode == 0


def test_a_peer_without_authentication_meets_one_with(tmp_path, nbrpd_factory):
    """r1 says tls, r2 none: no session; r1 counts the TLS failures and says why."""
    p = Pair(tmp_path, nbrpd_factory)
    p.r1 = p.factory("r1", p.common("r1") + f"listen {p.r1_addr} port {p.p1};\ninrp-address {p.inrp1} port 53;\n"
                     f'peer "r2" {{ address {p.r2_addr}; passive; authentication tls; }}\n')
    p.r2 = p.factory("r2", p.common("r2") + f"listen {p.r2_addr} port {p.p2};\ninrp-address {p.r2_addr} port 53;\n"
                     f'peer "r1" {{ address {p.r1_addr} port {p.p1}; authentication none; }}\n')
    wait_for(lambda: p.r1.peers()["r2"]["tls_failures"] >= 2, 20, "r1 to fail two handshakes")
    assert "the peer does not speak TLS" in p.r1.peers()["r2"]["last_error"]
    assert p.r1.peers()["r2"]["state"] != "Established" and p.r2.peers()["r1"]["state"] != "Established"


def test_turning_authentication_on_at_a_reload_starts_the_session_over(tmp_path, nbrpd_factory):
    p = Pair(tmp_path, nbrpd_factory)
    p.start("none")
    wait_for(lambda: p.r2.route(SVC), 20, "svc.content at r2")
    for r in (p.r1, p.r2):
        r.conf.write_text(r.conf.read_text().replace("authentication none", "authentication tls"))
        assert r.nbrc("reload").returncode == 0
    wait_for(lambda: (lambda x: x["authentication"] == "tls" and x["state"] == "Established" and x["flaps"] >= 1)(
        p.r1.peers()["r2"]), 20, "the session again, over TLS")
    wait_for(lambda: p.r2.route(SVC), 20, "svc.content at r2 again")
    assert "peer authentication changed" in p.r1.log()


def test_a_handshake_that_stalls_is_ended(tmp_path, nbrpd_factory):
    """A connection from r2's address that never finishes the handshake holds nothing for long:
    no longer than the hold time (at most 10 s)."""
    p = Pair(tmp_path, nbrpd_factory)
    p.r1 = p.factory("r1", p.common("r1").replace("hold-time 30s", "hold-time 3s") +
                     f"listen {p.r1_addr} port {p.p1};\ninrp-address {p.inrp1} port 53;\n"
                     f'peer "r2" {{ address {p.r2_addr}; passive; authentication tls; }}\n')
    s = socket.socket()
    s.bind((p.r2_addr, 0))
    s.connect((p.r1_addr, p.p1))
    s.sendall(b"\x16\x03\x01\x02\x00")     # a handshake record's header, and no more
    try:
        wait_for(lambda: p.r1.peers()["r2"]["tls_failures"] >= 1, 30, "the handshake to be ended")
        assert "TLS handshake: not done in 3 s" in p.r1.peers()["r2"]["last_error"]
        s.settimeout(5)
        assert s.recv(100) == b""           # closed
    finally:
        s.close()


def test_tls_1_2_and_certificates_are_refused(tmp_path, nbrpd_factory):
    """Nothing to downgrade to: a client from r2's address offering TLS 1.2, or TLS 1.3 with
    X.509 certificates instead of raw public keys, fails the handshake."""
    import ssl
    p = Pair(tmp_path, nbrpd_factory)
    p.r1 = p.factory("r1", p.common("r1") + f"listen {p.r1_addr} port {p.p1};\ninrp-address {p.inrp1} port 53;\n"
                     f'peer "r2" {{ address {p.r2_addr}; passive; authentication tls; }}\n')
    for version in (ssl.TLSVersion.TLSv1_2, ssl.TLSVersion.TLSv1_3):
        ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_CLIENT)
        ctx.check_hostname, ctx.verify_mode = False, ssl.CERT_NONE
        ctx.minimum_version = ctx.maximum_version = version
        s = socket.socket()
        s.bind((p.r2_addr, 0))
        s.settimeout(10)
        s.connect((p.r1_addr, p.p1))
        with pytest.raises((ssl.SSLError, ConnectionError)):
            with ctx.wrap_socket(s) as t:
                t.recv(1)           # TLS 1.3: the server's verdict on the client's (missing) key
        s.close()
    wait_for(lambda: p.r1.peers()["r2"]["tls_failures"] >= 2, 10, "two handshakes refused")
    # GnuTLS's words for both: no suite for TLS 1.2, and none with a credential of a type offered
    assert "No supported cipher suites" in p.r1.peers()["r2"]["last_error"]
    assert p.r1.peers()["r2"]["state"] != "Established"


def test_a_new_trust_file_that_changes_a_key_ends_the_session(tmp_path, nbrpd_factory):
    """r2's key is replaced in the trust file (a compromised key, rotated): r1 ends the session it
    authenticated under the old file, and refuses r2's old key from then on."""
    p = Pair(tmp_path, nbrpd_factory)
    p.start("tls")
    wait_for(lambda: p.r1.route("rogue.content"), 20, "r2's name at r1")
    st.trust_file(p.trust, p.anchor, {"r1": p.keys["r1"], "r2": st.Key()}, [])
    wait_for(lambda: p.r1.route("rogue.content") is None, 20, "r2's routes gone from r1")
    wait_for(lambda: p.r1.peers()["r2"]["session_keys_refused"] >= 2, 20, "the old key refused again")
    assert "does not match the trust file's key" in p.r1.peers()["r2"]["last_error"]
    assert "gives another key than this session's" in p.r1.log()
    assert p.r1.peers()["r2"]["state"] != "Established"
