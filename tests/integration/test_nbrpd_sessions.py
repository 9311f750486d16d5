"""Session behaviour docs/NBRP.md promises, against a real nbrpd with the
peer played by hand (tests/integration/nbrp_client.py): a received
ROUTE-REFRESH, collision resolution, the reconnect backoff, max-names
warn, and an import policy changed by reload."""

import socket
import time

import pytest

from conftest import free_port, wait_for
import nbrp_client as nc
from test_nbrpd import establish, lone, unique_addrs  # noqa: F401  (lone: a fixture)
from test_nbrpd_origin_withdrawal import parse

OWN = 'content "own.content" { server 127.0.0.98; }\n'


def table(p):
    """The names of the UPDATEs up to the next END-OF-RIB."""
    names = set()
    while True:
        m = p.recv()
        assert m is not None, "closed before END-OF-RIB"
        kind, body = m
        if kind == nc.END_OF_RIB:
            return names
        if kind == nc.UPDATE:
            names.update(n for r in parse(body)[0] for n in r["names"])


def test_a_route_refresh_gets_the_whole_table_again(lone):
    n = lone(extra=OWN)
    p = connect_and_open(n)
    assert table(p) == {"own.content."}
    p.send(nc.route_refresh())
    assert table(p) == {"own.content."}
    assert n.peers()["x"]["state"] == "Established" and n.peers()["x"]["flaps"] == 0
    p.close()


def connect_and_open(n):
    p = nc.Peer(n.addr, n.port, n.x_addr)
    p.send(nc.open_msg("x"))
    assert p.recv_until(nc.OPEN) is not None
    assert p.recv_until(nc.KEEPALIVE) is not None
    p.send(nc.keepalive())
    return p


def test_max_names_warn_takes_them_all_and_says_so(lone):
    n = lone(peer_extra="max-names 2 warn;")
    p = establish(n)
    p.send(nc.update(routes=[nc.route(["a.content", "b.content", "c.content"], n.x_addr, 5353, ["x"])]))
    wait_for(lambda: n.peers()["x"]["names"] == 3, 10, "all three names taken")
    assert n.route("c.content") is not None
    assert "peer x: over max-names (2)" in n.log()
    assert "refusing" not in n.log()
    assert n.peers()["x"]["state"] == "Established"
    p.close()


def test_an_import_policy_changed_by_reload_asks_for_the_table_again(lone):
    """The new policy applies to what the peer already sent: nbrpd asks
    for it again with a ROUTE-REFRESH, over the same session."""
    n = lone(peer_extra='import deny "b.content";')
    p = establish(n)
    names = ["a.content", "b.content"]
    p.send(nc.update(routes=[nc.route(names, n.x_addr, 5353, ["x"])]))
    wait_for(lambda: n.route("a.content"), 10, "a.content")
    assert n.route("b.content") is None
    n.conf.write_text(n.conf.read_text().replace('import deny "b.content";', ""))
    r = n.nbrc("reload")
    assert r.returncode == 0, r.stderr
    assert p.recv_until(nc.ROUTE_REFRESH) is not None
    p.send(nc.update(routes=[nc.route(names, n.x_addr, 5353, ["x"])]), nc.end_of_rib())
    wait_for(lambda: n.route("b.content"), 10, "b.content, allowed now")
    assert n.peers()["x"]["flaps"] == 0
    p.close()


# ---- two connections, and none ----

@pytest.fixture
def active(nbrpd_factory):
    """factory(peer_name) -> r1 connecting to a peer of that name, played by
    a listening socket of the test's own."""
    socks = []

    def start(peer, retry="100ms"):
        x_addr, r1_addr = unique_addrs(2)
        listener = socket.socket()
        socks.append(listener)
        listener.bind((x_addr, 0))
        listener.listen(8)
        listener.settimeout(30)
        port = free_port(r1_addr)
        n = nbrpd_factory("r1", f'router-name "r1";\nlisten {r1_addr} port {port};\n'
                                f"inrp-address {r1_addr} port 53;\nconnect-retry {retry};\n"
                                f'peer "{peer}" {{ address {x_addr} port {listener.getsockname()[1]}; }}\n')
        n.addr, n.port, n.x_addr, n.listener = r1_addr, port, x_addr, listener
        return n
    yield start
    for s in socks:
        s.close()


@pytest.mark.parametrize("peer,survivor", [("zz", "theirs"), ("a", "ours")])
def test_a_collision_keeps_the_connection_of_the_higher_name(active, peer, survivor):
    """Both sides connect at once; both connections reach OpenConfirm.  The
    one opened by the router whose name sorts higher stays (r1 < zz, a < r1),
    the other is closed with CEASE/collision (6/7)."""
    n = active(peer)
    ours = nc.Peer.accept(n.listener)           # r1 connected to us
    assert ours.recv_until(nc.OPEN) is not None
    theirs = nc.Peer(n.addr, n.port, n.x_addr)  # and we to r1
    theirs.send(nc.open_msg(peer))
    assert theirs.recv_until(nc.OPEN) is not None
    assert theirs.recv_until(nc.KEEPALIVE) is not None      # r1 in OpenConfirm on it
    ours.send(nc.open_msg(peer))                # and now on the other too
    keep, lose = (theirs, ours) if survivor == "theirs" else (ours, theirs)
    code, sub, _ = lose.notification()
    assert (code, sub) == (6, 7)
    keep.send(nc.keepalive())
    assert keep.recv_until(nc.END_OF_RIB) is not None
    wait_for(lambda: n.peers()[peer]["state"] == "Established", 10, "the session on the survivor")
    keep.close()
    lose.close()


def test_reconnects_back_off_doubling(active):
    """A peer that takes the connection and closes it at once: each wait
    before the next attempt is at least twice the one before, from
    connect-retry (only lower bounds: a loaded machine can only be later)."""
    retry = 0.2
    n = active("x", retry=f"{int(retry * 1000)}ms")
    times = []
    for _ in range(5):
        conn, _ = n.listener.accept()
        times.append(time.monotonic())
        conn.close()
    gaps = [b - a for a, b in zip(times, times[1:])]
    for i, gap in enumerate(gaps):
        assert gap >= retry * 2 ** i * 0.95, gaps
    assert n.proc.poll() is None
