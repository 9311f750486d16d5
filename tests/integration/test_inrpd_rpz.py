"""Response Policy Zones in inrpd (docs/RPZ.md): a real NSD serves the
policy zones by AXFR/IXFR with TSIG and sends NOTIFY; every action asked
for by dnspython over UDP and TCP; routed and unrouted names; a name held
in the packet cache; two zones' precedence; a zone changed on the primary
(serial bump, NOTIFY signed with the zone's key) observed through `inrpc
show rpz`; a wrong key; bad records; IXFR diffs (adds, removals, a rule
changed, precedence after), kill -9 during and after an IXFR with a
state-dir; forged NOTIFYs without or with a wrong TSIG."""

import base64
import os
import re
import signal
import socket
import subprocess
import threading
import time
import types
from unittest import mock

import dns.exception
import dns.flags
import dns.message
import dns.query
import dns.rcode
import dns.name
import dns.opcode
import dns.rdatatype
import dns.rrset
import dns.tsig
import dns.zone
import pytest

import prom
from conftest import ENV, free_port, loopback_addr, wait_for
from test_inrpd_forward import INRPC, SERVER, Unbound, inrpc_json, router

EDE = 15
SECRET = base64.b64encode(b"rpz test key for the transfers!!").decode()
WRONG = base64.b64encode(b"another key, not the primary's!!").decode()

RPZ1 = """\
$ORIGIN rpz.test.
@ 300 IN SOA ns.rpz.test. admin.rpz.test. {serial} 3600 600 86400 60
@ 300 IN NS ns.rpz.test.
{nx}
*.wild.shop.content CNAME .
nodata.example CNAME *.
*.all.shop.content CNAME .
pass.all.shop.content CNAME rpz-passthru.
drop.example CNAME rpz-drop.
tcp.shop.content CNAME rpz-tcp-only.
local.example A 192.0.2.7
local.example AAAA 2001:db8::7
local.example TXT "walled" "garden"
garden.example CNAME www.shop.content.
garden2.example CNAME a.upstream.test.
blocked.shop.content CNAME .
both.example CNAME .
bad-mx.shop.content MX 10 mail.example.
32.1.2.0.192.rpz-ip A 192.0.2.1
{extra}
"""

RPZ2 = """\
$ORIGIN second.test.
@ 300 IN SOA ns.second.test. admin.second.test. 1 3600 600 86400 60
@ 300 IN NS ns.second.test.
both.example A 192.0.2.99
only2.example CNAME *.
"""


class Nsd:
    """NSD serving zones to 127.0.0.0/8 with a TSIG key, NOTIFY to a target."""

    def __init__(self, tmp_path, zones, notify=None):
        self.addr = loopback_addr()
        self.port = free_port(self.addr)
        self.dir = tmp_path / f"nsd-{self.port}"
        self.dir.mkdir()
        self.zones = zones
        for name, text in zones.items():
            (self.dir / f"{name}.zone").write_text(text)
        self.conf = self.dir / "nsd.conf"
        lines = [
            "server:",
            f"  ip-address: {self.addr}",
            f"  port: {self.port}",
            f'  zonesdir: "{self.dir}"',
            f'  pidfile: "{self.dir}/nsd.pid"',
            '  database: ""',
            '  username: ""',
            '  chroot: ""',
            f'  xfrdfile: "{self.dir}/xfrd.state"',
            f'  zonelistfile: "{self.dir}/zone.list"',
            f'  xfrdir: "{self.dir}"',
            f'  logfile: "{self.dir}/nsd.log"',
            "  server-count: 1",
            "  verbosity: 2",
            "remote-control:",
            "  control-enable: no",
            "key:",
            '  name: "xfr.key"',
            "  algorithm: hmac-sha256",
            f'  secret: "{SECRET}"',
        ]
        for name in zones:
            lines += ["zone:", f'  name: "{name}"', f'  zonefile: "{name}.zone"',
                      "  provide-xfr: 127.0.0.0/8 xfr.key", f"  outgoing-interface: {self.addr}"]
            if notify:
                lines.append(f"  notify: {notify[0]}@{notify[1]} xfr.key")
        self.conf.write_text("\n".join(lines) + "\n")
        self.log = open(self.dir / "nsd.out", "wb")
        self.proc = subprocess.Popen(["nsd", "-d", "-c", str(self.conf)], stdin=subprocess.DEVNULL,
                                     stdout=self.log, stderr=self.log, env=ENV, start_new_session=True)

        def serves():
            if self.proc.poll() is not None:
                raise AssertionError(f"nsd exited: {(self.dir / 'nsd.out').read_text(errors='replace')}")
            try:
                q = dns.message.make_query(next(iter(zones)), "SOA")
                return dns.query.udp(q, self.addr, port=self.port, timeout=0.2).answer
            except (dns.exception.Timeout, OSError):
                return False
        wait_for(serves, 30, "nsd to serve")

    def update(self, name, text):
        """A new zone file; SIGHUP makes NSD load it and send NOTIFY."""
        (self.dir / f"{name}.zone").write_text(text)
        self.proc.send_signal(signal.SIGHUP)

    def stop(self):
        if self.proc.poll() is None:
            self.proc.terminate()
            try:
                self.proc.wait(timeout=15)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()
        self.log.close()


def key_file(tmp_path, secret, name="k"):
    p = tmp_path / f"{name}.key"
    p.write_text(f'key "xfr.key" {{\n\talgorithm hmac-sha256;\n\tsecret "{secret}";\n}};\n')
    p.chmod(0o600)
    return p


def rpz_block(zone, nsd, key, ede="blocked"):
    return f'rpz "{zone}" {{ primary {nsd.addr} port {nsd.port}; tsig-key "{key}"; ede {ede}; }}\n'


def show_rpz(d):
    return {z["zone"].rstrip("."): z for z in inrpc_json(d, "show", "rpz")}


def wait_serial(d, zone, serial):
    return wait_for(lambda: show_rpz(d)[zone]["serial"] == serial and show_rpz(d)[zone], 30,
                    f"{zone} at serial {serial}")


def not_blocked(d, name):
    """No policy answer: a router with no upstream refuses the name, or has none to give."""
    try:
        r = d.udp(name, "A", use_edns=0, timeout=0.5)
    except dns.exception.Timeout:
        return True
    return r.rcode() == dns.rcode.REFUSED


def ede_of(r):
    for o in r.options:
        if o.otype == EDE:
            return int(o.code)
    return None


@pytest.fixture
def upstream(tmp_path):
    u = Unbound(tmp_path, ["upstream.test. 300 IN SOA ns.upstream.test. admin.upstream.test. 1 3600 600 86400 300",
                           "a.upstream.test. 300 IN A 192.0.2.1",
                           "cached.upstream.test. 300 IN A 192.0.2.2"])
    yield u
    u.stop()


