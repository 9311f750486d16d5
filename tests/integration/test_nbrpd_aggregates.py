"""Aggregates end to end (docs/NBRP.md "Aggregates", docs/AGGREGATES.md):
a router defines an aggregate, its peers fetch it over IXFR/AXFR from
their neighbour, store it, pass it on, and their inrpds answer its
members.  Routers are real nbrpd and inrpd pairs (test_nbrpd.network)."""

import json
import os
import random
import re
import subprocess
import time

import dns.message
import dns.query
import dns.rcode
import dns.rdatatype
import pytest

from conftest import SANITIZED, free_port, wait_for
import nbrp_client as nc
from test_aggregate_xfr import records, served, servers  # noqa: F401  (served, servers: fixtures)
from test_nbrpd import SERVER_FAR, answer, establish, lone, net  # noqa: F401  (lone, net: fixtures)

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


def line_with_aggregate(net, tmp_path, routers, origin, members, origin_extra="", **kw):
    """Routers in a line, each with a state-dir and a transfer server; origin defines the aggregate
    AGG from a file of members.  (the routers, the definition file, their transfer servers)"""
    defs = tmp_path / "hosted.names"
    write_members(defs, members)
    extra, xfr = routers_with_state(tmp_path, routers)
    extra[origin] += origin_extra
    rs = net(routers, list(zip(routers, routers[1:])), content={origin: aggregate_block(defs)}, extra=extra, **kw)
    return rs, defs, xfr


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
    rs, defs, xfr = line_with_aggregate(net, tmp_path, ["r1", "r2", "r3"], "r3", members)
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
    # and `show route` by the aggregate's name finds it
    r = rs["r1"].nbrpd.nbrc("show", "route", AGG)
    assert r.returncode == 0 and AGG in r.stdout and "no route" not in r.stdout + r.stderr
    shown = rs["r1"].nbrpd.json("show", "route", AGG)
    assert shown["aggregate"] and shown["routes"][0]["path"] == ["r2", "r3"]


def transfer(tool, *args):
    """(type, data) records of a dig or kdig transfer: a PTR's name, an SOA's serial."""
    r = subprocess.run([tool, *args], capture_output=True, text=True, timeout=60)
    return records(r.stdout, AGG), r


def test_the_router_serves_its_aggregates_to_kdig_and_dig_and_refuses_others(net, tmp_path):
    members = [f"s{i}.example" for i in range(2000)]
    rs, defs, xfr = line_with_aggregate(net, tmp_path, ["r1"], "r1", members,
                                        origin_extra="allow-transfer 127.9.0.0/16;\n")
    addr, port = xfr["r1"]
    src = f"127.9.{random.randint(1, 250)}.{random.randint(2, 250)}"     # inside allow-transfer
    v1 = version_of(rs["r1"])
    rr, r = transfer("kdig", "-b", src, "-p", str(port), f"@{addr}", "AXFR", AGG)
    assert r.returncode == 0, r.stdout + r.stderr
    assert rr[0] == rr[-1] == ("SOA", v1)
    assert sorted(d for t, d in rr[1:-1]) == sorted(m + "." for m in members)

    write_members(defs, members[10:] + ["fresh.example"])
    assert rs["r1"].nbrpd.nbrc("reload").returncode == 0
    v2 = version_of(rs["r1"])
    assert v2 == (v1 + 1) % 2**32
    rr, _ = transfer("dig", "-b", src, "-p", str(port), f"@{addr}", AGG, f"IXFR={v1}")
    # the current SOA, the old SOA and what left, the new SOA and what came, the current SOA
    assert rr == ([("SOA", v2), ("SOA", v1)] + [("PTR", m + ".") for m in members[:10]] +
                  [("SOA", v2), ("PTR", "fresh.example."), ("SOA", v2)])
    # from a version before the journal's history: the whole set, as AXFR
    rr, _ = transfer("kdig", "-b", src, "-p", str(port), f"@{addr}", f"IXFR={(v1 - 5) % 2**32}", AGG)
    assert rr[0] == rr[-1] == ("SOA", v2) and len(rr) == 1991 + 2
    # outside allow-transfer (loopback is not in it here): closed when accepted over TCP, REFUSED over UDP
    rr, r = transfer("kdig", "-b", "127.0.0.1", "-p", str(port), f"@{addr}", "AXFR", AGG)
    assert rr == [] and "failed to query server" in r.stdout + r.stderr
    with pytest.raises((EOFError, ConnectionError)):
        dns.query.tcp(dns.message.make_query(AGG, "AXFR"), addr, port=port, source="127.0.0.1", timeout=5)
    resp = dns.query.udp(dns.message.make_query(AGG, "SOA"), addr, port=port, source="127.0.0.1", timeout=5)
    assert resp.rcode() == dns.rcode.REFUSED
    status = rs["r1"].nbrpd.json("show", "aggregate", AGG)
    assert status["origin"] == "local" and status["members"] == 1991 and status["journal_versions"] == 1


