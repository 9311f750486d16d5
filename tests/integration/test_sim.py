"""sim (docs/SIMULATION.md): nbrpd's RDE in every router of a simulated graph.

A 30-AS Internet-like graph (sim/topology.py), every mode: the run is the
same for a seed, and once the start has converged every router's best route
for each name is the one Gao-Rexford predicts (customer routes before peer
routes before provider routes, then the shortest), computed here directly
from the graph; the same at 20 ASes of another seed.  A frame reaches a
router no sooner than its links' delays after it left.  A bad topology
file is refused with file:line.  And scripts/bench internet's runs, two at
once, give the figures they give one after the other.
"""
import heapq
import json
import os
import pathlib
import subprocess
import sys

import pytest

REPO = pathlib.Path(__file__).resolve().parents[2]
BUILD = pathlib.Path(os.environ.get("CR_BUILD", REPO / "build"))
SIM = BUILD / "sim" / "sim"

CUSTOMER, PEER, PROVIDER = 0, 1, 2


def generate(directory, ases, seed):
    path = directory / f"as{ases}.txt"
    subprocess.run([sys.executable, str(REPO / "sim" / "topology.py"), "internet", str(ases), "--seed", str(seed),
                    "-o", str(path)], check=True)
    return path


@pytest.fixture(scope="module")
def topology(tmp_path_factory):
    return generate(tmp_path_factory.mktemp("sim"), 30, 3)


def read_links(path):
    """{router: {neighbour: what the neighbour is to it}}"""
    rel = {}
    for line in path.read_text().splitlines():
        f = line.split()
        if f and f[0] == "routers":
            rel = {i: {} for i in range(int(f[1]))}
        elif f and f[0] == "link":
            a, b = int(f[1]), int(f[2])
            if f[3] == "p2c":
                rel[a][b], rel[b][a] = CUSTOMER, PROVIDER
            else:
                rel[a][b] = rel[b][a] = PEER
    return rel


def gao_rexford(rel, origin):
    """{router: (class, path length)} of its best route: the direct computation."""
    best = {origin: (-1, 0)}
    # customer routes: up the provider chains from the origin, shortest first
    frontier, cust = [origin], {origin: 0}
    while frontier:
        nxt = []
        for u in frontier:
            for p, what in sorted(rel[u].items()):
                if what == PROVIDER and p not in cust:
                    cust[p] = cust[u] + 1
                    best[p] = (CUSTOMER, cust[p])
                    nxt.append(p)
        frontier = nxt
    # peer routes: a peer's customer route (or the origin itself)
    for r in rel:
        if r in best:
            continue
        lens = [cust[q] + 1 for q, what in rel[r].items() if what == PEER and q in cust]
        if lens:
            best[r] = (PEER, min(lens))
    # provider routes: a provider's best, whatever it is, shortest first
    heap = [(length, r) for r, (_, length) in best.items()]
    heapq.heapify(heap)
    dist = {r: length for r, (_, length) in best.items()}
    while heap:
        d, u = heapq.heappop(heap)
        if d > dist[u]:
            continue
        for c, what in rel[u].items():
            if what == CUSTOMER and (c not in best or best[c][0] == PROVIDER) and d + 1 < dist.get(c, 1 << 30):
                dist[c] = d + 1
                best[c] = (PROVIDER, d + 1)
                heapq.heappush(heap, (d + 1, c))
    return best


def run_sim(topology, *extra):
    p = subprocess.run([str(SIM), "--topology", str(topology), "--seed", "7", "--origins", "2", "--names", "6",
                        "--gap", "60", "--dump", "--quiet", *extra], capture_output=True, text=True, timeout=300)
    assert p.returncode == 0, p.stderr
    return p.stdout


def dumps(out):
    """each mode's routes after the start, in order: [{name: (origin, {router: (from, npath)})}]"""
    modes, cur = [], None
    for line in out.splitlines():
        f = line.split()
        if f and f[0] == "origin":
            if not modes or f[1] in modes[-1]:
                modes.append({})
            cur = modes[-1][f[1]] = (int(f[2]), {})
        elif f and f[0] == "route":
            cur[1][int(f[2])] = (int(f[3]), int(f[4]))
    return modes


def deterministic(out):
    """what must not change from one run to the next: all but the memory measured"""
    j = json.loads(out.splitlines()[-1])
    for m in j["modes"].values():
        for k in ("bytes_per_router", "rss_per_router", "wall_s"):
            m.pop(k)
    return [line for line in out.splitlines()[:-1] if "KiB a router" not in line], j


