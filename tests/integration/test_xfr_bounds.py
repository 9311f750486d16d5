"""Transfers with bounds (docs/AGGREGATES.md "Limits"), each mounted as an
attack on a real nbrpd:

- 64 clients outside allow-transfer trickling bytes at the transfer server
  while an allowed client fetches: each is closed when accepted, counted,
  and the allowed AXFR completes; an allowed client trickling bytes is
  closed by transfer-time-limit.
- A transfer source (a Python server speaking DNS over TCP) streaming names
  without end: the fetch is cut at fetch-max-names, or fetch-max-bytes,
  nothing is stored, nbrpd's RSS stays bounded, the refusal is counted and
  logged, and the fetch is tried again with backoff.  CR_FULL_ATTACKS=1
  runs the issue's size: a source of 50 M names or 2 GiB against the
  default caps.
- Sources sending one byte a second hold every fetch slot: fetch-time-limit
  ends them, and an aggregate waiting for a slot is fetched.
- The library's client (aggtool fetch): a diff that would leave more names
  than the cap is refused, the version held kept; the byte cap spans an
  IXFR and the AXFR after it.
"""

import json
import os
import re
import signal
import socket
import struct
import subprocess
import threading
import time
import urllib.request

import dns.message
import pytest

from conftest import ENV, NBRPD, SANITIZED, free_port, loopback_addr, rss_kib, wait_for
import nbrp_client as nc
from test_aggregate_xfr import AGG as GOOD_AGG, AGGTOOL, served, servers  # noqa: F401  (served, servers: fixtures)
from test_nbrpd import answer, establish, lone, net  # noqa: F401  (lone, net: fixtures)
from test_nbrpd_aggregates import AGG, line_with_aggregate, version_of

FULL = os.environ.get("CR_FULL_ATTACKS") == "1"
BAD = "bad.agg"


# ---- a transfer source that misbehaves ----

def wire(name):
    return b"".join(bytes([len(label)]) + label for label in name.encode().split(b".") if label) + b"\0"


