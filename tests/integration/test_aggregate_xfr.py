"""Aggregates as zone transfers, with the tools operators use.

tests/tools/aggtool (test-only) serves an aggregate store from lib/ (the
server nbrpd will embed) on 127.0.0.x; kdig and dig fetch it, and the
library's own client (aggtool fetch) fetches it into a store of its own.
"""

import os
import pathlib
import re
import signal
import subprocess

import dns.message
import dns.query
import dns.rcode
import dns.rdatatype
import pytest

from conftest import ENV, REPO, START_TIMEOUT, Daemon, free_port, loopback_addr, stop_all, wait_for

BUILD = pathlib.Path(os.environ.get("CR_BUILD", REPO / "build"))
AGGTOOL = str(BUILD / "tests" / "tools" / "aggtool")
AGG = "agg.example"


def names(lo, hi):
    return [f"m{i}.example." for i in range(lo, hi)]


def write_members(path, members):
    path.write_text("# test aggregate\n" + "\n".join(members) + "\n")


def aggtool(*args, check=True):
    r = subprocess.run([AGGTOOL, *map(str, args)], capture_output=True, text=True, timeout=60, env=ENV)
    if check and r.returncode != 0:
        raise AssertionError(f"aggtool {' '.join(map(str, args))}: {r.returncode}\n{r.stdout}\n{r.stderr}")
    return r


class Server(Daemon):
    label = "aggtool serve"

    def __init__(self, tmp_path, state, members_file, allow=(), extra=()):
        """Started by start(), once the caller can stop it."""
        self.addr = loopback_addr()
        self.port = free_port(self.addr)
        self.logfile = tmp_path / f"serve-{self.port}.log"
        self.args = [AGGTOOL, "serve", state, AGG, self.addr, str(self.port), "--file", str(members_file)]
        for p in allow:
            self.args += ["--allow", p]
        self.args += list(extra)

    def start(self):
        self._log = open(self.logfile, "w")
        self.proc = subprocess.Popen(self.args, stdout=subprocess.PIPE, stderr=self._log, text=True, env=ENV)
        line = self.proc.stdout.readline()
        assert line.startswith("ready"), f"server did not start: {line!r}\n{self.log()}"

    def soa_serial(self):
        q = dns.message.make_query(AGG, "SOA")
        r = dns.query.udp(q, self.addr, port=self.port, timeout=2)
        return r.answer[0][0].serial if r.answer else None


@pytest.fixture
def servers(tmp_path):
    """factory(state, members, allow=(), extra=()) -> a started Server; all
    are stopped at teardown, also one whose start failed."""
    started = []

    def start(state, members, allow=(), extra=()):
        s = Server(tmp_path, state, members, allow, extra)
        started.append(s)
        s.start()
        return s
    yield start
    stop_all(started)


@pytest.fixture
def served(tmp_path, servers):
    """Versions 1..3 of a 1000-member aggregate, 10 names out and 10 in each time."""
    state = tmp_path / "server"
    members = tmp_path / "members.txt"
    for v in range(1, 4):
        write_members(members, names(10 * (v - 1), 10 * (v - 1) + 1000))
        aggtool("define", state, AGG, members, v)
    yield (lambda allow=(): servers(state, members, allow)), state, members


def records(output, agg=AGG):
    """(type, data) of each answer line of dig/kdig output, in order: a PTR's name, an SOA's serial."""
    out = []
    for line in output.splitlines():
        if not line or line.startswith(";"):
            continue
        f = line.split()
        if len(f) >= 5 and f[0].rstrip(".") == agg and f[2] == "IN":
            out.append((f[3], f[4] if f[3] == "PTR" else int(f[6])))
    return out


def test_kdig_axfr_gives_members_and_version(served):
    start, _, _ = served
    s = start()
    r = subprocess.run(["kdig", "-p", str(s.port), f"@{s.addr}", "AXFR", AGG],
                       capture_output=True, text=True, timeout=30)
    assert r.returncode == 0, r.stdout + r.stderr
    rr = records(r.stdout)
    assert rr[0] == ("SOA", 3) and rr[-1] == ("SOA", 3)
    assert sorted(d for t, d in rr[1:-1]) == sorted(names(20, 1020))
    # logged when the last message is written, which may be after kdig has read it
    s.wait_log(r"transfer of agg\.example\. to 127\.0\.0\.1#\d+: AXFR, version 3, 1002 records")


