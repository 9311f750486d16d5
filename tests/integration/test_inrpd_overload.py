"""Overload: dnsperf at about twice inrpd's measured capacity, half the
names routed to a next content router that never answers (a UDP socket
that reads and drops).  inrpd must shed the dead half (SERVFAIL, counted
pending_full) rather than stall: local names keep being answered all
through, the queries in flight stay within max-pending, and RSS does not
grow with the length of the attack.

10 s by default; CR_FULL_ATTACKS=1 runs it for 60 s."""

import os
import random
import re
import shutil
import subprocess
import threading
import time

import dns.exception
import dns.message
import dns.query
import dns.rcode
import pytest

from blackhole import BlackHole
from conftest import SANITIZED, free_port, rss_kib, wait_for
from prom import scrape, value
from test_inrpd_control import counters

FLOOD_S = 60 if os.environ.get("CR_FULL_ATTACKS") == "1" else 10
MAX_PENDING = 256
WORKERS = 2
ALNUM = "abcdefghijklmnopqrstuvwxyz0123456789"


class Probe(threading.Thread):
    """A client asking for local names one at a time until stopped: (time, rcode or None)."""

    def __init__(self, d):
        super().__init__(daemon=True)
        self.d = d
        self.stopping = threading.Event()
        self.results = []

    def run(self):
        n = 0
        while not self.stopping.is_set():
            n += 1
            q = dns.message.make_query(f"probe{n}.local.test", "A")
            try:
                # a late answer to an earlier probe may come to a new socket on the same port
                r = dns.query.udp(q, self.d.addr, port=self.d.port, timeout=0.5, ignore_unexpected=True)
                ok = r.rcode() == dns.rcode.NOERROR and \
                    [rd.address for rs in r.answer for rd in rs] == ["127.0.0.10"]
                self.results.append((time.monotonic(), ok))
            except dns.exception.Timeout:
                self.results.append((time.monotonic(), None))


class Sampler(threading.Thread):
    """inrpd's UDP counters and RSS every half second: (time, counters, rss KiB)."""

    def __init__(self, d, ctl):
        super().__init__(daemon=True)
        self.d, self.ctl = d, ctl
        self.stopping = threading.Event()
        self.samples = []

    def run(self):
        while not self.stopping.wait(0.5):
            self.samples.append((time.monotonic(), counters(self.ctl)["udp"], rss_kib(self.d.proc.pid)))


def query_file(path, n, suffixes):
    rnd = random.Random(7)
    with open(path, "w") as f:
        for _ in range(n):
            for s in suffixes:
                f.write(f"{''.join(rnd.choice(ALNUM) for _ in range(12))}.{s} A\n")


def dnsperf(d, qfile, seconds, rate=None):
    cmd = ["dnsperf", "-s", d.addr, "-p", str(d.port), "-d", qfile, "-l", str(seconds),
           "-c", "8", "-q", "2000", "-t", "1"]
    if rate:
        cmd += ["-Q", str(int(rate))]
    out = subprocess.run(cmd, capture_output=True, text=True, check=True, timeout=seconds + 60).stdout
    qps = float(re.search(r"Queries per second:\s+([0-9.]+)", out).group(1))
    codes = dict(re.findall(r"([A-Z]+) (\d+) \(", out.split("Response codes:", 1)[-1].split("\n", 1)[0]))
    return qps, {k: int(v) for k, v in codes.items()}


def in_thirds(times, start, end):
    """How many of the times fall in each third of [start, end)."""
    third = (end - start) / 3
    return [sum(1 for t in times if start + i * third <= t < start + (i + 1) * third) for i in range(3)]


def test_overload_sheds_the_dead_half_and_keeps_answering_the_rest(inrpd_factory, tmp_path):
    if not shutil.which("dnsperf"):
        pytest.fail("dnsperf is missing (scripts/setup installs it)")
    hole = BlackHole()
    hole.start()
    ctl = tmp_path / "inrpd.ctl"
    mport = free_port("127.0.0.1")
    try:
        d = inrpd_factory(f'control "{ctl}";\nmetrics 127.0.0.1 port {mport};\n'
                          f"max-pending {MAX_PENDING};\nquery-timeout 1s;\ncache-size 1M;\n"
                          'route "local.test" { server 127.0.0.10; }\n'
                          f'route "far.test" {{ router 127.0.0.1 port {hole.port}; }}\n', workers=WORKERS)
        local_q, mixed_q = tmp_path / "local", tmp_path / "mixed"
        query_file(local_q, 100_000, ("local.test",))
        query_file(mixed_q, 100_000, ("local.test", "far.test"))
        capacity, _ = dnsperf(d, local_q, 2)
        assert capacity > 0

        rss_before = rss_kib(d.proc.pid)
        before = counters(ctl)["udp"]
        probe, sampler = Probe(d), Sampler(d, ctl)
        probe.start()
        sampler.start()
        start = time.monotonic()
        try:
            _, codes = dnsperf(d, mixed_q, FLOOD_S, rate=2 * capacity)
        finally:
            end = time.monotonic()
            probe.stopping.set()
            sampler.stopping.set()
            probe.join()
            sampler.join()
        after = counters(ctl)["udp"]

        # the local half was answered all through: no third of the flood without answers
        answered = [t for t, ok in probe.results if ok]
        assert all(ok in (True, None) for _, ok in probe.results), "a wrong answer to a local name"
        assert all(in_thirds(answered, start, end)), \
            f"probe answers by third of the flood: {in_thirds(answered, start, end)}"
        # inrpd kept reading: its query count rose in every third
        rising = [(t, c["queries"]) for t, c, _ in sampler.samples]
        grew = [t for (t, q), (_, q0) in zip(rising[1:], rising) if q > q0]
        assert all(in_thirds(grew, start, end)), f"queries read by third: {in_thirds(grew, start, end)}"

        # the dead half was shed, counted, and answered SERVFAIL
        assert after["pending_full"] > before["pending_full"]
        assert after["servfail"] - before["servfail"] >= after["pending_full"] - before["pending_full"]
        assert codes.get("SERVFAIL", 0) > 0 and codes.get("NOERROR", 0) > 0
        assert hole.received > 0

        # never more in flight than max-pending allows, and all of it let go after
        peak = max(c["in_flight"] for _, c, _ in sampler.samples)
        assert 0 < peak <= MAX_PENDING * WORKERS
        wait_for(lambda: counters(ctl)["udp"]["in_flight"] == 0, 30, "the queries in flight to time out")
        m = scrape("127.0.0.1", mport)
        assert value(m, "inrpd_queries_in_flight", transport="udp") == 0
        assert value(m, "inrpd_pending_full_total", transport="udp") == after["pending_full"]

        # RSS: flat once the slots and the packet cache (which keeps the SERVFAILs a while,
        # RFC 9520) are full, whatever the length of the attack; ASan's quarantine holds
        # what the cache evicts
        rss = [(t, r) for t, _, r in sampler.samples]
        first = max(r for t, r in rss if t < start + (end - start) / 3)
        last = max(r for t, r in rss if t >= start + 2 * (end - start) / 3)
        slack = 64 * 1024 if SANITIZED else 2 * 1024
        assert last <= first + slack, f"RSS grew from {first} KiB to {last} KiB during the attack"
        assert rss_kib(d.proc.pid) <= rss_before + (256 if SANITIZED else 32) * 1024

        # and it answers as before
        assert dns.query.udp(dns.message.make_query("after.local.test", "A"), d.addr, port=d.port,
                             timeout=2).rcode() == dns.rcode.NOERROR
    finally:
        hole.close()