def test_a_run_is_the_same_for_a_seed(topology):
    a = run_sim(topology)
    b = run_sim(topology)
    assert deterministic(a) == deterministic(b)
    j = json.loads(a.splitlines()[-1])
    assert set(j["modes"]) == {"nbrp", "pv", "bgp"}
    # the references differ from NBRP where they should: no origin withdrawals, the MRAI holds
    assert j["modes"]["bgp"]["mrai_s"] == 30
    ev = j["modes"]["nbrp"]["events"]
    assert ev["announce_stub"]["updates"] > 0 and ev["withdraw_stub"]["updates"] > 0


def assert_gao_rexford_routes(topology, *extra):
    rel = read_links(topology)
    modes = dumps(run_sim(topology, *extra))
    assert len(modes) == 3
    for routes in modes:
        assert len(routes) == 6
        for name, (origin, got) in routes.items():
            want = gao_rexford(rel, origin)
            assert set(got) == set(want), f"{name} from r{origin}: routers with a route"
            for r, (cls, length) in want.items():
                frm, npath = got[r]
                if r == origin:
                    assert (frm, npath) == (r, 0)
                    continue
                assert npath == length, f"{name} from r{origin} at r{r}: path length"
                assert rel[r][frm] == cls, f"{name} from r{origin} at r{r}: the route's class"


def test_every_router_takes_the_gao_rexford_route(topology):
    assert_gao_rexford_routes(topology)


def test_twenty_routers_take_the_gao_rexford_route(tmp_path):
    assert_gao_rexford_routes(generate(tmp_path, 20, 11))


DELAYS = ("--update-delay", "25", "--withdrawal-delay", "50")


def test_with_update_delays_every_router_takes_the_gao_rexford_route(topology):
    """nbrp with nbrpd's update-delay and withdrawal-delay (docs/NBRP.md): held changes leave
    at last, each name as it is then: the same routes as without."""
    assert_gao_rexford_routes(topology, *DELAYS)


def test_a_run_with_update_delays_is_the_same_for_a_seed(topology):
    """The RDE's wake-ups are events like any other: the same run, the same trace."""
    a = run_sim(topology, "--modes", "nbrp", *DELAYS)
    assert deterministic(a) == deterministic(run_sim(topology, "--modes", "nbrp", *DELAYS))


def test_an_update_delay_makes_a_move_one_wave(topology):
    """A move is the old origin's withdrawal and the new origin's route: held together, fewer
    UPDATEs than without the delays; a withdrawal is one UPDATE a session that carried the name
    either way (no exploration to merge); the delays are reported with the mode."""
    def events(*extra):
        j = json.loads(run_sim(topology, "--modes", "nbrp", *extra).splitlines()[-1])
        return j["modes"]["nbrp"]
    plain, held = events(), events(*DELAYS)
    assert (held["update_delay_ms"], held["withdrawal_delay_ms"], plain["update_delay_ms"]) == (25, 50, 0)
    for cls in ("stub", "tier1"):
        assert held["events"][f"move_{cls}"]["updates"] < plain["events"][f"move_{cls}"]["updates"], cls
        assert held["events"][f"withdraw_{cls}"]["updates"] == plain["events"][f"withdraw_{cls}"]["updates"], cls


def test_a_frame_arrives_after_its_links_delay(tmp_path):
    """a name moving from one end of a line to the other: each router's route changes no sooner than
    the frame carrying it could cross the links between (5 ms, then 7 ms)"""
    path = tmp_path / "line.txt"
    path.write_text("routers 3\nlink 0 1 flat 7000\nlink 1 2 flat 5000\nmark x 2\nmark y 0\n")
    p = subprocess.run([str(SIM), "--topology", str(path), "--modes", "nbrp", "--names", "0", "--move", "x", "y",
                        "--rounds", "2", "--quiet"], capture_output=True, text=True, timeout=60)
    assert p.returncode == 0, p.stderr
    rounds = json.loads(p.stdout.splitlines()[-1])["modes"]["nbrp"]["rounds"]
    # round 1: from r2 to r0, round 2 back; the far end hears last
    there, back = rounds[0]["settled_by_router"], rounds[1]["settled_by_router"]
    assert there["r0"] == 0 and 7 <= there["r1"] < there["r2"] and there["r2"] >= 12
    assert back["r2"] == 0 and 5 <= back["r1"] < back["r0"] and back["r0"] >= 12


