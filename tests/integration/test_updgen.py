"""nbrp-updgen, the update generator: a source feeding a real nbrpd and
sinks counting what it propagates."""

import json
import random
import pathlib
import signal
import socket
import subprocess

import nbrp_client
from conftest import ENV, NBRPD, free_port, wait_for

UPDGEN = str(pathlib.Path(NBRPD).parent.parent / "updgen" / "nbrp-updgen")


def run(*args, **kw):
    return subprocess.run([UPDGEN, *args], capture_output=True, text=True, timeout=120, env=ENV, **kw)


def test_help_and_bad_arguments():
    r = run("--help")
    assert r.returncode == 0 and "source" in r.stdout and "sink" in r.stdout
    assert run().returncode == 2
    assert run("source", "--router", "127.0.0.1").returncode == 2
    assert run("sink", "--router", "not-an-address", "--name", "s", "--local", "127.0.0.1",
               "--sinks", "1", "--expect", "1").returncode == 2
    src = ("source", "--router", "127.0.0.1:9", "--name", "g", "--local", "127.0.0.1", "--names", "10")
    for bad in (["--aggregate-size", "x"], ["--aggregate-size", "0"], ["--aggregates", "2"],
                ["--aggregate-size", "5", "--agg-changes", "3"], ["--aggregate-size", "5", "--agg-change-fraction", "2"],
                ["--aggregate-size", "5", "--agg-change-names", "0"], ["--aggregate-size", "5", "--agg-all"],
                ["--aggregate-size", "5", "--aggregates", "3"], ["--aggregate-size", "5", "--xfr-listen", "[::1"],
                ["--aggregate-size", "5", "--agg-suffix", "a..b"]):
        assert run(*src, *bad).returncode == 2, bad
    assert run("sink", "--router", "127.0.0.1:9", "--name", "s", "--local", "127.0.0.1", "--sinks", "1",
               "--expect-agg-changes", "-1").returncode == 2


def test_source_to_router_to_sinks(nbrpd_factory):
    base = f"127.5.{random.randint(1, 250)}"      # random: runs elsewhere on the machine do not clash
    n = nbrpd_factory("dut", f'router-name "dut";\nlisten {base}.1 port 1790;\n'
                      f"inrp-address {base}.1 port 53;\nhold-time 30s;\n"
                      f'peer "gen" {{ address {base}.9; passive; }}\n'
                      + "".join(f'peer "sink{i}" {{ address {base}.{10 + i}; passive; }}\n' for i in (1, 2, 3)))
    names = 5000
    sinks = subprocess.Popen([UPDGEN, "sink", "--router", f"{base}.1:1790", "--name", "sink",
                              "--local", f"{base}.10", "--sinks", "3", "--expect", str(names),
                              "--timeout", "60", "--json"], stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                             text=True, env=ENV)
    try:
        wait_for(lambda: sum(p["state"] == "Established" for p in n.json("show", "peers")) == 3, 20,
                 "the sinks' sessions")
        src = run("source", "--router", f"{base}.1", "--name", "gen", "--local", f"{base}.9",
                  "--names", str(names), "--seed", "7", "--batch", "700", "--linger", "1", "--json")
        assert src.returncode == 0, src.stderr
        out = json.loads(src.stdout)
        assert out["names"] == names and out["bytes"] > 0
        stdout, stderr = sinks.communicate(timeout=90)
    finally:
        if sinks.poll() is None:
            sinks.kill()
            sinks.wait()
    assert sinks.returncode == 0, stderr
    report = json.loads(stdout)
    assert [s["names"] for s in report["sinks"]] == [names] * 3
    assert all(s["names_per_s"] > 0 and s["updates"] >= 1 for s in report["sinks"])
    # the same seed gives the same names: the router had them all, once; the source has gone
    # (run waited for it), and its names are withdrawn over a few loop turns (a purge job)
    gen = lambda: {p["name"]: p for p in n.json("show", "peers")}["gen"]["names"]
    assert gen() <= names
    wait_for(lambda: gen() == 0, 20, "the source's names withdrawn")


