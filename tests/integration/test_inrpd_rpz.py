"""Response Policy Zones in inrpd (docs/RPZ.md): a real NSD serves the
policy zones by AXFR/IXFR with TSIG and sends NOTIFY; every action asked
for by dnspython over UDP and TCP; routed and unrouted names; a name held
in the packet cache; two zones' precedence; a zone changed on the primary
(serial bump, NOTIFY) observed through `inrpc show rpz`; a wrong key;
bad records."""

import base64
import os
import re
import signal
import socket
import subprocess
import threading

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
                lines.append(f"  notify: {notify[0]}@{notify[1]} NOKEY")
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

    def notify(self, d):
        """A NOTIFY from the primary's own address."""
        q = dns.message.make_query("rpz.test.", "SOA")
        q.set_opcode(dns.opcode.NOTIFY)
        with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as u:
            u.bind((self.addr, 0))
            return dns.query.udp(q, d.addr, port=d.port, timeout=2, sock=u)

    def stop(self):
        self.sock.close()


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


def test_ixfr_diffs_and_a_diff_that_does_not_apply(tmp_path, inrpd_factory):
    """IXFR's diffs applied to the rules held; a diff removing what is not
    held is taken whole by AXFR instead."""
    fake = FakePrimary(RPZ1.format(serial=1, extra="", nx="nx.example CNAME ."), SECRET)
    try:
        key = key_file(tmp_path, SECRET)
        d = router(inrpd_factory, tmp_path, f'rpz "rpz.test" {{ primary {fake.addr} port {fake.port}; '
                   f'tsig-key "{key}"; }}\n')
        wait_serial(d, "rpz.test", 1)
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
    finally:
        fake.stop()


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
