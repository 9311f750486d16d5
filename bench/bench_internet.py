#!/usr/bin/env python3
"""scripts/bench internet: NBRP against BGP on an Internet-sized AS graph, simulated.

  An AS graph of --ases N (75,000) from sim/topology.py's generator (seeded),
  nbrpd's RDE in every AS, Gao-Rexford; sim/sim's events (announce, withdraw,
  move, an aggregate's next version, the session between the two biggest
  transit ASes failing, a mid AS's link flapping) at --origins stub, mid and
  tier-1 origins each, run three times on the same graph: NBRP (origin
  withdrawals, no MRAI), BGP with a 30 s MRAI and BGP with none (sim's bgp
  mode, origin withdrawals off).  NBRP runs with nbrpd's update-delay and
  withdrawal-delay (--update-delay, --withdrawal-delay: 25 and 50 ms);
  the run nbrp_no_delay (not by default) without them.  p50 and p99 over
  the origins of each event's convergence time and UPDATEs; the targets
  (docs/SIMULATION.md) as booleans.  --runs leaves some out (BGP at no
  MRAI explores every path: past ~10,000 ASes it takes the longest by
  far).  The runs are separate sim processes, one thread each: --jobs of
  them at once (default: as many as the CPUs and the memory hold, from
  RSS_PER_AS), the longest first.  The last line of output is one JSON
  object.
"""
import argparse
import json
import os
import pathlib
import subprocess
import sys
import tempfile
import time

ROOT = pathlib.Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "bench"))
from bench_sim import topology  # noqa: E402

# this benchmark's names for sim's events
EVENTS = {"announce": "announce", "withdraw": "withdraw", "move": "move", "aggregate_version": "aggregate",
          "transit_failure": "session_down", "flap": "flap"}
RUNS = (("nbrp", "nbrp", 30, True), ("nbrp_no_delay", "nbrp", 30, False), ("bgp_mrai30", "bgp", 30, False),
        ("bgp_mrai0", "bgp", 0, False))
DEFAULT_RUNS = "nbrp,bgp_mrai30,bgp_mrai0"
TARGET_WALL_S = 30 * 60
TARGET_RSS_MB = 24 * 1024
# the longest run first, so that the others fill the other CPU meanwhile (BGP without MRAI explores)
LONGEST_FIRST = ("bgp_mrai0", "bgp_mrai30", "nbrp", "nbrp_no_delay")
# a run's peak RSS, bytes an AS: MRAI-30's at 75,000 ASes (3 origins a class, each event's names
# kept) passed 12.7 GB, 170 KiB an AS, still growing with them (1 origin a class reached 188 before
# commits 3ba5bc1-a8c9d04)
RSS_PER_AS = 185 * 1024


