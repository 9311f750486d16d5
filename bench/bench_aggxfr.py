#!/usr/bin/env python3
"""scripts/bench aggxfr: a 1,000,000-member aggregate served as AXFR beside NSD.

The same names, one run: the aggregate store served by lib/agg/xfrserv.c
(through the test tool tests/tools/aggtool: the SOA and one PTR per member
at the apex) and NSD serving them as a zone of the same size (the SOA and
one PTR per member, owned by MEMBER.agg.bench: NSD loads a million-record
RRset in quadratic time).  kdig
transfers each (AXFR, output to a file), alternately, --runs times; the
medians are compared.  Then the library's own client fetches the aggregate
into an empty store (AXFR, parsed, written and fsync'ed): what a router
pays to take in a new aggregate, short of its RIB and FIB.

Human-readable lines first; the last line is one JSON object:
  ours_kdig_axfr_s, nsd_kdig_axfr_s   median wall time of kdig's AXFR
  ours_axfr_bytes, nsd_axfr_bytes     bytes kdig received
  ours_fetch_store_s                  median aggtool fetch into an empty store
  ratio                               ours_kdig_axfr_s / nsd_kdig_axfr_s
"""

import argparse
import json
import os
import random
import re
import shutil
import signal
import socket
import statistics
import subprocess
import sys
import tempfile
import time

AGG = "agg.bench"


def gen_names(n, seed):
    rnd = random.Random(seed)
    alphabet = "abcdefghijklmnopqrstuvwxyz0123456789"
    tlds = ["com"] * 8 + ["net", "org"]
    out = set()
    while len(out) < n:
        label = "".join(rnd.choice(alphabet) for _ in range(rnd.randint(3, 17)))
        out.add(f"{label}.{rnd.choice(tlds)}")
    return sorted(out)


def free_port(addr):
    for _ in range(200):
        port = random.randint(20000, 32767)
        with socket.socket() as t, socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as u:
            try:
                t.bind((addr, port))
                u.bind((addr, port))
            except OSError:
                continue
        return port
    raise RuntimeError("no free port")


def soa_ok(addr, port):
    r = subprocess.run(["kdig", "+retry=0", "+timeout=1", "-p", str(port), f"@{addr}", "SOA", AGG],
                       capture_output=True, text=True)
    return "status: NOERROR" in r.stdout and "SOA" in r.stdout


def wait_serving(proc, addr, port, what, timeout=600):
    deadline = time.monotonic() + timeout
    while not soa_ok(addr, port):
        if proc.poll() is not None or time.monotonic() > deadline:
            raise RuntimeError(f"{what} did not start")
        time.sleep(0.1)


def stop(p):
    if p.poll() is None:
        p.send_signal(signal.SIGTERM)
        try:
            p.wait(timeout=30)
        except subprocess.TimeoutExpired:
            p.kill()
            p.wait()


def kdig_axfr(addr, port, out, pin, n):
    t = time.monotonic()
    with open(out, "w") as f:
        r = subprocess.run(pin(["kdig", "-p", str(port), f"@{addr}", "AXFR", AGG]), stdout=f, stderr=subprocess.PIPE,
                           text=True)
    secs = time.monotonic() - t
    text = open(out).read()
    ptrs = text.count("\tPTR\t")
    m = re.search(r";; Received (\d+) B", text)
    if r.returncode != 0 or ptrs != n or not m:
        raise RuntimeError(f"kdig AXFR from {addr}: exit {r.returncode}, {ptrs} PTR records of {n}: {r.stderr}")
    return secs, int(m.group(1))


def nsd_server(work, addr, port):
    """NSD's server and remote-control clauses for a run in work, on addr port."""
    return f"""server:
  ip-address: {addr}
  port: {port}
  server-count: 1
  username: ""
  chroot: ""
  zonesdir: "{work}"
  pidfile: "{work}/nsd.pid"
  database: ""
  xfrdfile: "{work}/xfrd.state"
  zonelistfile: "{work}/zone.list"
  logfile: "{work}/nsd.log"
  verbosity: 0
remote-control:
  control-enable: no
"""


def nsd_config(work, names, addr, port):
    """NSD serving the names as a zone of AGG, each its own RRset (NSD loads
    a million-record RRset at the apex in quadratic time); the config's path."""
    with open(os.path.join(work, "agg.zone"), "w") as z:
        z.write(f"$ORIGIN {AGG}.\n$TTL 0\n@ SOA {AGG}. . 1 3600 600 604800 0\n@ NS ns.{AGG}.\nns A 127.0.0.1\n")
        for n in names:
            z.write(f"{n} PTR {n}.\n")
    nsd_conf = os.path.join(work, "nsd.conf")
    with open(nsd_conf, "w") as f:
        f.write(nsd_server(work, addr, port) + f"""zone:
  name: "{AGG}."
  zonefile: "agg.zone"
  provide-xfr: 127.0.0.0/8 NOKEY
""")
    return nsd_conf