def test_dig_ixfr_gives_each_version(served):
    start, _, _ = served
    s = start()
    r = subprocess.run(["dig", "-p", str(s.port), f"@{s.addr}", AGG, "IXFR=1"],
                       capture_output=True, text=True, timeout=30)
    assert r.returncode == 0, r.stdout
    rr = records(r.stdout)
    soas = [d for t, d in rr if t == "SOA"]
    assert soas == [3, 1, 2, 2, 3, 3]
    # apply the diffs to version 1: version 3
    have = set(names(0, 1000))
    section = None
    for t, d in rr[1:-1]:
        if t == "SOA":
            section = "del" if section in (None, "add") else "add"
            continue
        if section == "del":
            have.remove(d)
        else:
            have.add(d)
    assert have == set(names(20, 1020))
    assert len(rr) == 2 + 2 * (2 + 20)


def test_ixfr_from_a_version_the_journal_dropped_gives_the_whole_set(served, tmp_path):
    start, state, members = served
    # half the set changes each time: the journal outgrows its bound and is compacted
    for v in range(4, 10):
        write_members(members, names(500 * v, 500 * v + 1000))
        aggtool("define", state, AGG, members, v)
    shown = aggtool("show", state, AGG).stdout
    assert '"oldest_version": 1,' not in shown
    s = start()
    r = subprocess.run(["dig", "-p", str(s.port), f"@{s.addr}", AGG, "IXFR=1"],
                       capture_output=True, text=True, timeout=30)
    rr = records(r.stdout)
    assert rr[0] == ("SOA", 9) and rr[-1] == ("SOA", 9)
    assert sorted(d for t, d in rr[1:-1]) == sorted(names(4500, 5500))
    s.wait_log(re.escape("IXFR as AXFR (journal does not reach back)"))   # logged when written


def test_client_outside_allow_transfer_is_refused(served):
    start, _, _ = served
    s = start(allow=("127.0.0.1/32",))
    # over TCP the connection is closed when accepted, before the query is read
    r = subprocess.run(["kdig", "-b", "127.0.0.2", "-p", str(s.port), f"@{s.addr}", "AXFR", AGG],
                       capture_output=True, text=True, timeout=30)
    assert r.returncode != 0 and "failed to query server" in r.stdout + r.stderr
    r = subprocess.run(["dig", "-b", "127.0.0.2", "-p", str(s.port), f"@{s.addr}", AGG, "IXFR=1"],
                       capture_output=True, text=True, timeout=30)
    assert "IN\tPTR" not in r.stdout
    q = dns.message.make_query(AGG, "AXFR")
    with pytest.raises((EOFError, ConnectionError)):
        dns.query.tcp(q, s.addr, port=s.port, source="127.0.0.2", timeout=5)
    # over UDP, REFUSED
    resp = dns.query.udp(dns.message.make_query(AGG, "SOA"), s.addr, port=s.port, source="127.0.0.2", timeout=5)
    assert resp.rcode() == dns.rcode.REFUSED
    # from the allowed address it works
    resp = dns.query.tcp(dns.message.make_query(AGG, "SOA"), s.addr, port=s.port, source="127.0.0.1", timeout=5)
    assert resp.rcode() == dns.rcode.NOERROR and resp.answer[0][0].serial == 3
    assert "not in allow-transfer" in s.log()


def test_other_aggregates_and_udp(served):
    start, _, _ = served
    s = start()
    q = dns.message.make_query("other.example", "AXFR")
    assert dns.query.tcp(q, s.addr, port=s.port, timeout=5).rcode() == dns.rcode.NOTAUTH
    q = dns.message.make_query(AGG, "AXFR")
    assert dns.query.udp(q, s.addr, port=s.port, timeout=5).rcode() == dns.rcode.NOTIMP
    # IXFR over UDP: the current SOA alone (RFC 1995 2), the client then uses TCP
    r = subprocess.run(["dig", "+notcp", "-p", str(s.port), f"@{s.addr}", AGG, "IXFR=1"],
                       capture_output=True, text=True, timeout=30)
    assert records(r.stdout) == [("SOA", 3)]


