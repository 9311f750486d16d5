"""update-delay (nbrpd.conf(5), docs/NBRP.md "Update delay"): a change to
a name waits at most that long before it leaves for peers, and what changes
meanwhile leaves with it.  r1, a real nbrpd, hears a name move (the old
origin's origin withdrawal through peer a, the new origin's route through
peer b, played by hand); r2, a real nbrpd peered with r1, counts the
UPDATEs r1 sent it (`nbrc show peers`): one with update-delay or
withdrawal-delay, where the withdrawal and the new route leave together,
two without."""

import pytest

from conftest import free_port, wait_for
import nbrp_client as nc
from test_nbrpd import unique_addrs


def hand_peer(n, name, addr):
    p = nc.Peer(n.addr, n.port, addr)
    p.send(nc.open_msg(name))
    assert p.recv_until(nc.OPEN) is not None and p.recv_until(nc.KEEPALIVE) is not None
    p.send(nc.keepalive())
    assert p.recv_until(nc.END_OF_RIB) is not None
    return p


def pair(nbrpd_factory, delay, withdrawal_delay):
    """r1 (update-delay `delay`, withdrawal-delay `withdrawal_delay`) with passive peers a and b,
    and r2 peered with r1, established."""
    r1_addr, a_addr, b_addr, r2_addr = unique_addrs(4)
    p1, p2 = free_port(r1_addr), free_port(r2_addr)
    r1 = nbrpd_factory("r1", f'router-name "r1";\nlisten {r1_addr} port {p1};\ninrp-address {r1_addr} port 53;\n'
                       f'update-delay {delay};\nwithdrawal-delay {withdrawal_delay};\nconnect-retry 100ms;\n'
                       f'peer "a" {{ address {a_addr} port 1; passive; }}\n'
                       f'peer "b" {{ address {b_addr} port 1; passive; }}\n'
                       f'peer "r2" {{ address {r2_addr} port {p2}; }}\n')
    r2 = nbrpd_factory("r2", f'router-name "r2";\nlisten {r2_addr} port {p2};\ninrp-address {r2_addr} port 53;\n'
                       f'connect-retry 100ms;\npeer "r1" {{ address {r1_addr} port {p1}; }}\n')
    wait_for(lambda: r2.peers()["r1"]["state"] == "Established" and r2.peers()["r1"]["eor"], 20,
             "r1 and r2 established")
    r1.addr, r1.port = r1_addr, p1
    a, b = hand_peer(r1, "a", a_addr), hand_peer(r1, "b", b_addr)
    a.send(nc.update(routes=[nc.route(["svc.content"], a_addr, 53, ["a", "x"], origin_seq=5)]))
    wait_for(lambda: (r2.route("svc.content") or [{}])[0].get("path") == ["r1", "a", "x"], 10,
             "r2 to have the route from x")
    return r1, r2, a, b, b_addr


def updates_from_r1(r2):
    return r2.peers()["r1"]["updates_in"]


@pytest.mark.parametrize("delay,withdrawal_delay", [("0", "0"), ("2s", "0"), ("0", "2s")])
def test_a_move_within_the_update_delay_reaches_the_next_router_as_one_update(nbrpd_factory, delay,
                                                                             withdrawal_delay):
    """update-delay holds every change; withdrawal-delay alone only a name left without a route,
    which is what r1 has between the two halves of the move."""
    r1, r2, a, b, b_addr = pair(nbrpd_factory, delay, withdrawal_delay)
    before, sent = updates_from_r1(r2), r1.peers()["r2"]["updates_out"]
    # x withdraws the name; y announces it
    a.send(nc.update(withdrawn=["svc.content"], origin_withdrawals=[("svc.content", "x", 5)]))
    plain = delay == withdrawal_delay == "0"
    if plain:
        # told at once: r2 loses the name before the new route comes
        wait_for(lambda: r2.route("svc.content") is None, 10, "r2 to hear the withdrawal")
    b.send(nc.update(routes=[nc.route(["svc.content"], b_addr, 53, ["b", "y"], origin_seq=9)]))
    wait_for(lambda: (r2.route("svc.content") or [{}])[0].get("path") == ["r1", "b", "y"], 10,
             "r2 to have the route from y")
    # r1's own table changed at once, whatever the delay
    assert r1.route("svc.content")[0]["path"] == ["b", "y"]
    want = 2 if plain else 1
    assert updates_from_r1(r2) - before == want
    assert r1.peers()["r2"]["updates_out"] - sent == want
    # nothing is left held: a marker told after the move is the next UPDATE r2 gets
    b.send(nc.update(routes=[nc.route(["marker.content"], b_addr, 53, ["b"])]))
    wait_for(lambda: r2.route("marker.content") is not None, 10, "the marker")
    assert updates_from_r1(r2) - before == want + 1
    a.close()
    b.close()