def test_duration_and_rate_bound_the_source_and_sinks_count_without_expect(nbrpd_factory):
    import signal
    base = f"127.5.{random.randint(1, 250)}"      # random: runs elsewhere on the machine do not clash
    n = nbrpd_factory("dut2", f'router-name "dut2";\nlisten {base}.21 port 1790;\n'
                      f"inrp-address {base}.21 port 53;\nhold-time 30s;\n"
                      f'peer "gen" {{ address {base}.29; passive; }}\n'
                      f'peer "sink1" {{ address {base}.31; passive; }}\n'
                      f'peer "count1" {{ address {base}.41; passive; }}\n')
    rate, batch = 3000, 100
    src = subprocess.Popen([UPDGEN, "source", "--router", f"{base}.21", "--name", "gen", "--local", f"{base}.29",
                            "--duration", "1", "--rate", str(rate), "--batch", str(batch), "--linger", "600",
                            "--json"], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=ENV)
    counter = None
    try:
        peer = lambda name: next(p for p in n.json("show", "peers") if p["name"] == name)
        wait_for(lambda: peer("gen")["eor"], 30, "END-OF-RIB from the source")
        sent = peer("gen")["names"]
        # the first batch goes at once; after that, no more than --rate allows in --duration
        assert batch <= sent <= rate + batch
        # a sink with --expect gets the whole table the duration-bound source built
        got = run("sink", "--router", f"{base}.21:1790", "--name", "sink", "--local", f"{base}.30",
                  "--sinks", "1", "--expect", str(sent), "--timeout", "60", "--json")
        assert got.returncode == 0, got.stderr
        assert json.loads(got.stdout)["sinks"][0]["names"] == sent
        # without --expect a sink counts until it is told to stop, and that is a normal end
        counter = subprocess.Popen([UPDGEN, "sink", "--router", f"{base}.21:1790", "--name", "count",
                                    "--local", f"{base}.40", "--sinks", "1", "--json"],
                                   stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=ENV)
        wait_for(lambda: peer("count1")["state"] == "Established" and peer("count1")["updates_out"] >= 1, 20,
                 "the counting sink's session")
        counter.send_signal(signal.SIGINT)
        out, err = counter.communicate(timeout=30)
        assert counter.returncode == 0, err
        assert 0 <= json.loads(out)["sinks"][0]["names"] <= sent
        src.send_signal(signal.SIGINT)          # a lingering source that is done ends normally
        out, err = src.communicate(timeout=30)
        assert src.returncode == 0, err
        assert json.loads(out)["names"] == sent
    finally:
        for p in (src, counter):
            if p is not None and p.poll() is None:
                p.kill()
                p.wait()


def records(output, agg):
    """(type, PTR target or SOA serial) of each answer line of dig/kdig output for agg, in order."""
    out = []
    for line in output.splitlines():
        f = line.split()
        if line.startswith(";") or len(f) < 5 or f[0] != agg or f[2] != "IN":
            continue
        out.append((f[3], f[4] if f[3] == "PTR" else int(f[6])))
    return out


def playing_router(addr):
    """A listening socket where the generator connects as it would to a router."""
    s = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    s.bind((addr, 0))
    s.listen(4)
    s.settimeout(20)
    return s


def handshake(peer):
    kind, _ = peer.recv()
    assert kind == nbrp_client.OPEN
    peer.send(nbrp_client.open_msg("dut", hold_time=0), nbrp_client.keepalive())