def test_a_restart_serves_the_stored_version_without_fetching_and_a_bad_definition_keeps_it(net, tmp_path):
    members = [f"k{i}.example" for i in range(20000)]
    rs, defs, _ = line_with_aggregate(net, tmp_path, ["r1", "r2"], "r2", members)
    v1 = version_of(rs["r2"])
    wait_for(lambda: version_of(rs["r1"]) == v1, 20, "r1 to store the aggregate")
    r1 = rs["r1"].nbrpd
    r1.kill()
    mark = len(r1.log())
    r1.restart()
    wait_for(lambda: answer(rs["r1"], "k19999.example") == [SERVER_FAR], 10, "r1 to answer after the restart")
    wait_for(lambda: version_of(rs["r1"]) == v1, 10, "the version stored before")
    assert "from " not in "".join(ln for ln in r1.log()[mark:].splitlines() if "aggregate hosted.agg." in ln)
    assert agg_view(rs["r1"])["fetches"] == 0

    # a definition with a bad line is not used: the version stays, the reload says why
    defs.write_text("ok.example\nnot a name\n")
    r = rs["r2"].nbrpd.nbrc("reload")
    assert r.returncode == 0 and "1 aggregate definitions not read" in r.stdout + r.stderr
    assert f"{defs}:2:" in rs["r2"].nbrpd.log()
    assert version_of(rs["r2"]) == v1 and agg_view(rs["r2"])["members"] == 20000


def journal(tmp_path, router):
    return tmp_path / f"state-{router}" / "hosted.agg.jnl"


@pytest.mark.parametrize("damage", ["flipped byte", "truncated tail"])
def test_a_damaged_journal_is_cut_and_the_lost_version_fetched_again(net, tmp_path, damage):
    members = [f"j{i}.example" for i in range(5000)]
    rs, defs, _ = line_with_aggregate(net, tmp_path, ["r1", "r2"], "r2", members)
    v1 = version_of(rs["r2"])
    wait_for(lambda: version_of(rs["r1"]) == v1, 20, "r1 to store the aggregate")
    write_members(defs, members[100:] + [f"late{i}.example" for i in range(100)])
    assert rs["r2"].nbrpd.nbrc("reload").returncode == 0
    v2 = (v1 + 1) % 2**32
    wait_for(lambda: version_of(rs["r1"]) == v2, 20, "r1 to store the second version")
    r1 = rs["r1"].nbrpd
    r1.stop()
    j = journal(tmp_path, "r1")
    data = bytearray(j.read_bytes())
    assert data, "the second version is in r1's journal"
    if damage == "flipped byte":
        data[len(data) - 10] ^= 0x40
    else:
        del data[len(data) - 7:]
    j.write_bytes(bytes(data))
    mark = len(r1.log())
    r1.restart()
    wait_for(lambda: version_of(rs["r1"]) == v2, 20, "r1 to fetch the lost version again")
    log = r1.log()[mark:]
    assert "cut" in log and "hosted.agg" in log, log
    assert [k for k, _ in transfers_in(log)] == ["IXFR"]
    wait_for(lambda: answer(rs["r1"], "late99.example") == [SERVER_FAR], 10, "the refetched members")


