"""nbrpd following a real BIRD running OSPF, in network namespaces
(netlab.py): the IGP metric decides between routes equal at the content
level, a next hop OSPF loses makes its routes unusable before any NBRP
timer, and a router cut off is dropped after unreachable-delay.

    ca - a --10-- b (server sb)
         |        |
        20       10
         |        |
         c ------ d        c has server sc; both originate svc.content
             10
"""

from conftest import wait_for

SQUARE = {
    "routers": {"a": {}, "b": {}, "c": {}, "d": {}},
    "links": [["a", "b", 10], ["a", "c", 20], ["b", "d", 10], ["c", "d", 10]],
    "servers": {"sb": {"router": "b", "content": "svc.content"},
                "sc": {"router": "c", "content": "svc.content"}},
    "clients": {"ca": {"router": "a"}},
    # the NBRP timers are long: whatever moves within seconds was IP routing
    "nbrpd": {"hold-time": "60s"},
}


def with_opts(topo, **kw):
    t = dict(topo)
    for k, v in kw.items():
        t[k] = {**topo.get(k, {}), **v}
    return t


def wait_path(lab, router, path):
    wait_for(lambda: lab.path(router, "svc.content") == path, 20, f"{router}: svc.content via {path}")


def wait_dig(lab, server):
    addr = lab.hosts[server].addr
    wait_for(lambda: lab.dig("ca", "svc.content") == [addr], 20, f"dig at ca to answer {server}")


def test_the_lower_ospf_cost_wins_and_birdc_configure_moves_it(netlab):
    lab = netlab(SQUARE)
    wait_path(lab, "a", ["b"])
    routes = lab.routers["a"].nbrpd.route("svc.content")
    assert [(r["path"], r["igp_metric"], r["ip_protocol"]) for r in routes] == \
        [(["b"], 10, "ospf1"), (["c"], 20, "ospf1")]
    wait_dig(lab, "sb")
    lab.set_cost("a", "b", 30)          # now b is 30 away (40 round by c and d), c 20
    wait_path(lab, "a", ["c"])
    assert [r["igp_metric"] for r in lab.routers["a"].nbrpd.route("svc.content")] == [20, 30]
    wait_dig(lab, "sc")
    lab.set_cost("a", "b", 10)
    wait_path(lab, "a", ["b"])
    # (inrpd's answer need not move back: between routes of equal load it
    # keeps the one with the lower measured RTT, and it has measured both)


# sc is the worse server by its load too: inrpd picks among the ranked
# routes by expected time (RTT plus load), and the first answers over a
# link just up are slow (neighbour discovery); the load keeps it on sb.
V = {
    "routers": {"a": {}, "b": {}, "c": {}},
    "links": [["a", "b", 10], ["a", "c", 20]],
    "servers": {"sb": {"router": "b", "content": "svc.content", "load": 5},
                "sc": {"router": "c", "content": "svc.content", "load": 50}},
    "clients": {"ca": {"router": "a"}},
    "nbrpd": {"hold-time": "60s"},
    "bird": {"unreachable-delay": "60s"},
}


def test_a_link_down_moves_the_names_before_any_nbrp_timer(netlab):
    lab = netlab(V)
    a = lab.routers["a"]
    wait_path(lab, "a", ["b"])
    wait_dig(lab, "sb")
    flaps = a.nbrpd.peers()["b"]["flaps"]
    lab.link_down("a", "b")
    # OSPF on a loses b: the route through b is kept but unusable
    wait_for(lambda: not a.route(lab.routers["b"].addr)[0], 10, "a's BIRD to lose b")
    wait_path(lab, "a", ["c"])
    assert [(r["path"], r["usable"], r["ip_reachable"]) for r in a.nbrpd.route("svc.content")] == \
        [(["c"], True, True), (["b"], False, False)]
    wait_dig(lab, "sc")
    # the session to b is still up: neither the hold timer nor unreachable-delay did this
    assert a.nbrpd.peers()["b"]["state"] == "Established"
    lab.link_up("a", "b")
    wait_path(lab, "a", ["b"])
    wait_dig(lab, "sb")
    assert a.nbrpd.peers()["b"]["flaps"] == flaps


def test_a_router_cut_off_is_dropped_after_unreachable_delay(netlab):
    lab = netlab(with_opts(SQUARE, bird={"unreachable-delay": "1s"}))
    a, d = lab.routers["a"], lab.routers["d"]
    wait_path(lab, "a", ["b"])
    lab.link_down("b", "a")
    lab.link_down("b", "d")
    for r in (a, d):
        wait_for(lambda: "IP routing cannot reach" in r.nbrpd.peers()["b"]["last_error"], 20,
                 f"{r.name} to drop b")
        assert r.nbrpd.peers()["b"]["state"] != "Established"
    wait_path(lab, "a", ["c"])
    assert all(r["from"] == "c" for r in a.nbrpd.route("svc.content"))     # nothing from b
    wait_dig(lab, "sc")
    # while BIRD cannot reach b, a does not connect to it again
    assert a.nbrpd.peers()["b"]["state"] != "Established"
    lab.link_up("b", "a")
    lab.link_up("b", "d")
    wait_for(lambda: a.nbrpd.peers()["b"]["state"] == "Established", 20, "a to reconnect to b")
    wait_path(lab, "a", ["b"])
