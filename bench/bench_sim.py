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
             side.

The graph files are kept in build/bench/ (sim-as-N-S.txt, networkx's
sim-networkx-N-S.txt; the 75,000-AS one takes the generator 13 s).  The last
line of output is one JSON object.
"""
import argparse
import json
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
        topo = topology("testbed", args.testbed, args.seed, build)
        cmd = [str(build / "sim" / "sim"), "--topology", str(topo), "--seed", str(args.seed),
               "--modes", "nbrp,pv" if args.modes == "nbrp,pv,bgp" else args.modes, "--names", "0", "--move", "x", "y", "--rounds", str(args.rounds), *args.sim_args]
    else:
        topo = topology("internet", args.ases, args.seed, build, args.networkx)
        cmd = [str(build / "sim" / "sim"), "--topology", str(topo), "--seed", str(args.seed), "--modes", args.modes,
               "--mrai", str(args.mrai), "--origins", str(args.origins), "--names", str(args.names), *args.sim_args]
    if args.calibrate:
        cmd[1:1] = calibration(args.calibrate)
    print(" ".join(cmd), file=sys.stderr)
    p = subprocess.run(cmd, stdout=subprocess.PIPE, check=True)
    result = json.loads(p.stdout.decode().splitlines()[-1])
    order = [r["settled_by_router"] for r in result["modes"].get("nbrp", {}).get("rounds", [])]
    table(result)
    if args.testbed and args.compare:
        q = subprocess.run(["/usr/bin/python3", str(ROOT / "bench" / "bench_topology.py"), "--routers",
                            str(args.testbed), "--seed", str(args.seed), "--rounds", str(args.rounds)],
                           stdout=subprocess.PIPE, check=True)
        real = json.loads(q.stdout.decode().splitlines()[-1])
        sim = [r["updates"] for r in result["modes"]["nbrp"]["rounds"]]
        result["testbed"] = {k: real[k] for k in ("nbrp_updates_rounds", "bird_updates_rounds", "nbrp_converge_ms_rounds",
                                                   "nbrp_settled_ms_rounds", "bird_converge_ms_rounds",
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
        # the order the routers settled in: each inrpd's last change in the testbed, each RDE's here
        rho = [spearman(s, t) for s, t in zip(order, real.get("nbrp_settled_by_router_rounds", []))]
        result["settled_order_spearman_rounds"] = rho
        print(f"the order the routers settled in, rank correlation a move: {rho}", file=sys.stderr)
    print(json.dumps(result))


if __name__ == "__main__":
    main()
