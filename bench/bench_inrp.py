#!/usr/bin/env python3
"""scripts/bench inrp: inrpd answering local-server routes, side by side with
NSD (the names as zones) and Unbound (the names as local-data), each driven
by dnsperf with the same query file and the same CPU pinning.  Each
server's CPU time comes from /proc before and after its run.

inrpd, NSD and the two echo floors run at once, each on its own address,
and are measured in --rounds rounds, each server a --round-seconds burst
in turn, the order rotating a step a round: the others' load on a shared
machine drifts over minutes, so each ratio (inrpd/NSD qps, inrpd/echo CPU
per query) is taken of bursts seconds apart, round by round, and the JSON
gives the medians of those ratios and each round's.  Unbound, whose
figures are no target's ratio, is measured alone afterwards.  Every burst
also records the share of its CPU the client (dnsperf, one thread) was
busy (*_client_busy_rounds): near 1, the client sets the pace, and the
echo floor's qps over NSD's (echo_nsd_qps_ratio) is the most any server
could reach against NSD in that run.  *_queries_per_sleep_rounds: the
queries a server answered for each time one of its threads went to sleep
(voluntary context switches): a server that keeps up with its client
sleeps between small batches, and each sleep and wake-up costs it kernel
time the queries share.

Then the same servers at capacity, in as many interleaved rounds: each
driven by bench/udp_query_load (500 queries in flight, sent and read 64 a
syscall), a client that spends less CPU a query than any of the servers,
so that the server, not the client, is the slower side (dnsperf, which
sends and reads one datagram a syscall, is the slower side of every server
here: busy 99% of its CPU, it lets the echo floor, which does no work,
answer no more than NSD).  *_capacity_busy_rounds near 1 says the server
was the bottleneck.  inrpd_nsd_capacity_ratio, the median of the rounds'
qps ratios, is what target_qps_met reads; echo_nsd_capacity_ratio is the
most a server could reach against NSD with this client.

Then hop_p50_us: the median latency one forwarding hop adds.  Five
inrpd routers in a chain (the last with the content server) are asked at
a fixed moderate rate, alternately at the first (5 hops) and at the last
(1 hop); the difference of the medians over the 4 extra hops is the cost
of one.  The client's own overhead is in both and cancels out.  The same
is measured for a chain of bench/udp_relay, a relay that does nothing but
move datagrams (relay_hop_p50_us): the floor this machine's kernel and
scheduler set for a hop between processes.  Likewise echo_cpu_us_per_query
is bench/udp_echo under the same dnsperf load: a server that only turns
each query around, with inrpd's recvmmsg/sendmmsg batching, i.e. what the
kernel alone charges per query.  echo_table_cpu_us_per_query is the
same echo that also reads, per query, the two buckets of a table as large
as inrpd's for the names (TABLE_BYTES_PER_NAME a name), fetched a batch
at a time as inrpd does: what this machine's memory and TLBs add for any
server that looks each name up in a table that size.

inrpd_scraped_qps: inrpd's qps with a Prometheus-style scrape of its
/metrics every 100 ms (an HTTP GET loop, as Prometheus would do at ten
times its usual rate), and inrpd_unscraped_qps without, each the median
of --scrape-pairs runs alternating with and without (on a shared machine
the load of others moves from run to run; alternating spreads it over
both); scrape_qps_ratio is the first over the second, and the CPU per
query is compared the same way.  Those are as noisy as the machine;
scrape_cpu_us is not: the CPU time all of inrpd's threads spend on one
scrape (the kernel's per-thread sum_exec_runtime, in ns, over 50 scrapes
of an otherwise idle inrpd, less an idle window of the same length).

--dnstap: a second inrpd with the same routes logs every query and
answer (CLIENT_QUERY, CLIENT_RESPONSE) over Frame Streams to fstrm_capture
writing to /dev/null (pinned with the client), and is measured
alternately with the plain one (--dnstap-pairs pairs, half --seconds
each, medians): dnstap_cpu_us_per_query against
dnstap_plain_cpu_us_per_query, their ratio dnstap_cpu_ratio (the CPU of
inrpd's every thread, libfstrm's I/O thread included; not the reader's),
and the messages sent and dropped meanwhile.

The last line of output is one JSON object.
"""
import http.client
import threading
import argparse
import functools
import json
import os
import random
import re
import resource
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time

from bench_aggxfr import nsd_server

CLK_TCK = os.sysconf("SC_CLK_TCK")
PAGE = os.sysconf("SC_PAGE_SIZE")
TLDS = (("com", 0.8), ("org", 0.1), ("net", 0.1))
ALNUM = "abcdefghijklmnopqrstuvwxyz0123456789"
# inrpd config files are read whole and bounded (lib/core/conf.h): split the routes
ROUTES_PER_FILE = 200_000
# lib/fib's table: 32-byte slots, 0.82-0.90 full
TABLE_BYTES_PER_NAME = 37