def fetch(state, server, *extra):
    r = aggtool("fetch", state, AGG, server.addr, server.port, *extra, check=False)
    import json
    return json.loads(r.stdout.strip().splitlines()[-1]), r


def members_of(state):
    return set(aggtool("show", state, AGG, "--members").stdout.split())


def test_library_client_axfr_then_ixfr_then_fallback(served, tmp_path):
    start, state, members = served
    s = start()
    client = tmp_path / "client"
    first, _ = fetch(client, s)
    assert first["status"] == 0 and first["kind"] == "AXFR" and first["to"] == 3
    assert members_of(client) == set(names(20, 1020))

    again, _ = fetch(client, s)
    assert again["kind"] == "IXFR: current" and again["versions"] == 0

    # the server's definition changes: one new version on SIGHUP
    write_members(members, names(25, 1020) + ["new.example."])
    s.signal(signal.SIGHUP)
    wait_for(lambda: s.soa_serial() == 4, START_TIMEOUT, "version 4 served")
    diff, _ = fetch(client, s)
    assert diff["status"] == 0 and diff["kind"] == "IXFR" and (diff["from"], diff["to"]) == (3, 4)
    assert diff["bytes"] < first["bytes"] / 10
    assert members_of(client) == set(names(25, 1020) + ["new.example."])

    # a client whose version 3 is not the server's: the diff does not apply
    other = tmp_path / "other"
    odd = tmp_path / "odd.txt"
    write_members(odd, names(5000, 5010))
    aggtool("define", other, AGG, odd, 3)
    fb, r = fetch(other, s)
    assert fb["status"] == 0 and fb["kind"].startswith("AXFR (fallback: ") and "does not apply" in fb["kind"]
    assert members_of(other) == members_of(client)
    assert "AXFR (fallback" in r.stderr


def test_library_client_takes_only_the_version_and_members_asked_for(served, tmp_path):
    """xfrcli_want: a reply ending at another version, or whose members' digest is not the one
    given, is refused before anything is stored; a signed IXFR is built in memory and stored as
    one version only when its digest is right, and a whole fetch replaces what is held."""
    import sigtest as st
    start, state, members = served
    s = start()
    client = tmp_path / "client"
    held = lambda: aggtool("show", client, AGG).stdout  # noqa: E731
    other, _ = fetch(client, s, "--version", 2)
    assert other["status"] == -1 and other["cut"] == "version", other
    assert other["why"] == "version 3 is not the version offered (2); refused"
    wrong = st.member_digest(names(0, 1000)).hex()
    bad, _ = fetch(client, s, "--version", 3, "--digest", wrong)
    assert bad["status"] == -1 and bad["cut"] == "digest" and "member digest mismatch" in bad["why"], bad
    assert '"has_version": false' in held()
    good, _ = fetch(client, s, "--version", 3, "--digest", st.member_digest(names(20, 1020)).hex())
    assert good["status"] == 0 and good["to"] == 3 and members_of(client) == set(names(20, 1020))
    # two diffs (1 -> 2 -> 3) built in memory, stored as one version
    two = tmp_path / "two"
    v1 = tmp_path / "v1.txt"
    write_members(v1, names(0, 1000))
    aggtool("define", two, AGG, v1, 1)
    both, _ = fetch(two, s, "--version", 3, "--digest", st.member_digest(names(20, 1020)).hex())
    assert both["status"] == 0 and both["kind"] == "IXFR" and both["versions"] == 1, both
    assert members_of(two) == set(names(20, 1020))

    v4 = names(25, 1020) + ["new.example."]
    write_members(members, v4)
    s.signal(signal.SIGHUP)
    wait_for(lambda: s.soa_serial() == 4, START_TIMEOUT, "version 4 served")
    bad, _ = fetch(client, s, "--version", 4, "--digest", wrong)
    assert bad["status"] == -1 and bad["cut"] == "digest" and bad["kind"] == "IXFR", bad
    assert members_of(client) == set(names(20, 1020))
    good, _ = fetch(client, s, "--version", 4, "--digest", st.member_digest(v4).hex())
    assert good["status"] == 0 and good["kind"] == "IXFR" and good["versions"] == 1, good
    assert members_of(client) == set(v4)
    assert aggtool("show", client, AGG, "--digest").stdout.strip() == st.member_digest(v4).hex()
    # asked whole: the version held is not built on
    whole, _ = fetch(client, s, "--version", 4, "--digest", st.member_digest(v4).hex(), "--whole")
    assert whole["status"] == 0 and whole["kind"] == "AXFR" and members_of(client) == set(v4), whole