class BadSource:
    """Answers every AXFR on addr:port. mode "endless": an SOA, then member
    records in 64 KiB messages without end (up to limit names or bytes);
    "slow": the first message one byte every `every` seconds.  Records when
    each connection came and how it ended."""

    def __init__(self, mode, long_names=False, limit_names=None, limit_bytes=None, every=1.0):
        self.mode, self.long_names, self.every = mode, long_names, every
        self.limit_names, self.limit_bytes = limit_names, limit_bytes
        self.addr = loopback_addr()
        self.port = free_port(self.addr)
        self.sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        self.sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        self.sock.bind((self.addr, self.port))
        self.sock.listen(16)
        self.stop = threading.Event()
        self.lock = threading.Lock()
        self.conns = []             # dicts: t0, qname, sent, names, ended (time), how
        self.threads = [threading.Thread(target=self._accept, daemon=True)]
        self.threads[0].start()

    @property
    def source(self):
        return f"{self.addr} {self.port}"

    def close(self):
        self.stop.set()
        self.sock.close()
        for t in self.threads:
            t.join(10)

    def _accept(self):
        self.sock.settimeout(0.2)
        while not self.stop.is_set():
            try:
                c, _ = self.sock.accept()
            except (socket.timeout, OSError):
                continue
            rec = {"t0": time.monotonic(), "sent": 0, "names": 0, "ended": None, "how": None}
            with self.lock:
                self.conns.append(rec)
            t = threading.Thread(target=self._serve, args=(c, rec), daemon=True)
            self.threads.append(t)
            t.start()

    def _read_query(self, c):
        buf = b""
        while len(buf) < 2 or len(buf) < 2 + struct.unpack("!H", buf[:2])[0]:
            chunk = c.recv(4096)
            if not chunk:
                return None
            buf += chunk
        return dns.message.from_wire(buf[2:2 + struct.unpack("!H", buf[:2])[0]])

    def _serve(self, c, rec):
        try:
            c.settimeout(30)
            q = self._read_query(c)
            if q is None:
                rec["how"] = "no query"
                return
            rec["qname"] = q.question[0].name.to_text()
            question = wire(rec["qname"]) + struct.pack("!HH", 252, 1)
            soa = b"\xc0\x0c" + struct.pack("!HHIH", 6, 1, 0, 23) + b"\xc0\x0c\x00" + \
                struct.pack("!IIIII", 7, 3600, 600, 604800, 0)
            if self.mode == "slow":
                msg = struct.pack("!HHHHHH", q.id, 0x8400, 1, 1, 0, 0) + question + soa
                data = struct.pack("!H", len(msg)) + msg
                for i in range(len(data)):
                    if self.stop.wait(self.every):
                        return
                    c.sendall(data[i:i + 1])
                    rec["sent"] += 1
                rec["how"] = "all sent"
                return
            first, i = True, 0
            pad = b"\x3f" + b"p" * 63
            while not self.stop.is_set():
                rrs = [soa] if first else []
                size = 12 + len(question) + len(soa)
                while size < 65000:
                    # n0000005.x0.bad.example: unique up to 100 M names
                    name = (b"\x08n%07d\x02x%d" % (i % 10000000, i // 10000000 % 10) +
                            (pad * 3 if self.long_names else b"") + b"\x03bad\x07example\x00")
                    rr = b"\xc0\x0c" + struct.pack("!HHIH", 12, 1, 0, len(name)) + name
                    if size + len(rr) > 65000:
                        break
                    rrs.append(rr)
                    size += len(rr)
                    i += 1
                msg = struct.pack("!HHHHHH", q.id, 0x8400, 1, len(rrs), 0, 0) + question + b"".join(rrs)
                c.sendall(struct.pack("!H", len(msg)) + msg)
                first = False
                rec["sent"] += 2 + len(msg)
                rec["names"] = i
                if ((self.limit_names and i >= self.limit_names) or
                        (self.limit_bytes and rec["sent"] >= self.limit_bytes)):
                    rec["how"] = "source exhausted"
                    self.stop.wait(600)
                    return
        except OSError as e:
            rec["how"] = f"closed by nbrpd ({type(e).__name__})"
        finally:
            rec["ended"] = time.monotonic()
            c.close()

    def connections(self):
        with self.lock:
            return list(self.conns)


@pytest.fixture
def bad_sources():
    made = []

    def make(*a, **kw):
        s = BadSource(*a, **kw)
        made.append(s)
        return s
    yield make
    for s in made:
        s.close()


def view(n, agg):
    r = n.nbrc("--json", "show", "aggregate", agg)
    return json.loads(r.stdout) if r.returncode == 0 else {}


def status(n):
    return n.json("show", "status")


def offer(p, n, agg, source, version=7):
    p.send(nc.update(routes=[nc.route([agg], n.x_addr, 5353, ["x"], aggregate=agg, version=version,
                                      source=source)]))


class RssPeak:
    """nbrpd's RSS sampled every 20 ms in a thread: the peak."""

    def __init__(self, pid):
        self.pid, self.peak, self.stop = pid, rss_kib(pid), threading.Event()
        self.t = threading.Thread(target=self._run, daemon=True)
        self.t.start()

    def _run(self):
        while not self.stop.wait(0.02):
            try:
                self.peak = max(self.peak, rss_kib(self.pid))
            except OSError:
                return

    def done(self):
        self.stop.set()
        self.t.join(5)
        return self.peak


# ---- the client's caps ----

@pytest.mark.parametrize("cap", ["names", "bytes"])
def test_an_endless_transfer_is_cut_at_the_cap_nothing_stored_and_retried_later(lone, bad_sources, tmp_path, cap):
    if FULL:
        # the size against the default caps (4,000,000 names, 64 bytes a name)
        src = bad_sources("endless", long_names=cap == "bytes",
                          limit_names=50_000_000 if cap == "names" else None,
                          limit_bytes=2 << 30 if cap == "bytes" else None)
        limits = ""
    else:
        src = bad_sources("endless", long_names=cap == "bytes")
        limits = "fetch-max-names 50000;\n" if cap == "names" else "fetch-max-bytes 1000000;\n"
    state = tmp_path / "state"
    n = lone(extra=f'state-dir "{state}";\n{limits}')
    p = establish(n)
    p.send(nc.end_of_rib())
    base = rss_kib(n.proc.pid)
    rss = RssPeak(n.proc.pid)
    offer(p, n, BAD, src.source)

    counter = "fetch_over_names" if cap == "names" else "fetch_over_bytes"
    wait_for(lambda: view(n, BAD).get(counter, 0) >= 1, 600 if FULL else 60, f"the fetch cut at the {cap} cap")
    peak = rss.done()
    first = src.connections()[0]
    wait_for(lambda: first["ended"] is not None, 30, "the source to see its connection closed")
    v = view(n, BAD)
    # nothing stored: no version, no member, no snapshot; the route is there, its members are not
    assert v["version"] is None and v["members"] == 0 and v["routes"] == 1
    assert not list(state.glob("*.snap"))
    assert answer(n, "n0000005.x0.bad.example" if cap == "names" else "nobody.bad.example") == "REFUSED"
    assert v["last_transfer"]["ok"] is False and v["fetch_failures"] >= 1
    assert status(n)[counter] >= 1
    some, none = r"[1-9]\d*", "0"
    assert re.search(rf"failed {some} \(over fetch-max-names {some if cap == 'names' else none}, over fetch-max-bytes "
                     rf"{some if cap == 'bytes' else none},", n.nbrc("show", "aggregates").stdout)
    what = r"more than \d+ names" if cap == "names" else r"more than \d+ bytes"
    line = re.search(rf"aggregate {BAD}\. from {re.escape(src.addr)}#{src.port}: AXFR failed after (\d+) bytes "
                     rf"in ([\d.]+) s: over the cap: {what}; refused; holding version none", n.log())
    assert line, n.log()
    got, secs = int(line.group(1)), float(line.group(2))
    if cap == "bytes":
        assert got <= (4000000 * 64 if FULL else 1000000)
    grew = peak - base
    print(f"\n{cap} cap{' (full)' if FULL else ''}: source sent {first['sent']} bytes, {first['names']} names; "
          f"nbrpd read {got} bytes, cut after {secs:.3f} s; RSS {base} KiB before, peak {peak} KiB "
          f"(+{grew} KiB)")
    # bounded: the names below the cap, not what the source sent
    bound = 1536 * 1024 if FULL else 160 * 1024 if SANITIZED else 64 * 1024
    assert grew < bound, f"RSS grew by {grew} KiB"
    assert first["sent"] > got            # the source had more to give: it was cut, not finished

    # tried again later, with backoff: never at once, and each wait longer
    want = 2 if FULL else 3
    wait_for(lambda: len(src.connections()) >= want, 900 if FULL else 60, f"{want} attempts")
    t = [c["t0"] for c in src.connections()]
    assert t[1] - t[0] >= 0.9               # the first retry 1 s after the failure, the next 2 s after
    if not FULL:
        assert t[2] - t[1] >= 1.8
    assert view(n, BAD)["version"] is None
    # the retries cost no more than the first attempt: the memory of each is given back
    after = rss_kib(n.proc.pid)
    print(f"RSS after {len(t)} attempts: {after} KiB")
    assert after - base < bound, f"RSS grew by {after - base} KiB over {len(t)} attempts"
    p.close()


# ---- the library's client (aggtool fetch) ----

def test_a_diff_that_would_leave_too_many_names_is_refused_and_the_byte_cap_spans_attempts(served, tmp_path):
    from test_aggregate_xfr import fetch, members_of, names, write_members
    start, _, members = served                       # version 3: 1000 members
    s = start()
    client = tmp_path / "client"
    first, _ = fetch(client, s, "--max-names", "1005")
    assert first["status"] == 0 and first["kind"] == "AXFR" and first["to"] == 3
    # version 4 removes 5 names and adds 15: the diff carries 20, but would leave 1010
    write_members(members, names(25, 1020) + [f"more{i}.example." for i in range(15)])
    s.signal(signal.SIGHUP)
    wait_for(lambda: s.soa_serial() == 4, 10, "version 4 served")
    over, r = fetch(client, s, "--max-names", "1005")
    assert over["status"] == -1 and over["cut"] == "names" and over["to"] == 3
    assert "diff 3 -> 4 would leave more than 1005 names" in over["why"]
    assert members_of(client) == set(names(20, 1020))
    assert "holding version 3" in r.stderr
    ok, _ = fetch(client, s, "--max-names", "1010")
    assert ok["status"] == 0 and ok["kind"] == "IXFR" and ok["to"] == 4

    # a client whose version 3 is not the server's: the IXFR does not apply and the AXFR after it
    # gets what the IXFR left of the byte cap
    other = tmp_path / "other"
    odd = tmp_path / "odd.txt"
    write_members(odd, names(5000, 5010))
    subprocess.run([AGGTOOL, "define", str(other), GOOD_AGG, str(odd), "3"], check=True, env=ENV,
                   capture_output=True)
    whole, _ = fetch(tmp_path / "fresh", s)
    capped, _ = fetch(other, s, "--max-bytes", str(whole["bytes"]))
    assert capped["status"] == -1 and capped["cut"] == "bytes" and capped["kind"].startswith("AXFR (fallback")
    assert capped["bytes"] <= whole["bytes"]
    assert members_of(other) == set(names(5000, 5010))


# ---- the client's time limit ----

def test_slow_sources_holding_every_fetch_slot_are_ended_by_the_time_limit(lone, bad_sources, served, tmp_path):
    start, _, _ = served
    good = start()
    slow = bad_sources("slow", every=1.0)
    n = lone(extra=f'state-dir "{tmp_path}/state";\nfetch-idle-timeout 6s;\nfetch-time-limit 4s;\n')
    p = establish(n)
    p.send(nc.end_of_rib())
    # four aggregates from a source trickling one byte a second: the four fetch slots
    slow_aggs = [f"slow{i}.agg" for i in range(4)]
    for a in slow_aggs:
        offer(p, n, a, slow.source)
    wait_for(lambda: len(slow.connections()) >= 4, 20, "four fetches from the slow source")
    assert all(view(n, a)["fetching"] for a in slow_aggs)
    # a fifth aggregate, from a good source, waits for a slot
    offer(p, n, GOOD_AGG, f"{good.addr} {good.port}", version=3)
    wait_for(lambda: view(n, GOOD_AGG).get("version") == 3, 60, "the good aggregate fetched once a slot is freed")
    assert view(n, GOOD_AGG)["members"] == 1000
    st = status(n)
    assert st["fetch_time_limits"] >= 4 and st["fetch_idle_timeouts"] == 0
    for a in slow_aggs:
        v = view(n, a)
        assert v["fetch_time_limits"] >= 1 and v["version"] is None
    first = slow.connections()[0]
    wait_for(lambda: first["ended"] is not None, 10, "the slow source to see its connection closed")
    assert first["sent"] < 20                 # a message of 60 bytes never arrived whole
    assert re.search(r"aggregate slow0\.agg\. from \S+: AXFR failed after \d+ bytes in [\d.]+ s: "
                     r"over the time limit: not done in 4000 ms", n.log()), n.log()
    # the good aggregate was fetched in a slot a time limit freed
    log = n.log()
    assert log.index("over the time limit") < log.index(f"aggregate {GOOD_AGG}. from")
    p.close()


# ---- the server: allow-transfer at accept, a connection's time limit ----

def attackers(addr, port, source, count, stop, stats):
    """count threads, each connecting from source, trickling a byte every 0.5 s until closed, again."""
    def run():
        while not stop.is_set():
            try:
                s = socket.create_connection((addr, port), timeout=5, source_address=(source, 0))
            except OSError:
                stop.wait(0.2)
                continue
            with stats["lock"]:
                stats["connects"] += 1
            s.settimeout(0.5)
            try:
                while not stop.is_set():
                    s.send(b"\0")
                    try:
                        if s.recv(1) == b"":
                            break
                    except socket.timeout:
                        continue
            except OSError:
                pass
            finally:
                s.close()
            with stats["lock"]:
                stats["closed"] += 1
            stop.wait(0.2)
    ts = [threading.Thread(target=run, daemon=True) for _ in range(count)]
    for t in ts:
        t.start()
    return ts


def kdig_axfr(addr, port):
    t0 = time.monotonic()
    r = subprocess.run(["kdig", "-b", "127.0.0.1", "-p", str(port), f"@{addr}", "AXFR", AGG],
                       capture_output=True, text=True, timeout=120)
    secs = time.monotonic() - t0
    ptrs = sum(1 for line in r.stdout.splitlines() if "\tPTR\t" in line)
    return secs, ptrs, r


def metric(addr, port, name):
    body = urllib.request.urlopen(f"http://{addr}:{port}/metrics", timeout=5).read().decode()
    m = re.search(rf"^{name} (\S+)$", body, re.M)
    return float(m.group(1)) if m else None


def test_clients_outside_allow_transfer_cannot_hold_the_server(net, tmp_path):
    members = [f"s{i}.example" for i in range(50000)]
    maddr = "127.0.0.1"
    mport = free_port(maddr)
    rs, _, xfr = line_with_aggregate(net, tmp_path, ["r1"], "r1", members,
                                     origin_extra=f"allow-transfer 127.0.0.1/32;\nmetrics {maddr} port {mport};\n")
    r1 = rs["r1"]
    addr, port = xfr["r1"]
    assert version_of(r1) is not None
    kdig_axfr(addr, port)                   # warm: the times below compare like with like
    alone = []
    for _ in range(5):
        secs, ptrs, r = kdig_axfr(addr, port)
        assert ptrs == 50000, r.stdout[-500:] + r.stderr
        alone.append(secs)

    # 64 connections from an address outside allow-transfer, trickling bytes and coming back when closed
    stop, stats = threading.Event(), {"lock": threading.Lock(), "connects": 0, "closed": 0}
    ts = attackers(addr, port, "127.0.0.3", 64, stop, stats)
    try:
        wait_for(lambda: stats["connects"] >= 64, 30, "64 attacking connections")
        attacked = []
        for _ in range(5):
            secs, ptrs, r = kdig_axfr(addr, port)
            assert ptrs == 50000, r.stdout[-500:] + r.stderr
            attacked.append(secs)
        wait_for(lambda: stats["closed"] >= 64, 30, "the attackers closed")
    finally:
        stop.set()
        for t in ts:
            t.join(10)
    st = status(r1.nbrpd)
    assert st["transfer_closed_acl"] >= 64 and st["transfer_closed_full"] == 0
    assert st["transfers_served"] >= 11
    assert metric(maddr, mport, "nbrpd_aggregate_transfer_connections_closed_acl_total") >= 64
    assert "not in allow-transfer" in r1.nbrpd.log()
    assert re.search(r"connections closed: outside allow-transfer \d+", r1.nbrpd.nbrc("show", "status").stdout)
    print(f"\nAXFR of 50,000 names with kdig: alone {sorted(alone)} s, with 64 attackers {sorted(attacked)} s; "
          f"attackers connected {stats['connects']} times, closed {stats['closed']}, "
          f"nbrpd counted {st['transfer_closed_acl']}")


def test_an_allowed_client_trickling_bytes_is_closed_by_the_time_limit(net, tmp_path):
    rs, _, xfr = line_with_aggregate(net, tmp_path, ["r1"], "r1", ["a.example"],
                                     origin_extra="transfer-time-limit 2s;\ntransfer-idle-timeout 10s;\n")
    addr, port = xfr["r1"]
    s = socket.create_connection((addr, port), timeout=30, source_address=("127.0.0.1", 0))
    t0 = time.monotonic()
    closed = None
    try:
        s.settimeout(1.0)
        s.send(b"\x01")                     # a query of 256 bytes, one byte a second: never whole
        while time.monotonic() - t0 < 30:
            try:
                s.send(b"\0")
                if s.recv(1) == b"":
                    closed = time.monotonic() - t0
                    break
            except socket.timeout:
                continue
            except OSError:
                closed = time.monotonic() - t0
                break
    finally:
        s.close()
    assert closed is not None and closed >= 1.9, closed
    st = status(rs["r1"].nbrpd)
    assert st["transfer_closed_time"] == 1 and st["transfer_closed_idle"] == 0
    assert "open for 2000 ms" in rs["r1"].nbrpd.log()


# ---- configuration ----

BASE = 'router-name "r1";\ninrp-address 127.0.0.1 port 53;\n'


@pytest.mark.parametrize("body,line,reason", [
    (BASE + "fetch-max-names 0;\n", 3, "fetch-max-names"),
    (BASE + "fetch-max-names many;\n", 3, "fetch-max-names"),
    (BASE + "fetch-max-bytes 100;\n", 3, "fetch-max-bytes"),
    (BASE + "fetch-time-limit 10ms;\n", 3, "fetch-time-limit"),
    (BASE + "fetch-idle-timeout 2s;\nfetch-idle-timeout 3s;\n", 4, "twice"),
    (BASE + "transfer-time-limit soon;\n", 3, "transfer-time-limit"),
    (BASE + "transfer-idle-timeout 0s;\n", 3, "transfer-idle-timeout"),
])
def test_bad_limits_name_the_line(tmp_path, body, line, reason):
    conf = tmp_path / "nbrpd.conf"
    conf.write_text(body)
    r = subprocess.run([NBRPD, "-t", "-c", str(conf)], capture_output=True, text=True, timeout=30, env=ENV)
    assert r.returncode == 1
    assert f"{conf}:{line}:" in r.stderr and reason in r.stderr, r.stderr