@pytest.fixture
def setup(tmp_path, inrpd_factory, upstream):
    """NSD with both zones, notifying an inrpd that has them in order and a route."""
    started = []
    addr = loopback_addr()
    port = free_port(addr)
    nsd = Nsd(tmp_path, {"rpz.test": RPZ1.format(serial=1, extra="", nx="nx.example CNAME ."), "second.test": RPZ2},
              notify=(addr, port))
    started.append(nsd)
    key = key_file(tmp_path, SECRET)

    mport = free_port(addr)

    def body(extra=""):
        return (f"listen {addr} port {port};\nupstream {upstream.addr} port {upstream.port};\n"
                f"metrics {addr} port {mport};\n"
                f'route "shop.content" {{ server {SERVER}; }}\n' + rpz_block("rpz.test", nsd, key) +
                rpz_block("second.test", nsd, key, ede="filtered") + extra)
    d = router(inrpd_factory, tmp_path, body(), listen=False, addr=addr, port=port)
    d.body = body
    d.mport = mport
    wait_serial(d, "rpz.test", 1)
    wait_serial(d, "second.test", 1)
    yield d, nsd, key
    for p in started:
        p.stop()


def test_actions(setup):
    d, nsd, _ = setup
    r = d.udp("nx.example", "A", use_edns=0)
    assert r.rcode() == dns.rcode.NXDOMAIN and ede_of(r) == 15, r
    assert [x.rdtype for x in r.authority] == [dns.rdatatype.SOA]
    assert d.tcp("a.b.wild.shop.content", "A", use_edns=0).rcode() == dns.rcode.NXDOMAIN
    r = d.udp("wild.shop.content", "A", use_edns=0)             # a wildcard is not its own name
    assert [x.to_text() for x in r.answer[0]] == [SERVER], r
    r = d.udp("nodata.example", "A", use_edns=0)
    assert r.rcode() == dns.rcode.NOERROR and r.answer == [] and ede_of(r) == 15, r
    # passthru, an exact rule inside a blocking wildcard: the name's own route answers
    r = d.udp("pass.all.shop.content", "A", use_edns=0)
    assert [x.to_text() for x in r.answer[0]] == [SERVER] and ede_of(r) is None, r
    assert d.udp("other.all.shop.content", "A", use_edns=0).rcode() == dns.rcode.NXDOMAIN
    with pytest.raises(dns.exception.Timeout):
        d.udp("drop.example", "A", timeout=0.5, use_edns=0)
    r = d.udp("tcp.shop.content", "A", use_edns=0)
    assert r.flags & dns.flags.TC and not r.answer, r
    assert not d.tcp("tcp.shop.content", "A", use_edns=0).flags & dns.flags.TC
    r = d.udp("local.example", "A", use_edns=0)
    assert [x.to_text() for x in r.answer[0]] == ["192.0.2.7"] and ede_of(r) == 15, r
    assert [x.to_text() for x in d.tcp("local.example", "AAAA", use_edns=0).answer[0]] == ["2001:db8::7"]
    assert [x.to_text() for x in d.udp("local.example", "TXT", use_edns=0).answer[0]] == ['"walled" "garden"']
    r = d.udp("local.example", "MX", use_edns=0)
    assert r.answer == [] and r.rcode() == dns.rcode.NOERROR, r
    # a CNAME to a walled garden: the CNAME, then the garden's own (routed) answer
    r = d.udp("garden.example", "A", use_edns=0)
    assert r.answer[0].rdtype == dns.rdatatype.CNAME and r.answer[0][0].to_text() == "www.shop.content."
    assert [x.to_text() for x in r.answer[1]] == [SERVER] and ede_of(r) == 15, r
    # ... or the upstream's answer, relayed after the CNAME, with the zone's extended error
    r = d.tcp("garden2.example", "A", use_edns=0)
    assert r.answer[0][0].to_text() == "a.upstream.test." and [x.to_text() for x in r.answer[1]] == ["192.0.2.1"]
    assert ede_of(r) == 15, r
    # a routed name is blocked; its neighbour is not
    assert d.udp("blocked.shop.content", "A", use_edns=0).rcode() == dns.rcode.NXDOMAIN
    assert [x.to_text() for x in d.udp("ok.shop.content", "A", use_edns=0).answer[0]] == [SERVER]
    # kdig, another client: the rcode and the extended error
    out = subprocess.run(["kdig", "+tcp", "+edns", f"@{d.addr}", "-p", str(d.port), "nx.example", "A"],
                         capture_output=True, text=True, timeout=10).stdout
    assert "NXDOMAIN" in out and "EDE: 15 (Blocked)" in out, out
    # each hit logged at rpz-log-level (info by default)
    wait_for(lambda: "rpz rpz.test.: nx.example. from " in d.log(), 10, "the hit's log line")
    assert "rpz rpz.test.: drop.example. from " in d.log() and ": drop" in d.log()
    hits = show_rpz(d)["rpz.test"]["hits"]
    assert hits["nxdomain"] == 5 and hits["nodata"] == 1 and hits["drop"] == 1
    assert hits["tcp-only"] == 2 and hits["local-data"] >= 6 and hits["passthru"] == 1


def test_bad_records_counted(setup):
    d, _, _ = setup
    z = show_rpz(d)["rpz.test"]
    assert z["bad"] == 2                    # the MX and the rpz-ip trigger
    assert "bad-mx.shop.content.rpz.test" in d.log() and "skipped" in d.log()
    assert d.udp("bad-mx.shop.content", "MX", use_edns=0).rcode() != dns.rcode.NXDOMAIN


def test_metrics(setup):
    d, _, _ = setup
    d.udp("nx.example", "A", use_edns=0)
    d.udp("nodata.example", "A", use_edns=0)
    m = prom.scrape(d.addr, d.mport)
    assert prom.value(m, "inrpd_rpz_hits_total", zone="rpz.test.", action="nxdomain") == 1
    assert prom.value(m, "inrpd_rpz_hits_total", zone="rpz.test.", action="nodata") == 1
    assert prom.value(m, "inrpd_rpz_serial", zone="rpz.test.") == 1
    assert prom.value(m, "inrpd_rpz_bad_records", zone="rpz.test.") == 2
    assert prom.value(m, "inrpd_rpz_transfers_total", zone="second.test.", result="ok") >= 1
    assert prom.value(m, "inrpd_rpz_rules", zone="second.test.") == 2
    assert prom.value(m, "inrpd_rpz_notifies_total", zone="rpz.test.", result="bad_tsig") == 0
    assert prom.value(m, "inrpd_rpz_last_apply_seconds", zone="rpz.test.") >= 0