def transfers_in(log):
    return [(m.group(1), int(m.group(2))) for m in
            re.finditer(r"aggregate hosted\.agg\. from \S+: (.*?), version .*?, (\d+) bytes in", log)]


def axfr_members(xfr):
    addr, port = xfr
    rr, r = transfer("kdig", "-p", str(port), f"@{addr}", "AXFR", AGG)
    assert r.returncode == 0, r.stderr
    return sorted(d for t, d in rr if t == "PTR")


def test_kill_9_while_a_large_diff_is_fetched_never_loses_a_version_or_refetches_whole(net, tmp_path):
    current = [f"b{i}.example" for i in range(250000)]
    rs, defs, xfr = line_with_aggregate(net, tmp_path, ["r1", "r2"], "r2", current)
    r1 = rs["r1"].nbrpd
    version = version_of(rs["r2"])
    wait_for(lambda: version_of(rs["r1"]) == version, 60, "r1 to store the aggregate")
    rng = random.Random(os.getpid())
    # under ASan, fewer rounds: that run is for memory errors, this one for the moments
    for round_ in range(6 if SANITIZED else 20):
        # each version drops 100,000 members and adds 100,000: a diff of 200,000 names
        current = current[100000:] + [f"r{round_}x{i}.example" for i in range(100000)]
        write_members(defs, current)
        held = version_of(rs["r1"])
        assert rs["r2"].nbrpd.nbrc("reload").returncode == 0
        version = version_of(rs["r2"])
        # a random moment while r1 fetches and stores it (a few hundred ms): not a wait for anything
        time.sleep(rng.uniform(0, 0.3))
        r1.kill()
        mark = len(r1.log())
        r1.restart()
        at_start = version_of(rs["r1"])
        assert at_start in (held, version), f"round {round_}: r1 at {at_start}, had {held}, offered {version}"
        wait_for(lambda: version_of(rs["r1"]) == version, 60, f"round {round_}: r1 to reach version {version}")
        kinds = [k for k, _ in transfers_in(r1.log()[mark:])]
        assert kinds in ([], ["IXFR"]), f"round {round_}: {kinds}"
    assert agg_view(rs["r1"])["members"] == 250000
    assert axfr_members(xfr["r1"]) == axfr_members(xfr["r2"])


def test_many_aggregates_offered_at_once_are_fetched_a_few_at_a_time(net, tmp_path):
    """A new session offering 24 aggregates: the receiver's fetches stay under the server's bound
    on transfers (8), so none is refused and waits for a retry."""
    extra, _ = routers_with_state(tmp_path, ["r1", "r2"])
    defs = ""
    for i in range(24):
        path = tmp_path / f"a{i}.names"
        write_members(path, [f"m{j}.a{i}.example" for j in range(3000)])
        defs += f'aggregate "a{i}.agg" {{ server {SERVER_FAR}; file "{path}"; }}\n'
    rs = net(["r1", "r2"], [("r1", "r2")], content={"r2": defs}, extra=extra)

    def stored():
        return [a for a in rs["r1"].nbrpd.json("show", "aggregates") if a["version"] is not None]
    wait_for(lambda: len(stored()) == 24, 30, "r1 to store every aggregate")
    assert sum(a["fetch_failures"] for a in stored()) == 0
    assert "refused" not in rs["r2"].nbrpd.log()
    wait_for(lambda: answer(rs["r1"], "m2999.a23.example") == [SERVER_FAR], 10, "a member answered")


