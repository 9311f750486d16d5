"""A name's load is re-advertised at most once per load-interval: a burst
of changes reaches the next router as one, after the interval."""

import time

from conftest import wait_for
import nbrp_client as nc
from test_nbrpd import network, unique_addrs  # noqa: F401


def load_at(r, name):
    routes = r.nbrpd.route(name)
    return routes[0]["load_ms"] if routes else None


def test_load_changes_are_rate_limited_per_name(inrpd_factory, nbrpd_factory, tmp_path):
    x = unique_addrs(1)[0]
    knobs = "load-threshold 1;\nload-interval 2s;\nload-radius 5;\n"
    rs = network(inrpd_factory, nbrpd_factory, tmp_path, ["r1", "r2"], [("r1", "r2")],
                 extra={"r1": knobs + f'peer "x" {{ address {x} port 1; passive; }}\n', "r2": knobs})
    r1, r2 = rs["r1"], rs["r2"]
    p = nc.Peer(r1.addr, r1.nbrp_port, x)
    p.send(nc.open_msg("x"))
    assert p.recv_until(nc.KEEPALIVE) is not None
    p.send(nc.keepalive())
    p.send(nc.update(routes=[nc.route(["l.content"], x, 5353, ["x"], load_ms=20)]), nc.end_of_rib())
    wait_for(lambda: load_at(r2, "l.content") == 20, 20, "the first load at r2")
    t0 = time.monotonic()
    for load in (30, 40, 50, 60):
        p.send(nc.update(routes=[nc.route(["l.content"], x, 5353, ["x"], load_ms=load)]))
    wait_for(lambda: load_at(r1, "l.content") == 60, 10, "r1 to take every change")
    wait_for(lambda: load_at(r2, "l.content") == 60, 10, "the last load at r2")
    # r2 saw the burst as one change, no sooner than the interval after the
    # first: t0 is when the test noticed the first, up to a second (a loaded
    # machine's nbrc call) after r2 took it, so the bound is half the interval
    assert time.monotonic() - t0 >= 1.0
    assert r1.nbrpd.peers()["r2"]["updates_out"] <= 3      # first table, first load, the burst
    p.close()