def main():
    ap = argparse.ArgumentParser(prog="scripts/bench aggxfr", description=__doc__.split("\n\n")[0])
    ap.add_argument("--names", type=int, default=1_000_000)
    ap.add_argument("--runs", type=int, default=3)
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--build", default=os.path.join(os.path.dirname(__file__), "..", "build"))
    args = ap.parse_args()
    aggtool = os.path.join(args.build, "tests", "tools", "aggtool")
    nsd_bin = shutil.which("nsd") or "/usr/sbin/nsd"
    for tool in (aggtool, nsd_bin, shutil.which("kdig")):
        if not tool or not os.path.exists(tool):
            sys.exit(f"bench aggxfr: {tool} is missing (scripts/setup builds and installs it)")
    server_cpu, client_cpu = ("1", "0") if (os.cpu_count() or 1) >= 2 else (None, None)
    spin = (lambda c: ["taskset", "-c", server_cpu] + c) if server_cpu else (lambda c: c)
    cpin = (lambda c: ["taskset", "-c", client_cpu] + c) if client_cpu else (lambda c: c)

    work = tempfile.mkdtemp(prefix="bench-aggxfr-")
    names = gen_names(args.names, args.seed)
    members = os.path.join(work, "members.txt")
    with open(members, "w") as f:
        f.write("\n".join(names) + "\n")
    t = time.monotonic()
    subprocess.run([aggtool, "define", os.path.join(work, "state"), AGG, members, "1"], check=True,
                   stderr=subprocess.DEVNULL)
    print(f"bench aggxfr: {len(names)} names, stored in {time.monotonic() - t:.2f} s; files in {work}", flush=True)

    ours_addr, nsd_addr = "127.0.0.61", "127.0.0.62"
    ours_port, nsd_port = free_port(ours_addr), free_port(nsd_addr)
    nsd_conf = nsd_config(work, names, nsd_addr, nsd_port)
    procs = []
    try:
        log = open(os.path.join(work, "ours.log"), "w")
        ours = subprocess.Popen(spin([aggtool, "serve", os.path.join(work, "state"), AGG, ours_addr, str(ours_port)]),
                                stdout=subprocess.DEVNULL, stderr=log)
        procs.append(ours)
        wait_serving(ours, ours_addr, ours_port, "aggtool serve")
        nlog = open(os.path.join(work, "nsd.out"), "w")
        t = time.monotonic()
        nsd = subprocess.Popen(spin([nsd_bin, "-d", "-c", nsd_conf]), stdout=nlog, stderr=subprocess.STDOUT)
        procs.append(nsd)
        wait_serving(nsd, nsd_addr, nsd_port, "nsd")
        print(f"nsd loaded in {time.monotonic() - t:.1f} s", flush=True)

        ours_t, nsd_t, fetch_t = [], [], []
        ours_bytes = nsd_bytes = 0
        for run in range(args.runs):
            s, ours_bytes = kdig_axfr(ours_addr, ours_port, os.path.join(work, "ours.axfr"), cpin, len(names))
            ours_t.append(s)
            s, nsd_bytes = kdig_axfr(nsd_addr, nsd_port, os.path.join(work, "nsd.axfr"), cpin, len(names))
            nsd_t.append(s)
            cdir = os.path.join(work, f"client{run}")
            r = subprocess.run(cpin([aggtool, "fetch", cdir, AGG, ours_addr, str(ours_port)]),
                               capture_output=True, text=True)
            res = json.loads(r.stdout.strip().splitlines()[-1])
            if res["status"] != 0 or res["kind"] != "AXFR":
                raise RuntimeError(f"aggtool fetch: {r.stdout} {r.stderr}")
            fetch_t.append(res["seconds"])
            shutil.rmtree(cdir)
            print(f"run {run + 1}: kdig AXFR ours {ours_t[-1]:.3f} s, nsd {nsd_t[-1]:.3f} s; "
                  f"aggtool fetch+store {fetch_t[-1]:.3f} s", flush=True)
    finally:
        for p in procs:
            stop(p)
    o, n = statistics.median(ours_t), statistics.median(nsd_t)
    print(json.dumps({
        "names": len(names), "runs": args.runs,
        "ours_kdig_axfr_s": round(o, 3), "nsd_kdig_axfr_s": round(n, 3), "ratio": round(o / n, 3),
        "ours_axfr_bytes": ours_bytes, "nsd_axfr_bytes": nsd_bytes,
        "ours_fetch_store_s": round(statistics.median(fetch_t), 3),
    }))
    shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    main()
