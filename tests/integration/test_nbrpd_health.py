"""Health checks of attached content servers: a server that stops
accepting TCP connections on its check port leaves the answers; when none
is left the name is withdrawn from the peers; it all comes back."""

import socket

from conftest import free_port, wait_for
from test_nbrpd import answer, net, path_of, unique_addrs  # noqa: F401  (fixtures)


def listener(addr, port):
    s = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    s.bind((addr, port))
    s.listen(16)
    return s


def test_failing_servers_are_withdrawn_and_come_back(net):
    s1, s2 = unique_addrs(2)
    port = free_port(s1)
    up = {s1: listener(s1, port), s2: listener(s2, port)}
    try:
        rs = net(["r1", "r2"], [("r1", "r2")],
                 content={"r2": f'content "hc.content" {{ server {s1}; server {s2}; '
                                f'health-check port {port} interval 200ms timeout 100ms; }}\n'})
        wait_for(lambda: path_of(rs["r1"], "hc.content") == ["r2"], 20, "the route")
        wait_for(lambda: answer(rs["r2"], "hc.content") == [s1, s2], 10, "both servers")
        up.pop(s1).close()
        wait_for(lambda: answer(rs["r2"], "hc.content") == [s2], 10, "s1 out")
        assert answer(rs["r1"], "hc.content") == [s2]
        assert "fails its health check" in rs["r2"].nbrpd.log()
        up.pop(s2).close()
        wait_for(lambda: rs["r1"].nbrpd.route("hc.content") is None, 10, "the name withdrawn")
        wait_for(lambda: answer(rs["r2"], "hc.content") == "REFUSED", 10, "inrpd to forget it")
        up[s2] = listener(s2, port)
        wait_for(lambda: path_of(rs["r1"], "hc.content") == ["r2"], 10, "the name back")
        wait_for(lambda: answer(rs["r1"], "hc.content") == [s2], 10, "s2 back")
    finally:
        for s in up.values():
            s.close()
