#!/usr/bin/env python3
"""scripts/bench overload: inrpd at about twice its capacity, half the
names routed to a next hop that never answers.

inrpd (one worker, pinned to CPU 1; dnsperf on CPU 0) has two routes:
local.bench to a content server (answered here) and far.bench to a next
content router that is a UDP socket reading and dropping everything.
Every query file's names are distinct (random labels under the two
suffixes), so the packet cache plays no part.

  1. capacity: dnsperf unlimited, local names only: the qps inrpd answers.
  2. overload: local and far names alternating, offered at twice the
     capacity (-Q): local_overload_qps, the local names answered per
     second (NOERROR; a far name can only get SERVFAIL or nothing).
  3. unloaded: the local names alone, offered at the rate the local half
     had in step 2 (half of what dnsperf sent): local_unloaded_qps.
  4. after: capacity again, unlimited: inrpd is not left worse.

local_ratio is local_overload_qps / local_unloaded_qps: what the dead half
costs the live one.  overload_cpu_us_per_query and local_cpu_us_per_query
are inrpd's CPU time (utime+stime) per query read in steps 2 and 3: a
shed query should cost no more than a local answer.  offered_ratio is what dnsperf managed to send over
the capacity: a client on one CPU may not reach twice a server on
another, and then the overload is only as deep as that.  When it does,
a far query costs inrpd about what a local one does (read, look up,
SERVFAIL once max-pending is full), so the kernel drops queries of both
halves alike before inrpd reads them and the ratio cannot pass about
1/offered_ratio.  Also reported: inrpd's counters over the overload
(pending_full, servfail), the queries the dead hop got, and inrpd's RSS
before and after.

The last line of output is one JSON object.
"""
import argparse
import json
import os
import random
import re
import shutil
import subprocess
import sys
import tempfile

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "tests", "integration"))
from blackhole import BlackHole  # noqa: E402
from bench_inrp import CLK_TCK, cpu_ticks, descendants, free_port, rss_bytes, start, stop  # noqa: E402

HERE = os.path.dirname(os.path.abspath(__file__))
ALNUM = "abcdefghijklmnopqrstuvwxyz0123456789"


def names(n, suffix, rnd):
    return [f"{''.join(rnd.choice(ALNUM) for _ in range(12))}.{suffix}" for _ in range(n)]


def write_queries(path, qnames):
    with open(path, "w") as f:
        for n in qnames:
            f.write(f"{n} A\n")


def dnsperf(addr, port, qfile, seconds, cpus, rate=None):
    """(completed per second, sent per second, {rcode: count}) of one run."""
    cmd = ["dnsperf", "-s", addr, "-p", str(port), "-d", qfile, "-l", str(seconds),
           "-c", "8", "-q", "20000", "-t", "1", "-T", "1"]
    if rate:
        cmd += ["-Q", str(int(rate))]
    if cpus:
        cmd = ["taskset", "-c", cpus] + cmd
    out = subprocess.run(cmd, capture_output=True, text=True, check=True).stdout
    sent = int(re.search(r"Queries sent:\s+(\d+)", out).group(1))
    done = int(re.search(r"Queries completed:\s+(\d+)", out).group(1))
    run_s = float(re.search(r"Run time \(s\):\s+([0-9.]+)", out).group(1))
    rcodes = {k: int(v) for k, v in re.findall(r"([A-Z]+) (\d+) \(", out.split("Response codes:", 1)[-1]
                                                .split("\n", 1)[0])}
    return done / run_s, sent / run_s, rcodes, run_s


def counters(inrpc, ctl):
    out = subprocess.run([inrpc, "-s", ctl, "--json", "show", "counters"], capture_output=True, text=True,
                         check=True).stdout
    return json.loads(out)["udp"]