def test_fetch_times_out_without_progress(tmp_path):
    """A server that accepts and then says nothing: the fetch ends after the progress timeout."""
    import socket
    addr = loopback_addr()
    with socket.socket() as lsock:
        lsock.bind((addr, 0))
        lsock.listen(1)
        port = lsock.getsockname()[1]

        class Silent:
            pass
        silent = Silent()
        silent.addr, silent.port = addr, port
        res, _ = fetch(tmp_path / "c", silent, "--timeout-ms", "300")
    assert res["status"] != 0 and res["why"] == "no data for 300 ms"


def test_half_closed_client_still_gets_the_transfer(served):
    """A client that shuts down its sending side after the query (allowed by RFC 7766) gets the whole reply."""
    import socket
    import struct
    start, _, _ = served
    s = start()
    q = dns.message.make_query(AGG, "AXFR").to_wire()
    with socket.create_connection((s.addr, s.port), timeout=10) as sock:
        sock.sendall(struct.pack("!H", len(q)) + q)
        sock.shutdown(socket.SHUT_WR)
        data = b""
        while True:
            chunk = sock.recv(65536)
            if not chunk:
                break
            data += chunk
    ptrs, soas, pos = 0, 0, 0
    while pos < len(data):
        (n,) = struct.unpack("!H", data[pos:pos + 2])
        m = dns.message.from_wire(data[pos + 2:pos + 2 + n], one_rr_per_rrset=True)
        for rrset in m.answer:
            ptrs += rrset.rdtype == dns.rdatatype.PTR
            soas += rrset.rdtype == dns.rdatatype.SOA
        pos += 2 + n
    assert (ptrs, soas) == (1000, 2)


def test_transfers_at_once_are_bounded(tmp_path, servers):
    """With --max-transfers 1, a transfer stalled by a client that does not
    read makes the next AXFR REFUSED; SOA queries are still answered; once
    the stalled client goes, transfers work again."""
    import socket
    import struct
    state, members = tmp_path / "big", tmp_path / "big.txt"
    # far more than loopback's socket buffers hold: the first transfer stays open
    write_members(members, [f"member-with-a-longish-label-{i}.example." for i in range(400000)])
    aggtool("define", state, AGG, members, 1)
    s = servers(state, members, extra=("--max-transfers", "1"))
    q = dns.message.make_query(AGG, "AXFR").to_wire()
    stalled = socket.create_connection((s.addr, s.port), timeout=10)
    stalled.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 4096)
    stalled.sendall(struct.pack("!H", len(q)) + q)
    stalled.recv(2)         # the transfer has started
    resp = dns.query.tcp(dns.message.make_query(AGG, "AXFR"), s.addr, port=s.port, timeout=10)
    assert resp.rcode() == dns.rcode.REFUSED
    assert s.soa_serial() == 1
    assert "refused: 1 transfers running" in s.log()
    stalled.close()
    # the stalled transfer ends (logged once, with why) when the reset reaches it
    wait_for(lambda: "transfer of agg.example. to" in s.log(), START_TIMEOUT, "the stalled transfer to end")
    r = subprocess.run(["kdig", "-p", str(s.port), f"@{s.addr}", "AXFR", AGG],
                       capture_output=True, text=True, timeout=60)
    assert r.stdout.count("\tPTR\t") == 400000


def test_server_closes_a_connection_without_progress(served, servers):
    """A client that connects and sends nothing, or sends half a query, is closed after the idle timeout."""
    import socket
    start, state, members = served
    s = servers(state, members, extra=("--idle-timeout-ms", "300"))
    for payload in (b"", b"\x00\x40\x12\x34"):
        with socket.create_connection((s.addr, s.port), timeout=10) as sock:
            sock.sendall(payload)
            assert sock.recv(1) == b""      # closed by the server, not by our timeout
    # a client that keeps asking is not cut off
    r = subprocess.run(["kdig", "-p", str(s.port), f"@{s.addr}", "AXFR", AGG],
                       capture_output=True, text=True, timeout=30)
    assert r.stdout.count("\tPTR\t") == 1000