def test_max_names_counts_members_and_import_policy_applies_to_the_aggregate(net, tmp_path):
    limits = {("r1", "r2"): "max-names 1000 refuse; ", ("r3", "r2"): f'import deny "{AGG}"; '}
    rs, _, _ = line_with_aggregate(net, tmp_path, ["r1", "r2", "r3"], "r2", [f"c{i}.example" for i in range(5000)],
                                   peer_extra=limits)
    v = version_of(rs["r2"])
    # r1: the route came with no members known, the version fetched has 5,000: refused
    wait_for(lambda: "over max-names (1000) with the members" in rs["r1"].nbrpd.log(), 20, "r1 to refuse")
    wait_for(lambda: rs["r1"].nbrpd.peers()["r2"]["names"] == 0, 10, "the aggregate's route gone at r1")
    assert version_of(rs["r1"]) == v                        # stored, not used
    assert rs["r1"].nbrpd.peers()["r2"]["state"] == "Established"
    assert answer(rs["r1"], "c1.example") == "REFUSED"
    # r3: denied by name before anything is fetched
    wait_for(lambda: rs["r3"].nbrpd.peers()["r2"]["state"] == "Established", 10, "r3's session")
    wait_for(lambda: "hosted.agg." in rs["r2"].nbrpd.nbrc("show", "aggregates").stdout, 10, "r2's aggregate")
    # a marker r2 announces after the aggregate: once r3 has it, r3 has had the aggregate's route
    r2 = rs["r2"].nbrpd
    r2.conf.write_text(r2.conf.read_text() + f'content "marker.content" {{ server {SERVER_FAR}; }}\n')
    assert r2.nbrc("reload").returncode == 0
    wait_for(lambda: rs["r3"].nbrpd.route("marker.content"), 20, "the marker at r3")
    assert rs["r3"].nbrpd.json("show", "aggregates") == []
    assert rs["r3"].nbrpd.peers()["r2"]["names"] == 1          # the marker alone


# ---- a hand-written peer offering the aggregate, served by the library's server (aggtool) ----

def test_a_peer_offers_withdraws_and_garbles_an_aggregate_and_the_session_stays(lone, served, tmp_path):
    from test_aggregate_xfr import AGG as XAGG
    start, _, _ = served                                 # versions 1..3 of agg.example, 1000 members
    server = start()
    n = lone(extra=f'state-dir "{tmp_path}/state";\n')
    p = establish(n)
    p.send(nc.end_of_rib())
    source = f"{server.addr} {server.port}"
    agg = nc.route([XAGG], n.x_addr, 5353, ["x"], aggregate=XAGG, version=3, source=source)
    name = nc.route([XAGG], n.x_addr, 5353, ["x"])        # a name route of the same name: another space
    p.send(nc.update(routes=[agg, name]))

    def view():
        r = n.nbrc("--json", "show", "aggregate", XAGG)
        return json.loads(r.stdout) if r.returncode == 0 else {}
    wait_for(lambda: view().get("version") == 3, 10, "r1 to fetch version 3 from the source offered")
    assert view()["members"] == 1000 and view()["routes"] == 1 and view()["offered_by"] == source
    assert view()["last_transfer"]["kind"] == "AXFR"
    assert n.route(XAGG)[0]["from"] == "x"                # the name's own route, beside it
    assert n.peers()["x"]["names"] == 2

    # a version the server does not have: the fetch fails, is counted, and tried again later
    p.send(nc.update(routes=[nc.route([XAGG], n.x_addr, 5353, ["x"], aggregate=XAGG, version=9,
                                                source=f"{server.addr} {free_port(server.addr)}")]))
    wait_for(lambda: view()["fetch_failures"] >= 1, 20, "the failed fetch")
    assert view()["version"] == 3                         # routing goes on with what it has

    # a malformed aggregate route is a withdrawal of the aggregate, not of the session
    bad = nc.route([XAGG, "other.example"], n.x_addr, 5353, ["x"], aggregate=XAGG, version=3, source=source)
    p.send(nc.update(routes=[bad]))
    wait_for(lambda: view()["routes"] == 0, 10, "the aggregate withdrawn")
    peer = n.peers()["x"]
    assert peer["state"] == "Established" and peer["bad_routes"] == 1 and peer["names"] == 1
    assert "an aggregate's route names other than the aggregate" in n.log()

    p.send(nc.update(routes=[agg]))
    wait_for(lambda: view()["routes"] == 1, 10, "the aggregate back")
    p.send(nc.update(withdrawn_aggregates=[XAGG]))
    wait_for(lambda: view()["routes"] == 0, 10, "withdrawn_aggregates")
    assert n.route(XAGG)[0]["from"] == "x"                # the name route stays
    assert n.peers()["x"]["names"] == 1
    p.close()


