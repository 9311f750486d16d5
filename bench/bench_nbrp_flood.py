"""scripts/bench nbrp-flood: a good peer's signed routes alone and under a flood of forgeries.

nbrpd (signatures require) has three peers: "good" and "bad", Python
sources, and a sink (nbrp-updgen, signatures require: each route passed on
carries our own hop signature for it).  In one run:

  alone_routes_per_s: good sends --routes fresh signed routes (path good,
        pre; three attestations each) in UPDATEs of 100: names / (the last
        name at the sink - the first UPDATE sent), CLOCK_MONOTONIC on both
        sides.
  flood_routes_per_s: the same with --routes other names while bad sends,
        as fast as nbrpd reads it, UPDATEs of --flood-per routes (500) whose own hop
        signature is new random bytes each time (a new forgery: a
        verification each, none in the failed-link cache; S is kept below
        the group order so libsodium does not refuse it before the curve
        arithmetic) and, after every --huge-every (1) of them, an UPDATE
        of a route whose origin attestation carries a 1,000,000-byte
        for_key.  The flood starts --warmup seconds before good's routes.
  ratio: flood_routes_per_s / alone_routes_per_s (target 0.8).
  bad_*: the flooding peer's counters at the end (nbrc show peers):
        forgeries sent, verifications, failed, throttled turns, UPDATEs
        queued, its weight; rss_kib before and after the flood;
        during_*: the workers' and the loop's milliseconds on each peer's
        checks while good's routes went (a share independent of the load).
"""
import argparse
import json
import os
import random
import shutil
import socket
import subprocess
import sys
import tempfile
import threading
import time

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "tests", "integration"))
import nbrp_client as nc  # noqa: E402
import sigtest as st  # noqa: E402
from bench_nbrp import binaries, nbrc, reap, rss_kib, wait_until  # noqa: E402

B = "127.4.29"      # .1 router, .9 good, .8 bad, .10 sink local, .11 sink
PER = 100           # good routes an UPDATE
MARK = b"\xa5" * 64


def start(args, work):
    keys = {n: st.Key() for n in ("dut", "good", "bad", "pre", "sink1")}
    anchor, origin = st.Key(), st.Key()
    trust = os.path.join(work, "flood.trust")
    st.trust_file(trust, anchor, keys, [("bench", origin)])
    key_file = os.path.join(work, "flood.key")
    keys["dut"].write(key_file)
    conf, ctl = os.path.join(work, "flood.conf"), os.path.join(work, "flood.ctl")
    with open(conf, "w") as f:
        f.write(f'router-name "dut";\nlisten {B}.1 port 1790;\ninrp-address {B}.1 port 53;\nhold-time 60s;\n'
                f'control "{ctl}";\nlog-level warn;\nkey-file "{key_file}";\n'
                f'trust-anchor "{anchor.text}";\ntrust-file "{trust}";\n')
        # sessions in clear: the Python sources have no raw-public-key TLS, and this measures
        # the verification budgets, not the sessions (bench_nbrp_signed.py measures those)
        for name, a in (("good", 9), ("bad", 8), ("sink1", 11)):
            f.write(f'peer "{name}" {{ address {B}.{a}; passive; signatures require; authentication none; }}\n')
    log = open(os.path.join(work, "flood.log"), "w")
    dut = subprocess.Popen([args.nbrpd, "-f", "-c", conf], stdout=log, stderr=subprocess.STDOUT)
    return dut, ctl, log, keys, origin


def good_frames(tag, n, keys, origin):
    out, batch = [], []
    for i in range(n):
        body, _ = st.signed_route(f"{tag}{i}.bench", f"{B}.9", 53, ["good", "pre"], keys, origin, keys["dut"])
        batch.append(body)
        if len(batch) == PER:
            out.append(nc.frame(nc.update(routes=batch)))
            batch = []
    if batch:
        out.append(nc.frame(nc.update(routes=batch)))
    return b"".join(out)


