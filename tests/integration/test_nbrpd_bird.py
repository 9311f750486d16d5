"""nbrpd following IP routing (BIRD), for what a real BIRD cannot be made
to do on demand: a BIRD that hangs with its socket open, and one that
answers with bytes that are not its protocol, change nothing (no route
flaps) and are left behind once it answers properly again.  Without BIRD
every next hop counts as reachable.

Everything a real BIRD can show (next hops lost and found, IGP metrics,
AS paths, BIRD killed and restarted, a peer cut off) is tested with real
bird2 routers in network namespaces: test_netlab_*.py."""

import pytest

from conftest import wait_for
from fake_bird import FakeBird
from test_nbrpd import answer, network, path_of  # noqa: F401

POLL = "200ms"
NEAR, FAR = "127.0.0.98", "127.0.0.99"


def bird_block(sock):
    return (f'bird {{ socket "{sock}"; poll-interval {POLL}; timeout 1s; unreachable-delay 1s; '
            f'settle-time 0s; }}\n')


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


def test_a_hung_or_garbling_bird_changes_nothing(inrpd_factory, nbrpd_factory, tmp_path, fake_bird):
    bird = fake_bird()
    rs = two_ways(inrpd_factory, nbrpd_factory, tmp_path, tmp_path / "bird.ctl")
    r1, r2, r3 = rs["r1"], rs["r2"], rs["r3"]
    bird.set(r2.addr, "ospf", igp_metric=20)
    bird.set(r3.addr, "ospf", igp_metric=10)
    wait_for(lambda: path_of(r1, "svc.content") == ["r3"], 10, "via r3")
    wait_for(lambda: answer(r1, "svc.content") == [FAR], 10, "inrpd to follow")
    routes = r1.nbrpd.route("svc.content")
    flaps = {p: v["flaps"] for p, v in r1.nbrpd.peers().items()}
    for mode in ("hang", "garbage"):
        setattr(bird, mode, True)
        mark = len(r1.nbrpd.log())
        wait_for(lambda: "BIRD:" in r1.nbrpd.log()[mark:] and status(r1)["bird"] == "down", 10,
                 f"a {mode} BIRD seen down")
        assert r1.nbrpd.route("svc.content") == routes and answer(r1, "svc.content") == [FAR]
        setattr(bird, mode, False)
        wait_for(lambda: status(r1)["bird"] == "up", 20, f"BIRD back after {mode}")
    # back, it is followed again
    bird.set(r2.addr, "ospf", igp_metric=5)
    wait_for(lambda: path_of(r1, "svc.content") == ["r2"], 10, "the new metric")
    assert {p: v["flaps"] for p, v in r1.nbrpd.peers().items()} == flaps


def test_without_bird_everything_is_reachable(inrpd_factory, nbrpd_factory, tmp_path):
    rs = network(inrpd_factory, nbrpd_factory, tmp_path, ["r1", "r2"], [("r1", "r2")],
                 content={"r2": f'content "svc.content" {{ server {NEAR}; }}\n'})
    wait_for(lambda: path_of(rs["r1"], "svc.content") == ["r2"], 20, "the route")
    assert status(rs["r1"])["bird"] == "not configured"
    assert rs["r1"].nbrpd.log().count("BIRD is not configured") == 1