def test_source_advertises_aggregates_and_serves_their_versions(tmp_path):
    """Two aggregates of 100 names and 100 names on their own; 10% of the updates after
    the aggregates' first routes change one of them by 3 names.  Every version is
    advertised, and kdig/dig get from the generator what it advertised."""
    base = f"127.5.{random.randint(1, 250)}"
    tmpdir = tmp_path / "tmp"
    tmpdir.mkdir()
    listener = playing_router(f"{base}.1")
    port = listener.getsockname()[1]
    src = subprocess.Popen([UPDGEN, "source", "--router", f"{base}.1:{port}", "--name", "gen", "--local", f"{base}.9",
                            "--names", "300", "--aggregate-size", "100", "--aggregates", "2",
                            "--agg-change-fraction", "0.1", "--agg-change-names", "3", "--seed", "5", "--batch", "20",
                            "--linger", "600", "--json"], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                           env={**ENV, "TMPDIR": str(tmpdir)})
    try:
        peer = nbrp_client.Peer.accept(listener)
        handshake(peer)
        names, versions, sources = [], {}, set()
        while True:
            m = peer.recv()
            assert m is not None, "the generator closed the session"
            if m[0] == nbrp_client.END_OF_RIB:
                break
            if m[0] != nbrp_client.UPDATE:
                continue
            for num, body in m[1]:
                assert num == 2                 # routes only, nothing withdrawn
                f = nbrp_client.fields(body)
                route_names = [nbrp_client.text_name(v) for n, v in f if n == 1]
                agg = [v for n, v in f if n == 6]
                assert [v for n, v in f if n == 4] == [b"gen"]
                if not agg:
                    names += route_names
                    continue
                agg = nbrp_client.text_name(agg[0])
                assert route_names == [agg]
                version = dict(f).get(7, 0)
                # every version, in order, from 1
                assert version == versions.get(agg, 0) + 1, (agg, version, versions)
                versions[agg] = version
                sources.add(dict(f)[8].decode())
        assert len(names) == len(set(names)) == 100
        assert sorted(versions) == ["agg1.updgen.test.", "agg2.updgen.test."]
        changes = sum(v - 1 for v in versions.values())
        assert changes == round(100 * 0.1 / 0.9)
        (source,) = sources
        xaddr, xport = source.split()
        assert xaddr == f"{base}.9"

        for agg, final in versions.items():
            r = subprocess.run(["kdig", "-p", xport, f"@{xaddr}", "AXFR", agg],
                               capture_output=True, text=True, timeout=30)
            assert r.returncode == 0, r.stdout + r.stderr
            rr = records(r.stdout, agg)
            assert rr[0] == ("SOA", final) and rr[-1] == ("SOA", final)
            members = {d for t, d in rr[1:-1]}
            # a change adds 3 new names, the next removes those 3
            assert len(members) == len(rr) - 2 == 100 + 3 * ((final - 1) % 2)
            if final < 2:
                continue
            r = subprocess.run(["dig", "-p", xport, f"@{xaddr}", agg, "IXFR=1"],
                               capture_output=True, text=True, timeout=30)
            assert r.returncode == 0, r.stdout
            rr = records(r.stdout, agg)
            soas = [d for t, d in rr if t == "SOA"]
            assert soas == [final] + [v for k in range(1, final) for v in (k, k + 1)] + [final]
            # the diffs: 3 added, the same 3 removed, ...: back from the current set, version 1
            diffs, cur = [], None
            for t, d in rr[1:-1]:
                if t == "SOA":
                    cur = []
                    diffs.append(cur)
                else:
                    cur.append(d)
            dels, adds = diffs[0::2], diffs[1::2]
            for k in range(final - 1):
                assert len(dels[k]) + len(adds[k]) == 3
                if k % 2:
                    assert sorted(dels[k]) == sorted(adds[k - 1]) and not adds[k]
            added, removed = {n for a in adds for n in a}, {n for d in dels for n in d}
            assert removed <= added and not (members | added) & set(names)
            assert len(members - added) == 100          # version 1
            # and from the newest but one: that diff alone
            r = subprocess.run(["dig", "-p", xport, f"@{xaddr}", agg, f"IXFR={final - 1}"],
                               capture_output=True, text=True, timeout=30)
            assert [d for t, d in records(r.stdout, agg) if t == "SOA"] == [final, final - 1, final, final]

        src.send_signal(signal.SIGINT)          # done and lingering: a normal end
        out, err = src.communicate(timeout=30)
        assert src.returncode == 0, err
        report = json.loads(out)
        assert report["names"] == 100 and report["aggregates"] == 2 and report["aggregate_members"] == 200
        assert report["agg_changes"] == changes and report["agg_names_changed"] == 3 * changes
        assert report["xfr_source"] == source
        assert report["xfr"]["axfr"] == 2 and report["xfr"]["ixfr"] == 2 * sum(v > 1 for v in versions.values())
        assert list(tmpdir.iterdir()) == []     # the private state directory went
        peer.close()
    finally:
        listener.close()
        if src.poll() is None:
            src.kill()
            src.wait()


