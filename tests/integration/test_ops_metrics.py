"""Prometheus metrics on /metrics: promtool accepts what both daemons
serve, the values follow what the test does, and the ACL and the HTTP
surface behave."""

import socket

import pytest

from conftest import free_port, loopback_addr, tcp_listeners, wait_for
from prom import get, scrape, value
from test_nbrpd import net  # noqa: F401  (fixture)

SERVER = "127.0.0.99"


def settled(text):
    """The samples, once every UDP query so far (all local) is in the histogram."""
    timed = value(text, "inrpd_answer_duration_seconds_count", transport="udp", path="local")
    return text if timed == value(text, "inrpd_queries_total", transport="udp") else None


def test_inrpd_metrics_move_with_queries(inrpd_factory, tmp_path):
    mport = free_port("127.0.0.1")
    dead = ("127.0.0.1", free_port("127.0.0.1"))       # a next router that never answers
    d = inrpd_factory(f"metrics 127.0.0.1 port {mport};\nquery-timeout 200ms;\n"
                      'route "www.example.content" { server 127.0.0.10; }\n'
                      f'route "far.example.content" {{ router {dead[0]} port {dead[1]}; }}\n')
    # The readiness probe's answer is counted when it arrives and timed after it
    # is sent, so wait until the histogram has it too.
    before = wait_for(lambda: settled(scrape("127.0.0.1", mport)), 5, "the probe's latency")
    assert value(before, "inrpd_build_info", version="0.1.0") == 1
    assert value(before, "inrpd_fib_names", table="static") == 2
    assert value(before, "inrpd_fib_channel_configured") == 0

    for _ in range(3):
        d.udp("www.example.content")
    d.tcp("www.example.content")
    d.udp("not-routed.example")
    assert d.udp("far.example.content").rcode() == 2        # SERVFAIL: the hop timed out

    after = scrape("127.0.0.1", mport)

    def delta(name, **labels):
        return value(after, name, **labels) - value(before, name, **labels)
    assert delta("inrpd_queries_total", transport="udp") == 5
    assert delta("inrpd_local_total", transport="udp") == 3
    assert delta("inrpd_local_total", transport="tcp") == 1
    assert delta("inrpd_refused_total", transport="udp") == 1
    assert delta("inrpd_forwarded_total", transport="udp") == 1
    assert delta("inrpd_servfail_total", transport="udp") == 1
    # the latency histogram: 3 local answers and a REFUSED over UDP, one over TCP,
    # and the forwarded query answered (SERVFAIL) after its 200 ms budget
    lat = "inrpd_answer_duration_seconds"
    assert delta(f"{lat}_count", transport="udp", path="local") == 4
    assert delta(f"{lat}_count", transport="tcp", path="local") == 1
    assert delta(f"{lat}_count", transport="udp", path="forwarded") == 1
    assert delta(f"{lat}_bucket", transport="udp", path="forwarded", le="0.1") == 0
    assert delta(f"{lat}_bucket", transport="udp", path="forwarded", le="+Inf") == 1
    assert 0.15 <= delta(f"{lat}_sum", transport="udp", path="forwarded") < 5
    assert delta(f"{lat}_count", transport="udp", path="fallback") == 0
    hop = {"hop": f"{dead[0]}:{dead[1]}", "kind": "router"}
    assert value(after, "inrpd_hop_queries_total", **hop) >= 1
    assert value(after, "inrpd_hop_timeouts_total", **hop) >= 1
    assert value(after, "inrpd_hop_answers_total", **hop) == 0
    assert value(after, "inrpd_metrics_scrapes_total") >= 1
    assert value(after, "inrpd_uptime_seconds") >= value(before, "inrpd_uptime_seconds")


def test_metrics_http_surface(inrpd_factory):
    mport = free_port("127.0.0.1")
    d = inrpd_factory(f"metrics 127.0.0.1 port {mport};\n")
    assert tcp_listeners(d.proc.pid) == {(d.addr, d.port), ("127.0.0.1", mport)}
    assert get("127.0.0.1", mport, "/")[0] == 404
    assert get("127.0.0.1", mport, "/metrics", method="POST")[0] == 405
    status, text = get("127.0.0.1", mport, "/metrics", method="HEAD")
    assert status == 200 and text == ""


def denied(addr, port, source):
    """A client from source connects (the listener is there) and is then
    closed on without an answer."""
    with socket.socket() as s:
        s.settimeout(5)
        s.bind((source, 0))
        s.connect((addr, port))
        try:
            s.sendall(b"GET /metrics HTTP/1.0\r\n\r\n")
            return s.recv(4096) == b""
        except ConnectionResetError:
            return True


def start_with_acl(kind, inrpd_factory, nbrpd_factory, maddr, mport, allowed):
    acl = f"metrics {maddr} port {mport};\nmetrics-allow {allowed}/32;\n"
    if kind == "inrpd":
        return inrpd_factory(acl)
    addr = loopback_addr()
    return nbrpd_factory("r1", f'router-name "r1";\ninrp-address 127.0.0.1 port 53;\n'
                               f"listen {addr} port {free_port(addr)};\n" + acl)