def test_many_signed_messages(tmp_path, inrpd_factory):
    """A zone of 20,000 rules: NSD's AXFR spans many messages, each MAC
    chained to the one before (RFC 8945 5.3.1), verified end to end."""
    extra = "\n".join(f"n{i}.many.example CNAME ." for i in range(20000))
    nsd = Nsd(tmp_path, {"rpz.test": RPZ1.format(serial=1, extra=extra, nx="nx.example CNAME .")})
    try:
        key = key_file(tmp_path, SECRET)
        d = router(inrpd_factory, tmp_path, "rpz-log-level none;\n" + rpz_block("rpz.test", nsd, key))
        z = wait_serial(d, "rpz.test", 1)
        assert z["rules"] == 20000 + 12 and z["tsig_failures"] == 0, z
        assert d.udp("n19999.many.example", "A", use_edns=0).rcode() == dns.rcode.NXDOMAIN
        assert int(re.search(r"AXFR, version none -> 1 .*?(\d+) bytes", d.log()).group(1)) > 65536
    finally:
        nsd.stop()


def test_precedence(setup):
    d, _, _ = setup
    r = d.udp("both.example", "A", use_edns=0)
    assert r.rcode() == dns.rcode.NXDOMAIN and ede_of(r) == 15     # the first zone's rule
    r = d.udp("only2.example", "A", use_edns=0)
    assert r.rcode() == dns.rcode.NOERROR and not r.answer and ede_of(r) == 17, r
    assert show_rpz(d)["second.test"]["hits"]["nodata"] == 1


def test_update_by_notify_blocks_cached_name(setup):
    d, nsd, _ = setup
    # over TCP: one thread, one cache shard
    assert [x.to_text() for x in d.tcp("cached.upstream.test", "A", use_edns=0).answer[0]] == ["192.0.2.2"]
    assert [x.to_text() for x in d.tcp("cached.upstream.test", "A", use_edns=0).answer[0]] == ["192.0.2.2"]
    assert inrpc_json(d, "show", "counters")["tcp"]["cached"] == 1
    before = show_rpz(d)["rpz.test"]["transfers"]
    nsd.update("rpz.test", RPZ1.format(serial=2, extra="cached.upstream.test CNAME .", nx="nx.example CNAME *."))
    z = wait_serial(d, "rpz.test", 2)
    assert z["transfers"] == before + 1 and z["notifies"] >= 1
    r = d.tcp("cached.upstream.test", "A", use_edns=0)
    assert r.rcode() == dns.rcode.NXDOMAIN and ede_of(r) == 15, r
    # a rule removed by the update: nx.example is NODATA now
    r = d.udp("nx.example", "A", use_edns=0)
    assert r.rcode() == dns.rcode.NOERROR and not r.answer
    assert z["last_result"].endswith("serial 2")


def test_notify_from_elsewhere_refused(setup):
    d, _, _ = setup
    q = dns.message.make_query("rpz.test", "SOA")
    q.set_opcode(dns.opcode.NOTIFY)
    r = dns.query.udp(q, d.addr, port=d.port, timeout=2)
    assert r.rcode() == dns.rcode.REFUSED
    assert show_rpz(d)["rpz.test"]["notifies_refused"] == 1


def test_wrong_key_refused_old_rules_stay(setup, tmp_path):
    d, nsd, key = setup
    wrong = key_file(tmp_path, WRONG, "wrong")
    d.reload(d.body().replace(str(key), str(wrong)), listen=False)
    wait_for(lambda: show_rpz(d)["rpz.test"]["transfer_failures"] >= 1, 30, "a refused transfer")
    z = show_rpz(d)["rpz.test"]
    assert z["serial"] == 1 and z["rules"] > 0, z
    assert "NOTAUTH" in z["last_result"] or "TSIG" in z["last_result"], z
    assert d.udp("nx.example", "A", use_edns=0).rcode() == dns.rcode.NXDOMAIN   # the old rules apply


class FakePrimary:
    """A transfer source that is not the primary: it answers an AXFR of
    the zone unsigned (a spoofer on the path), or signed with another key."""

    def __init__(self, zone_text, key_secret=None):
        self.addr = loopback_addr()
        self.port = free_port(self.addr)
        self.zone = dns.zone.from_text(zone_text, origin="rpz.test.", relativize=False)
        self.versions = {self.serial(self.zone): self.zone}
        self.broken_diff = False        # a diff removing a record the client cannot hold
        self.stall = None               # an Event: a diff's first message sent, the rest only once it is set
        self.asked = []
        self.secret = key_secret
        self.sock = socket.socket()
        self.sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        self.sock.bind((self.addr, self.port))
        self.sock.listen(8)
        self.served = 0
        self.thread = threading.Thread(target=self.serve, daemon=True)
        self.thread.start()

    def serve(self):
        while True:
            try:
                c, _ = self.sock.accept()
            except OSError:
                return
            with c:
                try:
                    n = int.from_bytes(c.recv(2), "big")
                    wire = b""
                    while len(wire) < n:
                        wire += c.recv(n - len(wire))
                    keyring = {dns.name.from_text("xfr.key"): dns.tsig.Key("xfr.key", SECRET, "hmac-sha256")}
                    q = dns.message.from_wire(wire, keyring=keyring)
                    r = dns.message.make_response(q)
                    r.flags |= dns.flags.AA
                    qtype = q.question[0].rdtype
                    held = q.authority[0][0].serial if qtype == dns.rdatatype.IXFR and q.authority else None
                    self.asked.append((dns.rdatatype.to_text(qtype), held))
                    soa = self.zone.find_rrset("rpz.test.", "SOA")
                    if held in self.versions and held != self.serial(self.zone):
                        # RFC 1995: new SOA, old SOA, removed, new SOA, added, new SOA
                        old = self.versions[held]
                        r.answer += [soa, old.find_rrset("rpz.test.", "SOA")]
                        r.answer += self.minus(old, self.zone)
                        if self.stall is not None:
                            # a transfer cut short: its first message, then the connection held open
                            out = r.to_wire()
                            c.sendall(len(out).to_bytes(2, "big") + out)
                            self.served += 1
                            self.stall.wait(60)
                            continue
                        if self.broken_diff:
                            r.answer.append(dns.rrset.from_text("never.held.rpz.test.", 60, "IN", "CNAME", "."))
                        r.answer += [soa] + self.minus(self.zone, old) + [soa]
                    else:
                        r.answer.append(soa)
                        for name, rds in self.zone.iterate_rdatasets():
                            if rds.rdtype != dns.rdatatype.SOA:
                                r.answer.append(dns.rrset.from_rdata_list(name, rds.ttl, list(rds)))
                        r.answer.append(soa)
                    if self.secret is None:
                        r.tsig = None
                        out = r.to_wire()
                    else:
                        r.use_tsig(dns.tsig.Key("xfr.key", self.secret, "hmac-sha256"))
                        r.request_mac = q.mac
                        out = r.to_wire()
                    c.sendall(len(out).to_bytes(2, "big") + out)
                    self.served += 1
                except Exception:
                    pass

    @staticmethod
    def serial(zone):
        return zone.find_rrset("rpz.test.", "SOA")[0].serial

    @staticmethod
    def minus(a, b):
        """The records of zone a that zone b does not have, as RRsets."""
        out = []
        for name, rds in a.iterate_rdatasets():
            if rds.rdtype == dns.rdatatype.SOA:
                continue
            other = b.get_rdataset(name, rds.rdtype)
            gone = [rd for rd in rds if other is None or rd not in other]
            if gone:
                out.append(dns.rrset.from_rdata_list(name, rds.ttl, gone))
        return out

    def publish(self, zone_text):
        self.zone = dns.zone.from_text(zone_text, origin="rpz.test.", relativize=False)
        self.versions[self.serial(self.zone)] = self.zone

    @staticmethod
    def signed_notify(secret=SECRET, key="xfr.key", skew=0):
        """A NOTIFY signed with secret as key (None: unsigned) at our time
        plus skew seconds: the query and its wire."""
        q = dns.message.make_query("rpz.test.", "SOA")
        q.set_opcode(dns.opcode.NOTIFY)
        if secret is not None:
            q.use_tsig(dns.tsig.Key(key, secret, "hmac-sha256"))
        clock = types.SimpleNamespace(time=lambda: time.time() + skew)
        with mock.patch.object(dns.message, "time", clock):
            return q, q.to_wire()

    def send_notify(self, d, wire):
        """wire sent from the primary's own address; the answer's wire, unread."""
        with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as u:
            u.bind((self.addr, 0))
            u.settimeout(2)
            u.sendto(wire, (d.addr, d.port))
            return u.recv(65535)

    def notify_wire(self, d, secret=SECRET, key="xfr.key", skew=0):
        """A NOTIFY from the primary's own address, signed with secret as
        key (None: unsigned) at our time plus skew seconds; the query and
        the answer's wire, unread."""
        q, wire = self.signed_notify(secret, key, skew)
        return q, self.send_notify(d, wire)

    def notify(self, d, secret=SECRET):
        """A NOTIFY from the primary's own address, signed with secret's key
        (None: unsigned); the answer, its TSIG verified when ours was right."""
        q = dns.message.make_query("rpz.test.", "SOA")
        q.set_opcode(dns.opcode.NOTIFY)
        if secret is not None:
            q.use_tsig(dns.tsig.Key("xfr.key", secret, "hmac-sha256"))
        with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as u:
            u.bind((self.addr, 0))
            if secret == SECRET:
                return dns.query.udp(q, d.addr, port=d.port, timeout=2, sock=u)
            u.settimeout(2)
            u.sendto(q.to_wire(), (d.addr, d.port))
            return dns.message.from_wire(u.recv(65535))

    def stop(self):
        """Down: the listener shut, so the accepting thread ends and connections are refused."""
        try:
            self.sock.shutdown(socket.SHUT_RDWR)
        except OSError:
            pass
        self.sock.close()


