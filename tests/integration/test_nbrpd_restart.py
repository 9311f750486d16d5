"""Graceful restart between nbrpds: a router that vanishes without a
NOTIFICATION keeps its routes at its peers for its restart time; when it
comes back and has sent its table again, what it did not resend is gone."""

import pytest

from conftest import free_port, wait_for
import fibchan_client  # noqa: F401  (the helpers below live in test_nbrpd)
from test_nbrpd import answer, net, path_of, unique_addrs  # noqa: F401

SERVER = "127.0.0.99"


def test_routes_survive_a_crash_for_the_restart_time(net):
    rs = net(["r1", "r2"], [("r1", "r2")],
             content={"r2": f'content "gr.content" {{ server {SERVER}; }}\n'
                            f'content "old.content" {{ server {SERVER}; }}\n'},
             extra={"r2": "restart-time 60s;\n"})
    wait_for(lambda: path_of(rs["r1"], "gr.content") == ["r2"], 20, "the route")
    rs["r2"].nbrpd.kill()
    wait_for(lambda: rs["r1"].nbrpd.peers()["r2"]["state"] != "Established", 10, "the session to drop")
    routes = rs["r1"].nbrpd.route("gr.content")
    assert routes and routes[0]["stale"] and routes[0]["path"] == ["r2"]
    assert answer(rs["r1"], "gr.content") == [SERVER]     # r2's inrpd still answers
    # r2 comes back without old.content: after its END-OF-RIB that one is gone
    conf = rs["r2"].nbrpd.conf.read_text().replace(f'content "old.content" {{ server {SERVER}; }}\n', "")
    rs["r2"].nbrpd.conf.write_text(conf)
    rs["r2"].nbrpd.restart()
    wait_for(lambda: rs["r1"].nbrpd.route("old.content") is None, 20, "the sweep")
    routes = rs["r1"].nbrpd.route("gr.content")
    assert routes and not routes[0]["stale"]


def test_stale_routes_go_when_the_restart_time_runs_out(net):
    rs = net(["r1", "r2"], [("r1", "r2")], content={"r2": f'content "gr.content" {{ server {SERVER}; }}\n'},
             extra={"r2": "restart-time 3s;\n"})
    wait_for(lambda: path_of(rs["r1"], "gr.content") == ["r2"], 20, "the route")
    rs["r2"].nbrpd.kill()
    wait_for(lambda: (rs["r1"].nbrpd.route("gr.content") or [{}])[0].get("stale"), 10, "stale")
    wait_for(lambda: rs["r1"].nbrpd.route("gr.content") is None, 15, "the restart time to run out")


def test_a_clean_shutdown_withdraws_at_once(net):
    rs = net(["r1", "r2"], [("r1", "r2")], content={"r2": f'content "gr.content" {{ server {SERVER}; }}\n'},
             extra={"r2": "restart-time 60s;\n"})
    wait_for(lambda: path_of(rs["r1"], "gr.content") == ["r2"], 20, "the route")
    assert rs["r2"].nbrpd.stop() == 0          # CEASE: no graceful restart
    wait_for(lambda: rs["r1"].nbrpd.route("gr.content") is None, 10, "the withdrawal")
