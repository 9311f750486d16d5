#!/usr/bin/env python3
"""The simulator's pictures (docs/SIMULATION.md), drawn from the runs kept
by `scripts/bench --record internet ...` (docs/benchmarks/results/internet.jsonl):
for each event, convergence time and UPDATEs against the AS count, NBRP
beside BGP at a 30 s MRAI and at none; the median over origins, the bar
up to the 99th percentile.  Of the runs at one AS count and seed, the
latest.  SVG, with no date in it, so the same records give the same files."""

import argparse
import json
import os
import sys

import matplotlib
matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402

plt.rcParams["svg.hashsalt"] = "content-router"
plt.rcParams["font.size"] = 9

EVENTS = ("announce", "withdraw", "move", "aggregate_version", "transit_failure", "flap")
# BGP at no MRAI dashed: where it matches NBRP (announcements) NBRP's line shows through
RUNS = (("nbrp", "NBRP", "#1f77b4", "o", "-"), ("bgp_mrai30", "BGP, MRAI 30 s", "#9e9e9e", "s", "-"),
        ("bgp_mrai0", "BGP, MRAI 0 s", "#d62728", "^", "--"))
FLOOR = 1e-3    # a log axis: an event that took no time drawn at the floor


def latest_by_size(path):
    runs = {}
    with open(path) as f:
        for line in f:
            if line.strip():
                r = json.loads(line)["result"]
                runs[(r["ases"], r.get("seed"))] = r
    return [runs[k] for k in sorted(runs)]


def panel(ax, runs, ev, what, ylabel):
    for key, label, colour, marker, style in RUNS:
        pts = [(r["ases"], r[ev][f"{key}_{what}"]) for r in runs if r[ev][f"{key}_{what}"]["p50"] is not None]
        if not pts:
            continue
        x = [p[0] for p in pts]
        y = [max(p[1]["p50"], FLOOR) for p in pts]
        up = [max(p[1]["p99"], FLOOR) - v for p, v in zip(pts, y)]
        ax.errorbar(x, y, yerr=[[0] * len(up), up], label=label, color=colour, marker=marker, linestyle=style,
                    capsize=2)
    ax.set_xscale("log")
    ax.set_yscale("log")
    ax.set_xticks([r["ases"] for r in runs], [f"{r['ases']:,}" for r in runs])
    ax.minorticks_off()
    ax.set_title(ev.replace("_", " "))
    ax.set_xlabel("ASes")
    ax.set_ylabel(ylabel)
    ax.spines[["top", "right"]].set_visible(False)


def main():
    root = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--results", default=os.path.join(root, "docs", "benchmarks", "results"))
    ap.add_argument("--out", default=os.path.join(root, "docs", "img"))
    args = ap.parse_args()
    path = os.path.join(args.results, "internet.jsonl")
    if not os.path.exists(path):
        print(f"plot_sim: no runs in {path} (scripts/bench --record internet --ases N): skipped", file=sys.stderr)
        return 0
    runs = latest_by_size(path)
    for what, ylabel, name in (("converge_s", "seconds to converge", "sim-converge"),
                               ("updates", "UPDATEs", "sim-updates")):
        fig, axes = plt.subplots(2, 3, figsize=(11, 6))
        for ax, ev in zip(axes.flat, EVENTS):
            panel(ax, runs, ev, what, ylabel)
        axes.flat[0].legend(fontsize=8)
        fig.suptitle(f"{ylabel} after each event, against the graph's size (median over origins, bar to p99)")
        fig.tight_layout()
        out = os.path.join(args.out, f"{name}.svg")
        fig.savefig(out, format="svg", bbox_inches="tight", metadata={"Date": None})
        plt.close(fig)
        print(f"wrote {out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