def answer_tsig(q, wire, secret, key="xfr.key"):
    """The answer to NOTIFY q as dnspython reads it with secret as key:
    the message (None when it raises), its TSIG record, where that starts,
    and the error dnspython raised."""
    seen = {}
    validate = dns.tsig.validate

    def spy(*args):
        seen["rdata"], seen["start"] = args[3], args[6]
        return validate(*args)

    keyring = {dns.name.from_text(key): dns.tsig.Key(key, secret or SECRET, "hmac-sha256")}
    with mock.patch.object(dns.tsig, "validate", spy):
        try:
            return dns.message.from_wire(wire, keyring=keyring, request_mac=q.mac), None, None, None
        except dns.tsig.PeerError as e:
            return None, seen["rdata"], seen["start"], e


@pytest.fixture
def signed_zone(tmp_path, inrpd_factory):
    """A primary that signs with the zone's key, serving serial 1, and an
    inrpd holding it: (the primary, inrpd)."""
    fake = FakePrimary(RPZ1.format(serial=1, extra="", nx="nx.example CNAME ."), SECRET)
    try:
        key = key_file(tmp_path, SECRET)
        d = router(inrpd_factory, tmp_path, f'rpz "rpz.test" {{ primary {fake.addr} port {fake.port}; '
                   f'tsig-key "{key}"; }}\n')
        wait_serial(d, "rpz.test", 1)
        yield fake, d
    finally:
        fake.stop()


NOTIFIES = {                                    # how signed, and the TSIG error its answer carries
    "unsigned": (dict(secret=None), None),
    "another-key": (dict(secret=WRONG, key="other.key"), dns.tsig.PeerBadKey),
    "wrong-mac": (dict(secret=WRONG), dns.tsig.PeerBadSignature),
    "an-hour-off": (dict(secret=SECRET, skew=-3600), dns.tsig.PeerBadTime),
}


@pytest.mark.parametrize("how", NOTIFIES)
def test_forged_notify_starts_no_fetch(signed_zone, how):
    """A NOTIFY from the primary's own address (a spoofer's UDP) that the
    zone's key did not sign: NOTAUTH with the TSIG error of RFC 8945 5.3.2
    (none unsigned; BADKEY and BADSIG unsigned with no MAC; BADTIME signed,
    at the NOTIFY's time, with inrpd's time in Other Data), counted, and no
    transfer asked of the primary; the primary's signed one then starts
    exactly one."""
    sent, error = NOTIFIES[how]
    fake, d = signed_zone
    asked = len(fake.asked)
    for _ in range(3):
        before = int(time.time())
        q, wire = fake.notify_wire(d, **sent)
        after = int(time.time())
        assert wire[3] & 0x0F == dns.rcode.NOTAUTH, wire
        r, rd, start, raised = answer_tsig(q, wire, sent["secret"], sent.get("key", "xfr.key"))
        if error is None:
            assert r.rcode() == dns.rcode.NOTAUTH and not r.had_tsig, r
            continue
        assert isinstance(raised, error), raised
        assert rd.original_id == q.id and rd.fudge == 300, rd
        if error is not dns.tsig.PeerBadTime:
            assert rd.mac == b"" and rd.other == b"", rd
            continue
        # signed over the NOTIFY's MAC: its sender verifies it with the key, whatever its clock
        assert rd.time_signed == q.tsig[0].time_signed, rd
        assert before <= int.from_bytes(rd.other, "big") <= after, rd
        body = wire[:10] + (int.from_bytes(wire[10:12], "big") - 1).to_bytes(2, "big") + wire[12:start]
        k = dns.tsig.Key("xfr.key", SECRET, "hmac-sha256")
        assert dns.tsig.sign(body, k, rd, rd.time_signed, q.mac)[0].mac == rd.mac
        forged = dns.tsig.Key("xfr.key", WRONG, "hmac-sha256")
        assert dns.tsig.sign(body, forged, rd, rd.time_signed, q.mac)[0].mac != rd.mac
    z = show_rpz(d)["rpz.test"]
    assert z["notifies_bad_tsig"] == 3 and z["notifies"] == 0 and z["notifies_refused"] == 0, z
    fake.publish(RPZ1.format(serial=2, extra="new.example CNAME .", nx="nx.example CNAME ."))
    q, wire = fake.notify_wire(d)
    r, _, _, _ = answer_tsig(q, wire, SECRET)       # signed, and its TSIG verified by dnspython
    assert r.rcode() == dns.rcode.NOERROR and r.had_tsig
    wait_serial(d, "rpz.test", 2)
    assert fake.asked[asked:] == [("IXFR", 1)], fake.asked
    assert show_rpz(d)["rpz.test"]["transfers"] == 2


