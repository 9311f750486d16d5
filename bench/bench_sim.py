#!/usr/bin/env python3
"""scripts/bench sim: NBRP at Internet scale, simulated (docs/SIMULATION.md).

  default:   an Internet-like AS graph of --ases N (1,000) ASes
             (sim/topology.py: Elmokashfi et al.'s model, seeded; with
             --networkx, networkx's own generator of it),
             nbrpd's RDE in every AS, Gao-Rexford; each event (announce,
             withdraw, move, an aggregate's next version, at --origins stub,
             mid and tier-1 origins each; the session between the two
             biggest transit ASes failing and coming back; a mid AS's link
             flapping) in each mode: nbrp (origin withdrawals on, no MRAI),
             pv (origin withdrawals off: plain path-vector exploration), bgp
             (off, and a 30 s MRAI per session).  A table a mode on stderr.
  --testbed N: the graph of `scripts/bench topology --routers N` (same seed),
             its move of bench.content between its leaves X and Y, --rounds
             times; with --compare, the testbed itself runs after it (root,
             network namespaces, heavy) and the UPDATE counts are set side by
             side, with the simulation's bracket (update_bracket), and the
             order the routers settled in compared (order_agreement).

The graph files are kept in build/bench/ (sim-as-N-S.txt, networkx's
sim-networkx-N-S.txt; the 75,000-AS one takes the generator 13 s).  The last
line of output is one JSON object.
"""
import argparse
import json
import os
import pathlib
import subprocess
import sys

ROOT = pathlib.Path(__file__).resolve().parents[1]


def topology(kind, n, seed, build, networkx=False):
    name = "networkx" if networkx else "as" if kind == "internet" else kind
    out = build / "bench" / f"sim-{name}-{n}-{seed}.txt"
    if not out.exists():
        out.parent.mkdir(parents=True, exist_ok=True)
        tmp = out.with_suffix(".tmp")
        subprocess.run(["/usr/bin/python3", str(ROOT / "sim" / "topology.py"), kind, str(n), "--seed", str(seed),
                        "-o", str(tmp), *(["--networkx"] if networkx else [])], check=True)
        tmp.rename(out)
    return out


def calibration(path):
    """sim's cost options from the last line of `scripts/bench nbrp` (docs/SIMULATION.md, "Cost model")"""
    j = json.loads(pathlib.Path(path).read_text().strip().splitlines()[-1])
    names = j["nbrp_names_per_s"]
    name_us = 1e6 / names[0]
    update_us = 1e6 / j["agg1_names_per_s"][0] - name_us
    peer_name_us = (1e6 / names[-1] - name_us) / (len(names) - 1) if len(names) > 1 else 0.0
    return ["--cost-name-us", f"{name_us:.4f}", "--cost-update-us", f"{max(update_us, 0):.4f}",
            "--cost-peer-name-us", f"{max(peer_name_us, 0):.4f}"]


def ranks(values):
    """ranks 1..n, ties sharing their mean rank"""
    order = sorted(range(len(values)), key=lambda i: values[i])
    out = [0.0] * len(values)
    i = 0
    while i < len(order):
        j = i
        while j + 1 < len(order) and values[order[j + 1]] == values[order[i]]:
            j += 1
        for k in range(i, j + 1):
            out[order[k]] = (i + j) / 2 + 1
        i = j + 1
    return out


def spearman(a, b):
    """rank correlation of two {router: ms}, over the routers in both; None when fewer than 3"""
    common = sorted(set(a) & set(b))
    if len(common) < 3:
        return None
    x, y = ranks([a[r] for r in common]), ranks([b[r] for r in common])
    mx, my = sum(x) / len(x), sum(y) / len(y)
    sxy = sum((p - mx) * (q - my) for p, q in zip(x, y))
    sxx, syy = sum((p - mx) ** 2 for p in x), sum((q - my) ** 2 for q in y)
    return round(sxy / (sxx * syy) ** 0.5, 3) if sxx and syy else None


def hops_from(links, origin):
    """{router: links from origin} over the graph's links (NBRP sessions run along every one)"""
    near = {}
    for a, b, *_ in links:
        near.setdefault(a, []).append(b)
        near.setdefault(b, []).append(a)
    dist, todo = {origin: 0}, [origin]
    for r in todo:
        for q in near.get(r, ()):
            if q not in dist:
                dist[q] = dist[r] + 1
                todo.append(q)
    return dist


