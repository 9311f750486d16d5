"""scripts/bench nbrp --signed: signed routes through nbrpd (docs/SIGNATURES.md).

A Python source (peer "gen", signatures require at the router under test)
sends --signed-names fresh routes, each one name with a path of two
routers (gen, pre) and its three attestations (origin, pre's hop for gen,
gen's hop for the router), signed beforehand with python3-cryptography;
the router verifies them on its workers, signs a hop for each of K
nbrp-updgen sinks (signatures require for each: their keys are in the
trust file) and sends them.

  signed_routes_per_s: names / (last name at the last sink - the first
        UPDATE sent), CLOCK_MONOTONIC on both sides.
  signed_set_names_per_s: the source goes, new sink sessions come, and
        the source sends --readvert-names (1,000,000: a phase of 100,000
        lasted 30-40 ms, and its figure swung by a third between runs)
        names as signed name sets, --set-names
        (1,024) names a Route and a Route an UPDATE, each set with the same
        path and its three attestations over the set's digest: names / s.
  resigned_readvert_ratio: the source goes again, new sink sessions come,
        and the source sends the same sets again: every link is in the
        verification cache and every hop signature in the (head, target)
        table, so no crypto runs; that rate in names/s over the unsigned
        rate of --readvert-names names to the same K sinks (nbrp-updgen
        source, no signatures, 1,000 names an UPDATE) into a fresh router.
  unsigned_readvert_routes_per_s: the unsigned names again into the same
        router, after the source went (new sinks, a new source): the
        unsigned re-advertisement, under the same conditions as the signed.
  crypto_sign_per_s, crypto_verify_per_s, attestation_bytes_per_hop:
        bench_sign's (libsodium's raw rates on 2 threads, bytes on the wire).
  signed_bound_routes_per_s: what those rates allow for this design's work
        per route: 3 verifications and K signatures, on 2 threads.
  session_auth_cost: names/s with every session authenticated (TLS 1.3,
        `authentication tls`, nbrp-updgen --key) over names/s with none,
        in the same run: --readvert-names unsigned names from an
        nbrp-updgen source through a fresh router to K sinks, each way
        --repeat times, interleaved, the best of each.
  The sinks' sessions of the signed phases are authenticated (TLS); the
  Python source's is not (Python's ssl has no raw public keys).
"""
import json
import os
import subprocess
import sys
import time

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "tests", "integration"))
import nbrp_client as nc  # noqa: E402
import sigtest as st  # noqa: E402

B = "127.4.17"      # .1 router, .9 source, .10.. sinks


def write_key(key, path):
    if os.path.exists(path):
        os.unlink(path)             # a run before this one
    key.write(path)
    return path


def start(args, work, tag, k, signed, gen_auth="none", sink_auth="tls"):
    """The router; keys["gen_file"] and keys["sink_file"] are nbrp-updgen's --key for the source
    and the sinks (a directory of sinkI.key)."""
    sinks = [f"sink{i}" for i in range(1, k + 1)]
    keys = {n: st.Key() for n in ["dut", "gen", "pre"] + sinks}
    anchor, origin = st.Key(), st.Key()
    trust = os.path.join(work, f"{tag}.trust")
    st.trust_file(trust, anchor, keys, [("bench", origin)])
    key_file = write_key(keys["dut"], os.path.join(work, f"{tag}.key"))
    keys["gen_file"] = write_key(keys["gen"], os.path.join(work, f"{tag}.gen.key"))
    keys["sink_file"] = os.path.join(work, f"{tag}.sinks")
    os.makedirs(keys["sink_file"], exist_ok=True)
    for s in sinks:
        write_key(keys[s], os.path.join(keys["sink_file"], f"{s}.key"))
    conf, ctl = os.path.join(work, f"{tag}.conf"), os.path.join(work, f"{tag}.ctl")
    sig = "signatures require; " if signed else ""
    with open(conf, "w") as f:
        f.write(f'router-name "dut";\nlisten {B}.1 port 1790;\ninrp-address {B}.1 port 53;\nhold-time 60s;\n'
                f'control "{ctl}";\nlog-level warn;\nkey-file "{key_file}";\n'
                f'trust-anchor "{anchor.text}";\ntrust-file "{trust}";\n')
        f.write(f'peer "gen" {{ address {B}.9; passive; {sig}authentication {gen_auth}; }}\n')
        for i in range(1, k + 1):
            f.write(f'peer "sink{i}" {{ address {B}.{10 + i}; passive; {sig}authentication {sink_auth}; }}\n')
    log = open(os.path.join(work, f"{tag}.log"), "w")
    dut = subprocess.Popen([args.nbrpd, "-f", "-c", conf], stdout=log, stderr=subprocess.STDOUT)
    return dut, ctl, log, keys, origin


