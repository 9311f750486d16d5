#!/usr/bin/env python3
"""sim/topology.py: a graph for the simulator (sim/sim), as its edge list.

  internet N:  networkx's random_internet_as_graph(N, seed) (Elmokashfi et
               al.'s model: tier-1 clique, mid-level, content providers,
               stubs), one router per AS, each link p2c (provider first) or
               p2p, a one-way delay drawn from 1..20 ms (seeded).
  testbed N:   the graph `scripts/bench topology --routers N --seed S`
               builds (bench/bench_topology.py's graph()), every link
               `flat` (no relationship: everything is exported both ways at
               one preference, as the testbed's nbrpd does), 0.1 ms a link
               (veth), with `mark x` and `mark y` the two leaves it moves
               its name between.

The file (sim/topo.c reads it; '#' starts a comment):
  routers N
  link A B p2c|p2p|flat DELAY_US      routers are 0..N-1, named rA in paths
  mark LABEL ROUTER
"""
import argparse
import pathlib
import random
import sys


def internet(n, seed):
    import networkx as nx
    g = nx.random_internet_as_graph(n, seed=seed)
    rng = random.Random(seed)
    links = []
    for a, b, d in sorted(g.edges(data=True)):
        if d.get("type") == "transit":
            cust = int(d["customer"])
            prov = b if cust == a else a
            links.append((prov, cust, "p2c", rng.randint(1000, 20000)))
        else:
            links.append((a, b, "p2p", rng.randint(1000, 20000)))
    return g.number_of_nodes(), links, {}


def testbed(n, seed):
    root = pathlib.Path(__file__).resolve().parents[1]
    sys.path.insert(0, str(root / "bench"))
    sys.path.insert(0, str(root / "tests" / "integration"))
    import bench_topology
    routers, links, x, y = bench_topology.graph(n, seed)
    idx = {r: int(r[1:]) for r in routers}
    return len(routers), [(idx[a], idx[b], "flat", 100) for a, b, _ in links], {"x": idx[x], "y": idx[y]}


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("kind", choices=("internet", "testbed"))
    ap.add_argument("n", type=int)
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("-o", "--output", default="-")
    args = ap.parse_args()
    n, links, marks = (internet if args.kind == "internet" else testbed)(args.n, args.seed)
    out = sys.stdout if args.output == "-" else open(args.output, "w")
    out.write(f"# {args.kind} {args.n} seed {args.seed}\nrouters {n}\n")
    for a, b, rel, us in links:
        out.write(f"link {a} {b} {rel} {us}\n")
    for label, r in sorted(marks.items()):
        out.write(f"mark {label} {r}\n")
    if out is not sys.stdout:
        out.close()


if __name__ == "__main__":
    main()