def main():
    ap = argparse.ArgumentParser(prog="scripts/bench overload", description=__doc__.split("\n\n")[0])
    ap.add_argument("--seconds", type=int, default=20, help="length of the overload run")
    ap.add_argument("--names", type=int, default=200_000, help="distinct names in each query file")
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--build", default=os.path.join(HERE, "..", "build"))
    args = ap.parse_args()

    inrpd = os.path.join(args.build, "inrpd", "inrpd")
    inrpc = os.path.join(args.build, "inrpd", "inrpc")
    for tool in ("dnsperf", "dig"):
        if not shutil.which(tool):
            sys.exit(f"bench overload: {tool} is missing (scripts/setup installs it)")
    server_cpus, client_cpus = ("1", "0") if os.cpu_count() and os.cpu_count() >= 2 else (None, None)
    pin = (lambda cmd: ["taskset", "-c", server_cpus] + cmd) if server_cpus else (lambda cmd: cmd)

    work = tempfile.mkdtemp(prefix="bench-overload-")
    rnd = random.Random(args.seed)
    local = names(args.names, "local.bench", rnd)
    far = names(args.names, "far.bench", rnd)
    local_q = os.path.join(work, "local")
    mixed_q = os.path.join(work, "mixed")
    write_queries(local_q, local)
    write_queries(mixed_q, [n for pair in zip(local, far) for n in pair])
    print(f"bench overload: files in {work}", flush=True)

    hole = BlackHole("127.0.0.1")
    hole.start()
    procs = []
    try:
        addr, port = "127.0.0.61", free_port()
        ctl = os.path.join(work, "inrpd.ctl")
        conf = os.path.join(work, "inrpd.conf")
        with open(conf, "w") as f:
            f.write(f'listen {addr} port {port};\nworkers 1;\nlog-level warn;\ncontrol "{ctl}";\n'
                    'route "local.bench" { server 127.0.0.1; }\n'
                    f'route "far.bench" {{ router 127.0.0.1 port {hole.port}; }}\n')
        with open(os.path.join(work, "inrpd.log"), "w") as log:
            p = start(pin([inrpd, "-f", "-c", conf]), addr, port, local[0], 60, log)
            procs.append(p)
            pids = descendants(p.pid)
            dnsperf(addr, port, local_q, 1, client_cpus)             # warm up
            capacity, _, _, _ = dnsperf(addr, port, local_q, 10, client_cpus)
            print(f"capacity        {capacity:10.0f} qps (local names, unlimited)", flush=True)
            rss_before = rss_bytes(pids)
            c0, t0 = counters(inrpc, ctl), cpu_ticks(pids)
            done, sent, rc, run_s = dnsperf(addr, port, mixed_q, args.seconds, client_cpus, rate=2 * capacity)
            c1, t1 = counters(inrpc, ctl), cpu_ticks(pids)
            overload_us = (t1 - t0) * 1e6 / CLK_TCK / max(c1["queries"] - c0["queries"], 1)
            rss_after = rss_bytes(pids)
            local_overload = rc.get("NOERROR", 0) / run_s
            delta = {k: c1[k] - c0[k] for k in ("queries", "local", "forwarded", "servfail", "pending_full")}
            print(f"overload        {sent:10.0f} qps offered, {done:.0f} answered, {local_overload:.0f} "
                  f"local answered; rcodes {rc}; inrpd {delta}", flush=True)
            c0, t0 = counters(inrpc, ctl), cpu_ticks(pids)
            unloaded, _, _, _ = dnsperf(addr, port, local_q, 10, client_cpus, rate=sent / 2)
            c1, t1 = counters(inrpc, ctl), cpu_ticks(pids)
            local_us = (t1 - t0) * 1e6 / CLK_TCK / max(c1["queries"] - c0["queries"], 1)
            print(f"unloaded        {unloaded:10.0f} qps answered of {sent / 2:.0f} offered", flush=True)
            final, _, _, _ = dnsperf(addr, port, local_q, 3, client_cpus)
            print(f"after           {final:10.0f} qps (local names, unlimited)", flush=True)
            stop(p)
    finally:
        for p in procs:
            stop(p)
        hole.close()
        shutil.rmtree(work, ignore_errors=True)

    out = {
        "capacity_qps": round(capacity),
        "offered_overload_qps": round(sent),
        "offered_ratio": round(sent / capacity, 2) if capacity else None,
        "local_unloaded_qps": round(unloaded),
        "local_overload_qps": round(local_overload),
        "local_ratio": round(local_overload / unloaded, 3) if unloaded else None,
        "answered_overload_qps": round(done),
        "overload_cpu_us_per_query": round(overload_us, 2),
        "local_cpu_us_per_query": round(local_us, 2),
        "far_servfail": rc.get("SERVFAIL", 0),
        "inrpd_queries": delta["queries"],
        "inrpd_pending_full": delta["pending_full"],
        "inrpd_servfail": delta["servfail"],
        "hop_received": hole.received,
        "rss_before_mib": round(rss_before / 2**20, 1),
        "rss_after_mib": round(rss_after / 2**20, 1),
        "capacity_after_qps": round(final),
        "seconds": args.seconds,
    }
    print(json.dumps(out))


if __name__ == "__main__":
    main()