def routes(n, keys, origin):
    """n signed Routes for n names, in UPDATEs of 500."""
    out, batch = [], []
    for i in range(n):
        body, _ = st.signed_route(f"n{i}.bench", f"{B}.9", 53, ["gen", "pre"], keys, origin, keys["dut"])
        batch.append(body)
        if len(batch) == 500:
            out.append(nc.frame(nc.update(routes=batch)))
            batch = []
    if batch:
        out.append(nc.frame(nc.update(routes=batch)))
    return out


def set_routes(n, keys, origin, size):
    """The same n names as signed sets of `size` names, one Route an UPDATE."""
    out = []
    for i in range(0, n, size):
        names = [f"n{k}.bench" for k in range(i, min(n, i + size))]
        body, _ = st.signed_route(names, f"{B}.9", 53, ["gen", "pre"], keys, origin, keys["dut"])
        out.append(nc.frame(nc.update(routes=[body])))
    return out


def source(frames):
    """Connects as gen, sends the frames; returns (socket, monotonic ns of the first UPDATE)."""
    p = nc.Peer(f"{B}.1", 1790, f"{B}.9")
    p.send(nc.open_msg("gen", hold_time=60))
    p.recv_until(nc.OPEN)
    p.send(nc.keepalive())
    p.recv_until(nc.KEEPALIVE)
    p.sock.settimeout(None)         # the router reads as fast as it verifies
    t0 = time.monotonic_ns()
    p.send_raw(b"".join(frames))
    return p, t0


def sinks(args, k, n, key=None):
    return subprocess.Popen([args.updgen, "sink", "--router", f"{B}.1", "--name", "sink", "--local", f"{B}.10",
                             "--sinks", str(k), "--expect", str(n), "--timeout", "600", "--json"] +
                            (["--key", key] if key else []),
                            stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True)


def wait_sinks(args, ctl, k, wait_until, nbrc):
    wait_until(lambda: sum(p["state"] == "Established" and p["name"].startswith("sink")
                           for p in nbrc(args.nbrc, ctl, "show", "peers") or []) == k, 30, "the sinks' sessions")


def last_ns(proc):
    out, _ = proc.communicate(timeout=900)
    if proc.returncode != 0:
        raise RuntimeError("a sink did not get every name")
    return max(s["last_ns"] for s in json.loads(out)["sinks"])


def gone(args, ctl, wait_until, nbrc):
    """The source's routes withdrawn and every job of it (purge, release) done."""
    wait_until(lambda: (lambda s: s.get("names") == 0 and s.get("jobs") == 0)(
        nbrc(args.nbrc, ctl, "show", "status") or {}), 120, "the routes withdrawn")


def run_signed(args, work, k, wait_until, nbrc, reap):
    n, m = args.signed_names, args.readvert_names
    dut, ctl, log, keys, origin = start(args, work, "signed", k, True)
    procs = [dut]
    try:
        wait_until(lambda: nbrc(args.nbrc, ctl, "show", "status"), 30, "nbrpd")
        frames = routes(n, keys, origin)
        sets = set_routes(m, keys, origin, args.set_names)
        rates = []
        # fresh routes of one name; then the names as fresh sets; then the same sets again,
        # each time to new sink sessions after the source went (its routes withdrawn)
        for what, count in ((frames, n), (sets, m), (sets, m)):
            s1 = sinks(args, k, count, keys["sink_file"])
            procs.append(s1)
            wait_sinks(args, ctl, k, wait_until, nbrc)
            p, t0 = source(what)
            rates.append(count / ((last_ns(s1) - t0) / 1e9))
            p.close()
            gone(args, ctl, wait_until, nbrc)
        return rates
    finally:
        reap(procs, log)


