#!/usr/bin/env python3
"""sim/topology.py: a graph for the simulator (sim/sim), as its edge list.

  internet N:  an AS graph of Elmokashfi, Kvalbein and Dovrolis's model
               (tier-1 clique, mid-level, content providers, stubs; class
               Elmokashfi below), seeded; with --networkx, networkx's own
               random_internet_as_graph(N, seed) of the same model (slow
               and memory-bound past ~10,000 ASes).  One router per AS, each
               link p2c (provider first) or p2p, a one-way delay drawn from
               1..20 ms (seeded).
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
  stats FILE:  the graph's shape as one JSON line (stats() below), to set
               two generators' graphs side by side.
"""
import argparse
import json
import math
import pathlib
import random
import sys


REGIONS = 5


def uniform_int_from_avg(rng, a, m):
    """an integer >= a of mean m: U(a, floor(b)) rounded, plus one with
    probability (b - floor(b)) / 2, b = 2m - a (the model's draw)"""
    b = 2 * m - a
    fb = math.floor(b)
    return round(rng.random() * (fb - a) + a) + (rng.random() < (b - fb) / 2)


def pref_attach(rng, nodes, weight):
    """one of nodes, with probability proportional to its weight; any of
    them alike when every weight is 0; None when there are none"""
    if not nodes:
        return None
    s = sum(weight[v] for v in nodes)
    if s == 0:
        return rng.choice(nodes)
    x, acc = rng.random() * s, 0
    for v in nodes:
        acc += weight[v]
        if x <= acc and weight[v]:
            return v
    return nodes[-1]


