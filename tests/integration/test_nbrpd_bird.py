"""nbrpd following IP routing (BIRD): a next hop BIRD cannot reach makes
the routes through it unusable; IGP metric, then AS path length, break
ties between routes equal at the content level; BIRD going away changes
nothing; BIRD coming back is picked up.

Per-next-hop cases use fake_bird (the recorded bird2 protocol), because a
real bird2 refuses routes for 127.0.0.0/8 and the tests live there; the
real bird2 cases use one covering route for all of it."""

import os
import pathlib
import shutil
import subprocess

import pytest

from conftest import wait_for
from fake_bird import FakeBird
from test_nbrpd import answer, network, path_of  # noqa: F401

POLL = "200ms"
NEAR, FAR = "127.0.0.98", "127.0.0.99"


def bird_block(sock):
    return f'bird {{ socket "{sock}"; poll-interval {POLL}; timeout 1s; unreachable-delay 1s; }}\n'


def status(r):
    return r.nbrpd.json("show", "status")


@pytest.fixture
def fake_bird(tmp_path):
    started = []

    def start():
        b = FakeBird(tmp_path / "bird.ctl")
        started.append(b)
        return b
    yield start
    for b in started:
        b.close()


def two_ways(inrpd_factory, nbrpd_factory, tmp_path, bird_sock, r1_extra=""):
    """r1 with peers r2 and r3, both originating svc.content: equal at the content level."""
    return network(inrpd_factory, nbrpd_factory, tmp_path, ["r1", "r2", "r3"], [("r1", "r2"), ("r1", "r3")],
                   content={"r2": f'content "svc.content" {{ server {NEAR}; }}\n',
                            "r3": f'content "svc.content" {{ server {FAR}; }}\n'},
                   extra={"r1": bird_block(bird_sock) + r1_extra})


def test_igp_metric_and_reachability_choose_the_next_hop(inrpd_factory, nbrpd_factory, tmp_path, fake_bird):
    bird = fake_bird()
    sock = tmp_path / "bird.ctl"
    # before the routers exist their addresses are unknown: set them right after
    rs = two_ways(inrpd_factory, nbrpd_factory, tmp_path, sock)
    r1, r2, r3 = rs["r1"], rs["r2"], rs["r3"]
    bird.set(r2.addr, "ospf_a", igp_metric=20)
    bird.set(r3.addr, "ospf_b", igp_metric=10)
    wait_path = lambda path: wait_for(lambda: path_of(r1, "svc.content") == path, 10, f"via {path}")  # noqa: E731
    wait_path(["r3"])                                   # the lower IGP metric
    best = r1.nbrpd.route("svc.content")[0]
    assert best["igp_metric"] == 10 and best["ip_protocol"] == "ospf_b" and best["ip_reachable"]
    bird.set(r2.addr, "ospf_a", igp_metric=5)
    wait_path(["r2"])                                   # the metric changed: the choice follows
    wait_for(lambda: answer(r1, "svc.content") == [NEAR], 10, "inrpd to follow")
    bird.unset(r2.addr)                                 # BIRD cannot reach r2 any more
    wait_path(["r3"])
    routes = r1.nbrpd.route("svc.content")
    assert [x["usable"] for x in routes] == [True, False]
    wait_for(lambda: answer(r1, "svc.content") == [FAR], 10, "inrpd to move to r3")
    bird.set(r2.addr, "ospf_a", igp_metric=5)
    wait_path(["r2"])
    wait_for(lambda: answer(r1, "svc.content") == [NEAR], 10, "and back")


def test_as_path_length_breaks_a_metric_tie(inrpd_factory, nbrpd_factory, tmp_path, fake_bird):
    bird = fake_bird()
    rs = two_ways(inrpd_factory, nbrpd_factory, tmp_path, tmp_path / "bird.ctl")
    r1, r2, r3 = rs["r1"], rs["r2"], rs["r3"]
    bird.set(r2.addr, "bgp1", igp_metric=10, as_path=[65001, 65002, 65003])
    bird.set(r3.addr, "bgp2", igp_metric=10, as_path=[65001])
    wait_for(lambda: path_of(r1, "svc.content") == ["r3"], 10, "the shorter AS path")
    assert r1.nbrpd.route("svc.content")[0]["as_path_len"] == 1


def test_bird_going_away_changes_nothing_and_coming_back_is_picked_up(inrpd_factory, nbrpd_factory,
                                                                      tmp_path, fake_bird):
    bird = fake_bird()
    rs = two_ways(inrpd_factory, nbrpd_factory, tmp_path, tmp_path / "bird.ctl")
    r1, r2, r3 = rs["r1"], rs["r2"], rs["r3"]
    bird.set(r2.addr, "ospf", igp_metric=20)
    bird.set(r3.addr, "ospf", igp_metric=10)
    wait_for(lambda: path_of(r1, "svc.content") == ["r3"], 10, "via r3")
    wait_for(lambda: status(r1)["bird"] == "up", 10, "BIRD up")
    wait_for(lambda: answer(r1, "svc.content") == [FAR], 10, "inrpd to follow")
    flaps = {p: v["flaps"] for p, v in r1.nbrpd.peers().items()}
    bird.close()
    wait_for(lambda: status(r1)["bird"] != "up", 10, "BIRD seen down")
    # while it is away nothing moves
    assert path_of(r1, "svc.content") == ["r3"] and answer(r1, "svc.content") == [FAR]
    assert all(x["usable"] for x in r1.nbrpd.route("svc.content"))
    bird = fake_bird()
    bird.set(r2.addr, "ospf", igp_metric=5)
    bird.set(r3.addr, "ospf", igp_metric=10)
    wait_for(lambda: status(r1)["bird"] == "up", 20, "BIRD reconnected")
    wait_for(lambda: path_of(r1, "svc.content") == ["r2"], 10, "the new metrics")
    assert {p: v["flaps"] for p, v in r1.nbrpd.peers().items()} == flaps
    assert "BIRD" in r1.nbrpd.log()