def test_a_replayed_or_older_notify_starts_no_fetch(signed_zone):
    """A NOTIFY the primary signed, captured and sent again from its
    address while its time still verifies: answered NOERROR and signed, as
    the first was (a primary resending one whose answer it lost stops),
    but no fetch.  One signed before the last accepted (also within the
    fudge) is NOTAUTH with BADTIME (RFC 8945 5.2.3).  Both counted
    (`notifies_replayed`); the primary's next NOTIFY starts exactly one
    transfer."""
    fake, d = signed_zone
    asked = len(fake.asked)
    older_q, older = fake.signed_notify(skew=-10)
    fake.publish(RPZ1.format(serial=2, extra="new.example CNAME .", nx="nx.example CNAME ."))
    q, captured = fake.signed_notify()
    r, _, _, _ = answer_tsig(q, fake.send_notify(d, captured), SECRET)
    assert r.rcode() == dns.rcode.NOERROR and r.had_tsig
    wait_serial(d, "rpz.test", 2)
    assert fake.asked[asked:] == [("IXFR", 1)], fake.asked

    # a serial 3 waits at the primary: a fetch the replays started would take it
    fake.publish(RPZ1.format(serial=3, extra="newer.example CNAME .", nx="nx.example CNAME ."))
    for _ in range(3):
        r, _, _, _ = answer_tsig(q, fake.send_notify(d, captured), SECRET)
        assert r.rcode() == dns.rcode.NOERROR and r.had_tsig, r
    wire = fake.send_notify(d, older)
    assert wire[3] & 0x0F == dns.rcode.NOTAUTH, wire
    _, rd, _, raised = answer_tsig(older_q, wire, SECRET)
    assert isinstance(raised, dns.tsig.PeerBadTime), raised
    assert rd.time_signed == older_q.tsig[0].time_signed, rd
    z = show_rpz(d)["rpz.test"]
    assert z["notifies"] == 1 and z["notifies_replayed"] == 4 and z["notifies_bad_tsig"] == 0, z
    assert z["serial"] == 2 and fake.asked[asked:] == [("IXFR", 1)], (z, fake.asked)

    q, wire = fake.notify_wire(d)
    r, _, _, _ = answer_tsig(q, wire, SECRET)
    assert r.rcode() == dns.rcode.NOERROR and r.had_tsig
    wait_serial(d, "rpz.test", 3)
    assert fake.asked[asked:] == [("IXFR", 1), ("IXFR", 2)], fake.asked
    assert show_rpz(d)["rpz.test"]["notifies"] == 2


def test_soa_refresh_fetches_again(tmp_path, inrpd_factory):
    """No NOTIFY: the SOA's refresh (1 s here) brings the next serial."""
    text = RPZ1.format(serial=1, extra="", nx="nx.example CNAME .").replace(" 1 3600 600 ", " 1 1 1 ")
    fake = FakePrimary(text, SECRET)
    try:
        key = key_file(tmp_path, SECRET)
        d = router(inrpd_factory, tmp_path, f'rpz "rpz.test" {{ primary {fake.addr} port {fake.port}; '
                   f'tsig-key "{key}"; }}\n')
        wait_serial(d, "rpz.test", 1)
        fake.publish(text.replace(" 1 1 1 ", " 2 1 1 ").replace("nx.example CNAME .", "nx.example CNAME *."))
        wait_serial(d, "rpz.test", 2)
        assert ("IXFR", 1) in fake.asked
        r = d.udp("nx.example", "A", use_edns=0)
        assert r.rcode() == dns.rcode.NOERROR and not r.answer
        out = subprocess.run([INRPC, "-s", str(d.ctl), "show", "rpz"], capture_output=True, text=True,
                             timeout=10, env=ENV).stdout
        assert "rpz rpz.test. from " in out and "(tsig): serial 2" in out and "hits" in out, out
    finally:
        fake.stop()


@pytest.mark.parametrize("secret", [None, WRONG], ids=["unsigned", "another-key"])
def test_forged_reply_refused(tmp_path, inrpd_factory, secret):
    """A reply that is not signed by the key (none, or another's MAC): refused
    and counted, nothing taken, whatever it carries."""
    fake = FakePrimary(RPZ1.format(serial=5, extra="", nx="nx.example CNAME ."), secret)
    try:
        key = key_file(tmp_path, SECRET)
        d = router(inrpd_factory, tmp_path, f'rpz "rpz.test" {{ primary {fake.addr} port {fake.port}; '
                   f'tsig-key "{key}"; }}\n')
        wait_for(lambda: show_rpz(d)["rpz.test"]["tsig_failures"] >= 1, 30, "a refused transfer")
        z = show_rpz(d)["rpz.test"]
        assert z["serial"] is None and z["rules"] == 0 and "TSIG" in z["last_result"], z
        assert fake.served >= 1
        assert not_blocked(d, "nx.example")
    finally:
        fake.stop()


def test_ixfr_diffs_and_a_diff_that_does_not_apply(signed_zone):
    """IXFR's diffs applied to the rules held; a diff removing what is not
    held is taken whole by AXFR instead."""
    fake, d = signed_zone
    assert d.udp("nx.example", "A", use_edns=0).rcode() == dns.rcode.NXDOMAIN
    fake.publish(RPZ1.format(serial=2, extra="new.example CNAME .", nx="nx.example CNAME *."))
    assert fake.notify(d).rcode() == dns.rcode.NOERROR
    z = wait_serial(d, "rpz.test", 2)
    assert z["last_result"] == "IXFR, serial 2" and ("IXFR", 1) in fake.asked, (z, fake.asked)
    r = d.udp("nx.example", "A", use_edns=0)
    assert r.rcode() == dns.rcode.NOERROR and not r.answer             # changed by the diff
    assert d.udp("new.example", "A", use_edns=0).rcode() == dns.rcode.NXDOMAIN
    assert d.udp("nodata.example", "A", use_edns=0).rcode() == dns.rcode.NOERROR   # kept
    fake.broken_diff = True
    fake.publish(RPZ1.format(serial=3, extra="", nx="nx.example CNAME *."))
    fake.notify(d)
    z = wait_serial(d, "rpz.test", 3)
    assert z["last_result"].startswith("AXFR (fallback: a diff does not apply"), z
    assert fake.asked[-2:] == [("IXFR", 2), ("AXFR", None)], fake.asked
    assert not_blocked(d, "new.example")