def run_unsigned(args, work, k, wait_until, nbrc, reap, auth="none", rounds=2):
    """The unsigned rate of the same count of names to K sinks: a fresh router, and again
    (re-advertisement: the source goes, new sinks, the same names from a new source).
    auth "tls": every session authenticated (session_auth_cost)."""
    n = args.readvert_names
    dut, ctl, log, keys, _ = start(args, work, f"unsigned-{auth}", k, False, gen_auth=auth, sink_auth=auth)
    tls = auth == "tls"
    procs = [dut]
    rates = []
    try:
        wait_until(lambda: nbrc(args.nbrc, ctl, "show", "status"), 30, "nbrpd")
        for _ in range(rounds):
            s1 = sinks(args, k, n, keys["sink_file"] if tls else None)
            procs.append(s1)
            wait_sinks(args, ctl, k, wait_until, nbrc)
            src = subprocess.Popen([args.updgen, "source", "--router", f"{B}.1", "--name", "gen", "--local",
                                    f"{B}.9", "--names", str(n), "--seed", str(args.seed), "--linger", "600",
                                    "--json"] + (["--key", keys["gen_file"]] if tls else []),
                                   stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True)
            procs.append(src)
            last = last_ns(s1)
            src.send_signal(2)
            out, _ = src.communicate(timeout=60)
            rates.append(n / ((last - json.loads(out)["established_ns"]) / 1e9))
            gone(args, ctl, wait_until, nbrc)
        return rates
    finally:
        reap(procs, log)


def crypto(args, k):
    sign = os.path.join(args.build, "bench", "bench_sign")
    r = subprocess.run([sign, "--peers", str(k), "--routes", "20000"], capture_output=True, text=True, timeout=900)
    if r.returncode != 0:
        raise RuntimeError(f"bench_sign: {r.stderr}")
    return json.loads(r.stdout.strip().splitlines()[-1])


def run(args, work, wait_until, nbrc, reap):
    k = args.signed_sinks
    c = crypto(args, k)
    best = [0.0, 0.0, 0.0]
    for _ in range(args.repeat):
        best = [max(b, r) for b, r in zip(best, run_signed(args, work, k, wait_until, nbrc, reap))]
    unsigned = [0.0, 0.0]
    for _ in range(args.repeat):
        unsigned = [max(u, r) for u, r in zip(unsigned, run_unsigned(args, work, k, wait_until, nbrc, reap))]
    auth = {"none": 0.0, "tls": 0.0}
    for _ in range(args.repeat):
        for a in ("tls", "none"):
            auth[a] = max(auth[a], run_unsigned(args, work, k, wait_until, nbrc, reap, auth=a, rounds=1)[0])
    sign2, ver2 = c["crypto_sign_per_s_2threads"], c["crypto_verify_per_s_2threads"]
    bound = 1 / (3 / ver2 + k / sign2)
    return {"signed_names": args.signed_names, "signed_sinks": k,
            "crypto_sign_per_s": round(sign2), "crypto_verify_per_s": round(ver2),
            "signed_routes_per_s": round(best[0]), "signed_bound_routes_per_s": round(bound),
            "signed_set_names": args.set_names, "readvert_names": args.readvert_names, "signed_set_names_per_s": round(best[1]),
            "signed_readvert_names_per_s": round(best[2]), "unsigned_routes_per_s": round(unsigned[0]),
            "unsigned_readvert_routes_per_s": round(unsigned[1]),
            "resigned_readvert_ratio": round(best[2] / unsigned[0], 3),
            "auth_routes_per_s": round(auth["tls"]), "unauth_routes_per_s": round(auth["none"]),
            "session_auth_cost": round(auth["tls"] / auth["none"], 3),
            "attestation_bytes_per_hop": c["attestation_bytes_per_hop"]}


if __name__ == "__main__":
    # alone: bench/bench_nbrp_signed.py [--signed-names N] [--readvert-names R] [--signed-sinks K] [--repeat R]
    import argparse
    import shutil
    import tempfile
    from bench_nbrp import binaries, nbrc, reap, wait_until
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--signed-names", type=int, default=20_000)
    ap.add_argument("--readvert-names", type=int, default=1_000_000)
    ap.add_argument("--signed-sinks", type=int, default=2)
    ap.add_argument("--set-names", type=int, default=1024)
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--build", default=os.path.join(os.path.dirname(__file__), "..", "build"))
    args = ap.parse_args()
    binaries(args)
    work = tempfile.mkdtemp(prefix="bench-signed-")
    try:
        print(json.dumps(run(args, work, wait_until, nbrc, reap)))
    finally:
        shutil.rmtree(work, ignore_errors=True)
