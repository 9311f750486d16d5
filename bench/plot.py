#!/usr/bin/env python3
"""The pictures of docs/BENCHMARKS.md, drawn from the runs recorded by
`scripts/bench --record SUBCOMMAND` (docs/benchmarks/results/NAME.jsonl,
one JSON object a line: when, which commit, on what machine, the
benchmark's own JSON).  Each picture is the latest recorded run; a
benchmark with no record is skipped and said so.  SVG, with no date in
it, so the same records give the same files."""

import argparse
import json
import os
import sys

import matplotlib
matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402

plt.rcParams["svg.hashsalt"] = "content-router"
plt.rcParams["font.size"] = 9
OURS, REF, FLOOR = "#1f77b4", "#9e9e9e", "#d9d9d9"


def records(results, name):
    """Every recorded run of the benchmark, oldest first ([] if none)."""
    path = os.path.join(results, f"{name}.jsonl")
    if not os.path.exists(path):
        return []
    with open(path) as f:
        return [json.loads(l) for l in f if l.strip()]


def caption(rec):
    return f"{rec['date']}, {rec['commit']}, {rec['machine']}"


def save(fig, out, name):
    path = os.path.join(out, f"bench-{name}.svg")
    fig.savefig(path, format="svg", bbox_inches="tight", metadata={"Date": None})
    plt.close(fig)
    print(f"wrote {path}")


def bars(ax, labels, values, colours, fmt):
    b = ax.bar(labels, values, color=colours)
    for rect, v in zip(b, values):
        ax.annotate(fmt.format(v), (rect.get_x() + rect.get_width() / 2, rect.get_height()),
                    ha="center", va="bottom", fontsize=8)
    ax.spines[["top", "right"]].set_visible(False)


def inrp(rec, out):
    r = rec["result"]
    fig, (a, b, c) = plt.subplots(1, 3, figsize=(10, 3))
    servers = ["inrpd", "NSD", "Unbound"]
    bars(a, servers, [r["inrpd_qps"], r["nsd_qps"], r["unbound_qps"]], [OURS, REF, REF], "{:,.0f}")
    a.set_title("queries/s (higher is better)")
    bars(b, servers + ["echo floor"], [r["inrpd_cpu_us_per_query"], r["nsd_cpu_us_per_query"],
                                      r["unbound_cpu_us_per_query"], r["echo_cpu_us_per_query"]],
         [OURS, REF, REF, FLOOR], "{:.2f}")
    b.set_title("CPU us a query (lower is better)")
    bars(c, servers, [r["inrpd_bytes_per_name"], r["nsd_bytes_per_name"], r["unbound_bytes_per_name"]],
         [OURS, REF, REF], "{:,.0f}")
    c.set_title("bytes a name (lower is better)")
    fig.suptitle(f"inrpd answering {r['names']:,} local routes beside NSD and Unbound ({caption(rec)})", fontsize=9)
    save(fig, out, "inrp")


def cache(rec, out):
    r = rec["result"]
    fig, (a, b) = plt.subplots(1, 2, figsize=(7, 3))
    bars(a, ["inrpd", "dnsdist"], [r["inrpd_cache_qps"], r["dnsdist_cache_qps"]], [OURS, REF], "{:,.0f}")
    a.set_title("queries/s from a warm cache")
    bars(b, ["inrpd", "dnsdist", "echo floor"], [r["inrpd_cache_cpu_us_per_query"],
                                                  r["dnsdist_cache_cpu_us_per_query"], r["echo_cpu_us_per_query"]],
         [OURS, REF, FLOOR], "{:.2f}")
    b.set_title("CPU us a query (lower is better)")
    fig.suptitle(f"packet cache beside dnsdist's ({caption(rec)})", fontsize=9)
    save(fig, out, "cache")


def lines(xs, ours, ref, labels, xlabel, ylabel, title):
    """Ours against the reference, one point for each x."""
    fig, ax = plt.subplots(figsize=(5, 3))
    ax.plot(xs, ours, "o-", color=OURS, label=labels[0])
    ax.plot(xs, ref, "s--", color=REF, label=labels[1])
    ax.set_xlabel(xlabel)
    ax.set_ylabel(ylabel)
    ax.set_ylim(bottom=0)
    ax.legend(frameon=False)
    ax.spines[["top", "right"]].set_visible(False)
    ax.set_title(title, fontsize=9)
    return fig


def nbrp(rec, out):
    r = rec["result"]
    fig = lines(r["peers"], [v / 1e6 for v in r["nbrp_names_per_s"]], [v / 1e6 for v in r["bird_routes_per_s"]],
                ("nbrpd (NBRP)", "BIRD 2 (BGP)"), "K sinks the router passes the names to",
                "million names (routes) a second", f"{r['names']:,} names through one router ({caption(rec)})")
    save(fig, out, "nbrp")


def topology(recs, out):
    pts = sorted((rec["result"]["routers"], rec["result"]["nbrp_converge_ms"], rec["result"]["bird_converge_ms"])
                 for rec in recs)
    fig = lines([p[0] for p in pts], [p[1] for p in pts], [p[2] for p in pts],
                ("NBRP: the last inrpd's new answer", "BGP: the last BIRD's new route"), "routers",
                "ms to converge (median of the moves)", f"a name moving between ISPs ({caption(recs[-1])})")
    save(fig, out, "topology")


def fib(rec, out):
    r = rec["result"]
    fig, (a, b) = plt.subplots(1, 2, figsize=(7, 3))
    bars(a, ["name table\n(longest suffix)", "hash table\n(exact match)"], [r["lookup_ns"], r["baseline_exact_ns"]],
         [OURS, REF], "{:.1f}")
    a.set_title("ns a lookup (lower is better)")
    bars(b, ["name table", "hash table"], [r["bytes_per_name"], r["baseline_bytes_per_name"]], [OURS, REF], "{:.1f}")
    b.set_title("bytes a name (lower is better)")
    fig.suptitle(f"{r['names']:,} names ({caption(rec)})", fontsize=9)
    save(fig, out, "fib")


def main():
    here = os.path.dirname(os.path.abspath(__file__))
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--results", default=os.path.join(here, "..", "docs", "benchmarks", "results"))
    ap.add_argument("--out", default=os.path.join(here, "..", "docs", "img"))
    args = ap.parse_args()
    os.makedirs(args.out, exist_ok=True)
    drawn = 0
    for name, draw in (("inrp", inrp), ("cache", cache), ("nbrp", nbrp), ("fib", fib)):
        recs = records(args.results, name)
        if not recs:
            print(f"plot: no recorded run of {name} (scripts/bench --record {name})", file=sys.stderr)
            continue
        draw(recs[-1], args.out)
        drawn += 1
    # the latest run at each size
    by_size = {}
    for rec in records(args.results, "topology"):
        by_size[rec["result"]["routers"]] = rec
    if by_size:
        topology(list(by_size.values()), args.out)
        drawn += 1
    else:
        print("plot: no recorded run of topology (scripts/bench --record topology)", file=sys.stderr)
    print(json.dumps({"pictures": drawn}))


if __name__ == "__main__":
    main()
