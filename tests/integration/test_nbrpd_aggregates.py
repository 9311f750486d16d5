"""Aggregates end to end (docs/NBRP.md "Aggregates", docs/AGGREGATES.md):
a router defines an aggregate, its peers fetch it over IXFR/AXFR from
their neighbour, store it, pass it on, and their inrpds answer its
members.  Routers are real nbrpd and inrpd pairs (test_nbrpd.network)."""

import json
import os
import random
import re
import signal
import subprocess

import dns.message
import dns.query
import dns.rdatatype
import pytest

from conftest import free_port, wait_for
from test_nbrpd import SERVER_FAR, answer, net  # noqa: F401  (net: the fixture)

AGG = "hosted.agg"


def xfr_endpoint():
    addr = f"127.9.{random.randint(1, 250)}.{random.randint(2, 250)}"
    return addr, free_port(addr)


def routers_with_state(tmp_path, names):
    """Each router's state-dir and transfer server, as `extra` config."""
    extra, xfr = {}, {}
    for n in names:
        addr, port = xfr_endpoint()
        xfr[n] = (addr, port)
        extra[n] = f'state-dir "{tmp_path}/state-{n}";\ntransfer-listen {addr} port {port};\n'
    return extra, xfr


def write_members(path, names):
    path.write_text("# test aggregate\n" + "\n".join(names) + "\n")


def aggregate_block(path, server=SERVER_FAR):
    return f'aggregate "{AGG}" {{ server {server}; file "{path}"; }}\n'


def agg_view(r):
    v = r.nbrpd.json("show", "aggregate", AGG)
    return v[0] if isinstance(v, list) else v


def version_of(r):
    try:
        return agg_view(r)["version"]
    except AssertionError:
        return None


def transfers(r):
    """The fetch log lines: (kind, bytes)."""
    return [(m.group(1), int(m.group(2))) for m in
            re.finditer(r"aggregate hosted\.agg\. from \S+: (.*?), version .*?, (\d+) bytes in", r.nbrpd.log())]


def test_an_aggregate_crosses_three_routers_and_a_reload_sends_only_the_diff(net, tmp_path):
    members = [f"m{i}.site{i % 97}.example" for i in range(50000)]
    defs = tmp_path / "hosted.names"
    write_members(defs, members)
    extra, xfr = routers_with_state(tmp_path, ["r1", "r2", "r3"])
    rs = net(["r1", "r2", "r3"], [("r1", "r2"), ("r2", "r3")], content={"r3": aggregate_block(defs)}, extra=extra)
    v1 = version_of(rs["r3"])
    assert v1 is not None and agg_view(rs["r3"])["members"] == 50000
    wait_for(lambda: version_of(rs["r1"]) == v1, 30, "r1 to store the aggregate")
    assert agg_view(rs["r1"])["members"] == 50000
    # r1 fetched from its neighbour r2, not from the origin
    assert agg_view(rs["r1"])["offered_by"] == f"{xfr['r2'][0]} {xfr['r2'][1]}"
    # members reach inrpd in several messages: the last one in order first
    wait_for(lambda: answer(rs["r1"], "www.m49999.site44.example") == [SERVER_FAR], 10, "r1's inrpd to answer")
    assert answer(rs["r1"], "m123.site26.example") == [SERVER_FAR]
    assert answer(rs["r1"], "nobody.example") == "REFUSED"                   # not routed: no upstream here
    full = transfers(rs["r1"])
    assert [k for k, _ in full] == ["AXFR"]

    # 500 out, 500 in: one new version, fetched as an IXFR of the difference
    removed, added = members[:500], [f"new{i}.example" for i in range(500)]
    write_members(defs, members[500:] + added)
    assert rs["r3"].nbrpd.nbrc("reload").returncode == 0
    v2 = version_of(rs["r3"])
    assert v2 == (v1 + 1) % 2**32
    wait_for(lambda: version_of(rs["r1"]) == v2, 20, "r1 to store the new version")
    kinds = transfers(rs["r1"])
    assert [k for k, _ in kinds] == ["AXFR", "IXFR"]
    assert kinds[1][1] * 10 < kinds[0][1], f"the diff cost {kinds[1][1]} bytes against {kinds[0][1]} for the whole"
    wait_for(lambda: answer(rs["r1"], "new7.example") == [SERVER_FAR], 10, "a new member answered")
    wait_for(lambda: answer(rs["r1"], "m7.site7.example") == "REFUSED", 10, "a removed member to fall back")
    assert answer(rs["r1"], "m600.site18.example") == [SERVER_FAR]
    # the route names the aggregate, with the version each hop stores
    route = rs["r1"].nbrpd.json("show", "aggregate", AGG)
    assert route["members"] == 50000 and route["origin"] == "learned"