class Elmokashfi:
    """Elmokashfi, Kvalbein and Dovrolis's AS graph model ("On the
    scalability of BGP: the role of topology growth", IEEE JSAC 28(8), 2010),
    step by step as networkx's random_internet_as_graph builds it, with its
    parameters as functions of n: a clique of 4-6 tier-1s (T) in all five
    regions; 15% mid-level (M), 5% content providers (CP), the rest customers
    (C), each joining in that order in one region (M two with probability
    0.2, CP 0.05) with providers drawn from the T and the earlier M of its
    regions by degree (a T with probability 0.375, 0.375, 0.125); then peer
    links M-M (drawn by peer degree, never along a chain of providers),
    CP-M and CP-CP (uniform within the CP's regions).

    networkx keeps every AS's transitive providers and customers as Python
    sets (at 75,000 ASes 260 million pairs, each in two sets: it was
    stopped at 9 GB) and scans every candidate for every link.  Here a
    transitive-provider set is a bitset over the T and M (a Python int),
    customers are tested as "m among j's providers", and weighted draws are
    rejection sampling from lists that hold a node once per link it has,
    exact in distribution, falling back to a scan when most draws miss."""

    TRIES = 64

    def __init__(self, n, seed):
        self.rng = rng = random.Random(seed)
        self.n_t = min(n, round(rng.random() * 2 + 4))
        self.n_m = round(0.15 * n)
        self.n_cp = round(0.05 * n)
        self.n_c = max(0, n - self.n_t - self.n_m - self.n_cp)
        self.d_m = 2 + 2.5 * n / 10000          # providers of an M, mean
        self.d_cp = 2 + 1.5 * n / 10000
        self.d_c = 1 + 5 * n / 100000
        self.p_m_m = 1 + 2 * n / 10000          # peer links an M starts, mean
        self.p_cp_m = 0.2 + 2 * n / 10000
        self.p_cp_cp = 0.05 + 2 * n / 100000
        self.t_m, self.t_cp, self.t_c = 0.375, 0.375, 0.125

    def generate(self):
        """(nodes, [(a, b, 'transit' with a the customer, or 'peer')], kind of each node)"""
        total = self.n_t + self.n_m + self.n_cp + self.n_c
        self.kind = []
        self.deg = [0] * total
        self.peers = [0] * total
        self.regs = []                          # each node's regions
        self.anc = [0] * total                  # transitive providers, a bitset (T, M, CP only)
        self.region_m = [[] for _ in range(REGIONS)]
        self.region_cp = [[] for _ in range(REGIONS)]
        self.region_ends = [[] for _ in range(REGIONS)]     # an M once per link
        self.m_both = {}                        # (r, s): M in both regions
        self.peer_pairs = set()
        self.edges = []
        for i in range(self.n_t):
            self.kind.append("T")
            self.regs.append(tuple(range(REGIONS)))
            for j in range(i):
                self.link(i, j, "peer")
        i = self.n_t
        for kind, count, reg2, d, t in (("M", self.n_m, 0.2, self.d_m, self.t_m),
                                        ("CP", self.n_cp, 0.05, self.d_cp, self.t_cp),
                                        ("C", self.n_c, 0.0, self.d_c, self.t_c)):
            for _ in range(count):
                self.add_node(i, kind, reg2, d, t)
                i += 1
        m_nodes = range(self.n_t, self.n_t + self.n_m)
        cp_nodes = range(self.n_t + self.n_m, self.n_t + self.n_m + self.n_cp)
        self.m_ends = []                        # an M once per peer link
        for m in m_nodes:
            for _ in range(uniform_int_from_avg(self.rng, 0, self.p_m_m)):
                self.add_m_peer(m)
        for to, mean in (("M", self.p_cp_m), ("CP", self.p_cp_cp)):
            for cp in cp_nodes:
                for _ in range(uniform_int_from_avg(self.rng, 0, mean)):
                    self.add_cp_peer(cp, to)
        return total, self.edges, self.kind

    def link(self, a, b, what):
        self.edges.append((a, b, what))
        self.deg[a] += 1
        self.deg[b] += 1
        if what == "peer":
            self.peer_pairs.add((min(a, b), max(a, b)))

    def m_options(self, rs):
        """how many M are in the regions rs"""
        if len(rs) == 1:
            return len(self.region_m[rs[0]])
        return len(self.region_m[rs[0]]) + len(self.region_m[rs[1]]) - self.m_both.get(tuple(sorted(rs)), 0)

    def draw(self, lists, rs, ok):
        """a node from the concatenated lists (each of the regions rs), each
        node as often as it is in them, passing ok(); None after TRIES misses"""
        sizes = [len(x) for x in lists]
        total = sum(sizes)
        if total == 0:
            return None
        for _ in range(self.TRIES):
            k = self.rng.randrange(total)
            for x, size in zip(lists, sizes):
                if k < size:
                    v = x[k]
                    break
                k -= size
            # a node in two of the regions is in both lists: take it half the times
            if len(rs) == 2 and all(r in self.regs[v] for r in rs) and self.rng.random() < 0.5:
                continue
            if ok(v):
                return v
        return None

    def union(self, lists):
        seen, out = set(), []
        for x in lists:
            for v in x:
                if v not in seen:
                    seen.add(v)
                    out.append(v)
        return out

    def add_node(self, i, kind, reg2, avg, t_prob):
        rng = self.rng
        rs = tuple(rng.sample(range(REGIONS), 2 if rng.random() < reg2 else 1))
        want = uniform_int_from_avg(rng, 1, avg)
        t_left = list(range(self.n_t))
        m_left = self.m_options(rs)
        chosen = set()
        anc = 0
        for _ in range(want):
            if not t_left and not m_left:
                break
            if not m_left or (t_left and rng.random() < t_prob):
                j = pref_attach(rng, t_left, self.deg)
                t_left.remove(j)
            else:
                # by degree: an M is in its regions' lists once per link
                j = self.draw([self.region_ends[r] for r in rs], rs, lambda v: v not in chosen)
                if j is None:
                    j = pref_attach(rng, [v for v in self.union([self.region_m[r] for r in rs]) if v not in chosen],
                                    self.deg)
                chosen.add(j)
                m_left -= 1
                for r in self.regs[j]:
                    self.region_ends[r].append(j)
            self.link(i, j, "transit")
            anc |= self.anc[j] | (1 << j)
        self.kind.append(kind)
        self.regs.append(rs)
        if kind != "C":
            self.anc[i] = anc
        if kind == "M":
            for r in rs:
                self.region_m[r].append(i)
                self.region_ends[r].extend([i] * self.deg[i])
            if len(rs) == 2:
                key = tuple(sorted(rs))
                self.m_both[key] = self.m_both.get(key, 0) + 1
        elif kind == "CP":
            for r in rs:
                self.region_cp[r].append(i)

    def add_m_peer(self, m):
        """a peer link from M m to an M drawn by peer degree (any alike while
        none has peers), neither m's transitive provider nor customer, nor
        already linked"""
        bit, anc = 1 << m, self.anc[m]

        def ok(j):
            return j != m and not (anc >> j) & 1 and not self.anc[j] & bit and (min(m, j), max(m, j)) not in self.peer_pairs

        m_nodes = range(self.n_t, self.n_t + self.n_m)
        j = None
        for _ in range(self.TRIES):
            v = self.rng.choice(self.m_ends) if self.m_ends else self.rng.choice(m_nodes)
            if ok(v):
                j = v
                break
        if j is None:
            j = pref_attach(self.rng, [v for v in m_nodes if ok(v)], self.peers)
            if j is None:
                return
        self.link(m, j, "peer")
        self.peers[m] += 1
        self.peers[j] += 1
        self.m_ends += (m, j)

    def add_cp_peer(self, cp, to):
        """a peer link from CP cp to an M or CP of its regions, uniform, not
        its transitive provider nor already linked"""
        rs = self.regs[cp]
        anc = self.anc[cp]

        def ok(j):
            return j != cp and not (anc >> j) & 1 and (min(cp, j), max(cp, j)) not in self.peer_pairs

        lists = [(self.region_m if to == "M" else self.region_cp)[r] for r in rs]
        j = self.draw(lists, rs, ok)
        if j is None:
            cand = [v for v in self.union(lists) if ok(v)]
            if not cand:
                return
            j = self.rng.choice(cand)
        self.link(cp, j, "peer")
        self.peers[cp] += 1
        self.peers[j] += 1