def gen_names(n, seed):
    """n distinct second-level names, 80% .com, 10% .org, 10% .net, label 3-17."""
    rnd = random.Random(seed)
    seen = set()
    while len(seen) < n:
        length = rnd.randint(3, 17)
        label = "".join(rnd.choice(ALNUM) for _ in range(length))
        r = rnd.random()
        tld = "com" if r < 0.8 else "org" if r < 0.9 else "net"
        seen.add(label + "." + tld)
    return sorted(seen)


def free_port():
    with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def proc_stat(pid):
    """The fields of /proc/PID/stat after the command name, or None."""
    try:
        with open(f"/proc/{pid}/stat") as f:
            return f.read().rsplit(")", 1)[1].split()
    except (OSError, IndexError):
        return None


def descendants(pid):
    """pid and every process below it (NSD forks its servers)."""
    parent = {}
    for entry in os.listdir("/proc"):
        if entry.isdigit():
            fields = proc_stat(entry)
            if fields:
                parent[int(entry)] = int(fields[1])
    out, todo = [], [pid]
    while todo:
        p = todo.pop()
        out.append(p)
        todo.extend(c for c, pp in parent.items() if pp == p)
    return out


def cpu_ticks(pids):
    total = 0
    for p in pids:
        fields = proc_stat(p)
        if fields:
            total += int(fields[11]) + int(fields[12])      # utime + stime
    return total


def sleeps(pids):
    """Times every thread of pids went to sleep on its own (voluntary
    context switches): a server waiting for the next datagram."""
    total = 0
    for p in pids:
        try:
            tasks = os.listdir(f"/proc/{p}/task")
        except OSError:
            continue
        for t in tasks:
            try:
                with open(f"/proc/{p}/task/{t}/status") as f:
                    for line in f:
                        if line.startswith("voluntary_ctxt_switches"):
                            total += int(line.split()[1])
            except OSError:
                pass
    return total


def rss_bytes(pids):
    total = 0
    for p in pids:
        try:
            with open(f"/proc/{p}/statm") as f:
                total += int(f.read().split()[1]) * PAGE
        except (OSError, IndexError, ValueError):
            pass
    return total


def answers(addr, port, name):
    """True once the server answers NOERROR for name (no sleep: dig's own timeout)."""
    r = subprocess.run(["dig", "+short", "+tries=1", "+time=1", f"@{addr}", "-p", str(port), name, "A"],
                       capture_output=True, text=True)
    return r.returncode == 0 and r.stdout.strip() != ""


def start(cmd, addr, port, probe, limit_s, log):
    proc = subprocess.Popen(cmd, stdout=log, stderr=subprocess.STDOUT, start_new_session=True)
    deadline = time.monotonic() + limit_s
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            raise RuntimeError(f"{cmd[0]} exited with {proc.returncode}; see {log.name}")
        if answers(addr, port, probe):
            return proc
    stop(proc)
    raise RuntimeError(f"{cmd[0]} did not answer within {limit_s} s; see {log.name}")


def stop(proc):
    if proc.poll() is None:
        os.killpg(proc.pid, signal.SIGTERM)
        try:
            proc.wait(timeout=30)
        except subprocess.TimeoutExpired:
            os.killpg(proc.pid, signal.SIGKILL)
            proc.wait()


def dnsperf(addr, port, qfile, seconds, cpus):
    cmd = ["dnsperf", "-s", addr, "-p", str(port), "-d", qfile, "-l", str(seconds),
           "-c", "8", "-q", "500", "-T", "1"]
    if cpus:
        cmd = ["taskset", "-c", cpus] + cmd
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    out = subprocess.run(cmd, capture_output=True, text=True, check=True).stdout
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    qps = float(re.search(r"Queries per second:\s+([0-9.]+)", out).group(1))
    done = int(re.search(r"Queries completed:\s+(\d+)", out).group(1))
    lost = int(re.search(r"Queries lost:\s+(\d+)", out).group(1))
    client_s = after.ru_utime + after.ru_stime - before.ru_utime - before.ru_stime
    return qps, done, lost, client_s


def query_load(addr, port, qfile, seconds, cpus, loader):
    """bench/udp_query_load's run, as dnsperf(): (answers a second, answered, lost, its CPU seconds)."""
    cmd = [loader, addr, str(port), qfile, str(seconds), "500"]
    if cpus:
        cmd = ["taskset", "-c", cpus] + cmd
    out = subprocess.run(cmd, capture_output=True, text=True, check=True).stdout.split()
    f = dict(zip(out[0::2], out[1::2]))
    return float(f["qps"]), int(f["answered"]), int(f["lost"]), float(f["cpu_s"])


