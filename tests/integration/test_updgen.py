"""nbrp-updgen, the update generator: a source feeding a real nbrpd and
sinks counting what it propagates."""

import json
import random
import pathlib
import subprocess

from conftest import ENV, NBRPD, wait_for

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