def test_an_ixfr_the_source_cannot_serve_comes_as_a_whole_and_is_stored(lone, servers, tmp_path):
    """r1 holds version 1 and is offered version 5 by a source whose history
    starts at 5: its IXFR from 1 is answered with the whole set (RFC 1995
    section 4), which r1 takes as the new version."""
    from test_aggregate_xfr import AGG as XAGG, aggtool, names
    old_state, new_state = tmp_path / "old", tmp_path / "new"
    old_members, new_members = tmp_path / "old.txt", tmp_path / "new.txt"
    write_members(old_members, names(0, 1000))
    aggtool("define", old_state, XAGG, old_members, 1)
    write_members(new_members, names(500, 1200))
    aggtool("define", new_state, XAGG, new_members, 5)
    first, second = servers(old_state, old_members), servers(new_state, new_members)
    n = lone(extra=f'state-dir "{tmp_path}/state";\n')
    p = establish(n)
    p.send(nc.end_of_rib())

    def view():
        r = n.nbrc("--json", "show", "aggregate", XAGG)
        return json.loads(r.stdout) if r.returncode == 0 else {}

    def offer(version, server):
        p.send(nc.update(routes=[nc.route([XAGG], n.x_addr, 5353, ["x"], aggregate=XAGG, version=version,
                                          source=f"{server.addr} {server.port}")]))
    offer(1, first)
    wait_for(lambda: view().get("version") == 1, 20, "r1 to fetch version 1")
    assert view()["last_transfer"]["kind"] == "AXFR"
    offer(5, second)
    wait_for(lambda: view().get("version") == 5, 20, "r1 to fetch version 5")
    last = view()["last_transfer"]
    assert last["kind"] == "IXFR answered as AXFR" and last["ok"]
    assert (last["from_version"], last["to_version"]) == (1, 5)
    assert view()["members"] == 700
    assert "IXFR as AXFR (journal does not reach back)" in second.log()
    assert view()["fetch_failures"] == 0
    p.close()


def test_a_relative_member_file_is_read_from_the_config_files_directory(nbrpd_factory, tmp_path):
    """`file "hosted.names";` names a file beside the config, wherever nbrpd was started."""
    (tmp_path / "nbrpd-r1").mkdir()
    write_members(tmp_path / "nbrpd-r1" / "hosted.names", ["a.example", "b.example", "c.example"])
    n = nbrpd_factory("r1", 'router-name "r1";\ninrp-address 127.0.0.1 port 53;\n'
                      f'state-dir "{tmp_path}/state";\n'
                      f'aggregate "{AGG}" {{ server {SERVER_FAR}; file "hosted.names"; }}\n')
    wait_for(lambda: n.json("show", "aggregate", AGG)["members"] == 3, 10, "the members read")


@pytest.mark.parametrize("how", ["transfer-source", "transfer-listen"])
def test_fetches_come_from_the_routers_own_address(net, tmp_path, how):
    """The origin allows transfers to r1's one address: r1 fetches from it, whether set by
    transfer-source or taken from its transfer-listen (never the kernel's 127.0.0.1)."""
    extra, xfr = routers_with_state(tmp_path, ["r1", "r2"])
    own = xfr["r1"][0]
    if how == "transfer-source":
        own = f"127.9.251.{random.randint(2, 250)}"
        extra["r1"] += f"transfer-source {own};\n"
    extra["r2"] += f"allow-transfer {own}/32;\n"
    defs = tmp_path / "hosted.names"
    write_members(defs, ["a.example", "b.example"])
    rs = net(["r1", "r2"], [("r1", "r2")], content={"r2": aggregate_block(defs)}, extra=extra)
    wait_for(lambda: version_of(rs["r1"]) is not None, 20, "r1 to fetch the aggregate")
    assert agg_view(rs["r1"])["members"] == 2
    assert rs["r2"].nbrpd.json("show", "status")["transfer_closed_acl"] == 0
