#!/usr/bin/env python3
"""scripts/bench nbrp: routing throughput, the paper's Figure 6 with BIRD
beside it.  One source -> the router under test -> K sinks, K = 1..6:

  nbrp: nbrp-updgen source -> nbrpd -> nbrp-updgen sink (K sessions);
        names/s = N / (last name at the last sink - the source's session up),
        from the CLOCK_MONOTONIC times nbrp-updgen reports.
  bird: a BIRD with N static /24s -> the BIRD under test -> K BIRD sinks, over
        eBGP on loopback (no kernel protocol: nothing touches the system);
        routes/s = N / (every sink is done - the origin's session at the
        router under test is Established).  A sink is done when it has all N,
        or when the router under test has exported all N to it.  The
        origin's control socket is polled too, all through the transfer: a
        BIRD sending a big table otherwise stalls before its last update
        (seen: 19,968 of 20,000 routes in 42 ms, the last 32 three seconds
        later; 500,000 routes took 3.2 s instead of 0.36 s), and that stall
        is not the router's throughput.  Everything is polled every 10 ms
        over persistent connections.

Each figure is the best of --repeat runs (default 3), for both: BIRD's
stall above comes and goes, and a ratio of two best cases holds on a noisy
machine.

Then, once each (the RDE's targets):
  dump_max_loop_turn_ms: nbrpd takes --rde-names names from a source, sends
        them to a sink and then to a second, new sink (a table dump), and
        withdraws them all when the source goes; the longest loop turn of
        nbrpd over the whole run, wall clock (`nbrc show status`), with its
        CPU time beside it (what was nbrpd's own on a shared machine).
  nbrpd_bytes_per_name: nbrpd's RSS growth per name in that run, with the
        table from one peer and sent to one sink.
  peers_500_names_per_s: --peers500 sinks, --names500 names: names / (the
        last name at the last sink - the source's session up), beside
        bird_500_routes_per_s: as many BIRD sinks over BGP (import none, so
        500 BIRDs fit in memory), done when the BIRD under test has
        exported every route to every sink.

Rows (b) and (c), aggregates (docs/AGGREGATES.md), for each K, nbrpd with a
state-dir and a transfer-listen (without one it would not pass aggregates
on) fetching the aggregates from nbrp-updgen's own transfer server:
  agg1_names_per_s, agg20_names_per_s (b): --names names on their own plus
        --agg-count aggregates of --agg-size names; 1% of the updates after
        the aggregates' first routes change one aggregate by 1 (and by 20)
        names.  Updates (names and changes) / (the last sink has every
        name and every aggregate at its newest version - the source's
        session up): the paper's "updates per second" of its Figure 6.
  aggall_updates_per_s (c): the aggregates alone, then --aggall-changes
        changes of 1 name (every update a change).  Changes / (the last
        sink has every aggregate at its newest version - the source's
        session up); the first transfers of the aggregates are in it.
The generator keeps its stores on /dev/shm (it is not what is measured,
and a synced version per change on a disk would bound it); nbrpd's
state-dir is in the work directory.  When nbrpd has no aggregates
(`nbrc show aggregates` fails) these rows are null and agg_skipped says why.

With --signed, first the signed-route and session_auth_cost figures of
bench/bench_nbrp_signed.py and the signed-aggregate figures of
bench/bench_nbrp_signed_agg.py.

Writes build/bench/nbrp.csv and build/bench/nbrp.png; the last line of
output is one JSON object.
"""
import argparse
import csv
import json
import os
import random
import re
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time

BASE = "127.0.6"            # addresses: .1 router, .9 source, .11.. sinks
BIRD_BASE = "127.0.7"       # .1 origin, .2 router under test, .11.. sinks


def binaries(args):
    """The programs under test, from args.build."""
    args.nbrpd = os.path.join(args.build, "nbrpd", "nbrpd")
    args.nbrc = os.path.join(args.build, "nbrpd", "nbrc")
    args.inrpd = os.path.join(args.build, "inrpd", "inrpd")
    args.updgen = os.path.join(args.build, "updgen", "nbrp-updgen")


def wait_until(cond, timeout, what, interval=0.01):
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        v = cond()
        if v:
            return v
        time.sleep(interval)
    raise RuntimeError(f"timed out waiting for {what}")


