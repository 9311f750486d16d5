"""scripts/bench nbrp --signed: signed aggregates through nbrpd (docs/SIGNATURES.md).

An origin nbrpd ("org") defines A aggregates of M names (15,000 by
default) and signs them (origin attestation over name, version and member
digest, and a hop for the router).  The router under test ("dut", with
signatures require for every peer) verifies each route, fetches the
aggregate from org's transfer server (AXFR), stores it, pushes its members
to its inrpd, checks the member digest, and passes the route on to K
nbrp-updgen sinks with a hop signed for each.

  signed_agg_names_per_s: A * M / (the last aggregate route at the last
        sink - the moment org's peer is added to the router's
        configuration by a reload), CLOCK_MONOTONIC on both sides.
  unsigned_agg_names_per_s: the same with signatures off (the reference).
"""
import json
import os
import subprocess
import sys
import time

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "tests", "integration"))
import sigtest as st  # noqa: E402
from bench_aggregates import Router, SERVER, write_members  # noqa: E402


def run_once(args, work, tag, k, signed, base):
    """One run: (names, seconds)."""
    a, m = args.signed_aggs, args.signed_agg_size
    work = os.path.join(work, tag)
    os.makedirs(work)
    org, dut = Router(args, work, "org", f"{base}.1"), Router(args, work, "dut", f"{base}.2")
    sinks = [(f"sink{i}", f"{base}.{10 + i}") for i in range(1, k + 1)]
    keys = {n: st.Key() for n in ["org", "dut"] + [s for s, _ in sinks]}
    anchor = st.Key()
    trust = os.path.join(work, "trust")
    st.trust_file(trust, anchor, keys, [("bench", keys["org"])])
    sig = "signatures require; " if signed else ""
    conf = {"org": "", "dut": ""}
    sink_auth = []
    if signed:
        # the sinks' sessions are authenticated (TLS): nbrp-updgen --key DIR, DIR/sinkI.key
        for s, _ in sinks:
            keys[s].write(os.path.join(work, f"{s}.key"))
        sink_auth = ["--key", work]
    for r in (org, dut) if signed else ():
        keys[r.name].write(os.path.join(work, f"{r.name}.key"))
        conf[r.name] = f'key-file "{work}/{r.name}.key";\ntrust-anchor "{anchor.text}";\ntrust-file "{trust}";\n'
    defs = ""
    for i in range(a):
        path = os.path.join(work, f"a{i}.names")
        write_members(path, [f"m{j}.a{i}.bench" for j in range(m)])
        defs += f'aggregate "a{i}.bench" {{ server {SERVER}; file "{path}"; }}\n'
    org.config([], conf["org"] + defs + f'peer "dut" {{ address {dut.addr}; passive; {sig}}}\n')
    dut_extra = conf["dut"] + "".join(f'peer "{s}" {{ address {addr}; passive; {sig}}}\n' for s, addr in sinks)
    dut.config([], dut_extra)
    procs = []
    try:
        # org is the load, not what is measured: no inrpd there, so no FIB sync on its loop while it
        # serves the transfers and signs (dut has its inrpd: members go to its FIB before passing on)
        dut.start_inrpd()
        for r in (org, dut):
            r.start_nbrpd()
        wait = args.wait_until
        wait(lambda: sum(v["version"] is not None for v in json.loads(org.nbrc("--json", "show", "aggregates")
                                                                         or "[]")) == a, 120, "org's aggregates")
        sink = subprocess.Popen([args.updgen, "sink", "--router", dut.addr, "--name", "sink", "--local",
                                 f"{base}.10", "--sinks", str(k), "--expect-aggregates", str(a),
                                 "--timeout", "600", "--json"] + sink_auth,
                                stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True)
        procs.append(sink)
        wait(lambda: sum(p["state"] == "Established"
                         for p in json.loads(dut.nbrc("--json", "show", "peers") or "[]")) == k, 30, "the sinks")
        # org's session starts now: its routes, the fetches, the checks and the hops for the sinks follow
        dut.write(dut_extra + f'peer "org" {{ address {org.addr}; {sig}}}\n')
        t0 = time.monotonic_ns()
        if dut.nbrc("reload") is None:
            raise RuntimeError("reload failed")
        out, _ = sink.communicate(timeout=900)
        if sink.returncode != 0:
            raise RuntimeError(f"a sink did not get every aggregate ({tag}); see {dut.nlog}")
        last = max(s["last_ns"] for s in json.loads(out)["sinks"])
        if signed:
            # what was measured is what was meant: every route valid, a hop signed for each sink
            peer = next(p for p in json.loads(dut.nbrc("--json", "show", "peers")) if p["name"] == "org")
            status = json.loads(dut.nbrc("--json", "show", "status"))
            if peer["routes_by_state"]["valid"] != a or status["hops_signed"] < a * k:
                raise RuntimeError(f"not every aggregate was valid and signed on: {peer}, {status}")
        return a * m, (last - t0) / 1e9
    finally:
        for p in procs:
            if p.poll() is None:
                p.kill()
                p.wait()
        for r in (org, dut):
            r.stop()


def run(args, work, wait_until, k):
    args.wait_until = wait_until
    rates = {True: 0.0, False: 0.0}
    for i in range(args.repeat):
        for signed in (True, False):
            names, secs = run_once(args, work, f"agg-{'s' if signed else 'u'}{i}", k, signed, "127.4.23")
            rates[signed] = max(rates[signed], names / secs)
            print(f"{'signed' if signed else 'unsigned'} aggregates: {names} names in {secs:.3f} s", flush=True)
    return {"signed_aggs": args.signed_aggs, "signed_agg_size": args.signed_agg_size,
            "signed_agg_names_per_s": round(rates[True]), "unsigned_agg_names_per_s": round(rates[False]),
            "signed_agg_ratio": round(rates[True] / rates[False], 3)}


if __name__ == "__main__":
    # alone: bench/bench_nbrp_signed_agg.py [--signed-aggs A] [--signed-agg-size M] [--signed-sinks K]
    import argparse
    import shutil
    import tempfile
    from bench_nbrp import binaries, wait_until
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--signed-aggs", type=int, default=20)
    ap.add_argument("--signed-agg-size", type=int, default=15_000)
    ap.add_argument("--signed-sinks", type=int, default=2)
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--build", default=os.path.join(os.path.dirname(__file__), "..", "build"))
    args = ap.parse_args()
    binaries(args)
    work = tempfile.mkdtemp(prefix="bench-signed-agg-")
    try:
        print(json.dumps(run(args, work, wait_until, args.signed_sinks)))
    finally:
        shutil.rmtree(work, ignore_errors=True)
