"""IPv6 end to end on ::1: an NBRP session between two nbrpds, a route
whose next hop is an IPv6 inrpd, and a query forwarded to it."""

import pytest

from conftest import free_port, wait_for
from test_inrpd_basic import ipv6_loopback
from test_nbrpd import Router, answer, path_of, unique_addrs

SERVER = "127.0.0.99"


def test_a_session_and_a_next_hop_over_ipv6(inrpd_factory, nbrpd_factory, tmp_path):
    if not ipv6_loopback():
        pytest.skip("no IPv6 loopback")
    r1, r2 = Router(), Router()
    r1.name, r2.name = "r1", "r2"
    # r1's inrpd on IPv4, r2's on ::1: r1 forwards to an IPv6 next hop
    r1.addr, r2.addr = unique_addrs(1)[0], "::1"
    for r in (r1, r2):
        r.nbrp_port, r.fib = free_port("::1"), tmp_path / f"{r.name}.fib"
    r2.dns_port = free_port("::1")
    r2.inrpd = inrpd_factory(f'fib-channel "{r2.fib}";\n', addr="::1", port=r2.dns_port)
    r1.inrpd = inrpd_factory(f'fib-channel "{r1.fib}";\n', addr=r1.addr)
    r1.dns_port = r1.inrpd.port
    for r, other, content in ((r1, r2, ""), (r2, r1, f'content "v6.content" {{ server {SERVER}; }}\n')):
        r.nbrpd = nbrpd_factory(r.name, f'router-name "{r.name}";\nlisten ::1 port {r.nbrp_port};\n'
                                        f"inrp-address {r.inrpd.addr} port {r.inrpd.port};\n"
                                        f'hold-time 3s;\nconnect-retry 100ms;\nfib-channel "{r.fib}";\n'
                                        f'{content}peer "{other.name}" {{ address ::1 port {other.nbrp_port}; }}\n')
    wait_for(lambda: path_of(r1, "v6.content") == ["r2"], 20, "r1 to learn v6.content over ::1")
    assert r1.nbrpd.route("v6.content")[0]["next_hop"] == f"::1 port {r2.dns_port}"
    wait_for(lambda: answer(r1, "www.v6.content") == [SERVER], 20, "r1's inrpd to answer through ::1")
    assert r2.nbrpd.peers()["r1"]["state"] == "Established"