def nbrc(nbrc_bin, sock, *words):
    r = subprocess.run([nbrc_bin, "-s", sock, "--json", *words], capture_output=True, text=True)
    return json.loads(r.stdout) if r.returncode == 0 and r.stdout.strip() else None


def rss_kib(pid):
    with open(f"/proc/{pid}/status") as f:
        for line in f:
            if line.startswith("VmRSS:"):
                return int(line.split()[1])
    return 0


def addr_plus(base, i):
    n = int.from_bytes(socket.inet_aton(base), "big") + i
    return socket.inet_ntoa(n.to_bytes(4, "big"))


def start_dut(args, work, tag, b, peers, extra=""):
    """nbrpd at b.1 with passive peers [(name, address)], answering its control socket: (process, ctl, log)."""
    conf, ctl = os.path.join(work, f"{tag}.conf"), os.path.join(work, f"{tag}.ctl")
    with open(conf, "w") as f:
        f.write(f'router-name "dut";\nlisten {b}.1 port 1790;\ninrp-address {b}.1 port 53;\nhold-time 60s;\n'
                f'control "{ctl}";\nlog-level warn;\n{extra}')
        for name, addr in peers:
            f.write(f'peer "{name}" {{ address {addr}; passive; }}\n')
    log = open(os.path.join(work, f"{tag}.log"), "w")
    dut = subprocess.Popen([args.nbrpd, "-f", "-c", conf], stdout=log, stderr=subprocess.STDOUT)
    try:
        wait_until(lambda: nbrc(args.nbrc, ctl, "show", "status"), 30, "nbrpd")
    except Exception:
        reap([dut], log)
        raise
    return dut, ctl, log


def reap(procs, log):
    for p in procs:
        if p.poll() is None:
            p.kill()
            p.wait()
    log.close()