def test_sink_counts_aggregates_by_their_newest_version():
    base = f"127.5.{random.randint(1, 250)}"
    listener = playing_router(f"{base}.51")
    port = listener.getsockname()[1]
    sink = subprocess.Popen([UPDGEN, "sink", "--router", f"{base}.51:{port}", "--name", "s", "--local", f"{base}.60",
                             "--sinks", "1", "--expect", "2", "--expect-aggregates", "2", "--expect-agg-changes", "4",
                             "--timeout", "30", "--json"], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                            env=ENV)
    try:
        peer = nbrp_client.Peer.accept(listener)
        handshake(peer)
        agg = lambda name, v: nbrp_client.route([name], "127.0.0.1", 53, ["dut"], aggregate=name, version=v,
                                                source="127.0.0.1 5300")
        peer.send(nbrp_client.update([nbrp_client.route(["a.com", "b.org"], "127.0.0.1", 53, ["dut"]),
                                      agg("agg1.t", 1), agg("agg2.t", 3)]),
                  nbrp_client.update([agg("agg1.t", 2)]),
                  nbrp_client.update([agg("agg2.t", 2)]),        # older: changes nothing
                  nbrp_client.update([agg("agg1.t", 3)]))
        out, err = sink.communicate(timeout=30)
        assert sink.returncode == 0, err
        (s,) = json.loads(out)["sinks"]
        assert (s["names"], s["aggregates"], s["aggregate_routes"], s["agg_changes"]) == (2, 2, 5, 4)
        peer.close()
    finally:
        listener.close()
        if sink.poll() is None:
            sink.kill()
            sink.wait()


def test_xfr_listen_and_allow(tmp_path):
    """--xfr-listen is where the routes say the aggregates are; --xfr-allow who may fetch them."""
    base = f"127.5.{random.randint(1, 250)}"
    listener = playing_router(f"{base}.71")
    port = listener.getsockname()[1]
    src = subprocess.Popen([UPDGEN, "source", "--router", f"{base}.71:{port}", "--name", "gen", "--local", f"{base}.79",
                            "--names", "10", "--aggregate-size", "10", "--agg-suffix", "Aggs.Example",
                            "--xfr-listen", f"{base}.80", "--xfr-allow", f"{base}.81/32", "--linger", "600"],
                           stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                           env={**ENV, "TMPDIR": str(tmp_path)})
    try:
        peer = nbrp_client.Peer.accept(listener)
        handshake(peer)
        kind, body = peer.recv_until(nbrp_client.UPDATE)
        (route,) = [nbrp_client.fields(v) for n, v in body if n == 2]
        assert nbrp_client.text_name(dict(route)[6]) == "agg1.aggs.example."
        xaddr, xport = dict(route)[8].decode().split()
        assert xaddr == f"{base}.80"

        def axfr(source):
            r = subprocess.run(["kdig", "-b", source, "-p", xport, f"@{xaddr}", "AXFR", "agg1.aggs.example"],
                               capture_output=True, text=True, timeout=30)
            return r.stdout + r.stderr
        assert "failed to query server" in axfr(f"{base}.82")     # outside --xfr-allow: closed at accept
        assert len(records(axfr(f"{base}.81"), "agg1.aggs.example.")) == 12
        src.send_signal(signal.SIGTERM)         # ends as SIGINT does, the directory removed
        out, err = src.communicate(timeout=30)
        assert src.returncode == 0, err
        assert "1 aggregates of 10 names" in out and "1 AXFR" in out and "1 refused" in out
        assert list(tmp_path.iterdir()) == []
        peer.close()
    finally:
        listener.close()
        if src.poll() is None:
            src.kill()
            src.wait()