def measure(name, proc, addr, port, qfile, seconds, client_cpus, client=dnsperf):
    """A warm-up and a measured burst of client (dnsperf, or query_load
    with its loader bound): (qps, server CPU us a query, RSS, the share of
    its CPU the client was busy, queries a sleep, the share of its CPU the
    server was busy)."""
    pids = descendants(proc.pid)
    client(addr, port, qfile, 1, client_cpus)              # warm up caches and paths
    before, slept = cpu_ticks(pids), sleeps(pids)
    qps, done, lost, client_s = client(addr, port, qfile, seconds, client_cpus)
    cpu_us = (cpu_ticks(pids) - before) * 1e6 / CLK_TCK
    per_sleep = done / max(1, sleeps(pids) - slept)
    rss = rss_bytes(pids)
    us_per_q = cpu_us / done if done else float("nan")
    busy, server_busy = client_s / seconds, cpu_us / 1e6 / seconds
    print(f"{name:8s} {qps:12.0f} qps  {us_per_q:6.2f} us CPU/query  {lost} lost  RSS {rss / 2**20:8.1f} MiB"
          f"  client {busy:.0%} of its CPU, server {server_busy:.0%}  {per_sleep:.1f} queries a sleep",
          flush=True)
    return qps, us_per_q, rss, busy, per_sleep, server_busy


def interleaved(servers, rounds, burst):
    """servers: {name: (proc, addr, port)}, all started and loaded.  rounds
    times, each in turn (the order rotating a step a round), a warm-up and a
    measured burst (burst(label, proc, addr, port) returns its figures): the
    others' load on a shared machine drifts over minutes, so the servers a
    ratio compares are measured seconds apart.  {name: [figures, ...]}, one
    a round."""
    names = list(servers)
    runs = {n: [] for n in names}
    for r in range(rounds):
        k = r % len(names)
        for n in names[k:] + names[:k]:
            proc, addr, port = servers[n]
            runs[n].append(burst(f"{n}#{r}", proc, addr, port))
    return runs


def ratios(num, den, field):
    """num's field over den's, round by round."""
    return [round(a[field] / b[field], 4) for a, b in zip(num, den)]


class Scraper(threading.Thread):
    """GET /metrics every interval until stopped; counts the 200s."""

    def __init__(self, addr, port, interval):
        super().__init__(daemon=True)
        self.addr, self.port, self.interval = addr, port, interval
        self.stopping = threading.Event()
        self.ok = self.failed = 0
        self.times_us = []
        self.size = 0

    def run(self):
        while not self.stopping.wait(self.interval):
            c = http.client.HTTPConnection(self.addr, self.port, timeout=5)
            try:
                t = time.monotonic()
                c.request("GET", "/metrics")
                r = c.getresponse()
                self.size = len(r.read())
                if r.status == 200:
                    self.times_us.append((time.monotonic() - t) * 1e6)
                    self.ok += 1
                else:
                    self.failed += 1
            except OSError:
                self.failed += 1
            finally:
                c.close()


def runtime_ms(pid):
    """CPU time of every thread of pid so far, from the scheduler (ms, ns precision)."""
    total = 0.0
    for tid in os.listdir(f"/proc/{pid}/task"):
        try:
            with open(f"/proc/{pid}/task/{tid}/sched") as f:
                for line in f:
                    if line.startswith("se.sum_exec_runtime"):
                        total += float(line.split(":")[1])
                        break
        except OSError:
            pass
    return total


def scrape_cpu_us(pid, addr, port, count=50, interval=0.1):
    """inrpd's CPU per scrape, idle otherwise: a window of count scrapes less an idle one."""
    t = runtime_ms(pid)
    time.sleep(count * interval)
    idle = runtime_ms(pid) - t
    scraper = Scraper(addr, port, interval)
    t = runtime_ms(pid)
    scraper.start()
    while scraper.ok + scraper.failed < count:
        time.sleep(interval)
    scraper.stopping.set()
    scraper.join()
    busy = runtime_ms(pid) - t
    return (busy - idle) * 1000 / (scraper.ok + scraper.failed)


