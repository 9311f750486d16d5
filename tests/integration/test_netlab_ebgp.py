"""Two ISPs and more joined by eBGP (netlab.py): the AS path length BIRD
reports to a next hop breaks a tie between routes equal at the content
level and in IGP metric (docs/NBRP.md, the decision).

    ca - a (AS 65001) -- b (AS 65002, server sb)
         |
         c (AS 65003) -- d (AS 65004, server sd)

a has NBRP sessions with b and with d (across c); both originate
svc.content.  BIRD at a reaches b over AS path 65002, d over 65003 65004.
"""

from conftest import wait_for

ISPS = {
    "routers": {"a": {"isp": 65001}, "b": {"isp": 65002}, "c": {"isp": 65003}, "d": {"isp": 65004}},
    "links": [["a", "b"], ["a", "c"], ["c", "d"]],
    "sessions": [["a", "b"], ["a", "d"]],
    "servers": {"sb": {"router": "b", "content": "svc.content"},
                "sd": {"router": "d", "content": "svc.content"}},
    "clients": {"ca": {"router": "a"}},
}


def ranked(lab):
    return [(r["path"], r["as_path_len"], r["igp_metric"]) for r in lab.routers["a"].nbrpd.route("svc.content")]


def test_the_shorter_as_path_breaks_the_tie(netlab):
    lab = netlab(ISPS)
    a = lab.routers["a"]
    assert "BGP.as_path: 65003 65004" in a.route(lab.routers["d"].addr)[1]
    wait_for(lambda: ranked(lab) == [(["b"], 1, 0), (["d"], 2, 0)], 20, "b first, by its shorter AS path")
    assert a.nbrpd.route("svc.content")[0]["ip_protocol"] == "ebgp_b"
    wait_for(lambda: lab.dig("ca", "svc.content") == [lab.hosts["sb"].addr], 20, "dig to answer sb")
    # b makes its path longer (prepending its AS twice), BIRD reloads: d wins
    lab.set_prepend("b", "a", 2)
    wait_for(lambda: ranked(lab) == [(["d"], 2, 0), (["b"], 3, 0)], 20, "d first now")
