"""nbrpd beside a real BIRD that is killed and started again
(netlab.py): nothing moves while BIRD is away, nbrpd reconnects, and the
restarted BIRD's first answers, before OSPF has its routes again, do not
take routes or sessions down."""

from conftest import wait_for
from test_netlab_ospf import SQUARE, wait_dig, wait_path, with_opts


def test_bird_killed_and_restarted_changes_nothing(netlab):
    # OSPF needs some 5 s after BIRD starts (adjacencies, then LSAs at most
    # every 5 s); until settle-time its "cannot reach" is not believed
    lab = netlab(with_opts(SQUARE, bird={"settle-time": "20s"}))
    a = lab.routers["a"]
    wait_path(lab, "a", ["b"])
    wait_dig(lab, "sb")
    wait_for(lambda: a.nbrpd.json("show", "status")["bird"] == "up", 10, "BIRD up")
    before = {p: (v["state"], v["flaps"]) for p, v in a.nbrpd.peers().items()}
    routes = a.nbrpd.route("svc.content")
    log_mark = len(a.nbrpd.log())
    lab.kill_bird("a")
    wait_for(lambda: a.nbrpd.json("show", "status")["bird"] == "down", 10, "BIRD seen down")
    assert a.nbrpd.route("svc.content") == routes
    assert lab.dig("ca", "svc.content") == [lab.hosts["sb"].addr]
    lab.start_bird("a")
    wait_for(lambda: a.nbrpd.json("show", "status")["bird"] == "up", 20, "nbrpd to reconnect")
    lab.wait_routes(routers=[a])
    wait_path(lab, "a", ["b"])
    assert {p: (v["state"], v["flaps"]) for p, v in a.nbrpd.peers().items()} == before
    log = a.nbrpd.log()[log_mark:]
    assert "settle-time" in log and "unreachable" not in log
    assert a.nbrpd.route("svc.content") == routes
