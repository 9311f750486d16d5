#!/usr/bin/env python3
"""scripts/bench cache: inrpd's packet cache against dnsdist's, both in front
of the same Unbound, answering from their caches.

Unbound (one thread, the names as local-data) is the upstream of both.
inrpd (one worker, no routes: every name goes to the upstream and is
cached) and dnsdist (Debian's, its packet cache on) each run alone,
pinned to CPU 1; dnsperf runs on CPU 0 with one query file of the names in
random order.  Both servers get the same UDP tuning: a 4 MiB socket
receive buffer and recvmmsg batches of 32 (inrpd's own; dnsdist's
setUDPSocketBufferSizes and setUDPMultipleMessagesVectorSize, whose
defaults, the kernel's 208 KiB and no batching, drop dnsperf's first
burst and cost it a system call per query).  A warm-up pass over the
whole file fills the cache, so the measured run is answered from it.
CPU per query is the server's utime+stime over the measured run divided
by the queries completed; its reciprocal, qps per CPU, is what one CPU
second of the server answers.  With one CPU for the client the client,
not the server, sets the qps: server_cpu, the share of CPU 1 the server
used, says how far it was from saturated.  The echo floor is
bench/udp_echo under the same load (what the kernel alone charges a
datagram in and out).  cache_bytes_per_entry is inrpd's RSS growth over
the warm-up divided by the entries its cache then holds.

--dnstap: a second inrpd before the same Unbound, its cache warmed the
same way, logs every query and answer to fstrm_capture writing to
/dev/null, and is measured alternately with the first (as scripts/bench
inrp --dnstap does; bench_inrp.dnstap_compare).

The last line of output is one JSON object.
"""
import argparse
import json
import os
import random
import shutil
import subprocess
import sys
import tempfile

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from bench_inrp import (TapReader, descendants, dnstap_compare, unbound_conf, free_port, gen_names,  # noqa: E402
                        measure, rss_bytes, start, stop, tap_counters, udp_answers)

HERE = os.path.dirname(os.path.abspath(__file__))


def warm(addr, port, qfile, client_cpus):
    """dnsperf over the file until every name was asked (-n: passes over it)."""
    cmd = ["dnsperf", "-s", addr, "-p", str(port), "-d", qfile, "-n", "1", "-c", "8", "-q", "100"]
    if client_cpus:
        cmd = ["taskset", "-c", client_cpus] + cmd
    subprocess.run(cmd, capture_output=True, text=True, check=True)


def inrpc_cache(inrpc, ctl):
    out = subprocess.run([inrpc, "-s", ctl, "--json", "show", "cache"], capture_output=True, text=True,
                         check=True).stdout
    return json.loads(out)