def flood_frames(keys, origin, count, per):
    """count UPDATE frames of `per` routes, each route's own hop signature a marker to be
    replaced by random bytes before each send: (frames, offsets of the markers in each)."""
    frames = []
    for k in range(count):
        routes = []
        for i in range(per):
            name = f"bad{k}-{i}.bench"
            _, atts = st.signed_route(name, f"{B}.8", 53, ["bad", "pre"], keys, origin, keys["dut"])
            hop = st.attestation(MARK, int(time.time()) + 3600, for_key=keys["dut"].pk[:4])
            routes.append(st.route_with(name, f"{B}.8", 53, ["bad", "pre"], [hop, atts[1], atts[2]]))
        f = bytearray(nc.frame(nc.update(routes=routes)))
        offs, at = [], 0
        while (at := f.find(MARK, at)) >= 0:
            offs.append(at)
            at += len(MARK)
        assert len(offs) == per
        frames.append((f, offs))
    return frames


def huge_frame(keys, origin):
    _, atts = st.signed_route("huge.bench", f"{B}.8", 53, ["bad", "pre"], keys, origin, keys["dut"])
    junk = atts[2] + b"\x32" + _varint(1000000) + b"\xee" * 1000000      # field 6, for_key
    return nc.frame(nc.update(routes=[st.route_with("huge.bench", f"{B}.8", 53, ["bad", "pre"],
                                                    [atts[0], atts[1], junk])]))


def _varint(v):
    out = bytearray()
    while True:
        b = v & 0x7F
        v >>= 7
        out.append(b | (0x80 if v else 0))
        if not v:
            return bytes(out)


def connect(name, addr):
    p = nc.Peer(f"{B}.1", 1790, addr)
    p.send(nc.open_msg(name, hold_time=60))
    p.recv_until(nc.OPEN)
    p.send(nc.keepalive())
    p.recv_until(nc.KEEPALIVE)
    p.sock.settimeout(None)
    return p


def sink(args, n):
    return subprocess.Popen([args.updgen, "sink", "--router", f"{B}.1", "--name", "sink", "--local", f"{B}.10",
                             "--sinks", "1", "--expect", str(n), "--timeout", "600", "--json"],
                            stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True)


def peer(args, ctl, name):
    return next(p for p in nbrc(args.nbrc, ctl, "show", "peers") if p["name"] == name)


class Flood:
    """bad's flood, from a thread: new forgeries, and huge for_keys between them."""

    def __init__(self, p, frames, huge, every):
        self.p, self.frames, self.huge, self.every = p, frames, huge, every
        self.sent = self.huge_sent = 0
        self.stop = threading.Event()
        self.t = threading.Thread(target=self.run, daemon=True)

    def run(self):
        rnd = random.Random(1)
        i = 0
        try:
            while not self.stop.is_set():
                f, offs = self.frames[i % len(self.frames)]
                for o in offs:
                    f[o:o + 64] = rnd.randbytes(64)
                    f[o + 63] &= 0x0F       # S below the group order: libsodium does the whole check
                self.p.send_raw(f)
                self.sent += len(offs)
                i += 1
                if self.every and i % self.every == 0:
                    self.p.send_raw(self.huge)
                    self.huge_sent += 1
        except OSError:
            pass

    def start(self):
        self.t.start()

    def end(self):
        self.stop.set()
        self.p.sock.shutdown(socket.SHUT_RDWR)
        self.t.join(60)