def test_a_router_fetches_the_generators_aggregates_and_passes_them_on(nbrpd_factory, tmp_path):
    """source (5 aggregates of 100 names, 200 names on their own, 11 changes of 2 names)
    -> nbrpd -> sink: nbrpd fetches every version it needs from the generator, stores
    it, and passes the aggregates on at their newest versions with its own transfer server."""
    base = f"127.5.{random.randint(1, 250)}"
    xport = free_port(f"{base}.1")
    conf = (f'router-name "dut";\nlisten {base}.1 port 1790;\ninrp-address {base}.1 port 53;\nhold-time 30s;\n'
            f'state-dir "{tmp_path}/state";\ntransfer-listen {base}.1 port {xport};\n'
            f'peer "gen" {{ address {base}.9; passive; }}\npeer "sink1" {{ address {base}.11; passive; }}\n')
    check = tmp_path / "check.conf"
    check.write_text(conf)
    r = subprocess.run([NBRPD, "-t", "-c", str(check)], capture_output=True, text=True, env=ENV)
    assert r.returncode == 0, f"nbrpd rejects the test's own config:\n{r.stderr}"
    n = nbrpd_factory("dut", conf)
    gen_tmp = tmp_path / "gen"
    gen_tmp.mkdir()
    sink = subprocess.Popen([UPDGEN, "sink", "--router", f"{base}.1:1790", "--name", "sink", "--local", f"{base}.10",
                             "--sinks", "1", "--expect", "200", "--expect-aggregates", "5",
                             "--expect-agg-changes", "11", "--timeout", "60", "--json"],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=ENV)
    src = None
    try:
        wait_for(lambda: n.peers()["sink1"]["state"] == "Established", 20, "the sink's session")
        src = subprocess.Popen([UPDGEN, "source", "--router", f"{base}.1", "--name", "gen", "--local", f"{base}.9",
                                "--names", "700", "--aggregate-size", "100", "--aggregates", "5",
                                "--agg-change-fraction", "0.05", "--agg-changes", "11", "--agg-change-names", "2",
                                "--seed", "3", "--linger", "600", "--json"],
                               stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                               env={**ENV, "TMPDIR": str(gen_tmp)})
        out, err = sink.communicate(timeout=90)
        assert sink.returncode == 0, err
        (s,) = json.loads(out)["sinks"]
        assert (s["names"], s["aggregates"], s["agg_changes"]) == (200, 5, 11)

        aggs = {a["name"]: a for a in n.json("show", "aggregates")}
        assert sorted(aggs) == [f"agg{i}.updgen.test." for i in range(1, 6)]
        assert sum(a["version"] - 1 for a in aggs.values()) == 11
        gen_source = {a["offered_by"] for a in aggs.values()}
        assert len(gen_source) == 1 and gen_source.pop().startswith(f"{base}.9 ")
        # the router serves what it stored: the generator's members at the same version
        xaddr, gport = next(iter(aggs.values()))["offered_by"].split()
        for name, a in aggs.items():
            assert a["origin"] == "learned" and a["members"] in (100, 102)
            got = []
            for server, port in ((xaddr, gport), (f"{base}.1", str(xport))):
                r = subprocess.run(["kdig", "-p", port, f"@{server}", "AXFR", name],
                                   capture_output=True, text=True, timeout=30)
                rr = records(r.stdout, name)
                assert rr[0] == ("SOA", a["version"]), r.stdout + r.stderr
                got.append(sorted(d for t, d in rr[1:-1]))
            assert got[0] == got[1] and len(got[0]) == a["members"]

        src.send_signal(signal.SIGINT)
        out, err = src.communicate(timeout=30)
        assert src.returncode == 0, err
        report = json.loads(out)
        assert report["agg_changes"] == 11 and report["xfr"]["axfr"] >= 5
        assert list(gen_tmp.iterdir()) == []
    finally:
        for p in (sink, src):
            if p is not None and p.poll() is None:
                p.kill()
                p.wait()
