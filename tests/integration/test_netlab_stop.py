"""nbrpd stops at once on SIGTERM while a TCP connect to a peer is in
flight: on loopback a connect never waits, across a network whose SYNs
go unanswered it waits for the kernel's retries (about two minutes)."""

from conftest import wait_for

# BIRD routes 192.0.2.200 towards the server's namespace, which drops it:
# nbrpd's connect to the peer there stays in SYN-SENT
GHOST = {
    "routers": {"a": {}},
    "servers": {"s": {"router": "a", "content": "svc.content"}},
    "nbrpd_extra": {"a": 'peer "ghost" { address 192.0.2.200 port 1790; }\n'},
    "bird_extra": {"a": "protocol static ghost { ipv4; route 192.0.2.200/32 via 198.51.100.1; }\n"},
}


def test_nbrpd_stops_with_a_connect_in_flight(netlab):
    lab = netlab(GHOST)
    a = lab.routers["a"]
    wait_for(lambda: a.nbrpd.route("svc.content") is not None, 10, "a's own route")
    wait_for(lambda: a.nbrpd.peers()["ghost"]["state"] == "Connect", 10, "a connecting to ghost")
    assert a.nbrpd.stop() == 0          # fails if it does not exit within STOP_TIMEOUT