def wave_order(settled, hops):
    """Of the pairs of routers at different distances from the new origin
    (hops), the share where the nearer settled first (ties half): 1 for a
    wave that keeps to the distance bands, 0.5 for no order at all"""
    rs = [r for r in settled if r in hops]
    good = pairs = 0
    for i, a in enumerate(rs):
        for b in rs[i + 1:]:
            if hops[a] == hops[b]:
                continue
            near, far = (a, b) if hops[a] < hops[b] else (b, a)
            pairs += 1
            good += 1 if settled[near] < settled[far] else 0.5 if settled[near] == settled[far] else 0
    return round(good / pairs, 3) if pairs else None


def order_agreement(sim, real, hops):
    """How the order the routers settled in agrees, for one move: rank
    correlation of the two, of each with the distance, and wave_order of each"""
    return {"spearman": spearman(sim, real), "sim_hops_spearman": spearman(sim, hops),
            "testbed_hops_spearman": spearman(real, hops), "sim_wave_order": wave_order(sim, hops),
            "testbed_wave_order": wave_order(real, hops)}


def testbed_graph(path):
    """A testbed graph file's links [(rA, rB)] and marks {x: rX, y: rY}"""
    links, marks = [], {}
    for line in pathlib.Path(path).read_text().splitlines():
        w = line.split("#")[0].split()
        if w and w[0] == "link":
            links.append((f"r{w[1]}", f"r{w[2]}"))
        elif w and w[0] == "mark":
            marks[w[1]] = f"r{w[2]}"
    return links, marks


def new_origins(marks, rounds):
    """The router each move gives the name to: Y, X, Y, ... (the moves alternate in both)"""
    return [marks["y"] if i % 2 == 0 else marks["x"] for i in range(rounds)]


def testbed_cmd(sim, graph, seed, rounds, modes="nbrp,pv", lag_ms=0):
    """sim on a testbed graph file (topology("testbed", ...)), making its moves"""
    return [str(sim), "--topology", str(graph), "--seed", str(seed), "--modes", modes,
            "--names", "0", "--move", "x", "y", "--rounds", str(rounds), "--move-lag-ms", str(lag_ms)]


LAG_MS = 5      # longer than a move takes the simulation: its two waves apart


def update_bracket(sim, graph, seed, rounds):
    """[(fewest, most)] UPDATEs of each move in the simulation, its announcement
    LAG_MS before the withdrawal, at once, and LAG_MS after: the testbed's two
    reloads take effect one after the other, in either order"""
    counts = [[r["updates"] for r in run([*testbed_cmd(sim, graph, seed, rounds, "nbrp", lag), "--quiet"])
               ["modes"]["nbrp"]["rounds"]] for lag in (-LAG_MS, 0, LAG_MS)]
    return [(min(c), max(c)) for c in zip(*counts)]


def run(cmd):
    """The simulator's JSON (its last line)"""
    p = subprocess.run(cmd, stdout=subprocess.PIPE, check=True)
    return json.loads(p.stdout.decode().splitlines()[-1])


