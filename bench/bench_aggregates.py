#!/usr/bin/env python3
"""scripts/bench aggregates: aggregates through real routers, beside NSD and kdig.

Routers are nbrpd and inrpd pairs on 127.0.0.0/8 (one address each).  In
one run:

  axfr_1m_s           a 1,000,000-name aggregate, from the origin storing
                      (and so advertising) its first version to the next
                      router's inrpd answering its last member: fetched
                      (AXFR), stored with fsync, applied to RIB and FIB
  nsd_kdig_axfr_1m_s  NSD serving the same names as a zone, kdig's AXFR
  ixfr_1pct_ms_p50    a 1% diff (10,000 names out, 10,000 in), from the
                      origin storing it to the next router answering the
                      last new member; median of --ixfr-runs
  restart_serving_s   kill -9 and restart of the receiving nbrpd, until its
                      inrpd has a FIB from the new nbrpd in service (every
                      member, from nbrpd's routes) and answers the last one
  restart_fetched_bytes   what that restart fetched
  fdatasync_ms_p50    the floor under a diff: appending a 1% diff's bytes (as
                      the journal does) to a file in the same directory and
                      fdatasync, median of 9
  chain10_1pct_s      the same 1% diff through a line of 10 routers, until
                      the last answers the new members
  journal_bytes_per_name, snapshot_bytes_per_name
                      at the origin and the receiver, after --versions
                      versions of 1% diffs

Start times are the origin's log line for the version stored (ms, UTC),
end times the client's clock when the answer came: one clock, a
millisecond's resolution.  Human-readable lines first; the last line is
one JSON object.
"""

import argparse
import datetime
import json
import os
import random
import re
import shutil
import signal
import statistics
import subprocess
import sys
import tempfile
import time

import dns.message
import dns.query
import dns.rcode

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from bench_aggxfr import free_port, gen_names, kdig_axfr, nsd_config, wait_serving  # noqa: E402
from bench_nbrp import binaries, wait_until  # noqa: E402

AGG = "hosted.bench"
SERVER = "127.0.0.99"


def log_time(line):
    """The wall-clock time of a daemon's log line (lib/core/log.c: 2026-01-01T00:00:00.000Z)."""
    stamp = line.split(" ", 1)[0]
    return datetime.datetime.strptime(stamp, "%Y-%m-%dT%H:%M:%S.%fZ").replace(
        tzinfo=datetime.timezone.utc).timestamp()


class Router:
    """One nbrpd and inrpd at their own address; nbrpd's aggregates in work/NAME/state."""

    def __init__(self, args, work, name, addr):
        self.args, self.name, self.addr = args, name, addr
        self.dir = os.path.join(work, name)
        os.makedirs(self.dir)
        self.fib = os.path.join(self.dir, "fib")
        self.ctl = os.path.join(self.dir, "nbrpd.ctl")
        self.conf = os.path.join(self.dir, "nbrpd.conf")
        self.nlog = os.path.join(self.dir, "nbrpd.log")
        self.ilog = os.path.join(self.dir, "inrpd.log")
        self.nbrpd = self.inrpd = None
        self.body = ""

    def start_inrpd(self):
        conf = os.path.join(self.dir, "inrpd.conf")
        with open(conf, "w") as f:
            f.write(f'listen {self.addr} port 5353;\nworkers 1;\nfib-channel "{self.fib}";\nfib-grace-time 60s;\n'
                    "log-level info;\n")
        self.inrpd = subprocess.Popen([self.args.inrpd, "-f", "-c", conf], stdout=open(self.ilog, "a"),
                                      stderr=subprocess.STDOUT)
        wait_until(lambda: self.query("ready.invalid") is not None, 30, f"{self.name}'s inrpd", 0.01)

    def config(self, peers, extra=""):
        self.body = (f'router-name "{self.name}";\nlisten {self.addr} port 1790;\n'
                     f'inrp-address {self.addr} port 5353;\nhold-time 30s;\nconnect-retry 100ms;\n'
                     f'fib-channel "{self.fib}";\ncontrol "{self.ctl}";\nlog-level info;\n'
                     f'state-dir "{self.dir}/state";\ntransfer-listen {self.addr} port 5300;\n')
        for p in peers:
            self.body += f'peer "{p.name}" {{ address {p.addr}; }}\n'
        self.write(extra)

    def write(self, extra=""):
        with open(self.conf, "w") as f:
            f.write(self.body + extra)

    def start_nbrpd(self):
        self.nbrpd = subprocess.Popen([self.args.nbrpd, "-f", "-c", self.conf], stdout=open(self.nlog, "a"),
                                      stderr=subprocess.STDOUT)
        wait_until(lambda: self.nbrc("show", "status") is not None, 30, f"{self.name}'s nbrpd", 0.01)

    def nbrc(self, *words):
        r = subprocess.run([self.args.nbrc, "-s", self.ctl, *words], capture_output=True, text=True)
        return r.stdout if r.returncode == 0 else None

    def aggregate(self):
        out = self.nbrc("--json", "show", "aggregate", AGG)
        return json.loads(out) if out else None

    def version(self):
        a = self.aggregate()
        return a["version"] if a else None

    def query(self, name):
        try:
            r = dns.query.udp(dns.message.make_query(name, "A"), self.addr, port=5353, timeout=0.5)
        except dns.exception.Timeout:
            return None
        return r

    def answers(self, name):
        r = self.query(name)
        return r is not None and r.rcode() == dns.rcode.NOERROR and any(
            rd.address == SERVER for rrset in r.answer for rd in rrset if rrset.rdtype == 1)

    def log(self, path=None):
        with open(path or self.nlog, errors="replace") as f:
            return f.read()

    def stop(self):
        for p in (self.nbrpd, self.inrpd):
            if p and p.poll() is None:
                p.send_signal(signal.SIGTERM)
                try:
                    p.wait(timeout=30)
                except subprocess.TimeoutExpired:
                    p.kill()
                    p.wait()