def run_rde(args, work):
    """The loop-turn and memory figures (see the top of the file)."""
    b = "127.4.14"
    dut, ctl, log = start_dut(args, work, "rde", b, [("gen", f"{b}.9"), ("sink1", f"{b}.11"), ("late1", f"{b}.21")])
    procs = [dut]
    try:
        base = rss_kib(dut.pid)
        src = subprocess.Popen([args.updgen, "source", "--router", f"{b}.1", "--name", "gen", "--local", f"{b}.9",
                                "--names", str(args.rde_names), "--seed", str(args.seed), "--linger", "600"],
                               stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        procs.append(src)
        for name, local in (("sink", f"{b}.10"), ("late", f"{b}.20")):
            sink = subprocess.Popen([args.updgen, "sink", "--router", f"{b}.1", "--name", name, "--local", local,
                                     "--sinks", "1", "--expect", str(args.rde_names), "--timeout", "600"],
                                    stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
            procs.append(sink)
            if sink.wait(timeout=900) != 0:
                raise RuntimeError(f"the {name} sink did not get every name")
            if name == "sink":
                rss = rss_kib(dut.pid)
        src.send_signal(signal.SIGINT)
        src.wait(timeout=60)
        wait_until(lambda: (lambda st: st and st["names"] == 0 and st["jobs"] == 0)(
            nbrc(args.nbrc, ctl, "show", "status")), 300, "the table to be withdrawn", interval=0.1)
        st = nbrc(args.nbrc, ctl, "show", "status")
        return {"dump_max_loop_turn_ms": round(st["loop_turn_max_ms"], 1),
                "dump_max_loop_turn_cpu_ms": round(st["loop_turn_max_cpu_ms"], 1),
                "nbrpd_bytes_per_name": round((rss - base) * 1024 / args.rde_names, 1)}
    finally:
        reap(procs, log)


def run_nbrp_500(args, work):
    b, first = "127.4.15", "127.4.16.0"
    k = args.peers500
    dut, ctl, log = start_dut(args, work, "p500", b,
                              [("gen", f"{b}.9")] + [(f"sink{i}", addr_plus(first, i)) for i in range(1, k + 1)])
    procs = [dut]
    try:
        sinks = subprocess.Popen([args.updgen, "sink", "--router", f"{b}.1", "--name", "sink", "--local", first,
                                  "--sinks", str(k), "--expect", str(args.names500), "--timeout", "600", "--json"],
                                 stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True)
        procs.append(sinks)
        wait_until(lambda: (nbrc(args.nbrc, ctl, "show", "status") or {}).get("established") == k, 120,
                   "the sinks' sessions")
        source = subprocess.Popen([args.updgen, "source", "--router", f"{b}.1", "--name", "gen", "--local", f"{b}.9",
                                   "--names", str(args.names500), "--seed", str(args.seed), "--linger", "600",
                                   "--json"], stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True)
        procs.append(source)
        out, _ = sinks.communicate(timeout=900)
        source.send_signal(signal.SIGINT)
        src_out, _ = source.communicate(timeout=60)
        if sinks.returncode != 0:
            raise RuntimeError("the 500 sinks did not get every name")
        report = json.loads(out)
        start = json.loads(src_out)["established_ns"]
        last = max(s["last_ns"] for s in report["sinks"])
        return args.names500 / ((last - start) / 1e9)
    finally:
        reap(procs, log)


def run_nbrp(args, work, k):
    dut, ctl, log = start_dut(args, work, f"dut{k}", BASE,
                              [("gen", f"{BASE}.9")] + [(f"sink{i}", f"{BASE}.{10 + i}") for i in range(1, k + 1)])
    procs = [dut]
    try:
        sinks = subprocess.Popen([args.updgen, "sink", "--router", f"{BASE}.1", "--name", "sink",
                                  "--local", f"{BASE}.10", "--sinks", str(k), "--expect", str(args.names),
                                  "--timeout", "600", "--json"], stdout=subprocess.PIPE, stderr=subprocess.DEVNULL,
                                 text=True)
        procs.append(sinks)
        wait_until(lambda: sum(p["state"] == "Established" for p in nbrc(args.nbrc, ctl, "show", "peers") or [])
                   == k, 30, "the sinks' sessions")
        source = subprocess.Popen([args.updgen, "source", "--router", f"{BASE}.1", "--name", "gen",
                                   "--local", f"{BASE}.9", "--names", str(args.names), "--seed", str(args.seed),
                                   "--linger", "600", "--json"], stdout=subprocess.PIPE,
                                  stderr=subprocess.DEVNULL, text=True)
        procs.append(source)
        out, _ = sinks.communicate(timeout=900)
        source.send_signal(signal.SIGINT)
        src_out, _ = source.communicate(timeout=60)
        if sinks.returncode != 0:
            raise RuntimeError(f"sinks failed at K={k}")
        report = json.loads(out)
        start = json.loads(src_out)["established_ns"]
        last = max(s["last_ns"] for s in report["sinks"])
        return args.names / ((last - start) / 1e9)
    finally:
        reap(procs, log)


def nbrpd_aggregates(args, work):
    """None if nbrpd fetches and applies aggregates (`nbrc show aggregates` answers), else why not."""
    dut, ctl, log = start_dut(args, work, "aggcheck", "127.4.19", [])
    try:
        r = subprocess.run([args.nbrc, "-s", ctl, "show", "aggregates"], capture_output=True, text=True)
        if r.returncode == 0:
            return None
        return "nbrpd has no aggregates: `nbrc show aggregates`: " + ((r.stderr or r.stdout).strip() or
                                                                       f"exit {r.returncode}")
    finally:
        reap([dut], log)


def run_nbrp_agg(args, work, k, change_names):
    """Row (b) with change_names 1 or 20, row (c) with None (see the top of the file)."""
    tag = f"agg{change_names or 'all'}-{k}"
    state = os.path.join(work, f"{tag}.state")
    shutil.rmtree(state, ignore_errors=True)    # each repeat fetches and stores every version anew
    dut, ctl, log = start_dut(args, work, tag, BASE,
                              [("gen", f"{BASE}.9")] + [(f"sink{i}", f"{BASE}.{10 + i}") for i in range(1, k + 1)],
                              extra=f'state-dir "{state}";\ntransfer-listen {BASE}.1 port 5300;\n')
    procs = [dut]
    a, size = args.agg_count, args.agg_size
    if change_names:
        m = round(args.names * 0.01 / 0.99)
        gen = ["--names", str(args.names + a * size), "--aggregates", str(a), "--agg-change-fraction", "0.01",
               "--agg-change-names", str(change_names)]
        expect = ["--expect", str(args.names)]
    else:
        m = args.aggall_changes
        gen = ["--names", str(a * size), "--agg-all"]
        expect = []
    try:
        sinks = subprocess.Popen([args.updgen, "sink", "--router", f"{BASE}.1", "--name", "sink",
                                  "--local", f"{BASE}.10", "--sinks", str(k), *expect, "--expect-aggregates", str(a),
                                  "--expect-agg-changes", str(m), "--timeout", "600", "--json"],
                                 stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True)
        procs.append(sinks)
        wait_until(lambda: sum(p["state"] == "Established" for p in nbrc(args.nbrc, ctl, "show", "peers") or [])
                   == k, 30, "the sinks' sessions")
        env = dict(os.environ)
        if os.path.isdir("/dev/shm"):
            env["TMPDIR"] = "/dev/shm"
        source = subprocess.Popen([args.updgen, "source", "--router", f"{BASE}.1", "--name", "gen",
                                   "--local", f"{BASE}.9", *gen, "--aggregate-size", str(size), "--agg-changes",
                                   str(m), "--seed", str(args.seed), "--linger", "600", "--json"],
                                  stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True, env=env)
        procs.append(source)
        out, _ = sinks.communicate(timeout=900)
        source.send_signal(signal.SIGINT)
        src_out, _ = source.communicate(timeout=60)
        if sinks.returncode != 0:
            raise RuntimeError(f"sinks failed ({tag})")
        # the work claimed was done: every sink saw every change, and the router fetched the versions
        seen = json.loads(out)["sinks"]
        if any(s["aggregates"] < a or s["agg_changes"] < m for s in seen):
            raise RuntimeError(f"sinks saw fewer aggregates or changes than sent ({tag}): {seen}")
        status = nbrc(args.nbrc, ctl, "show", "status") or {}
        if status.get("fetches", 0) < a:
            raise RuntimeError(f"the router fetched {status.get('fetches')} versions of {a} aggregates ({tag})")
        last = max(s["last_ns"] for s in seen)
        seconds = (last - json.loads(src_out)["established_ns"]) / 1e9
        return ((args.names if change_names else 0) + m) / seconds
    finally:
        reap(procs, log)


class BirdSocket:
    """A persistent connection to a BIRD control socket."""

    def __init__(self, path):
        self.s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        self.s.connect(path)
        self.buf = b""
        self._reply()                           # the greeting

    def _reply(self):
        lines = []
        while True:
            while b"\n" not in self.buf:
                chunk = self.s.recv(65536)
                if not chunk:
                    raise RuntimeError("BIRD closed its control socket")
                self.buf += chunk
            line, self.buf = self.buf.split(b"\n", 1)
            line = line.decode(errors="replace")
            lines.append(line)
            if re.match(r"^\d{4} ", line):
                return lines

    def ask(self, cmd):
        self.s.sendall(cmd.encode() + b"\n")
        return self._reply()

    def routes(self):
        for line in self.ask("show route count"):
            m = re.search(r"(\d+) of \d+ routes for \d+ networks in table master4", line)
            if m:
                return int(m.group(1))
        return 0

    def exported(self, proto):
        for line in self.ask(f"show protocols all {proto}"):
            m = re.search(r"Routes:\s+\d+ imported, (\d+) exported", line)
            if m:
                return int(m.group(1))
        return 0

    def established(self, proto):
        return any(re.match(rf"^\S*\s*{proto}\s+BGP\s+\S+\s+up\s+.*Established", l.lstrip("0123456789-"))
                   for l in self.ask(f"show protocols {proto}"))


def bgp(name, local, las, nb, nas, imp, exp):
    # loopback eBGP: multihop (no shared interface), strict bind (one BIRD per address)
    return (f"protocol bgp {name} {{ local {local} as {las}; neighbor {nb} as {nas}; multihop; strict bind; "
            f"connect retry time 1; ipv4 {{ import {imp}; export {exp}; next hop self; }}; }}\n")


def run_bird(args, work, k):
    d = os.path.join(work, f"bird{k}")
    os.makedirs(d, exist_ok=True)
    confs = {}
    routes = []
    for i in range(args.names):
        routes.append(f"  route {10 + i // 65536}.{i // 256 % 256}.{i % 256}.0/24 blackhole;\n")
    confs["origin"] = ("router id 10.255.0.1;\nprotocol device {}\nprotocol static origin { ipv4;\n" +
                       "".join(routes) + "}\n" + bgp("dut", f"{BIRD_BASE}.1", 65001, f"{BIRD_BASE}.2", 65002,
                                                    "none", "all"))
    dut = "router id 10.255.0.2;\nprotocol device {}\n" + bgp("o", f"{BIRD_BASE}.2", 65002, f"{BIRD_BASE}.1",
                                                              65001, "all", "none")
    for i in range(1, k + 1):
        dut += bgp(f"s{i}", f"{BIRD_BASE}.2", 65002, f"{BIRD_BASE}.{10 + i}", 65100 + i, "none", "all")
    confs["dut"] = dut
    for i in range(1, k + 1):
        confs[f"sink{i}"] = (f"router id 10.255.1.{i};\nprotocol device {{}}\n" +
                             bgp("d", f"{BIRD_BASE}.{10 + i}", 65100 + i, f"{BIRD_BASE}.2", 65002, "all", "none"))
    procs = {}

    def start(name):
        path = os.path.join(d, f"{name}.conf")
        with open(path, "w") as f:
            f.write(confs[name])
        sock = os.path.join(d, f"{name}.ctl")
        p = subprocess.Popen([args.bird, "-f", "-c", path, "-s", sock, "-P", os.path.join(d, f"{name}.pid")],
                             stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        procs[name] = p
        wait_until(lambda: os.path.exists(sock), 30, f"bird {name}")
        return BirdSocket(wait_until(lambda: sock if _connects(sock) else None, 30, f"bird {name} socket"))

    try:
        dut_sock = start("dut")
        sinks = [start(f"sink{i}") for i in range(1, k + 1)]
        wait_until(lambda: all(dut_sock.established(f"s{i}") for i in range(1, k + 1)), 60, "the BIRD sinks")
        origin = start("origin")
        wait_until(lambda: dut_sock.established("o"), 60, "the origin's session", interval=0.002)
        t0 = time.monotonic()
        pending = list(enumerate(sinks, 1))
        while pending:
            origin.exported("dut")          # keeps the sender from stalling at the end
            pending = [(i, s) for i, s in pending
                       if s.routes() < args.names and dut_sock.exported(f"s{i}") < args.names]
            if pending:
                time.sleep(0.01)
                if time.monotonic() - t0 > 900:
                    raise RuntimeError("BIRD sinks never got every route")
        return args.names / (time.monotonic() - t0)
    finally:
        for p in procs.values():
            if p.poll() is None:
                p.terminate()
                try:
                    p.wait(30)
                except subprocess.TimeoutExpired:
                    p.kill()
                    p.wait()


def run_bird_500(args, work):
    """BIRD under test with --peers500 BIRD sinks (import none) over BGP."""
    k = args.peers500
    d = os.path.join(work, "bird500")
    os.makedirs(d, exist_ok=True)
    o, u, first = "127.4.17.1", "127.4.17.2", "127.4.18.0"
    routes = "".join(f"  route {10 + i // 65536}.{i // 256 % 256}.{i % 256}.0/24 blackhole;\n"
                     for i in range(args.names500))
    confs = {"origin": "router id 10.255.0.1;\nprotocol device {}\nprotocol static origin { ipv4;\n" + routes + "}\n"
             + bgp("dut", o, 65001, u, 65002, "none", "all")}
    dut = "router id 10.255.0.2;\nprotocol device {}\n" + bgp("o", u, 65002, o, 65001, "all", "none")
    for i in range(1, k + 1):
        dut += bgp(f"s{i}", u, 65002, addr_plus(first, i), 65100 + i, "none", "all")
        confs[f"sink{i}"] = (f"router id 10.255.{i // 256}.{i % 256};\nprotocol device {{}}\n" +
                             bgp("d", addr_plus(first, i), 65100 + i, u, 65002, "none", "none"))
    confs["dut"] = dut
    procs = {}

    def spawn(name):
        path, sock = os.path.join(d, f"{name}.conf"), os.path.join(d, f"{name}.ctl")
        with open(path, "w") as f:
            f.write(confs[name])
        procs[name] = subprocess.Popen([args.bird, "-f", "-c", path, "-s", sock, "-P", os.path.join(d, f"{name}.pid")],
                                       stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        return sock

    try:
        dut_path = spawn("dut")
        for i in range(1, k + 1):
            spawn(f"sink{i}")
        dut_sock = BirdSocket(wait_until(lambda: dut_path if _connects(dut_path) else None, 60, "the BIRD under test"))

        def up_count():
            return sum(1 for l in dut_sock.ask("show protocols") if re.search(r"\bs\d+\s+BGP\s.*Established", l))
        wait_until(lambda: up_count() == k, 300, "the BIRD sinks", interval=0.2)
        origin_path = spawn("origin")
        origin = BirdSocket(wait_until(lambda: origin_path if _connects(origin_path) else None, 60, "the origin"))
        wait_until(lambda: dut_sock.established("o"), 60, "the origin's session", interval=0.002)
        t0 = time.monotonic()
        while True:
            origin.exported("dut")      # keeps the sender from stalling at the end
            done = 0
            for l in dut_sock.ask("show protocols all"):
                m = re.search(r"Routes:\s+\d+ imported, (\d+) exported", l)
                if m and int(m.group(1)) >= args.names500:
                    done += 1
            if done >= k:
                break
            if time.monotonic() - t0 > 900:
                raise RuntimeError("BIRD never exported every route to every sink")
            time.sleep(0.05)
        return args.names500 / (time.monotonic() - t0)
    finally:
        for p in procs.values():
            if p.poll() is None:
                p.terminate()
        for p in procs.values():
            try:
                p.wait(30)
            except subprocess.TimeoutExpired:
                p.kill()
                p.wait()


def _connects(path):
    try:
        s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        s.connect(path)
        s.close()
        return True
    except OSError:
        return False


def plot(peers, nbrp, bird, agg, path):
    try:
        import matplotlib
        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        print("bench nbrp: matplotlib missing, no plot (scripts/bench installs python3-matplotlib)",
              file=sys.stderr)
        return
    fig, ax = plt.subplots(figsize=(6, 4))
    ax.plot(peers, nbrp, "o-", label="nbrpd (names/s)")
    ax.plot(peers, bird, "s--", label="BIRD 2, BGP (routes/s)")
    for key, style, label in (("agg1_names_per_s", "^-", "nbrpd, 1% changes of 1 name (updates/s)"),
                              ("agg20_names_per_s", "v-", "nbrpd, 1% changes of 20 names (updates/s)"),
                              ("aggall_updates_per_s", "x:", "nbrpd, every update a change (changes/s)")):
        if agg.get(key):
            ax.plot(peers[:len(agg[key])], agg[key], style, label=label)
    ax.set_xlabel("peers receiving the updates")
    ax.set_ylabel("updates per second")
    ax.set_yscale("log")
    ax.set_title("Routing throughput (cf. Gritter & Cheriton, Fig. 6)")
    ax.grid(True, which="both", alpha=0.3)
    ax.legend()
    fig.tight_layout()
    fig.savefig(path, dpi=120)


def main():
    ap = argparse.ArgumentParser(prog="scripts/bench nbrp", description=__doc__.split("\n\n")[0])
    ap.add_argument("--names", type=int, default=500_000)
    ap.add_argument("--peers", type=int, default=6, help="K goes from 1 to this")
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--repeat", type=int, default=3, help="runs per figure; the best counts")
    ap.add_argument("--rde-names", type=int, default=1_000_000, help="names for the loop-turn and memory run")
    ap.add_argument("--peers500", type=int, default=500, help="sinks for the many-peers run (0: skip it)")
    ap.add_argument("--names500", type=int, default=200_000)
    ap.add_argument("--skip-k", action="store_true", help="only the RDE and many-peers runs")
    ap.add_argument("--agg-count", type=int, default=100, help="aggregates in rows (b) and (c)")
    ap.add_argument("--agg-size", type=int, default=100, help="names per aggregate in rows (b) and (c)")
    ap.add_argument("--aggall-changes", type=int, default=50_000, help="changes in row (c)")
    ap.add_argument("--skip-agg", action="store_true", help="without rows (b) and (c)")
    ap.add_argument("--signed", action="store_true", help="also signed routes (bench/bench_nbrp_signed.py)")
    ap.add_argument("--signed-names", type=int, default=20_000, help="signed routes, one name each")
    ap.add_argument("--signed-sinks", type=int, default=2, help="K sinks the signed routes are passed on to")
    ap.add_argument("--set-names", type=int, default=1024, help="names per signed set (re-advertisement)")
    ap.add_argument("--readvert-names", type=int, default=1_000_000,
                    help="names of the name-set, re-advertisement and unsigned phases of --signed")
    ap.add_argument("--signed-aggs", type=int, default=20, help="signed aggregates (bench/bench_nbrp_signed_agg.py)")
    ap.add_argument("--signed-agg-size", type=int, default=15_000, help="names per signed aggregate")
    ap.add_argument("--build", default=os.path.join(os.path.dirname(__file__), "..", "build"))
    args = ap.parse_args()
    binaries(args)
    args.bird = shutil.which("bird") or "/usr/sbin/bird"
    if not os.path.exists(args.bird):
        sys.exit("bench nbrp: bird2 is missing (scripts/setup installs it)")
    outdir = os.path.join(args.build, "bench")
    os.makedirs(outdir, exist_ok=True)
    work = tempfile.mkdtemp(prefix="bench-nbrp-")
    peers, nbrp, bird = [], [], []
    agg = {"agg1_names_per_s": [], "agg20_names_per_s": [], "aggall_updates_per_s": []}
    extra = {}
    try:
        if args.signed:
            import bench_nbrp_signed
            extra.update(bench_nbrp_signed.run(args, work, wait_until, nbrc, reap))
            print(f"signed: {extra}", flush=True)
            import bench_nbrp_signed_agg
            extra.update(bench_nbrp_signed_agg.run(args, work, wait_until, args.signed_sinks))
            print(f"signed aggregates: {extra}", flush=True)
        skip = "--skip-agg" if args.skip_agg else nbrpd_aggregates(args, work)
        if skip:
            print(f"rows (b) and (c) skipped: {skip}", flush=True)
            agg = {key: None for key in agg}
        extra.update(run_rde(args, work))
        print(f"RDE: {extra}", flush=True)
        if args.peers500:
            n500 = run_nbrp_500(args, work)
            b500 = run_bird_500(args, work)
            extra.update({"peers_500": args.peers500, "peers_500_names": args.names500,
                          "peers_500_names_per_s": round(n500), "bird_500_routes_per_s": round(b500)})
            print(f"{args.peers500} peers: nbrpd {n500:.0f} names/s   BIRD {b500:.0f} routes/s", flush=True)
        for k in range(1, 0 if args.skip_k else args.peers + 1):
            n = max(run_nbrp(args, work, k) for _ in range(args.repeat))
            b = max(run_bird(args, work, k) for _ in range(args.repeat))
            peers.append(k)
            nbrp.append(round(n))
            bird.append(round(b))
            print(f"K={k}: nbrpd {n:12.0f} names/s   BIRD {b:12.0f} routes/s", flush=True)
            if not skip:
                for key, c in (("agg1_names_per_s", 1), ("agg20_names_per_s", 20), ("aggall_updates_per_s", None)):
                    agg[key].append(round(max(run_nbrp_agg(args, work, k, c) for _ in range(args.repeat))))
                print(f"K={k}: nbrpd, 1% changes of 1 name {agg['agg1_names_per_s'][-1]:9.0f} updates/s, "
                      f"of 20 names {agg['agg20_names_per_s'][-1]:9.0f} updates/s, "
                      f"every update a change {agg['aggall_updates_per_s'][-1]:9.0f} changes/s", flush=True)
    finally:
        shutil.rmtree(work, ignore_errors=True)
    with open(os.path.join(outdir, "nbrp.csv"), "w", newline="") as f:
        w = csv.writer(f)
        cols = [key for key, v in agg.items() if v]
        w.writerow(["peers", "nbrp_names_per_s", "bird_routes_per_s", *cols])
        for row in zip(peers, nbrp, bird, *(agg[key] for key in cols)):
            w.writerow(row)
    plot(peers, nbrp, bird, agg, os.path.join(outdir, "nbrp.png"))
    print(f"wrote {outdir}/nbrp.csv and {outdir}/nbrp.png", flush=True)
    print(json.dumps({"names": args.names, "peers": peers, "nbrp_names_per_s": nbrp, "bird_routes_per_s": bird,
                      **agg, **({"agg_skipped": skip} if skip else {}), **extra}))


if __name__ == "__main__":
    main()