def phase(args, ctl, frames, n, expect, flood=None):
    s = sink(args, expect)
    wait_until(lambda: peer(args, ctl, "sink1")["state"] == "Established", 30, "the sink's session")
    if flood:
        flood.start()
        time.sleep(args.warmup)
    g = connect("good", f"{B}.9")
    before = {p["name"]: p for p in nbrc(args.nbrc, ctl, "show", "peers")}
    t0 = time.monotonic_ns()
    g.send_raw(frames)
    out, _ = s.communicate(timeout=900)
    if s.returncode != 0:
        raise RuntimeError("the sink did not get every name")
    last = max(x["last_ns"] for x in json.loads(out)["sinks"])
    after = {p["name"]: p for p in nbrc(args.nbrc, ctl, "show", "peers")}

    def spent(name, key):
        return (after[name].get(key) or 0) - (before[name].get(key) or 0)
    shares = {}
    for key, what in (("checks_worker_ms", "worker"), ("checks_loop_ms", "loop")):
        good, bad = spent("good", key), spent("bad", key)
        shares[f"good_{what}_ms"], shares[f"bad_{what}_ms"] = good, bad
    return g, n / ((last - t0) / 1e9), shares


def main():
    ap = argparse.ArgumentParser(prog="scripts/bench nbrp-flood", description=__doc__.split("\n\n")[0])
    ap.add_argument("--routes", type=int, default=4000, help="good routes a phase")
    ap.add_argument("--flood-updates", type=int, default=8, help="distinct forged UPDATEs (their signatures change)")
    ap.add_argument("--flood-per", type=int, default=500, help="forged routes an UPDATE")
    ap.add_argument("--huge-every", type=int, default=1, help="forged UPDATEs between megabyte for_keys (0: none)")
    ap.add_argument("--warmup", type=float, default=1.0, help="seconds of flood before good's routes")
    ap.add_argument("--build", default=os.path.join(os.path.dirname(__file__), "..", "build"))
    args = ap.parse_args()
    binaries(args)
    work = tempfile.mkdtemp(prefix="bench-flood-")
    dut, ctl, log, keys, origin = start(args, work)
    procs = [dut]
    try:
        wait_until(lambda: nbrc(args.nbrc, ctl, "show", "status"), 30, "nbrpd")
        calm = good_frames("calm", args.routes, keys, origin)
        loaded = good_frames("loaded", args.routes, keys, origin)
        forged = flood_frames(keys, origin, args.flood_updates, args.flood_per)
        huge = huge_frame(keys, origin)
        g, alone, _ = phase(args, ctl, calm, args.routes, args.routes)
        rss0 = rss_kib(dut.pid)
        flood = Flood(connect("bad", f"{B}.8"), forged, huge, args.huge_every)
        # the new sink is told the calm names first, then the loaded ones
        try:
            g2, loaded_rate = None, None
            g.close()
            wait_until(lambda: peer(args, ctl, "good")["state"] != "Established", 30, "good gone")
            wait_until(lambda: (nbrc(args.nbrc, ctl, "show", "status") or {}).get("names") == 0, 120,
                       "good's routes withdrawn")
            g2, loaded_rate, shares = phase(args, ctl, loaded, args.routes, args.routes, flood)
            bad = peer(args, ctl, "bad")
        finally:
            flood.end()
        rss1 = rss_kib(dut.pid)
        g2.close()
    finally:
        reap(procs, log)
        shutil.rmtree(work, ignore_errors=True)
    out = {"routes": args.routes, "alone_routes_per_s": round(alone), "flood_routes_per_s": round(loaded_rate),
           "ratio": round(loaded_rate / alone, 3), "forgeries_sent": flood.sent, "huge_sent": flood.huge_sent,
           "bad_verifications": bad.get("verifications"), "bad_failed": bad.get("verifications_failed"),
           "bad_throttled": bad.get("checks_throttled"), "bad_weight": bad.get("checks_weight"),
           "bad_checks_loop_ms": bad.get("checks_loop_ms"), "bad_checks_worker_ms": bad.get("checks_worker_ms"),
           "bad_invalid": bad["routes_by_state"]["invalid"], "bad_queued": bad.get("checks_queued"),
           "rss_kib_before": rss0, "rss_kib_after": rss1, **{f"during_{k}": v for k, v in shares.items()}}
    print(json.dumps(out))


if __name__ == "__main__":
    main()