def percentile(values, p):
    """nearest rank"""
    v = sorted(values)
    if not v:
        return None
    k = max(1, -(-len(v) * p // 100))
    return v[int(k) - 1]


def p50_p99(values):
    return {"p50": percentile(values, 50), "p99": percentile(values, 99)}


def sim_cmd(build, topo, args, mode, mrai, delays):
    cmd = ["nice", str(build / "sim" / "sim"), "--topology", str(topo), "--seed", str(args.seed), "--modes", mode,
           "--mrai", str(mrai), "--origins", str(args.origins), "--names", str(args.names), "--quiet"]
    if delays:
        cmd += ["--update-delay", str(args.update_delay), "--withdrawal-delay", str(args.withdrawal_delay)]
    return cmd


def mem_available():
    """bytes the kernel says can be had without swapping (/proc/meminfo)"""
    with open("/proc/meminfo") as f:
        for line in f:
            if line.startswith("MemAvailable:"):
                return int(line.split()[1]) * 1024
    return 0


def default_jobs(ases, nruns):
    """as many runs at once as there are CPUs, and as fit in memory (within the 24 GiB target)"""
    room = min(mem_available(), TARGET_RSS_MB << 20)
    return max(1, min(nruns, os.cpu_count() or 1, room // (RSS_PER_AS * ases)))


def run_all(todo, jobs):
    """todo: [(key, cmd)], started in order, at most jobs at once; {key: (its JSON, its peak RSS in MB)}"""
    todo, running, done = list(todo), {}, {}
    try:
        while todo or running:
            while todo and len(running) < jobs:
                key, cmd = todo.pop(0)
                print(" ".join(cmd), file=sys.stderr)
                out = tempfile.TemporaryFile()
                p = subprocess.Popen(cmd, stdout=out)
                running[p.pid] = (key, p, out)
            pid, status, ru = os.wait4(-1, 0)       # ru: that child's alone (its own peak RSS)
            if pid not in running:
                continue
            key, p, out = running.pop(pid)
            p.returncode = os.waitstatus_to_exitcode(status)
            if p.returncode != 0:
                raise subprocess.CalledProcessError(p.returncode, p.args)
            out.seek(0)
            done[key] = (json.loads(out.read().decode().splitlines()[-1]), ru.ru_maxrss / 1024)
            out.close()
    finally:
        for _, p, _ in running.values():        # one failed, or we were interrupted: not left running
            p.kill()
            p.wait()
    return done


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--build", default=str(ROOT / "build"))
    ap.add_argument("--ases", type=int, default=75000)
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--origins", type=int, default=3, help="origins of each class (stub, mid, tier-1)")
    ap.add_argument("--names", type=int, default=16, help="background names, from random ASes")
    ap.add_argument("--runs", default=DEFAULT_RUNS,
                    help="which of nbrp,nbrp_no_delay,bgp_mrai30,bgp_mrai0 (the others' figures null, their "
                         "targets false)")
    ap.add_argument("--update-delay", type=int, default=25, help="ms, nbrp's (nbrpd.conf(5))")
    ap.add_argument("--withdrawal-delay", type=int, default=50, help="ms, nbrp's (nbrpd.conf(5))")
    ap.add_argument("--jobs", type=int, default=0,
                    help="runs at once (default: the CPUs, fewer if their peak RSS would not fit in memory)")
    args = ap.parse_args()
    if args.origins < 2:
        ap.error("--origins: at least 2 (a move goes to the next origin of its class)")
    chosen = args.runs.split(",")
    if not set(chosen) <= {r[0] for r in RUNS} or "nbrp" not in chosen:
        ap.error("--runs: nbrp and any of nbrp_no_delay,bgp_mrai30,bgp_mrai0")
    build = pathlib.Path(args.build)
    if args.jobs < 0:
        ap.error("--jobs: 0 (as many as fit) or more")
    topo = topology("internet", args.ases, args.seed, build)
    jobs = args.jobs or default_jobs(args.ases, len(chosen))
    todo = [(key, sim_cmd(build, topo, args, mode, mrai, delays)) for key, mode, mrai, delays in
            sorted(RUNS, key=lambda r: LONGEST_FIRST.index(r[0])) if key in chosen]
    t0 = time.monotonic()
    done = run_all(todo, jobs)
    wall = time.monotonic() - t0
    runs = {}
    for key, mode, _, _ in RUNS:
        j = done.get(key, ({}, None))[0]
        runs[key] = (j, j["modes"][mode] if j else {"samples": {}, "wall_s": None})
    rss_by_run = {key: round(done[key][1]) if key in done else None for key, _, _, _ in RUNS}
    # at most jobs run at once: the largest jobs peaks together bound the machine's
    peak_rss_mb = sum(sorted((v for v in rss_by_run.values() if v is not None), reverse=True)[:jobs])
    first = runs["nbrp"][0]
    links = first["links"]
    out = {"ases": first["routers"], "as_links": links, "seed": args.seed, "origins_per_class": args.origins,
           "bytes_per_router_full_table": runs["nbrp"][1]["bytes_per_router"],
           "nbrp_update_delay_ms": args.update_delay, "nbrp_withdrawal_delay_ms": args.withdrawal_delay}
    for ev, simname in EVENTS.items():
        e = {}
        for key, _, _, _ in RUNS:
            s = runs[key][1].get("samples", {}).get(simname, [])
            e[f"{key}_converge_s"] = p50_p99([round(x[0] / 1000, 6) for x in s])
            e[f"{key}_updates"] = p50_p99([x[1] for x in s])
            e[f"{key}_max_updates_one_router"] = max((x[2] for x in s), default=None)
        e["as_links"] = links
        e["max_updates_one_router"] = e["nbrp_max_updates_one_router"]
        out[ev] = e
    move, wd = out["move"], out["withdraw"]
    out["wall_s"] = round(wall, 1)
    out["wall_s_by_run"] = {key: runs[key][1]["wall_s"] for key, _, _, _ in RUNS}
    out["peak_rss_mb"] = round(peak_rss_mb)
    out["peak_rss_mb_by_run"] = rss_by_run
    out["jobs"] = jobs
    def within(a, b, f):
        """a's p50 and p99 each at most f times b's"""
        return all(a[q] is not None and b[q] is not None and a[q] <= f * b[q] for q in ("p50", "p99"))
    out["targets"] = {
        "move_converge_tenth_of_mrai30": within(move["nbrp_converge_s"], move["bgp_mrai30_converge_s"], 0.1),
        "move_updates_at_most_mrai30": within(move["nbrp_updates"], move["bgp_mrai30_updates"], 1),
        "withdraw_two_updates_per_link": wd["nbrp_updates"]["p99"] is not None and
        wd["nbrp_updates"]["p99"] <= 2 * links,
        "wall_30_min": wall <= TARGET_WALL_S and set(DEFAULT_RUNS.split(",")) <= set(chosen),
        "rss_24_gib": peak_rss_mb <= TARGET_RSS_MB,
        "at_75000_ases": first["routers"] >= 75000,
    }
    print(f"{out['ases']} ASes, {links} links; {out['bytes_per_router_full_table'] / 1024:.1f} KiB a router; "
          f"{out['wall_s']} s, {jobs} at once, peak RSS {out['peak_rss_mb']} MB", file=sys.stderr)
    print(f"  {'event':<18} {'':<13} {'converge s p50':>14} {'p99':>10} {'UPDATEs p50':>12} {'p99':>10}",
          file=sys.stderr)
    for ev in EVENTS:
        for key, _, _, _ in RUNS:
            c, u = out[ev][f"{key}_converge_s"], out[ev][f"{key}_updates"]
            if c["p50"] is None:
                continue
            print(f"  {ev:<18} {key:<13} {c['p50']:>14.3f} {c['p99']:>10.3f} {u['p50']:>12.0f} {u['p99']:>10.0f}",
                  file=sys.stderr)
    print(f"targets: {out['targets']}", file=sys.stderr)
    print(json.dumps(out))


if __name__ == "__main__":
    main()