def test_without_bird_everything_is_reachable(inrpd_factory, nbrpd_factory, tmp_path):
    rs = network(inrpd_factory, nbrpd_factory, tmp_path, ["r1", "r2"], [("r1", "r2")],
                 content={"r2": f'content "svc.content" {{ server {NEAR}; }}\n'})
    wait_for(lambda: path_of(rs["r1"], "svc.content") == ["r2"], 20, "the route")
    assert status(rs["r1"])["bird"] == "not configured"
    assert rs["r1"].nbrpd.log().count("BIRD is not configured") == 1


def test_a_peer_bird_cannot_reach_is_dropped_after_the_delay(inrpd_factory, nbrpd_factory, tmp_path, fake_bird):
    bird = fake_bird()
    rs = two_ways(inrpd_factory, nbrpd_factory, tmp_path, tmp_path / "bird.ctl")
    r1, r2, r3 = rs["r1"], rs["r2"], rs["r3"]
    bird.set(r2.addr, "ospf", igp_metric=10)
    bird.set(r3.addr, "ospf", igp_metric=10)
    wait_for(lambda: r1.nbrpd.peers()["r2"]["state"] == "Established", 10, "r2 up")
    bird.unset(r2.addr)
    wait_for(lambda: "IP routing cannot reach" in r1.nbrpd.peers()["r2"]["last_error"], 10, "r2 dropped")


# ---- a real bird2 ----

def up_interface():
    """A non-loopback interface that is up: BIRD resolves `via "IFACE"` to it."""
    for name in sorted(os.listdir("/sys/class/net")):
        if name == "lo":
            continue
        try:
            if pathlib.Path(f"/sys/class/net/{name}/operstate").read_text().strip() == "up":
                return name
        except OSError:
            continue
    return None


@pytest.fixture
def real_bird(tmp_path):
    if not shutil.which("bird") or not shutil.which("birdc"):
        pytest.skip("bird2 is not installed (scripts/setup installs it)")
    iface = up_interface()
    if not iface:
        pytest.skip("no network interface is up for BIRD to put a route on")
    procs = []
    sock = tmp_path / "bird.ctl"

    def start():
        conf = tmp_path / "bird.conf"
        # one route covering 127.0.0.0/8: bird2 refuses 127/8 routes themselves as bogus.
        # No kernel protocol: nothing reaches the system's routing table.
        conf.write_text(f'router id 192.0.2.9;\nlog "{tmp_path}/bird.log" all;\nprotocol device {{ }}\n'
                        f'protocol static cover {{ ipv4; route 64.0.0.0/2 via "{iface}"; }}\n')
        p = subprocess.Popen(["bird", "-f", "-c", str(conf), "-s", str(sock), "-P", str(tmp_path / "bird.pid")],
                             stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        procs.append(p)
        wait_for(lambda: birdc(sock, "show", "protocols").returncode == 0, 15, "bird to answer")
        return p
    yield sock, start
    for p in procs:
        if p.poll() is None:
            p.terminate()
            p.wait(10)


def birdc(sock, *words):
    return subprocess.run(["birdc", "-s", str(sock), *words], capture_output=True, text=True, timeout=30)


def test_real_bird_reachability_and_restart(inrpd_factory, nbrpd_factory, tmp_path, real_bird):
    sock, start = real_bird
    bird = start()
    rs = two_ways(inrpd_factory, nbrpd_factory, tmp_path, sock)
    r1 = rs["r1"]
    wait_for(lambda: path_of(r1, "svc.content") is not None and
             r1.nbrpd.route("svc.content")[0]["ip_protocol"] == "cover", 20, "BIRD's view of the next hops")
    assert all(x["usable"] and x["ip_reachable"] for x in r1.nbrpd.route("svc.content"))
    assert birdc(sock, "disable", "cover").returncode == 0
    wait_for(lambda: r1.nbrpd.route("svc.content") is not None and
             not any(x["usable"] for x in r1.nbrpd.route("svc.content")), 10, "next hops unreachable")
    wait_for(lambda: answer(r1, "svc.content") == "REFUSED", 10, "inrpd to drop the name")
    assert birdc(sock, "enable", "cover").returncode == 0
    wait_for(lambda: path_of(r1, "svc.content") is not None, 10, "usable again")
    # BIRD killed and restarted: routes stay put while it is away
    bird.kill()
    bird.wait()
    wait_for(lambda: status(r1)["bird"] != "up", 10, "BIRD seen down")
    assert path_of(r1, "svc.content") is not None
    start()
    wait_for(lambda: status(r1)["bird"] == "up", 20, "reconnected")
    assert path_of(r1, "svc.content") is not None