def table(result):
    for mode, m in result["modes"].items():
        print(f"\n{mode}: origin withdrawals {'on' if m['origin_withdrawals'] else 'off'}, MRAI {m['mrai_s']} s; "
              f"{m['bytes_per_router'] / 1024:.1f} KiB a router; {m['wall_s']} s", file=sys.stderr)
        print(f"  {'event':<20} {'converged ms':>13} {'max ms':>10} {'UPDATEs':>9} {'bytes':>10} "
              f"{'best changes':>13} {'routers':>8} {'peak queue':>10}", file=sys.stderr)
        for ev, t in m.get("events", {}).items():
            print(f"  {ev:<20} {t['converge_ms']:>13.1f} {t['converge_max_ms']:>10.1f} {t['updates']:>9.0f} "
                  f"{t['bytes']:>10.0f} {t['best_changes']:>13.0f} {t['routers_changed']:>8.0f} "
                  f"{t['peak_queue']:>10}", file=sys.stderr)
        for i, r in enumerate(m.get("rounds", [])):
            print(f"  move {i + 1}: {r['updates']} UPDATEs, {r['bytes']} B, converged {r['converge_ms']:.2f} ms, "
                  f"{r['best_changes']} best changes", file=sys.stderr)
            r.pop("settled_by_router")      # in the comparison below, not in the record


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--build", default=str(ROOT / "build"))
    ap.add_argument("--ases", type=int, default=1000)
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--networkx", action="store_true", help="networkx's generator of the graph (up to ~10,000 ASes)")
    ap.add_argument("--origins", type=int, default=3, help="origins of each class (stub, mid, tier-1)")
    ap.add_argument("--names", type=int, default=16, help="background names, from random ASes")
    ap.add_argument("--modes", default="nbrp,pv,bgp")
    ap.add_argument("--mrai", type=int, default=30)
    ap.add_argument("--testbed", type=int, default=0, metavar="N", help="the testbed's graph of N routers instead")
    ap.add_argument("--rounds", type=int, default=5)
    ap.add_argument("--compare", action="store_true", help="with --testbed: run scripts/bench topology too")
    ap.add_argument("--calibrate", metavar="FILE",
                    help="the output of `scripts/bench nbrp` on this machine: the cost model's figures from it")
    ap.add_argument("sim_args", nargs="*", help="passed to sim (after --)")
    args = ap.parse_args()
    build = pathlib.Path(args.build)
    if args.testbed:
        graph = topology("testbed", args.testbed, args.seed, build)
        cmd = [*testbed_cmd(build / "sim" / "sim", graph, args.seed, args.rounds,
                            "nbrp,pv" if args.modes == "nbrp,pv,bgp" else args.modes), *args.sim_args]
    else:
        topo = topology("internet", args.ases, args.seed, build, args.networkx)
        cmd = [str(build / "sim" / "sim"), "--topology", str(topo), "--seed", str(args.seed), "--modes", args.modes,
               "--mrai", str(args.mrai), "--origins", str(args.origins), "--names", str(args.names), *args.sim_args]
    if args.calibrate:
        cmd[1:1] = calibration(args.calibrate)
    print(" ".join(cmd), file=sys.stderr)
    result = run(cmd)
    order = [r["settled_by_router"] for r in result["modes"].get("nbrp", {}).get("rounds", [])]
    table(result)
    if args.testbed and args.compare:
        # on every CPU: scripts/bench pins the simulator to one, not the testbed's hundreds of processes
        q = subprocess.run(["/usr/bin/python3", str(ROOT / "bench" / "bench_topology.py"), "--routers",
                            str(args.testbed), "--seed", str(args.seed), "--rounds", str(args.rounds)],
                           stdout=subprocess.PIPE, check=True,
                           preexec_fn=lambda: os.sched_setaffinity(0, range(os.cpu_count())))
        real = json.loads(q.stdout.decode().splitlines()[-1])
        sim = [r["updates"] for r in result["modes"]["nbrp"]["rounds"]]
        result["testbed"] = {k: real[k] for k in ("nbrp_updates_rounds", "bird_updates_rounds", "nbrp_converge_ms_rounds",
                                                   "nbrp_settled_ms_rounds", "nbrp_rde_settled_ms_rounds", "bird_converge_ms_rounds",
                                                   "nbrp_settled_by_router_rounds")}
        result["sim_settled_by_router_rounds"] = order
        # the testbed's moves alternate as the simulator's do: round i is the same move in both
        for mode, key in (("nbrp", "nbrp_updates_rounds"), ("pv", "bird_updates_rounds")):
            if mode not in result["modes"]:
                continue
            sim = [r["updates"] for r in result["modes"][mode]["rounds"]]
            real_rounds = real[key]
            result[f"{mode}_updates_sim_over_testbed"] = [round(a / b, 3) for a, b in zip(sim, real_rounds) if b]
            print(f"\nUPDATEs a move, {mode} against the testbed's {key}: simulated {sim}, testbed {real_rounds}",
                  file=sys.stderr)
        bracket = update_bracket(build / "sim" / "sim", graph, args.seed, args.rounds)
        result["nbrp_updates_bracket_rounds"] = bracket
        print(f"the simulation's moves, the announcement {LAG_MS} ms before the withdrawal and after it: {bracket}",
              file=sys.stderr)
        # the order the routers settled in: each nbrpd's last best change in the testbed, each RDE's here
        links, marks = testbed_graph(graph)
        agree = [order_agreement(s, t, hops_from(links, o)) for s, t, o in
                 zip(order, real["nbrp_settled_by_router_rounds"], new_origins(marks, args.rounds))]
        result["settled_order_rounds"] = agree
        for k in agree[0] if agree else ():
            print(f"the order the routers settled in, {k} a move: {[a[k] for a in agree]}", file=sys.stderr)
    print(json.dumps(result))


if __name__ == "__main__":
    main()