def test_the_internet_bench_gives_the_same_figures_with_its_runs_side_by_side(tmp_path):
    """scripts/bench internet's three runs are separate sims: two at once (--jobs 2) give what one after
    the other gives, and each run's peak RSS is its own"""
    build = tmp_path / "build"
    build.mkdir()
    (build / "sim").symlink_to(SIM.parent)
    out = {}
    for jobs in (1, 2):
        p = subprocess.run([sys.executable, str(REPO / "bench" / "bench_internet.py"), "--build", str(build),
                            "--ases", "300", "--jobs", str(jobs)], stdout=subprocess.PIPE, check=True)
        out[jobs] = json.loads(p.stdout.decode().splitlines()[-1])
    assert out[1]["jobs"] == 1 and out[2]["jobs"] == 2
    for j in out.values():
        by_run = j.pop("peak_rss_mb_by_run")
        assert all(by_run[k] > 0 for k in ("nbrp", "bgp_mrai30", "bgp_mrai0")) and by_run["nbrp_no_delay"] is None
        assert j.pop("peak_rss_mb") <= sum(v for v in by_run.values() if v)
        for measured in ("wall_s", "wall_s_by_run", "jobs", "bytes_per_router_full_table", "targets"):
            j.pop(measured)
    assert out[1]["withdraw"]["bgp_mrai0_updates"]["p50"] > out[1]["withdraw"]["nbrp_updates"]["p50"] > 0
    assert out[1] == out[2]


def test_a_move_lag_plays_the_two_reloads_apart(tmp_path):
    """--move-lag-ms: the new origin announces L ms after the old one withdraws (L > 0) or the old
    one withdraws -L ms after (L < 0), as the testbed's two reloads take effect; on the line above,
    the new origin's announcement reaches r1 7 ms after it leaves, the withdrawal 5 ms"""
    path = tmp_path / "line.txt"
    path.write_text("routers 3\nlink 0 1 flat 7000\nlink 1 2 flat 5000\nmark x 2\nmark y 0\n")

    def move(lag):
        p = subprocess.run([str(SIM), "--topology", str(path), "--modes", "nbrp", "--names", "0", "--move", "x",
                            "y", "--rounds", "1", "--move-lag-ms", str(lag), "--quiet"],
                           capture_output=True, text=True, timeout=60)
        assert p.returncode == 0, p.stderr
        return json.loads(p.stdout.splitlines()[-1])["modes"]["nbrp"]["rounds"][0]["settled_by_router"]
    after = move(20)        # the announcement at 20 ms: r1 and r2 hear it 7 and 12 ms later
    assert after["r0"] == 20 and after["r1"] >= 27 and after["r2"] >= 32
    before = move(-20)      # the withdrawal at 20 ms: r1 keeps r2's route until it hears it
    assert before["r0"] == 0 and before["r1"] >= 25 and before["r2"] >= 30


def test_the_testbeds_move_costs_more_updates_the_later_the_announcement(tmp_path):
    """On the 50-router testbed graph (seed 1): the announcement first, one wave of changes; at
    once, two waves that meet; the withdrawal first, a wave of withdrawals and then one of
    announcements (test_sim_testbed.py holds the real testbed to this bracket)"""
    path = tmp_path / "testbed.txt"
    subprocess.run([sys.executable, str(REPO / "sim" / "topology.py"), "testbed", "50", "--seed", "1",
                    "-o", str(path)], check=True)

    def updates(lag):
        p = subprocess.run([str(SIM), "--topology", str(path), "--seed", "1", "--modes", "nbrp", "--names", "0",
                            "--move", "x", "y", "--rounds", "2", "--move-lag-ms", str(lag), "--quiet"],
                           capture_output=True, text=True, timeout=60)
        assert p.returncode == 0, p.stderr
        return [r["updates"] for r in json.loads(p.stdout.splitlines()[-1])["modes"]["nbrp"]["rounds"]]
    first, together, last = updates(-5), updates(0), updates(5)
    assert all(a < b < c for a, b, c in zip(first, together, last)), (first, together, last)


@pytest.mark.parametrize("text, why", [
    ("routers 3\nlink 0 5 p2c 100\n", ":2: link"),
    ("routers 3\nlink 0 1 sideways 100\n", ":2: link: relationship sideways"),
    ("link 0 1 p2p 100\n", ":1: link"),
    ("routers 3\nlink 0 1 p2p 100\nlink 1 0 p2p 100\n", "linked twice"),
    ("routers 2\nbogus\n", ":2: unknown keyword bogus"),
    ("routers 3\nlink 0 1 p2p 100 200\n", ":2: link"),
    ("routers 3 4\n", ":1: routers"),
    ("routers 3\nmark x 1 2\n", ":2: mark"),
    ("routers 3\nlink 0 1 p2p 20000000\n", ":2: link"),
])
def test_a_bad_topology_is_refused_with_its_line(tmp_path, text, why):
    path = tmp_path / "bad.txt"
    path.write_text(text)
    p = subprocess.run([str(SIM), "--topology", str(path)], capture_output=True, text=True, timeout=60)
    assert p.returncode == 1
    assert why in p.stderr