def test_last_good_copy_applies_after_restart(tmp_path, inrpd_factory):
    """With a state-dir the zone's last good copy survives kill -9 and a
    primary that is down at the restart; a damaged copy is not used."""
    nsd = Nsd(tmp_path, {"rpz.test": RPZ1.format(serial=1, extra="", nx="nx.example CNAME .")})
    key = key_file(tmp_path, SECRET)
    state = tmp_path / "state"
    body = f'state-dir "{state}";\nrpz-log-level none;\n' + rpz_block("rpz.test", nsd, key)
    try:
        d = router(inrpd_factory, tmp_path, body)
        wait_serial(d, "rpz.test", 1)
        copy = state / "rpz-rpz.test."
        wait_for(copy.exists, 10, "the zone's copy")
        d.kill()
    finally:
        nsd.stop()
    d = router(inrpd_factory, tmp_path, body)
    assert d.udp("nx.example", "A", use_edns=0).rcode() == dns.rcode.NXDOMAIN
    assert show_rpz(d)["rpz.test"]["serial"] == 1
    assert "serial 1 from" in d.log()
    wait_for(lambda: show_rpz(d)["rpz.test"]["transfer_failures"] >= 1, 30, "the primary found down")
    assert d.udp("nx.example", "A", use_edns=0).rcode() == dns.rcode.NXDOMAIN
    d.stop()
    raw = bytearray(copy.read_bytes())
    raw[len(raw) // 2] ^= 0x40
    copy.write_bytes(bytes(raw))
    d = router(inrpd_factory, tmp_path, body)
    assert show_rpz(d)["rpz.test"]["serial"] is None
    assert "checksum mismatch" in d.log()
    assert not_blocked(d, "nx.example")
    assert "nx.example. from" not in d.log()        # rpz-log-level none


DIFF1 = """\
$ORIGIN rpz.test.
@ 300 IN SOA ns.rpz.test. admin.rpz.test. {serial} 3600 600 86400 60
@ 300 IN NS ns.rpz.test.
*.shop.content CNAME .
*.a.shop.content CNAME *.
b.a.shop.content CNAME rpz-passthru.
gone.example CNAME .
changed.example CNAME .
kept.example CNAME *.
{extra}
"""


def rcode_and_answer(d, name):
    r = d.udp(name, "A", use_edns=0)
    return dns.rcode.to_text(r.rcode()), sorted(rd.to_text() for rrset in r.answer for rd in rrset)


def test_ixfr_diff_adds_removes_changes_and_keeps_precedence(tmp_path, inrpd_factory):
    """One IXFR adds a rule, removes one, changes one (NXDOMAIN to local
    data) and removes an exact rule under two wildcards: each question is
    answered as the whole new zone says, the rule counts follow, and a
    second IXFR on top of the first (before or after its fold) too."""
    fake = FakePrimary(DIFF1.format(serial=1, extra=""), SECRET)
    try:
        key = key_file(tmp_path, SECRET)
        d = router(inrpd_factory, tmp_path, f'rpz "rpz.test" {{ primary {fake.addr} port {fake.port}; '
                   f'tsig-key "{key}"; }}\n')
        wait_serial(d, "rpz.test", 1)
        assert rcode_and_answer(d, "b.a.shop.content")[0] == "REFUSED"    # passthru: no upstream here
        assert rcode_and_answer(d, "gone.example") == ("NXDOMAIN", [])
        fake.publish(DIFF1.format(serial=2, extra="added.example CNAME .\nchanged.example A 192.0.2.5").replace(
            "gone.example CNAME .\n", "").replace("changed.example CNAME .\n", "").replace(
            "b.a.shop.content CNAME rpz-passthru.\n", ""))
        assert fake.notify(d).rcode() == dns.rcode.NOERROR
        z = wait_serial(d, "rpz.test", 2)
        assert z["last_result"] == "IXFR, serial 2" and z["rules"] == 5, z
        assert rcode_and_answer(d, "added.example") == ("NXDOMAIN", [])
        assert not_blocked(d, "gone.example")
        assert rcode_and_answer(d, "changed.example") == ("NOERROR", ["192.0.2.5"])
        assert rcode_and_answer(d, "kept.example") == ("NOERROR", [])
        assert rcode_and_answer(d, "b.a.shop.content") == ("NOERROR", [])      # *.a.shop.content now
        assert rcode_and_answer(d, "x.b.a.shop.content") == ("NOERROR", [])
        assert rcode_and_answer(d, "x.shop.content") == ("NXDOMAIN", [])         # the shorter wildcard
        # the longer wildcard goes too: the shorter one decides below it
        fake.publish(DIFF1.format(serial=3, extra="added.example CNAME .\nchanged.example A 192.0.2.5").replace(
            "gone.example CNAME .\n", "").replace("changed.example CNAME .\n", "").replace(
            "b.a.shop.content CNAME rpz-passthru.\n", "").replace("*.a.shop.content CNAME *.\n", ""))
        fake.notify(d)
        z = wait_serial(d, "rpz.test", 3)
        assert z["last_result"] == "IXFR, serial 3" and z["rules"] == 4 and z["wildcards"] == 1, z
        assert rcode_and_answer(d, "b.a.shop.content") == ("NXDOMAIN", [])
        assert rcode_and_answer(d, "changed.example") == ("NOERROR", ["192.0.2.5"])
        assert fake.asked[-2:] == [("IXFR", 1), ("IXFR", 2)], fake.asked
    finally:
        fake.stop()


def state_body(fake, state, key=None):
    tsig = f' tsig-key "{key}";' if key else ""
    return (f'state-dir "{state}";\nrpz-log-level none;\n'
            f'rpz "rpz.test" {{ primary {fake.addr} port {fake.port};{tsig} }}\n')


def test_kill_9_after_an_ixfr_restarts_at_its_serial(tmp_path, inrpd_factory):
    """kill -9 once an IXFR is in force: the restarted inrpd, its primary
    gone, serves the IXFR's serial from the copy and the journal; a torn
    entry after it (a crash while appending) is cut off; a damaged last
    entry falls back to the serial before it, never between the two; the
    journal of another copy is not applied."""
    key = key_file(tmp_path, SECRET)
    state = tmp_path / "state"
    fake = FakePrimary(DIFF1.format(serial=1, extra=""), SECRET)
    body = state_body(fake, state, key)
    journal = state / "rpz-rpz.test..journal"
    try:
        d = router(inrpd_factory, tmp_path, body)
        wait_serial(d, "rpz.test", 1)
        wait_for(lambda: show_rpz(d)["rpz.test"]["saved_serial"] == 1, 10, "the copy and its journal")
        head = journal.stat().st_size
        fake.publish(DIFF1.format(serial=2, extra="added.example CNAME .").replace("gone.example CNAME .\n", ""))
        fake.notify(d)
        wait_serial(d, "rpz.test", 2)
        wait_for(lambda: show_rpz(d)["rpz.test"]["saved_serial"] == 2, 10, "the IXFR journaled")
        assert journal.stat().st_size > head
        d.kill()
    finally:
        fake.stop()

    def restart():
        d = router(inrpd_factory, tmp_path, body)
        z = show_rpz(d)["rpz.test"]
        return d, z["serial"]

    d, serial = restart()
    assert serial == 2 and "1 IXFRs from" in d.log()
    assert rcode_and_answer(d, "added.example") == ("NXDOMAIN", [])
    assert not_blocked(d, "gone.example")
    d.kill()
    # a torn entry after the last whole one
    whole = journal.read_bytes()
    journal.write_bytes(whole + whole[head:head + (len(whole) - head) // 2])
    d, serial = restart()
    assert serial == 2 and "the rest cut off" in d.log(), d.log()
    assert journal.read_bytes() == whole                     # cut back to the whole entries
    d.kill()
    # the last entry damaged: the copy's serial, with its rules
    raw = bytearray(whole)
    raw[-12] ^= 0x01
    journal.write_bytes(bytes(raw))
    d, serial = restart()
    assert serial == 1 and "checksum mismatch" in d.log()
    assert rcode_and_answer(d, "gone.example") == ("NXDOMAIN", [])
    assert not_blocked(d, "added.example")
    d.kill()
    # the journal of another copy (a crash between a new copy's rename and its journal): not applied
    raw = bytearray(whole)
    raw[8] ^= 0x01                                          # the epoch it names
    journal.write_bytes(bytes(raw))
    d, serial = restart()
    assert serial == 1 and "not the journal of this copy; a new journal" in d.log()
    assert journal.stat().st_size == head
    d.stop()


def test_a_journal_that_cannot_be_written(tmp_path, inrpd_factory):
    """The journal made unwritable (a directory in its place): the IXFR
    still applies, the failure is counted; once it can be written again,
    the next IXFR writes a new copy, which a restart after kill -9 serves."""
    state = tmp_path / "state"
    fake = FakePrimary(DIFF1.format(serial=1, extra=""))
    body = state_body(fake, state)
    journal = state / "rpz-rpz.test..journal"
    try:
        d = router(inrpd_factory, tmp_path, body)
        wait_serial(d, "rpz.test", 1)
        wait_for(lambda: show_rpz(d)["rpz.test"]["saved_serial"] == 1, 10, "the copy and its journal")
        journal.unlink()
        journal.mkdir()
        fake.publish(DIFF1.format(serial=2, extra="added.example CNAME ."))
        fake.notify(d, None)
        wait_serial(d, "rpz.test", 2)
        assert rcode_and_answer(d, "added.example") == ("NXDOMAIN", [])
        # the append fails, then the new copy it asks for (its journal cannot replace a directory)
        wait_for(lambda: show_rpz(d)["rpz.test"]["save_failures"] == 2, 10, "the failed append and copy")
        assert "cannot keep serial 2" in d.log() and show_rpz(d)["rpz.test"]["saved_serial"] == 1
        journal.rmdir()
        fake.publish(DIFF1.format(serial=3, extra="added.example CNAME .\nthird.example CNAME ."))
        fake.notify(d, None)
        wait_serial(d, "rpz.test", 3)
        wait_for(lambda: show_rpz(d)["rpz.test"]["saved_serial"] == 3, 10, "a new copy")
        assert journal.is_file() and journal.stat().st_size == 24         # its journal, empty
        d.kill()
    finally:
        fake.stop()
    d = router(inrpd_factory, tmp_path, body)
    assert show_rpz(d)["rpz.test"]["serial"] == 3
    assert rcode_and_answer(d, "third.example") == ("NXDOMAIN", [])
    d.stop()


def test_kill_9_during_an_ixfr_keeps_the_serial_before(tmp_path, inrpd_factory):
    """An IXFR cut short (its first message applied to the records held,
    then the connection closed) is undone: the next IXFR applies to the
    records as they were.  kill -9 while an IXFR streams in: the restart
    serves the serial before it whole, none of the diff."""
    state = tmp_path / "state"
    fake = FakePrimary(DIFF1.format(serial=1, extra=""))
    body = state_body(fake, state)
    two = DIFF1.format(serial=2, extra="added.example CNAME .").replace("gone.example CNAME .\n", "")
    try:
        d = router(inrpd_factory, tmp_path, body)
        wait_serial(d, "rpz.test", 1)
        fake.publish(two)
        fake.stall = threading.Event()
        served = fake.served
        fake.notify(d, None)
        wait_for(lambda: fake.served > served, 10, "the diff's first message sent")
        fake.stall.set()                        # the connection closes, the transfer unfinished
        wait_for(lambda: show_rpz(d)["rpz.test"]["transfer_failures"] >= 1, 30, "the cut transfer")
        assert show_rpz(d)["rpz.test"]["serial"] == 1
        assert rcode_and_answer(d, "gone.example") == ("NXDOMAIN", [])
        fake.stall = None
        fake.notify(d, None)
        z = wait_serial(d, "rpz.test", 2)
        assert z["last_result"] == "IXFR, serial 2", z     # not an AXFR: the records held were whole
        wait_for(lambda: show_rpz(d)["rpz.test"]["saved_serial"] == 2, 10, "the IXFR journaled")
        # serial 3 takes kept.example away; inrpd killed with half of it applied to its records
        fake.publish(two.replace(" 2 3600 ", " 3 3600 ").replace("kept.example CNAME *.\n", ""))
        fake.stall = threading.Event()
        served = fake.served
        fake.notify(d, None)
        wait_for(lambda: fake.served > served, 10, "the diff's first message sent")
        d.kill()
        fake.stall.set()
    finally:
        fake.stop()
    d = router(inrpd_factory, tmp_path, body)
    assert show_rpz(d)["rpz.test"]["serial"] == 2
    assert rcode_and_answer(d, "kept.example") == ("NOERROR", [])
    assert rcode_and_answer(d, "added.example") == ("NXDOMAIN", [])
    assert not_blocked(d, "gone.example")
    d.stop()


@pytest.mark.parametrize("body, message", [
    ('rpz "x.test" { }', "needs a primary"),
    ('rpz "x.test" { primary 127.0.0.1; ede loud; }', "ede"),
    ('rpz "x.test" { primary 127.0.0.1; tsig-key "/nonexistent.key"; }', "tsig-key"),
    ('rpz "x.test" { primary 127.0.0.1; }\nrpz "x.test" { primary 127.0.0.1; }', "twice"),
    ('rpz "." { primary 127.0.0.1; }', "root"),
    ("rpz-log-level loud;", "rpz-log-level"),
    ('state-dir "relative/dir";', "absolute"),
])
def test_bad_config(tmp_path, body, message):
    from conftest import run_inrpd
    conf = tmp_path / "inrpd.conf"
    conf.write_text("listen 127.0.0.1 port 5399;\n" + body + "\n")
    r = run_inrpd("-t", "-c", str(conf))
    assert r.returncode != 0 and message in r.stderr and "inrpd.conf:" in r.stderr, r.stderr


def test_key_file_readable_by_others_refused(tmp_path):
    from conftest import run_inrpd
    key = key_file(tmp_path, SECRET)
    key.chmod(0o644)
    conf = tmp_path / "inrpd.conf"
    conf.write_text(f'listen 127.0.0.1 port 5399;\nrpz "x.test" {{ primary 127.0.0.1; tsig-key "{key}"; }}\n')
    r = run_inrpd("-t", "-c", str(conf))
    assert r.returncode != 0 and "others may read it" in r.stderr, r.stderr


PARITY = """\
$ORIGIN rpz.test.
@ 300 IN SOA ns.rpz.test. admin.rpz.test. 1 3600 600 86400 60
@ 300 IN NS ns.rpz.test.
nx.pt CNAME .
*.wild.pt CNAME .
nodata.pt CNAME *.
*.all.pt CNAME .
ok.all.pt CNAME rpz-passthru.
pass.pt CNAME rpz-passthru.
drop.pt CNAME rpz-drop.
tcp.pt CNAME rpz-tcp-only.
local.pt A 192.0.2.7
local.pt A 192.0.2.8
local.pt AAAA 2001:db8::7
local.pt TXT "walled" "garden"
garden.pt CNAME a.pt.
"""

# (name, type, transport): every action, wildcards and the exact rules inside
# them, and names no rule matches (answered by the upstream, or NXDOMAIN there)
PARITY_QUESTIONS = [
    ("nx.pt", "A", "udp"), ("nx.pt", "AAAA", "tcp"),
    ("x.wild.pt", "A", "udp"), ("a.b.wild.pt", "TXT", "udp"), ("wild.pt", "A", "udp"),
    ("nodata.pt", "A", "udp"), ("nodata.pt", "MX", "tcp"),
    ("other.all.pt", "A", "udp"), ("ok.all.pt", "A", "udp"),
    ("pass.pt", "A", "udp"), ("pass.pt", "A", "tcp"),
    ("drop.pt", "A", "udp"),
    ("tcp.pt", "A", "udp"), ("tcp.pt", "A", "tcp"),
    ("local.pt", "A", "udp"), ("local.pt", "AAAA", "udp"), ("local.pt", "TXT", "tcp"), ("local.pt", "MX", "udp"),
    ("garden.pt", "A", "udp"),
    ("a.pt", "A", "udp"), ("missing.pt", "A", "udp"), ("sub.nx.pt", "A", "udp"),
]


def observed(addr, port, name, rdtype, transport):
    """What a client sees, less what the two differ in by design: the rcode,
    TC, and the answer as sets of (owner, type, rdata); "timeout" for none."""
    q = dns.message.make_query(name, rdtype, use_edns=0)
    try:
        if transport == "udp":
            r = dns.query.udp(q, addr, port=port, timeout=1)
        else:
            r = dns.query.tcp(q, addr, port=port, timeout=2)
    except dns.exception.Timeout:
        return "timeout"
    answer = frozenset((rs.name.to_text(), dns.rdatatype.to_text(rs.rdtype), rd.to_text())
                       for rs in r.answer for rd in rs)
    return dns.rcode.to_text(r.rcode()), bool(r.flags & dns.flags.TC), answer


def test_parity_with_unbound(tmp_path, inrpd_factory):
    """The same policy zone in Unbound's RPZ (zonefile) and in inrpd (by AXFR
    from NSD), both in front of the same upstream: the same rcodes, TC and
    answer RRsets for every action and for names no rule matches."""
    started = []
    try:
        # every name has an answer upstream, so only a policy makes it another
        up = Unbound(tmp_path, ["a.pt. 300 IN A 192.0.2.1", "pass.pt. 300 IN A 192.0.2.2",
                                "ok.all.pt. 300 IN A 192.0.2.3", "tcp.pt. 300 IN A 192.0.2.4",
                                "wild.pt. 300 IN A 192.0.2.5", "nx.pt. 300 IN A 192.0.2.6",
                                "nx.pt. 300 IN AAAA 2001:db8::6", "x.wild.pt. 300 IN A 192.0.2.6",
                                "nodata.pt. 300 IN A 192.0.2.6", "other.all.pt. 300 IN A 192.0.2.6",
                                "local.pt. 300 IN A 192.0.2.6", "garden.pt. 300 IN A 192.0.2.6",
                                "drop.pt. 300 IN A 192.0.2.6"],
                     extra=['local-zone: "pt." static'])
        started.append(up)
        zonefile = tmp_path / "parity.zone"
        zonefile.write_text(PARITY)
        ub = Unbound(tmp_path, [], extra=[
            'module-config: "respip iterator"', "do-not-query-localhost: no",
            "forward-zone:", '  name: "pt."', f"  forward-addr: {up.addr}@{up.port}",
            "rpz:", '  name: "rpz.test."', f'  zonefile: "{zonefile}"'])
        started.append(ub)
        nsd = Nsd(tmp_path, {"rpz.test": PARITY})
        started.append(nsd)
        key = key_file(tmp_path, SECRET)
        d = router(inrpd_factory, tmp_path, f"upstream {up.addr} port {up.port};\nrpz-log-level none;\n" +
                   rpz_block("rpz.test", nsd, key, ede="none"))
        wait_serial(d, "rpz.test", 1)
        differ = []
        for name, rdtype, transport in PARITY_QUESTIONS:
            ours = observed(d.addr, d.port, name, rdtype, transport)
            theirs = observed(ub.addr, ub.port, name, rdtype, transport)
            if ours != theirs:
                differ.append((name, rdtype, transport, ours, theirs))
        assert not differ, "\n".join(map(str, differ))
        # inrpd applied every action, so Unbound, answering the same, did too
        hits = show_rpz(d)["rpz.test"]["hits"]
        assert all(hits[a] for a in ("nxdomain", "nodata", "passthru", "drop", "tcp-only", "local-data")), hits
    finally:
        for p in reversed(started):
            p.stop()