def dnstap_beside(args, work, inrpd, inrpc, plain, upstream, probe, qfile, pin, pin_client, client_cpus, procs):
    """--dnstap: a second inrpd before the same upstream, logging to a reader, its cache warmed the same way."""
    reader = TapReader(work, pin_client)
    try:
        addr, port = "127.0.0.55", free_port()
        ctl = os.path.join(work, "inrpd-tap.ctl")
        conf = os.path.join(work, "inrpd-tap.conf")
        with open(conf, "w") as f:
            f.write(f"listen {addr} port {port};\nworkers 1;\nlog-level warn;\n"
                    f"upstream {upstream[0]} port {upstream[1]};\ncache-size 64M;\n" + reader.conf(ctl))
        with open(os.path.join(work, "inrpd-tap.log"), "w") as log:
            p = start(pin([inrpd, "-f", "-c", conf]), addr, port, probe, 60, log)
            procs.append(p)
            try:
                warm(addr, port, qfile, client_cpus)
                return dnstap_compare(plain, (p, addr, port), lambda: tap_counters(inrpc, ctl), qfile,
                                      max(3, args.seconds // 2), client_cpus, args.dnstap_pairs)
            finally:
                stop(p)
    finally:
        reader.close()


def main():
    ap = argparse.ArgumentParser(prog="scripts/bench cache", description=__doc__.split("\n\n")[0])
    ap.add_argument("--names", type=int, default=100_000)
    ap.add_argument("--seconds", type=int, default=10, help="length of each measured dnsperf run")
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--build", default=os.path.join(HERE, "..", "build"))
    ap.add_argument("--dnstap", action="store_true",
                    help="also a second inrpd logging every query and answer to a dnstap reader, "
                         "measured alternately with the plain one")
    ap.add_argument("--dnstap-pairs", type=int, default=3)
    args = ap.parse_args()

    inrpd = os.path.join(args.build, "inrpd", "inrpd")
    inrpc = os.path.join(args.build, "inrpd", "inrpc")
    echo = os.path.join(args.build, "bench", "udp_echo")
    for tool in ("dnsperf", "dig", "unbound", "dnsdist"):
        if not shutil.which(tool) and not os.path.exists(f"/usr/sbin/{tool}"):
            sys.exit(f"bench cache: {tool} is missing (scripts/setup installs it)")
    unbound_bin = shutil.which("unbound") or "/usr/sbin/unbound"
    dnsdist_bin = shutil.which("dnsdist") or "/usr/bin/dnsdist"
    server_cpus, client_cpus = ("1", "0") if os.cpu_count() and os.cpu_count() >= 2 else (None, None)
    pin = (lambda cmd: ["taskset", "-c", server_cpus] + cmd) if server_cpus else (lambda cmd: cmd)
    pin_client = (lambda cmd: ["taskset", "-c", client_cpus] + cmd) if client_cpus else (lambda cmd: cmd)

    work = tempfile.mkdtemp(prefix="bench-cache-")
    names = gen_names(args.names, args.seed)
    qfile = os.path.join(work, "queries")
    order = list(names)
    random.Random(args.seed + 1).shuffle(order)
    with open(qfile, "w") as f:
        for n in order:
            f.write(f"{n} A\n")
    print(f"bench cache: {len(names)} names, files in {work}", flush=True)

    results = {}
    procs = []
    try:
        # the upstream: every name as local-data, TTL a day so nothing expires
        ub_addr, ub_port = "127.0.0.51", free_port()
        ub_conf = unbound_conf(work, ub_addr, ub_port, ("com", "org", "net"), names, 86400)
        with open(os.path.join(work, "unbound.out"), "w") as log:
            ub = start(pin_client([unbound_bin, "-d", "-p", "-c", ub_conf]), ub_addr, ub_port, names[0], 600, log)
            procs.append(ub)

        # inrpd: no routes, the upstream, its cache
        addr, port = "127.0.0.52", free_port()
        ctl = os.path.join(work, "inrpd.ctl")
        conf = os.path.join(work, "inrpd.conf")
        with open(conf, "w") as f:
            f.write(f'listen {addr} port {port};\nworkers 1;\nlog-level warn;\ncontrol "{ctl}";\n'
                    f"upstream {ub_addr} port {ub_port};\ncache-size 64M;\n")
        with open(os.path.join(work, "inrpd.log"), "w") as log:
            p = start(pin([inrpd, "-f", "-c", conf]), addr, port, names[0], 60, log)
            procs.append(p)
            rss0 = rss_bytes(descendants(p.pid))
            warm(addr, port, qfile, client_cpus)
            st = inrpc_cache(inrpc, ctl)
            results["bytes_per_entry"] = (rss_bytes(descendants(p.pid)) - rss0) / max(st["entries"], 1)
            print(f"inrpd    cache: {st['entries']} entries, {st['used']} bytes of entries, "
                  f"{results['bytes_per_entry']:.0f} bytes RSS per entry", flush=True)
            results["inrpd"] = measure("inrpd", p, addr, port, qfile, args.seconds, client_cpus)
            st = inrpc_cache(inrpc, ctl)
            print(f"inrpd    cache after: hits {st['hits']}, misses {st['misses']}", flush=True)
            if args.dnstap:
                results["dnstap"] = dnstap_beside(args, work, inrpd, inrpc, (p, addr, port), (ub_addr, ub_port),
                                                  names[0], qfile, pin, pin_client, client_cpus, procs)
            stop(p)

        # dnsdist: the same upstream, its packet cache big enough for every name
        addr, port = "127.0.0.53", free_port()
        dconf = os.path.join(work, "dnsdist.conf")
        with open(dconf, "w") as f:
            f.write(f"""setLocal("{addr}:{port}")
setACL({{"127.0.0.0/8"}})
setUDPSocketBufferSizes(4194304, 4194304)
setUDPMultipleMessagesVectorSize(32)
newServer({{address="{ub_addr}:{ub_port}", healthCheckMode="lazy"}})
pc = newPacketCache({2 * len(names)}, {{maxTTL=86400}})
getPool(""):setCache(pc)
""")
        with open(os.path.join(work, "dnsdist.out"), "w") as log:
            p = start(pin([dnsdist_bin, "--supervised", "--disable-syslog", "-C", dconf]), addr, port,
                      names[0], 60, log)
            procs.append(p)
            warm(addr, port, qfile, client_cpus)
            results["dnsdist"] = measure("dnsdist", p, addr, port, qfile, args.seconds, client_cpus)
            stop(p)
        stop(ub)

        # the floor: a server that only turns datagrams around
        addr, port = "127.0.0.54", free_port()
        import dns.message
        probe = bytearray(dns.message.make_query(names[0], "A").to_wire())
        with open(os.path.join(work, "echo.out"), "w") as log:
            p = subprocess.Popen(pin([echo, addr, str(port)]), stdout=log, stderr=subprocess.STDOUT,
                                 start_new_session=True)
            procs.append(p)
            while not udp_answers(addr, port, probe):
                if p.poll() is not None:
                    raise RuntimeError(f"udp_echo exited; see {log.name}")
            results["echo"] = measure("echo", p, addr, port, qfile, args.seconds, client_cpus)
            stop(p)
    finally:
        for p in procs:
            stop(p)
        shutil.rmtree(work, ignore_errors=True)

    out = {
        "names": len(names),
        "inrpd_cache_qps": round(results["inrpd"][0]),
        "dnsdist_cache_qps": round(results["dnsdist"][0]),
        "inrpd_cache_cpu_us_per_query": round(results["inrpd"][1], 3),
        "dnsdist_cache_cpu_us_per_query": round(results["dnsdist"][1], 3),
        "echo_cpu_us_per_query": round(results["echo"][1], 3),
        "cache_bytes_per_entry": round(results["bytes_per_entry"], 1),
    }
    for k in ("inrpd", "dnsdist", "echo"):
        qps, us = results[k][0], results[k][1]
        out[f"{k}_qps_per_cpu"] = round(1e6 / us) if us else None
        out[f"{k}_server_cpu"] = round(qps * us / 1e6, 2)
    out.update(results.get("dnstap", {}))
    print(json.dumps(out))


if __name__ == "__main__":
    main()