def write_members(path, names):
    with open(path, "w") as f:
        f.write("\n".join(names) + "\n")


def stored_at(r, version, start=0):
    """The log time of the origin storing `version` (it advertises it in the same loop turn)."""
    m = re.search(rf"^(\S+) nbrpd info: aggregate {re.escape(AGG)}\.: version {version}, ", r.log()[start:], re.M)
    return log_time(m.group(0)) if m else None


def reload_version(origin, members, path):
    """Writes a new definition and reloads: (version, when it was stored)."""
    write_members(path, members)
    mark = len(origin.log())
    before = origin.version()
    if origin.nbrc("reload") is None:
        raise RuntimeError("reload failed")
    v = (before + 1) % 2**32
    t = wait_until(lambda: stored_at(origin, v, mark), 60, f"version {v} stored")
    return v, t


def answered_at(r, name, timeout=120):
    wait_until(lambda: r.answers(name), timeout, f"{r.name} to answer {name}", interval=0.001)
    return time.time()


def fetched_bytes(r, start):
    return sum(int(b) for b in re.findall(rf"aggregate {re.escape(AGG)}\. from \S+: .*?, (\d+) bytes in",
                                          r.log()[start:]))


def fdatasync_floor_ms(directory, nbytes, runs=9):
    """What storing a diff costs the disk alone: nbytes appended and fdatasync'ed, median ms."""
    path = os.path.join(directory, "floor.jnl")
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o600)
    times = []
    try:
        for _ in range(runs):
            t = time.monotonic()
            os.write(fd, os.urandom(nbytes))
            os.fdatasync(fd)
            times.append((time.monotonic() - t) * 1000)
    finally:
        os.close(fd)
        os.unlink(path)
    return round(statistics.median(times), 1)


def diff_1pct(current, tag, n):
    out = current[n:] + [f"{tag}x{i}.example" for i in range(n)]
    return out


