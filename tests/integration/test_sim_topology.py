"""sim/topology.py's AS graphs (docs/SIMULATION.md, "The graph file").

The default generator builds Elmokashfi, Kvalbein and Dovrolis's model
itself, so that 75,000 ASes fit in memory; these tests hold it to
networkx's random_internet_as_graph, the same model's reference: for 1,000
and 3,000 ASes, over four seeds, the graphs' means agree within the
tolerances below (each well under the seed-to-seed spread of either
generator), and every graph obeys the model's rules.
"""
import pathlib
import subprocess
import sys

import pytest

REPO = pathlib.Path(__file__).resolve().parents[2]
sys.path.insert(0, str(REPO / "sim"))
import topology  # noqa: E402

SEEDS = (1, 2, 3, 4)

# stat: (kind, tolerance) on the mean over SEEDS; rel = relative, abs = absolute
TOLERANCE = {
    "links": ("rel", 0.03),
    "p2p_share": ("abs", 0.015),
    "tier1": ("abs", 0),                # drawn first from the seed by both: the same
    "transit": ("rel", 0.05),
    "stub_share": ("abs", 0.01),
    "degree1_share": ("abs", 0.015),
    "max_degree": ("rel", 0.25),
    "top1pct_degree_share": ("abs", 0.02),
    "providers_mean": ("rel", 0.03),
    "max_cone_share": ("abs", 0.04),
}


def mean_stats(gen, n):
    rows = [topology.stats(*gen(n, seed)[:2]) for seed in SEEDS]
    return {k: sum(r[k] for r in rows) / len(rows) for k in TOLERANCE}


@pytest.mark.parametrize("n", [1000, 3000])
def test_the_graph_agrees_with_networkx(n):
    pytest.importorskip("networkx")
    ours, theirs = mean_stats(topology.internet, n), mean_stats(topology.internet_networkx, n)
    for k, (kind, tol) in TOLERANCE.items():
        diff = abs(ours[k] - theirs[k])
        if kind == "rel":
            diff /= theirs[k]
        assert diff <= tol, f"{n} ASes, {k}: ours {ours[k]:.4g}, networkx {theirs[k]:.4g}"


def providers_above(n, links):
    """{AS: its transitive providers}; fails on a cycle of providers"""
    provs = {v: [] for v in range(n)}
    for a, b, rel, _ in links:
        if rel == "p2c":
            provs[b].append(a)
    above, state = {}, {}

    def walk(v):
        if state.get(v) == "open":
            raise AssertionError(f"r{v} is its own provider")
        if v not in above:
            state[v] = "open"
            s = set()
            for p in provs[v]:
                s |= walk(p) | {p}
            above[v], state[v] = s, "done"
        return above[v]

    for v in range(n):
        walk(v)
    return above


@pytest.mark.parametrize("gen", ["internet", "internet_networkx"])
def test_the_graph_keeps_the_model_rules(gen):
    if gen == "internet_networkx":
        pytest.importorskip("networkx")
    n, links, _ = getattr(topology, gen)(3000, 5)
    pairs = {(min(a, b), max(a, b)) for a, b, _, _ in links}
    assert len(pairs) == len(links), "a pair linked twice"
    above = providers_above(n, links)
    tier1 = [v for v in range(n) if not above[v]]
    assert 4 <= len(tier1) <= 6
    # the tier-1s are a clique of peers, and every other AS reaches one up its providers
    peers = {(a, b) for a, b, rel, _ in links if rel == "p2p"}
    assert all((a, b) in peers for a in tier1 for b in tier1 if a < b)
    assert all(above[v] & set(tier1) for v in range(n) if v not in tier1)
    # no peer link along a chain of providers
    for a, b in peers:
        assert a not in above[b] and b not in above[a], f"r{a} and r{b} peer along a provider chain"


def test_a_graph_is_the_same_for_a_seed(tmp_path):
    files = []
    for i, seed in enumerate((7, 7, 8)):
        path = tmp_path / f"g{i}.txt"
        subprocess.run([sys.executable, str(REPO / "sim" / "topology.py"), "internet", "2000", "--seed", str(seed),
                        "-o", str(path)], check=True)
        files.append(path.read_text())
    assert files[0] == files[1]
    assert files[0] != files[2]