def internet(n, seed):
    """the model's graph: p2c links provider first, p2p links, a delay each"""
    total, edges, _ = Elmokashfi(n, seed).generate()
    rels = []
    for a, b, what in edges:
        if what == "transit":
            rels.append((min(a, b), max(a, b), b, a))      # b provides to a
        else:
            rels.append((min(a, b), max(a, b), None, None))
    rng = random.Random(seed)
    links = []
    for a, b, prov, cust in sorted(rels, key=lambda e: e[:2]):
        if prov is None:
            links.append((a, b, "p2p", rng.randint(1000, 20000)))
        else:
            links.append((prov, cust, "p2c", rng.randint(1000, 20000)))
    return total, links, {}


def internet_networkx(n, seed):
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


def read(path):
    """(routers, [(a, b, rel, delay_us)]) of a graph file"""
    n, links = 0, []
    with open(path) as f:
        for line in f:
            w = line.split("#")[0].split()
            if w and w[0] == "routers":
                n = int(w[1])
            elif w and w[0] == "link":
                links.append((int(w[1]), int(w[2]), w[3], int(w[4])))
    return n, links


def stats(n, links):
    """what a graph's shape is judged by: links, the share that are p2p,
    the tiers (no provider; no customer), the degrees' tail, multihoming
    and the largest customer cone"""
    deg = [0] * n
    provs = [[] for _ in range(n)]
    custs = [[] for _ in range(n)]
    for a, b, rel, _ in links:
        deg[a] += 1
        deg[b] += 1
        if rel == "p2c":
            custs[a].append(b)
            provs[b].append(a)
    tier1 = [v for v in range(n) if not provs[v]]
    below = [v for v in range(n) if provs[v]]

    def cone(v):
        seen, todo = {v}, [v]
        while todo:
            for c in custs[todo.pop()]:
                if c not in seen:
                    seen.add(c)
                    todo.append(c)
        return len(seen)

    by_deg = sorted(deg, reverse=True)
    return {
        "routers": n,
        "links": len(links),
        "p2p_share": sum(1 for link in links if link[2] == "p2p") / max(len(links), 1),
        "tier1": len(tier1),
        "transit": sum(1 for v in below if custs[v]),
        "stub_share": sum(1 for v in range(n) if not custs[v]) / n,
        "degree1_share": sum(1 for d in deg if d == 1) / n,
        "max_degree": by_deg[0],
        "top1pct_degree_share": sum(by_deg[:max(n // 100, 1)]) / max(sum(deg), 1),
        "providers_mean": sum(len(provs[v]) for v in below) / max(len(below), 1),
        "max_cone_share": max((cone(v) for v in tier1), default=0) / n,
    }


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("kind", choices=("internet", "testbed", "stats"))
    ap.add_argument("n", help="routers; for stats, a graph file")
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--networkx", action="store_true",
                    help="internet: networkx's own random_internet_as_graph (slow, and memory-bound past ~10,000)")
    ap.add_argument("-o", "--output", default="-")
    args = ap.parse_args()
    if args.kind == "stats":
        print(json.dumps(stats(*read(args.n))))
        return
    n = int(args.n)
    if args.kind == "testbed":
        routers, links, marks = testbed(n, args.seed)
    else:
        routers, links, marks = (internet_networkx if args.networkx else internet)(n, args.seed)
    out = sys.stdout if args.output == "-" else open(args.output, "w")
    gen = " networkx" if args.networkx else ""
    out.write(f"# {args.kind}{gen} {n} seed {args.seed}\nrouters {routers}\n")
    for a, b, rel, us in links:
        out.write(f"link {a} {b} {rel} {us}\n")
    for label, r in sorted(marks.items()):
        out.write(f"mark {label} {r}\n")
    if out is not sys.stdout:
        out.close()


if __name__ == "__main__":
    main()