@pytest.mark.parametrize("kind", ["inrpd", "nbrpd"])
def test_metrics_allow_admits_its_prefix_and_counts_the_others(kind, inrpd_factory, nbrpd_factory):
    """metrics-allow: a client in the prefix gets the metrics, one outside is
    closed on after accept, and the refusal is counted."""
    maddr, allowed, other = loopback_addr(), "127.0.0.251", "127.0.0.252"
    mport = free_port(maddr)
    start_with_acl(kind, inrpd_factory, nbrpd_factory, maddr, mport, allowed)
    counter = f"{kind}_metrics_denied_total"
    assert value(scrape(maddr, mport, source=allowed), counter) == 0
    assert denied(maddr, mport, other)
    assert denied(maddr, mport, "127.0.0.1")
    assert value(scrape(maddr, mport, source=allowed), counter) == 2


def test_metrics_off_by_default(inrpd_factory, nbrpd_factory):
    """Without a metrics line neither daemon listens on anything but its own port."""
    d = inrpd_factory('route "www.example.content" { server 127.0.0.10; }\n')
    assert tcp_listeners(d.proc.pid) == {(d.addr, d.port)}
    addr = loopback_addr()
    port = free_port(addr)
    n = nbrpd_factory("r1", f'router-name "r1";\ninrp-address 127.0.0.1 port 53;\nlisten {addr} port {port};\n')
    assert tcp_listeners(n.proc.pid) == {(addr, port)}


def test_nbrpd_metrics_follow_a_peer_going_down(net):
    mport = free_port("127.0.0.1")
    rs = net(["r1", "r2"], [("r1", "r2")],
             content={"r2": f'content "a.content" {{ server {SERVER}; }}\n'
                            f'content "b.content" {{ server {SERVER}; }}\n'},
             extra={"r1": f"metrics 127.0.0.1 port {mport};\n"})
    r1 = rs["r1"]

    def up():
        s = scrape("127.0.0.1", mport)
        return s if value(s, "nbrpd_peer_names", peer="r2") == 2 else None
    s = wait_for(up, 20, "r1 to have r2's two names")
    assert value(s, "nbrpd_peer_up", peer="r2") == 1
    assert value(s, "nbrpd_peer_state", peer="r2", state="Established") == 1
    assert value(s, "nbrpd_peer_state", peer="r2", state="Idle") == 0
    assert value(s, "nbrpd_peer_names_received_total", peer="r2") >= 2
    assert value(s, "nbrpd_peer_updates_received_total", peer="r2") >= 1
    assert value(s, "nbrpd_rib_names") == 2 and value(s, "nbrpd_rib_routes") == 2
    assert value(s, "nbrpd_build_info", version="0.1.0") == 1
    assert value(s, "nbrpd_bird_configured") == 0

    # the operator takes the session down: CEASE goes out, the names go away
    assert r1.nbrpd.nbrc("disable", "r2").returncode == 0

    def down():
        s = scrape("127.0.0.1", mport)
        return s if value(s, "nbrpd_peer_up", peer="r2") == 0 and value(s, "nbrpd_rib_names") == 0 else None
    after = wait_for(down, 20, "r2's session and names gone from r1's metrics")
    assert value(after, "nbrpd_peer_state", peer="r2", state="Disabled") == 1
    assert value(after, "nbrpd_peer_names", peer="r2") == 0
    # deltas: both routers connect at once, and the collision rule may already have
    # closed one connection with a CEASE before the session settled

    def delta(name, **labels):
        return value(after, name, **labels) - value(s, name, **labels)
    assert delta("nbrpd_peer_notifications_sent_total", peer="r2", code="cease") == 1
    assert delta("nbrpd_peer_notifications_sent_total", peer="r2", code="update") == 0
    assert delta("nbrpd_peer_flaps_total", peer="r2") == 1



def test_metrics_port_taken_fails_the_start(tmp_path):
    """The error reaches the terminal and the exit status, as a listen error does."""
    import socket
    from conftest import run_inrpd
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        s.listen()
        taken = s.getsockname()[1]
        conf = tmp_path / "inrpd.conf"
        conf.write_text(f"listen 127.0.0.1 port {free_port('127.0.0.1')};\nmetrics 127.0.0.1 port {taken};\n")
        r = run_inrpd("-c", str(conf))
    assert r.returncode == 1
    assert f"metrics 127.0.0.1 port {taken}: Address already in use" in r.stderr
    conf.write_text("listen 127.0.0.1 port 5353;\nmetrics 127.0.0.1;\n")
    r = run_inrpd("-t", "-c", str(conf))
    assert r.returncode == 1 and f"{conf}:2: expected 'metrics ADDRESS port NUMBER'" in r.stderr