def median(xs):
    xs = sorted(xs)
    n = len(xs)
    return xs[n // 2] if n % 2 else (xs[n // 2 - 1] + xs[n // 2]) / 2


class TapReader:
    """A dnstap reader for --dnstap: fstrm_capture on a unix socket in work,
    throwing what it reads away (/dev/null), pinned with the client."""

    def __init__(self, work, pin_client):
        self.sock = os.path.join(work, "dnstap.sock")
        self.log = open(os.path.join(work, "fstrm_capture.out"), "w")
        self.proc = subprocess.Popen(pin_client(["fstrm_capture", "-t", "protobuf:dnstap.Dnstap", "-u", self.sock,
                                                 "-w", "/dev/null"]),
                                     stdout=self.log, stderr=subprocess.STDOUT, start_new_session=True)
        deadline = time.monotonic() + 30
        while not os.path.exists(self.sock):
            if self.proc.poll() is not None or time.monotonic() > deadline:
                stop(self.proc)
                raise RuntimeError(f"fstrm_capture did not listen; see {self.log.name}")
            time.sleep(0.05)

    def conf(self, ctl):
        """inrpd's lines for dnstap to this reader (every message type), and a control socket."""
        return f'dnstap {{ socket-path "{self.sock}"; }}\ncontrol "{ctl}";\n'

    def close(self):
        stop(self.proc)
        self.log.close()


def tap_counters(inrpc, ctl):
    out = subprocess.run([inrpc, "-s", ctl, "--json", "show", "counters"], capture_output=True, text=True,
                         check=True).stdout
    c = json.loads(out)
    # the UDP workers' and the main thread's (TCP)
    return (sum(c[k]["dnstap_sent"] for k in ("udp", "tcp")), sum(c[k]["dnstap_dropped"] for k in ("udp", "tcp")))


def dnstap_compare(plain, tapped, counters, qfile, seconds, client_cpus, pairs):
    """plain and tapped: (proc, addr, port) of two inrpd answering the same,
    the second logging to a dnstap reader; measured alternately, pairs
    times (the others' load drifts), medians of each.  counters: the
    tapped one's (dnstap_sent, dnstap_dropped)."""
    runs = {False: [], True: []}
    sent0, dropped0 = counters()
    for i in range(pairs):
        for tap in ((False, True) if i % 2 == 0 else (True, False)):
            proc, addr, port = tapped if tap else plain
            runs[tap].append(measure("inrpd+tap" if tap else "inrpd", proc, addr, port, qfile, seconds,
                                     client_cpus))
    sent, dropped = counters()
    plain_us, tap_us = median(r[1] for r in runs[False]), median(r[1] for r in runs[True])
    print(f"dnstap: {tap_us:.2f} us CPU/query against {plain_us:.2f} plain ({tap_us / plain_us:.3f}); "
          f"{sent - sent0} messages sent, {dropped - dropped0} dropped", flush=True)
    return {
        "dnstap_qps": round(median(r[0] for r in runs[True])),
        "dnstap_plain_qps": round(median(r[0] for r in runs[False])),
        "dnstap_cpu_us_per_query": round(tap_us, 3),
        "dnstap_plain_cpu_us_per_query": round(plain_us, 3),
        "dnstap_cpu_ratio": round(tap_us / plain_us, 4),
        "dnstap_sent": sent - sent0,
        "dnstap_dropped": dropped - dropped0,
    }


def udp_answers(addr, port, wire):
    with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as s:
        s.settimeout(0.2)
        try:
            s.sendto(wire, (addr, port))
            return len(s.recv(4096)) >= 12
        except OSError:
            return False


def chain_p50(routers, wire, queries, rate):
    """Median round trip (µs) at the first node and at the last, alternately."""
    sock = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    sock.settimeout(2)
    lat = {routers[0]: [], routers[-1]: []}
    interval = 1.0 / rate
    next_t = time.monotonic()
    for i in range(queries * 2):
        target = routers[0] if i % 2 == 0 else routers[-1]
        wire[0:2] = (i & 0xFFFF).to_bytes(2, "big")
        now = time.monotonic()
        if now < next_t:
            time.sleep(next_t - now)
        next_t += interval
        t0 = time.perf_counter_ns()
        sock.sendto(wire, target)
        try:
            while True:
                resp, _ = sock.recvfrom(4096)
                if resp[0:2] == wire[0:2]:
                    break
        except socket.timeout:
            continue
        lat[target].append((time.perf_counter_ns() - t0) / 1000)
    sock.close()
    med = lambda v: sorted(v)[len(v) // 2]
    return med(lat[routers[0]]), med(lat[routers[-1]]), len(lat[routers[0]]) + len(lat[routers[-1]])


def hop_latency(name, node_cmd, work, queries, rate, base):
    """Median µs one hop adds: a 5-node chain against its last node alone.
    node_cmd(i, addr, port, next) returns the command of node i."""
    import dns.message
    wire = bytearray(dns.message.make_query("www.hop.bench", "A").to_wire())
    routers, procs = [], []
    try:
        nxt = None
        for i in range(5):
            addr, port = f"127.0.0.{base + i}", free_port()
            with open(os.path.join(work, f"{name}{i}.log"), "w") as log:
                proc = subprocess.Popen(node_cmd(i, addr, port, nxt), stdout=log, stderr=subprocess.STDOUT,
                                        start_new_session=True)
            procs.append(proc)
            deadline = time.monotonic() + 60
            while not udp_answers(addr, port, wire):
                if proc.poll() is not None or time.monotonic() > deadline:
                    raise RuntimeError(f"{name} node {i} did not answer; see {work}/{name}{i}.log")
            routers.insert(0, (addr, port))
            nxt = (addr, port)
        p5, p1, n = chain_p50(routers, wire, queries, rate)
        per_hop = (p5 - p1) / 4
        print(f"{name:8s} 5 hops p50 {p5:.1f} us, 1 hop p50 {p1:.1f} us: {per_hop:.1f} us per hop "
              f"({n} answers at {rate} qps)", flush=True)
        return per_hop
    finally:
        for p in procs:
            stop(p)


def inrpd_node(inrpd, work):
    def cmd(i, addr, port, nxt):
        conf = os.path.join(work, f"chain{i}.conf")
        with open(conf, "w") as f:
            # no packet cache: every query walks the chain, which is what is measured
            f.write(f'listen {addr} port {port};\nworkers 1;\nlog-level warn;\nrouter-id "bench{i}";\n'
                    'cache-size 0;\n')
            if nxt is None:
                f.write('route "hop.bench" { server 127.0.0.1; }\n')
            else:
                f.write(f'route "hop.bench" {{ router {nxt[0]} port {nxt[1]}; }}\n')
        return [inrpd, "-f", "-c", conf]
    return cmd


def relay_node(relay):
    def cmd(i, addr, port, nxt):
        return [relay, addr, str(port)] + ([nxt[0], str(nxt[1])] if nxt else [])
    return cmd


def hop_only(args):
    """The hop part alone, in rounds that rotate the order of the chains;
    the medians, and each inrpd's ratio to the relay's floor."""
    chains = {"inrpd": args.inrpd}
    if args.hop_against:
        chains["against"] = args.hop_against
    names = list(chains) + ["relay"]
    per = {n: [] for n in names}
    work = tempfile.mkdtemp(prefix="bench-hop-")
    try:
        for r in range(args.hop_rounds):
            for n in names[r % len(names):] + names[:r % len(names)]:
                node = relay_node(args.relay) if n == "relay" else inrpd_node(chains[n], work)
                per[n].append(round(hop_latency(n, node, work, args.hop_queries, args.hop_rate,
                                                70 if n == "relay" else 60), 1))
    finally:
        shutil.rmtree(work, ignore_errors=True)
    med = {n: sorted(v)[len(v) // 2] for n, v in per.items()}
    out = {f"{n}_hop_p50_us": med[n] for n in names} | {f"{n}_hop_runs": per[n] for n in names}
    out |= {f"{n}_floor_ratio": round(med[n] / med["relay"], 3) for n in chains}
    print(json.dumps(out))


def unbound_conf(work, addr, port, tlds, names, ttl):
    """An Unbound answering the names (A 127.0.0.1, ttl) as local-data in static zones; its config path."""
    local = os.path.join(work, "local.conf")
    with open(local, "w") as f:
        f.write("server:\n")
        for tld in tlds:
            f.write(f'  local-zone: "{tld}." static\n')
        for n in names:
            f.write(f'  local-data: "{n}. {ttl} IN A 127.0.0.1"\n')
    ub_conf = os.path.join(work, "unbound.conf")
    with open(ub_conf, "w") as f:
        f.write(f"""server:
  interface: {addr}
  port: {port}
  do-daemonize: no
  username: ""
  chroot: ""
  directory: "{work}"
  pidfile: ""
  use-syslog: no
  logfile: "{work}/unbound.log"
  num-threads: 1
  do-ip6: no
  access-control: 127.0.0.0/8 allow
  module-config: "iterator"
include: "{local}"
""")
    return ub_conf


def dnstap_beside(args, work, includes, plain, probe, qfile, pin, client_cpus, procs):
    """--dnstap: the same routes in a second inrpd that logs to a reader."""
    pin_client = (lambda cmd: ["taskset", "-c", client_cpus] + cmd) if client_cpus else (lambda cmd: cmd)
    inrpc = os.path.join(os.path.dirname(args.inrpd), "inrpc")
    reader = TapReader(work, pin_client)
    try:
        addr, port = "127.0.0.45", free_port()
        ctl = os.path.join(work, "inrpd-tap.ctl")
        conf = os.path.join(work, "inrpd-tap.conf")
        with open(conf, "w") as f:
            f.write(f"listen {addr} port {port};\nworkers 1;\nanswer-ttl 300;\nlog-level warn;\n" +
                    reader.conf(ctl) + "".join(f'include "{path}";\n' for path in includes))
        with open(os.path.join(work, "inrpd-tap.log"), "w") as log:
            p = start(pin([args.inrpd, "-f", "-c", conf]), addr, port, probe, 600, log)
            procs.append(p)
            try:
                return dnstap_compare(plain, (p, addr, port), lambda: tap_counters(inrpc, ctl), qfile,
                                      max(3, args.seconds // 2), client_cpus, args.dnstap_pairs)
            finally:
                stop(p)
    finally:
        reader.close()


def start_echo(echo, addr, port, table_bytes, probe, pin, log):
    """bench/udp_echo on addr:port, with a table of table_bytes if not 0."""
    proc = subprocess.Popen(pin([echo, addr, str(port)] + ([str(table_bytes)] if table_bytes else [])),
                            stdout=log, stderr=subprocess.STDOUT, start_new_session=True)
    while not udp_answers(addr, port, probe):
        if proc.poll() is not None:
            raise RuntimeError(f"udp_echo exited; see {log.name}")
    return proc


def main():
    ap = argparse.ArgumentParser(prog="scripts/bench inrp", description=__doc__.split("\n\n")[0])
    ap.add_argument("--names", type=int, default=1_000_000)
    ap.add_argument("--seconds", type=int, default=10,
                    help="length of each measured dnsperf run of Unbound (and, halved, of the scrape pairs)")
    ap.add_argument("--rounds", type=int, default=5,
                    help="rounds in which inrpd, NSD and the echo floors are measured in turn")
    ap.add_argument("--round-seconds", type=int, default=5, help="length of each server's burst in a round")
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--scrape-pairs", type=int, default=6,
                    help="runs with and without a 100 ms /metrics scrape, alternating")
    ap.add_argument("--echo", default=os.path.join(os.path.dirname(__file__), "..", "build", "bench", "udp_echo"))
    ap.add_argument("--query-load", default=os.path.join(os.path.dirname(__file__), "..", "build", "bench",
                                                         "udp_query_load"))
    ap.add_argument("--relay", default=os.path.join(os.path.dirname(__file__), "..", "build", "bench", "udp_relay"))
    ap.add_argument("--hop-queries", type=int, default=5000, help="queries to each end of the chain")
    ap.add_argument("--hop-rate", type=int, default=2000, help="queries per second to the chain")
    ap.add_argument("--inrpd", default=os.path.join(os.path.dirname(__file__), "..", "build", "inrpd", "inrpd"))
    ap.add_argument("--hop-only", action="store_true",
                    help="only the forwarding hop against the relay, --hop-rounds times, medians")
    ap.add_argument("--hop-rounds", type=int, default=5)
    ap.add_argument("--dnstap", action="store_true",
                    help="also a second inrpd logging every query and answer to a dnstap reader, "
                         "measured alternately with the plain one")
    ap.add_argument("--dnstap-pairs", type=int, default=3)
    ap.add_argument("--hop-against", metavar="INRPD",
                    help="with --hop-only: another inrpd build measured in the same rounds (before/after)")
    args = ap.parse_args()
    if args.hop_only:
        hop_only(args)
        return

    for tool in ("dnsperf", "dig", "nsd", "unbound"):
        if not shutil.which(tool) and not os.path.exists(f"/usr/sbin/{tool}"):
            sys.exit(f"bench inrp: {tool} is missing (scripts/setup installs it)")
    nsd_bin = shutil.which("nsd") or "/usr/sbin/nsd"
    unbound_bin = shutil.which("unbound") or "/usr/sbin/unbound"
    server_cpus, client_cpus = ("1", "0") if os.cpu_count() and os.cpu_count() >= 2 else (None, None)
    pin = (lambda cmd: ["taskset", "-c", server_cpus] + cmd) if server_cpus else (lambda cmd: cmd)

    work = tempfile.mkdtemp(prefix="bench-inrp-")
    t0 = time.monotonic()
    names = gen_names(args.names, args.seed)
    print(f"bench inrp: {len(names)} names in {time.monotonic() - t0:.1f} s, files in {work}", flush=True)

    # one query file for all three: the names themselves, in random order
    qfile = os.path.join(work, "queries")
    order = list(names)
    random.Random(args.seed + 1).shuffle(order)
    with open(qfile, "w") as f:
        for n in order[:1_000_000]:
            f.write(f"{n} A\n")

    results = {}
    procs = []
    try:
        # inrpd: one route per name, to a local content server
        addr, port = "127.0.0.41", free_port()
        includes = []
        for i in range(0, len(names), ROUTES_PER_FILE):
            path = os.path.join(work, f"routes{i // ROUTES_PER_FILE}.conf")
            with open(path, "w") as f:
                for n in names[i:i + ROUTES_PER_FILE]:
                    f.write(f'route "{n}" {{ server 127.0.0.1; }}\n')
            includes.append(path)
        conf = os.path.join(work, "inrpd.conf")
        with open(conf, "w") as f:
            mport = free_port()
            f.write(f"listen {addr} port {port};\nworkers 1;\nanswer-ttl 300;\nlog-level warn;\n"
                    f"metrics 127.0.0.1 port {mport};\n")
            for path in includes:
                f.write(f'include "{path}";\n')
        servers = {}
        with open(os.path.join(work, "inrpd.log"), "w") as log:
            t = time.monotonic()
            p = start(pin([args.inrpd, "-f", "-c", conf]), addr, port, names[0], 600, log)
            procs.append(p)
            print(f"inrpd loaded in {time.monotonic() - t:.1f} s", flush=True)
            servers["inrpd"] = (p, addr, port)
            runs = {False: [], True: []}
            ok = failed = 0
            scrape_us = []
            seconds = max(3, args.seconds // 2)
            for i in range(args.scrape_pairs):
                # which goes first alternates too: the others' load drifts within a pair
                for scraped in ((False, True) if i % 2 == 0 else (True, False)):
                    scraper = Scraper("127.0.0.1", mport, 0.1)
                    if scraped:
                        scraper.start()
                    runs[scraped].append(measure("inrpd+scrape" if scraped else "inrpd", p, addr, port,
                                                 qfile, seconds, client_cpus))
                    if scraped:
                        scraper.stopping.set()
                        scraper.join()
                        ok, failed = ok + scraper.ok, failed + scraper.failed
                        scrape_us += scraper.times_us
                        results["scrape_bytes"] = scraper.size
            results["scrapes"] = (ok, failed)
            scrape_us.sort()
            results["scrape_p50_us"] = scrape_us[len(scrape_us) // 2] if scrape_us else float("nan")
            print(f"scrapes: {ok} answered, {failed} failed, p50 {results['scrape_p50_us']:.0f} us, "
                  f"{results.get('scrape_bytes', 0)} bytes", flush=True)
            for scraped in (False, True):
                results["scraped" if scraped else "unscraped"] = (median(r[0] for r in runs[scraped]),
                                                                  median(r[1] for r in runs[scraped]))
            results["scrape_cpu_us"] = scrape_cpu_us(p.pid, "127.0.0.1", mport)
            print(f"one scrape costs inrpd {results['scrape_cpu_us']:.0f} us of CPU", flush=True)
            if args.dnstap:
                results["dnstap"] = dnstap_beside(args, work, includes, (p, addr, port), names[0], qfile, pin,
                                                  client_cpus, procs)

        # NSD: the names as A records in three zones
        addr, port = "127.0.0.42", free_port()
        zones = {tld: [] for tld, _ in TLDS}
        for n in names:
            label, tld = n.rsplit(".", 1)
            zones[tld].append(label)
        nsd_conf = os.path.join(work, "nsd.conf")
        with open(nsd_conf, "w") as f:
            f.write(nsd_server(work, addr, port))
            for tld, labels in zones.items():
                f.write(f'zone:\n  name: "{tld}."\n  zonefile: "{tld}.zone"\n')
                with open(os.path.join(work, f"{tld}.zone"), "w") as z:
                    z.write(f"$ORIGIN {tld}.\n$TTL 300\n@ SOA ns.{tld}. hostmaster.{tld}. 1 3600 900 604800 300\n"
                            f"@ NS ns.{tld}.\nns A 127.0.0.1\n")
                    for label in labels:
                        z.write(f"{label} A 127.0.0.1\n")
        with open(os.path.join(work, "nsd.out"), "w") as log:
            t = time.monotonic()
            p = start(pin([nsd_bin, "-d", "-c", nsd_conf]), addr, port, names[0], 600, log)
            procs.append(p)
            print(f"nsd loaded in {time.monotonic() - t:.1f} s", flush=True)
            servers["nsd"] = (p, addr, port)

        # the floors: a server that only turns datagrams around, and one that
        # also reads a table as large as inrpd's
        import dns.message
        probe = bytearray(dns.message.make_query(names[0], "A").to_wire())
        for name, addr, table in (("echo", "127.0.0.44", 0), ("echo+tbl", "127.0.0.46",
                                                              TABLE_BYTES_PER_NAME * len(names))):
            port = free_port()
            with open(os.path.join(work, f"{name}.out"), "w") as log:
                p = start_echo(args.echo, addr, port, table, probe, pin, log)
                procs.append(p)
                servers[name] = (p, addr, port)

        rounds = interleaved(servers, args.rounds, lambda label, p, a, port: measure(
            label, p, a, port, qfile, args.round_seconds, client_cpus))
        load = functools.partial(query_load, loader=args.query_load)
        cap = interleaved(servers, args.rounds, lambda label, p, a, port: measure(
            label + " at capacity", p, a, port, qfile, args.round_seconds, client_cpus, load))
        results["capacity"] = cap
        for name, (p, _, _) in servers.items():
            # memory after the server's last burst, as each is left by its runs
            results[name] = (median(r[0] for r in rounds[name]), median(r[1] for r in rounds[name]),
                             rounds[name][-1][2])
            stop(p)
        results["rounds"] = rounds
        results["qps_ratio_rounds"] = ratios(rounds["inrpd"], rounds["nsd"], 0)
        results["echo_ratio_rounds"] = ratios(rounds["inrpd"], rounds["echo"], 1)
        results["echo_table_ratio_rounds"] = ratios(rounds["inrpd"], rounds["echo+tbl"], 1)
        print("inrpd/nsd qps " + " ".join(f"{x:.3f}" for x in results["qps_ratio_rounds"]) +
              ", inrpd/echo CPU " + " ".join(f"{x:.3f}" for x in results["echo_ratio_rounds"]) +
              ", inrpd/echo+tbl CPU " + " ".join(f"{x:.3f}" for x in results["echo_table_ratio_rounds"]),
              flush=True)
        print("at capacity: inrpd/nsd qps " + " ".join(f"{x:.3f}" for x in ratios(cap["inrpd"], cap["nsd"], 0)) +
              ", echo/nsd qps " + " ".join(f"{x:.3f}" for x in ratios(cap["echo"], cap["nsd"], 0)), flush=True)

        # Unbound: the names as local-data in static zones
        addr, port = "127.0.0.43", free_port()
        ub_conf = unbound_conf(work, addr, port, [tld for tld, _ in TLDS], names, 300)
        with open(os.path.join(work, "unbound.out"), "w") as log:
            t = time.monotonic()
            p = start(pin([unbound_bin, "-d", "-p", "-c", ub_conf]), addr, port, names[0], 900, log)
            procs.append(p)
            print(f"unbound loaded in {time.monotonic() - t:.1f} s", flush=True)
            results["unbound"] = measure("unbound", p, addr, port, qfile, args.seconds, client_cpus)
            stop(p)

        results["hop"] = hop_latency("inrpd", inrpd_node(args.inrpd, work), work,
                                     args.hop_queries, args.hop_rate, 60)
        results["relay_hop"] = hop_latency("relay", relay_node(args.relay), work,
                                           args.hop_queries, args.hop_rate, 70)
    finally:
        for p in procs:
            stop(p)
        shutil.rmtree(work, ignore_errors=True)

    out = {
        "names": len(names),
        "inrpd_qps": round(results["inrpd"][0]),
        "inrpd_unscraped_qps": round(results["unscraped"][0]),
        "inrpd_scraped_qps": round(results["scraped"][0]),
        "scrape_qps_ratio": round(results["scraped"][0] / results["unscraped"][0], 4),
        "inrpd_unscraped_cpu_us_per_query": round(results["unscraped"][1], 3),
        "inrpd_scraped_cpu_us_per_query": round(results["scraped"][1], 3),
        "scrape_cpu_us": round(results["scrape_cpu_us"], 1),
        "scrape_p50_us": round(results["scrape_p50_us"]),
        "scrape_bytes": results.get("scrape_bytes", 0),
        "scrapes_answered": results["scrapes"][0],
        "scrapes_failed": results["scrapes"][1],
        "nsd_qps": round(results["nsd"][0]),
        "unbound_qps": round(results["unbound"][0]),
        "inrpd_cpu_us_per_query": round(results["inrpd"][1], 3),
        "nsd_cpu_us_per_query": round(results["nsd"][1], 3),
        "unbound_cpu_us_per_query": round(results["unbound"][1], 3),
        "echo_cpu_us_per_query": round(results["echo"][1], 3),
        "echo_table_cpu_us_per_query": round(results["echo+tbl"][1], 3),
        "hop_p50_us": round(results["hop"], 1),
        "relay_hop_p50_us": round(results["relay_hop"], 1),
        "inrpd_bytes_per_name": round(results["inrpd"][2] / len(names), 1),
        "nsd_bytes_per_name": round(results["nsd"][2] / len(names), 1),
        "unbound_bytes_per_name": round(results["unbound"][2] / len(names), 1),
        # the medians of the ratios round by round: each ratio is of two
        # bursts seconds apart, the median keeps a round the others' load
        # hit from deciding
        "rounds": args.rounds,
        "round_seconds": args.round_seconds,
        "inrpd_nsd_qps_ratio": round(median(results["qps_ratio_rounds"]), 4),
        "inrpd_echo_cpu_ratio": round(median(results["echo_ratio_rounds"]), 4),
        "inrpd_echo_table_cpu_ratio": round(median(results["echo_table_ratio_rounds"]), 4),
        # qps at capacity: the servers driven by bench/udp_query_load, which
        # leaves each server, not itself, the slower side
        "inrpd_nsd_capacity_ratio": round(median(ratios(results["capacity"]["inrpd"],
                                                        results["capacity"]["nsd"], 0)), 4),
        "echo_nsd_capacity_ratio": round(median(ratios(results["capacity"]["echo"],
                                                       results["capacity"]["nsd"], 0)), 4),
        "inrpd_echo_capacity_cpu_ratio": round(median(ratios(results["capacity"]["inrpd"],
                                                             results["capacity"]["echo"], 1)), 4),
        "target_qps_met": median(ratios(results["capacity"]["inrpd"], results["capacity"]["nsd"], 0)) >= 1.1,
        "target_cpu_met": median(results["echo_ratio_rounds"]) <= 1.05,
        # the qps the client allows at all: the echo floor answers with no
        # work, so no server can pass its qps in this run; when dnsperf is
        # busy all of its CPU, the qps ratios measure the client
        "echo_nsd_qps_ratio": round(median(ratios(results["rounds"]["echo"], results["rounds"]["nsd"], 0)), 4),
        "inrpd_nsd_qps_ratio_rounds": results["qps_ratio_rounds"],
        "inrpd_echo_cpu_ratio_rounds": results["echo_ratio_rounds"],
        "inrpd_echo_table_cpu_ratio_rounds": results["echo_table_ratio_rounds"],
    }
    for name, key in (("inrpd", "inrpd"), ("nsd", "nsd"), ("echo", "echo"), ("echo+tbl", "echo_table")):
        out[f"{key}_qps_rounds"] = [round(r[0]) for r in results["rounds"][name]]
        out[f"{key}_cpu_us_rounds"] = [round(r[1], 3) for r in results["rounds"][name]]
        out[f"{key}_client_busy_rounds"] = [round(r[3], 3) for r in results["rounds"][name]]
        out[f"{key}_queries_per_sleep_rounds"] = [round(r[4], 1) for r in results["rounds"][name]]
        out[f"{key}_capacity_qps_rounds"] = [round(r[0]) for r in results["capacity"][name]]
        out[f"{key}_capacity_cpu_us_rounds"] = [round(r[1], 3) for r in results["capacity"][name]]
        out[f"{key}_capacity_busy_rounds"] = [round(r[5], 3) for r in results["capacity"][name]]
    out.update(results.get("dnstap", {}))
    print(json.dumps(out))


if __name__ == "__main__":
    main()