def main():
    ap = argparse.ArgumentParser(prog="scripts/bench aggregates", description=__doc__.split("\n\n")[0])
    ap.add_argument("--names", type=int, default=1_000_000)
    ap.add_argument("--ixfr-runs", type=int, default=5)
    ap.add_argument("--versions", type=int, default=100)
    ap.add_argument("--chain", type=int, default=10)
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--skip-nsd", action="store_true")
    ap.add_argument("--keep", action="store_true", help="keep the routers' files and logs")
    ap.add_argument("--build", default=os.path.join(os.path.dirname(__file__), "..", "build"))
    args = ap.parse_args()
    binaries(args)
    work = tempfile.mkdtemp(prefix="bench-aggregates-")
    names = gen_names(args.names, args.seed)
    pct = args.names // 100
    defs = os.path.join(work, "hosted.names")
    result = {"names": args.names}
    base = f"127.51.{random.randint(1, 200)}"
    routers = []
    try:
        # ---- two routers: origin o, receiver a ----
        o, a = Router(args, work, "o", f"{base}.1"), Router(args, work, "a", f"{base}.2")
        routers += [o, a]
        o.config([a])
        a.config([o])
        for r in (o, a):
            r.start_inrpd()
            r.start_nbrpd()
        wait_until(lambda: '"Established"' in (a.nbrc("--json", "show", "peers") or ""), 30, "the session")
        write_members(defs, names)
        mark = len(o.log())
        o.write(f'aggregate "{AGG}" {{ server {SERVER}; file "{defs}"; }}\n')
        o.nbrc("reload")
        v = wait_until(lambda: o.version(), 60, "the first version")
        t0 = wait_until(lambda: stored_at(o, v, mark), 10, "its log line")
        t1 = answered_at(a, names[-1])
        result["axfr_1m_s"] = round(t1 - t0, 3)
        print(f"first version ({len(names)} names) from the origin's store to the receiver answering: "
              f"{t1 - t0:.3f} s", flush=True)

        current, times = names, []
        for run in range(args.ixfr_runs):
            current = diff_1pct(current, f"i{run}", pct)
            v, t0 = reload_version(o, current, defs)
            t1 = answered_at(a, current[-1])
            times.append((t1 - t0) * 1000)
            print(f"1% diff {run + 1}: {times[-1]:.1f} ms", flush=True)
        result["ixfr_1pct_ms_p50"] = round(statistics.median(times), 1)
        # a 1% diff is about 18 bytes a name in the journal (350 KB for 20,000 names)
        result["fdatasync_ms_p50"] = fdatasync_floor_ms(a.dir, 2 * pct * 18)
        print(f"the disk's floor: {2 * pct * 18} bytes appended and synced, {result['fdatasync_ms_p50']} ms",
              flush=True)

        mark, imark = len(a.log()), len(a.log(a.ilog))
        a.nbrpd.kill()
        a.nbrpd.wait()
        t0 = time.time()
        a.start_nbrpd()
        wait_until(lambda: "in service" in a.log(a.ilog)[imark:], 60, "a new epoch in the receiver's inrpd")
        t1 = answered_at(a, current[-1])
        result["restart_serving_s"] = round(t1 - t0, 3)
        result["restart_fetched_bytes"] = fetched_bytes(a, mark)
        print(f"restart of the receiver's nbrpd: serving again in {t1 - t0:.3f} s, "
              f"{result['restart_fetched_bytes']} bytes fetched", flush=True)

        # ---- journal and snapshot after many versions of 1% diffs ----
        for k in range(args.versions):
            current = diff_1pct(current, f"j{k}", pct)
            reload_version(o, current, defs)
        wait_until(lambda: a.version() == o.version(), 60, "the receiver to catch up")
        for r in (o, a):
            st = r.aggregate()
            result[f"{r.name}_journal_bytes_per_name"] = round(st["journal_bytes"] / st["members"], 2)
            result[f"{r.name}_snapshot_bytes_per_name"] = round(st["snapshot_bytes"] / st["members"], 2)
        result["journal_bytes_per_name"] = result["o_journal_bytes_per_name"]
        result["snapshot_bytes_per_name"] = result["o_snapshot_bytes_per_name"]
        print(f"after {args.versions} versions: journal {result['journal_bytes_per_name']} B/name, snapshot "
              f"{result['snapshot_bytes_per_name']} B/name at the origin", flush=True)
        for r in routers:
            r.stop()
        routers = []

        # ---- a line of routers ----
        if args.chain > 1:
            line = [Router(args, work, f"c{i}", f"{base}.{10 + i}") for i in range(args.chain)]
            routers += line
            for i, r in enumerate(line):
                r.config([p for p in (line[i - 1] if i else None, line[i + 1] if i + 1 < len(line) else None) if p])
            write_members(defs, names)
            line[-1].write(f'aggregate "{AGG}" {{ server {SERVER}; file "{defs}"; }}\n')
            for r in line:
                r.start_inrpd()
                r.start_nbrpd()
            t = time.monotonic()
            answered_at(line[0], names[-1], timeout=600)
            print(f"line of {args.chain}: the first version reached the far end in {time.monotonic() - t:.1f} s",
                  flush=True)
            current = diff_1pct(names, "chain", pct)
            v, t0 = reload_version(line[-1], current, defs)
            t1 = answered_at(line[0], current[-1])
            result["chain10_1pct_s"] = round(t1 - t0, 3)
            print(f"line of {args.chain}: 1% diff end to end in {t1 - t0:.3f} s", flush=True)
            for r in routers:
                r.stop()
            routers = []

        # ---- NSD and kdig, the same names ----
        if not args.skip_nsd:
            nsd_addr = f"{base}.250"
            nsd_port = free_port(nsd_addr)
            nsd_dir = os.path.join(work, "nsd")
            os.makedirs(nsd_dir)
            conf = nsd_config(nsd_dir, names, nsd_addr, nsd_port)
            nsd_bin = shutil.which("nsd") or "/usr/sbin/nsd"
            nsd = subprocess.Popen([nsd_bin, "-d", "-c", conf], stdout=subprocess.DEVNULL, stderr=subprocess.STDOUT)
            try:
                wait_serving(nsd, nsd_addr, nsd_port, "nsd")
                secs = [kdig_axfr(nsd_addr, nsd_port, os.path.join(nsd_dir, "axfr"), lambda c: c, len(names))[0]
                        for _ in range(3)]
            finally:
                nsd.terminate()
                nsd.wait()
            result["nsd_kdig_axfr_1m_s"] = round(statistics.median(secs), 3)
            result["axfr_ratio"] = round(result["axfr_1m_s"] / result["nsd_kdig_axfr_1m_s"], 3)
            print(f"NSD + kdig AXFR of the same names: {result['nsd_kdig_axfr_1m_s']:.3f} s", flush=True)
    finally:
        for r in routers:
            r.stop()
    if args.keep:
        print(f"files and logs kept in {work}", flush=True)
    else:
        shutil.rmtree(work, ignore_errors=True)
    print(json.dumps(result))


if __name__ == "__main__":
    main()
