#!/usr/bin/env python3
"""scripts/bench rpz: a policy zone of --rules QNAME rules in inrpd and in
Unbound's RPZ, side by side; with --lookup, bench_rpz's lookup alone.

The zone is a feed's mix: 89% exact names blocked (CNAME .), 5% wildcards
(*.NAME CNAME .), 2% NODATA (CNAME *.), 1% each PASSTHRU, DROP, local data
(an A record) and a walled garden (CNAME garden.bench.).  NSD serves it;
inrpd and Unbound (its rpz: clause, primary: NSD) each fetch it by AXFR
when they start.  Load time: from the daemon's start to inrpd's `inrpc
show rpz` reporting the serial, or to Unbound blocking the zone's last
name.  Memory per rule: the daemon's RSS once loaded (and, for inrpd, its
state-dir copy written by its thread, which is not timed with the
queries either) less the RSS of the same daemon with no RPZ just started,
over the rules.

Queries: --queries names in random order, --blocked of them blocked (an
exact rule, a name below a wildcard, NODATA, local data), the rest names
no rule matches.  An Unbound with every name as local-data is the
upstream of all; each server is warmed with the whole file, so the
measured dnsperf run is answered from the policy or the cache.  CPU per
query (utime+stime over the run divided by the queries completed, as in
scripts/bench inrp) of inrpd without RPZ, inrpd without RPZ with a
dnstap reader (fstrm_capture to /dev/null) logging client queries and
responses, inrpd with the zone, and Unbound with the zone.  Servers are
pinned to CPU 1, dnsperf and the upstream to CPU 0.

Then an IXFR of 1% of the rules: inrpd restarts from its state-dir copy
(rpz_state_load_s) with a primary that is a small IXFR server here (NSD
4.6 answers IXFR with AXFR), which, once inrpd has asked and been told it
is current, takes --ixfr-changes record changes (half rules removed, half
new) and sends NOTIFY.  ixfr_1pct_apply_ms is inrpd's own clock from the
transfer's end (its last message read) to the new rules published to the
workers (`inrpc show rpz`'s last_apply_ms); ixfr_notify_to_answer_ms is
the bench's clock from the NOTIFY sent to a new rule's name first
answered NXDOMAIN (asked over and over), the transfer itself included.
--ixfr-only skips the query runs and Unbound.

The last line of output is one JSON object.
"""
import argparse
import json
import os
import random
import re
import shutil
import socket
import struct
import subprocess
import sys
import tempfile
import threading
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from bench_inrp import (descendants, free_port, gen_names, measure, rss_bytes, start, stop,  # noqa: E402
                        unbound_conf)
from bench_cache import warm  # noqa: E402
from bench_aggxfr import nsd_server  # noqa: E402

import dns.message  # noqa: E402
import dns.opcode  # noqa: E402
import dns.query  # noqa: E402
import dns.rcode  # noqa: E402

HERE = os.path.dirname(os.path.abspath(__file__))
APEX = "rpz.bench."
TYPE_A, TYPE_CNAME, TYPE_SOA = 1, 5, 6


def rule(name, i):
    """Rule i of the feed for name: (owner relative to the apex, type, RDATA text)."""
    k = i % 100
    if k < 5:
        return "*." + name, "CNAME", "."
    if k < 7:
        return name, "CNAME", "*."
    if k == 7:
        return name, "CNAME", "rpz-passthru."
    if k == 8:
        return name, "CNAME", "rpz-drop."
    if k == 9:
        return name, "A", f"192.0.2.{i % 250 + 1}"
    if k == 10:
        return name, "CNAME", "garden.bench."
    return name, "CNAME", "."


def blocked_query(name, i):
    """A question the rule blocks, or None (passthru, drop, garden)."""
    k = i % 100
    if k < 5:
        return "www." + name
    if k in (7, 8, 10):
        return None
    return name


def wire_name(text):
    out = b""
    for label in text.rstrip(".").split("."):
        if label:
            out += bytes([len(label)]) + label.encode()
    return out + b"\0"


def wire_rr(owner, rtype, rdata_text, ttl=300):
    if rtype == "A":
        rdata = socket.inet_aton(rdata_text)
    else:
        rdata = wire_name(rdata_text)
    code = TYPE_A if rtype == "A" else TYPE_CNAME
    return wire_name(owner + "." + APEX) + struct.pack(">HHIH", code, 1, ttl, len(rdata)) + rdata


def soa_text(serial):
    return f"ns.{APEX} admin.{APEX} {serial} 3600 600 86400 60"


def wire_soa(serial):
    rdata = wire_name("ns." + APEX) + wire_name("admin." + APEX) + struct.pack(">IIIII", serial, 3600, 600, 86400, 60)
    return wire_name(APEX) + struct.pack(">HHIH", TYPE_SOA, 1, 300, len(rdata)) + rdata


class IxfrPrimary:
    """Serves the zone's SOA (serial 1, current) until publish(), then the
    IXFR 1 -> 2 as RFC 1995 lays it out, in messages of at most 64 KiB.
    Nothing else: an AXFR request is an error of the bench."""

    def __init__(self, addr, removed, added):
        self.addr, self.port = addr, free_port()
        self.removed, self.added = removed, added
        self.asked = []
        self.sock = socket.socket()
        self.sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        self.sock.bind((addr, self.port))
        self.sock.listen(4)
        threading.Thread(target=self.serve, daemon=True).start()

        self.chunks = self.split([wire_soa(1)])

    @staticmethod
    def split(rrs):
        """(count, bytes) of each message's answer section."""
        out, chunk, size = [], [], 0
        for rr in rrs:
            if chunk and size + len(rr) > 60000:
                out.append((len(chunk), b"".join(chunk)))
                chunk, size = [], 0
            chunk.append(rr)
            size += len(rr)
        return out + [(len(chunk), b"".join(chunk))]

    def publish(self):
        """The diff, laid out before the NOTIFY: what is timed is inrpd's part."""
        self.chunks = self.split([wire_soa(2), wire_soa(1)] + self.removed + [wire_soa(2)] + self.added +
                                 [wire_soa(2)])

    def messages(self, qid, question):
        return [struct.pack(">HHHHHH", qid, 0x8400, 1, n, 0, 0) + question + body for n, body in self.chunks]

    def serve(self):
        while True:
            try:
                c, _ = self.sock.accept()
            except OSError:
                return
            with c:
                try:
                    n = int.from_bytes(c.recv(2), "big")
                    wire = b""
                    while len(wire) < n:
                        wire += c.recv(n - len(wire))
                    qid = int.from_bytes(wire[:2], "big")
                    end = 12
                    while wire[end]:
                        end += wire[end] + 1
                    question = wire[12:end + 5]
                    qtype = int.from_bytes(wire[end + 1:end + 3], "big")
                    self.asked.append(qtype)
                    for m in self.messages(qid, question):
                        c.sendall(len(m).to_bytes(2, "big") + m)
                except OSError:
                    pass

    def notify(self, addr, port):
        q = dns.message.make_query(APEX, "SOA")
        q.set_opcode(dns.opcode.NOTIFY)
        with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as u:
            u.bind((self.addr, 0))
            return dns.query.udp(q, addr, port=port, timeout=2, sock=u)

    def stop(self):
        self.sock.close()


def show_rpz(inrpc, ctl):
    r = subprocess.run([inrpc, "-s", ctl, "--json", "show", "rpz"], capture_output=True, text=True)
    return json.loads(r.stdout)[0] if r.returncode == 0 else None


def wait_serial(inrpc, ctl, serial, limit_s, proc):
    deadline = time.monotonic() + limit_s
    while time.monotonic() < deadline:
        z = show_rpz(inrpc, ctl)
        if z and z["serial"] == serial:
            return time.monotonic(), z
        if proc.poll() is not None:
            raise RuntimeError("inrpd exited")
    raise RuntimeError(f"inrpd did not reach serial {serial} in {limit_s} s")


def wait_saved(inrpc, ctl, serial, limit_s, proc):
    """Until state-dir holds serial: its copy is written by a thread, which must not be timed with the queries."""
    deadline = time.monotonic() + limit_s
    while time.monotonic() < deadline:
        z = show_rpz(inrpc, ctl)
        if z and z["saved_serial"] == serial:
            return
        if proc.poll() is not None:
            raise RuntimeError("inrpd exited")
        time.sleep(0.05)
    raise RuntimeError(f"inrpd did not keep serial {serial} in state-dir in {limit_s} s")


def soa_serial(addr, port):
    try:
        r = dns.query.udp(dns.message.make_query(APEX, "SOA"), addr, port=port, timeout=0.5)
        return r.answer[0][0].serial if r.answer else None
    except Exception:
        return None


def rcode_of(addr, port, name):
    try:
        r = dns.query.udp(dns.message.make_query(name, "A"), addr, port=port, timeout=0.5)
        return r.rcode()
    except Exception:
        return None


def main():
    ap = argparse.ArgumentParser(prog="scripts/bench rpz", description=__doc__.split("\n\n")[0])
    ap.add_argument("--rules", type=int, default=1_000_000)
    ap.add_argument("--queries", type=int, default=100_000, help="distinct names asked")
    ap.add_argument("--blocked", type=float, default=0.2, help="share of the names asked that a rule blocks")
    ap.add_argument("--ixfr-changes", type=int, default=0, help="records in the IXFR (default 1%% of the rules)")
    ap.add_argument("--seconds", type=int, default=10, help="length of each measured dnsperf run")
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--ixfr-only", action="store_true", help="only the load and the IXFR: no query runs, no Unbound")
    ap.add_argument("--build", default=os.path.join(HERE, "..", "build"))
    args = ap.parse_args()
    changes = args.ixfr_changes or args.rules // 100

    inrpd = os.path.join(args.build, "inrpd", "inrpd")
    inrpc = os.path.join(args.build, "inrpd", "inrpc")
    for tool in ("dnsperf", "dig", "nsd", "unbound", "fstrm_capture"):
        if not shutil.which(tool) and not os.path.exists(f"/usr/sbin/{tool}"):
            sys.exit(f"bench rpz: {tool} is missing (scripts/setup installs it)")
    nsd_bin = shutil.which("nsd") or "/usr/sbin/nsd"
    unbound_bin = shutil.which("unbound") or "/usr/sbin/unbound"
    server_cpus, client_cpus = ("1", "0") if os.cpu_count() and os.cpu_count() >= 2 else (None, None)
    pin = (lambda cmd: ["taskset", "-c", server_cpus] + cmd) if server_cpus else (lambda cmd: cmd)
    pin_client = (lambda cmd: ["taskset", "-c", client_cpus] + cmd) if client_cpus else (lambda cmd: cmd)

    work = tempfile.mkdtemp(prefix="bench-rpz-")
    t0 = time.monotonic()
    n_passed = int(args.queries * (1 - args.blocked))
    names = gen_names(args.rules + n_passed + changes // 2, args.seed)
    random.Random(args.seed).shuffle(names)
    rule_names, passed = names[:args.rules], names[args.rules:args.rules + n_passed]
    fresh = names[args.rules + n_passed:]                   # the IXFR's new rules
    rules = [rule(n, i) for i, n in enumerate(rule_names)]
    rnd = random.Random(args.seed + 1)
    blocked = []
    while len(blocked) < args.queries - n_passed:
        i = rnd.randrange(args.rules)
        q = blocked_query(rule_names[i], i)
        if q:
            blocked.append(q)
    asked = blocked + passed
    rnd.shuffle(asked)
    qfile = os.path.join(work, "queries")
    with open(qfile, "w") as f:
        f.writelines(f"{n} A\n" for n in asked)
    zone = os.path.join(work, "rpz.zone")
    with open(zone, "w") as f:
        f.write(f"$ORIGIN {APEX}\n$TTL 300\n@ SOA {soa_text(1)}\n@ NS ns.{APEX}\n")
        f.writelines(f"{o} {t} {d}\n" for o, t, d in rules)
    last_blocked = next(blocked_query(rule_names[i], i) for i in range(args.rules - 1, -1, -1)
                        if rules[i][2] == "." and blocked_query(rule_names[i], i))
    print(f"bench rpz: {args.rules} rules, {len(asked)} names asked ({len(blocked)} blocked) in "
          f"{time.monotonic() - t0:.1f} s, files in {work}", flush=True)

    results = {}
    procs = []
    try:
        # the upstream: every name asked as local-data, on the client's CPU
        up_addr, up_port = "127.0.0.61", free_port()
        os.mkdir(os.path.join(work, "up"))
        # the probes too: each daemon must answer them otherwise than the upstream does
        probes = [last_blocked, blocked_query(fresh[0], 0)]
        up_conf = unbound_conf(os.path.join(work, "up"), up_addr, up_port, ("com", "org", "net"), asked + probes,
                               86400)
        with open(os.path.join(work, "upstream.out"), "w") as log:
            procs.append(start(pin_client([unbound_bin, "-d", "-p", "-c", up_conf]), up_addr, up_port,
                               passed[0], 600, log))

        # NSD, the primary
        nsd_addr, nsd_port = "127.0.0.62", free_port()
        nsd_conf = os.path.join(work, "nsd.conf")
        with open(nsd_conf, "w") as f:
            f.write(nsd_server(work, nsd_addr, nsd_port) + f"""zone:
  name: "{APEX}"
  zonefile: "rpz.zone"
  provide-xfr: 127.0.0.0/8 NOKEY
""")
        with open(os.path.join(work, "nsd.out"), "w") as log:
            t = time.monotonic()
            nsd = subprocess.Popen(pin_client([nsd_bin, "-d", "-c", nsd_conf]), stdout=log, stderr=subprocess.STDOUT,
                                   start_new_session=True)
            procs.append(nsd)
        while not soa_serial(nsd_addr, nsd_port):
            if nsd.poll() is not None or time.monotonic() > t + 900:
                raise RuntimeError("nsd did not serve the zone; see nsd.log")
        print(f"nsd loaded the zone in {time.monotonic() - t:.1f} s", flush=True)

        addr = "127.0.0.63"
        ctl = os.path.join(work, "inrpd.ctl")
        state = os.path.join(work, "state")
        os.mkdir(state)

        def inrpd_conf(port, extra=""):
            conf = os.path.join(work, f"inrpd-{port}.conf")
            with open(conf, "w") as f:
                f.write(f'listen {addr} port {port};\nworkers 1;\nlog-level warn;\ncontrol "{ctl}";\n'
                        f"upstream {up_addr} port {up_port};\ncache-size 64M;\n{extra}")
            return conf

        def run_inrpd(label, extra=""):
            port = free_port()
            with open(os.path.join(work, f"{label}.log"), "w") as log:
                p = start(pin([inrpd, "-f", "-c", inrpd_conf(port, extra)]), addr, port, passed[0], 60, log)
            procs.append(p)
            return p, port

        # inrpd without RPZ: its RSS when started is the baseline for bytes per rule
        p, port = run_inrpd("plain")
        rss_plain = rss_bytes(descendants(p.pid))
        if not args.ixfr_only:
            warm(addr, port, qfile, client_cpus)
            results["plain"] = measure("inrpd", p, addr, port, qfile, args.seconds, client_cpus)
        stop(p)

        if not args.ixfr_only:
            # inrpd without RPZ, a dnstap reader logging client queries and responses
            sock = os.path.join(work, "dnstap.sock")
            cap = subprocess.Popen(pin_client(["fstrm_capture", "-t", "protobuf:dnstap.Dnstap", "-u", sock,
                                               "-w", "/dev/null"]), stdout=subprocess.DEVNULL,
                                   stderr=subprocess.DEVNULL, start_new_session=True)
            procs.append(cap)
            while not os.path.exists(sock):
                if cap.poll() is not None:
                    raise RuntimeError("fstrm_capture exited")
                time.sleep(0.05)
            p, port = run_inrpd("dnstap", f'dnstap {{ socket-path "{sock}"; log-client-query-messages yes; '
                                          "log-client-response-messages yes; }\n")
            warm(addr, port, qfile, client_cpus)
            results["dnstap"] = measure("+dnstap", p, addr, port, qfile, args.seconds, client_cpus)
            counters = subprocess.run([inrpc, "-s", ctl, "show", "counters"], capture_output=True, text=True).stdout
            print("dnstap: " + " ".join(re.findall(r"dnstap_\w+\W+\d+", counters)), flush=True)
            stop(p)
            stop(cap)

        # inrpd with the zone, by AXFR from NSD
        rpz = (f'rpz "{APEX}" {{ primary {nsd_addr} port {nsd_port}; ede blocked; }}\n'
               f'rpz-log-level none;\nstate-dir "{state}";\n')
        t = time.monotonic()
        p, port = run_inrpd("rpz", rpz)
        done, z = wait_serial(inrpc, ctl, 1, 900, p)
        results["rpz_load_s"] = done - t
        wait_saved(inrpc, ctl, 1, 900, p)
        results["rpz_rss"] = rss_bytes(descendants(p.pid)) - rss_plain
        print(f"inrpd    loaded {z['rules']} rules ({z['wildcards']} wildcards, {z['bad']} bad) in "
              f"{results['rpz_load_s']:.2f} s, {results['rpz_rss'] / args.rules:.0f} bytes per rule", flush=True)
        assert rcode_of(addr, port, last_blocked) == dns.rcode.NXDOMAIN and \
            rcode_of(addr, port, probes[1]) == dns.rcode.NOERROR
        if not args.ixfr_only:
            warm(addr, port, qfile, client_cpus)
            results["rpz"] = measure("+rpz", p, addr, port, qfile, args.seconds, client_cpus)
            print(f"inrpd    hits {show_rpz(inrpc, ctl)['hits']}", flush=True)
        stop(p)

        if not args.ixfr_only:
            # Unbound, its cache in front of the same upstream; without RPZ, then with
            ub_addr = "127.0.0.64"
            os.makedirs(os.path.join(work, "ub"))

            def unbound(label, extra):
                port = free_port()
                conf = unbound_conf(os.path.join(work, "ub"), ub_addr, port, (), (), 300)
                with open(conf, "a") as f:
                    f.write(f'server:\n  module-config: "respip iterator"\n  do-not-query-localhost: no\n'
                            f'  msg-cache-size: 64m\n  rrset-cache-size: 64m\n'
                            f'forward-zone:\n  name: "."\n  forward-addr: {up_addr}@{up_port}\n{extra}')
                with open(os.path.join(work, f"{label}.out"), "w") as log:
                    p = start(pin([unbound_bin, "-d", "-p", "-c", conf]), ub_addr, port, passed[0], 60, log)
                procs.append(p)
                return p, port

            t = time.monotonic()
            p, port = unbound("unbound-plain", "")
            rss_ub = rss_bytes(descendants(p.pid))
            ub_start_s = time.monotonic() - t
            stop(p)
            t = time.monotonic()
            p, port = unbound("unbound-rpz", f'rpz:\n  name: "{APEX}"\n  primary: {nsd_addr}@{nsd_port}\n')
            deadline = time.monotonic() + 900
            while rcode_of(ub_addr, port, last_blocked) != dns.rcode.NXDOMAIN:
                if time.monotonic() > deadline or p.poll() is not None:
                    raise RuntimeError("unbound did not load the zone; see unbound-rpz.out")
            results["unbound_load_s"] = time.monotonic() - t
            results["unbound_rss"] = rss_bytes(descendants(p.pid)) - rss_ub
            print(f"unbound  loaded the zone in {results['unbound_load_s']:.2f} s (it starts in {ub_start_s:.2f} s), "
                  f"{results['unbound_rss'] / args.rules:.0f} bytes per rule", flush=True)
            warm(ub_addr, port, qfile, client_cpus)
            results["unbound"] = measure("unbound", p, ub_addr, port, qfile, args.seconds, client_cpus)
            stop(p)

        # the IXFR: inrpd from its state-dir copy, then NOTIFY and a 1% diff
        removed = [wire_rr(o, t_, d) for o, t_, d in rules[1:changes - changes // 2 + 1]]
        added = [wire_rr(o, t_, d) for o, t_, d in (rule(n, i) for i, n in enumerate(fresh))]
        ixfr = IxfrPrimary("127.0.0.65", removed, added)
        try:
            rpz = (f'rpz "{APEX}" {{ primary {ixfr.addr} port {ixfr.port}; ede blocked; }}\n'
                   f'rpz-log-level none;\nstate-dir "{state}";\n')
            t = time.monotonic()
            p, port = run_inrpd("ixfr", rpz)
            done, _ = wait_serial(inrpc, ctl, 1, 900, p)
            results["state_load_s"] = done - t
            deadline = time.monotonic() + 60
            while not (ixfr.asked and show_rpz(inrpc, ctl)["last_result"].startswith("IXFR")):
                if time.monotonic() > deadline:
                    raise RuntimeError(f"inrpd asked {ixfr.asked}, no IXFR of the current serial")
                time.sleep(0.05)
            print(f"inrpd    state-dir copy applied in {results['state_load_s']:.2f} s", flush=True)
            assert rcode_of(addr, port, probes[1]) == dns.rcode.NOERROR
            ixfr.publish()
            t = time.monotonic()
            ixfr.notify(addr, port)
            deadline = t + 60
            while rcode_of(addr, port, probes[1]) != dns.rcode.NXDOMAIN:
                if time.monotonic() > deadline or p.poll() is not None:
                    raise RuntimeError("the IXFR's new rule never answered")
            results["ixfr_answer_ms"] = (time.monotonic() - t) * 1000
            done, z = wait_serial(inrpc, ctl, 2, 60, p)
            results["ixfr_ms"] = z["last_apply_ms"]
            print(f"inrpd    IXFR of {len(removed) + len(added)} records applied in {results['ixfr_ms']:.1f} ms "
                  f"from the transfer's end; a new rule answered {results['ixfr_answer_ms']:.0f} ms after the "
                  f"NOTIFY ({z['last_result']}, {z['rules']} rules)", flush=True)
            assert rcode_of(addr, port, last_blocked) == dns.rcode.NXDOMAIN
            stop(p)
        finally:
            ixfr.stop()
    finally:
        for p in procs:
            stop(p)
        shutil.rmtree(work, ignore_errors=True)

    out = {
        "rules": args.rules,
        "inrpd_rpz_bytes_per_rule": round(results["rpz_rss"] / args.rules, 1),
        "rpz_load_s": round(results["rpz_load_s"], 2),
        "rpz_state_load_s": round(results["state_load_s"], 2),
        "ixfr_changes": changes,
        "ixfr_1pct_apply_ms": round(results["ixfr_ms"], 1),
        "ixfr_notify_to_answer_ms": round(results["ixfr_answer_ms"], 1),
    }
    out["targets"] = {"ixfr_within_100ms": out["ixfr_1pct_apply_ms"] <= 100}
    if not args.ixfr_only:
        plain, rpz_us, tap = results["plain"][1], results["rpz"][1], results["dnstap"][1]
        out.update({
            "queries": len(asked),
            "blocked_share": args.blocked,
            "unbound_rpz_bytes_per_rule": round(results["unbound_rss"] / args.rules, 1),
            "unbound_rpz_load_s": round(results["unbound_load_s"], 2),
            "plain_qps": round(results["plain"][0]),
            "rpz_qps": round(results["rpz"][0]),
            "dnstap_qps": round(results["dnstap"][0]),
            "unbound_rpz_qps": round(results["unbound"][0]),
            "plain_cpu_us_per_query": round(plain, 3),
            "rpz_cpu_us_per_query": round(rpz_us, 3),
            "dnstap_cpu_us_per_query": round(tap, 3),
            "unbound_rpz_cpu_us_per_query": round(results["unbound"][1], 3),
        })
        out["targets"].update({
            "bytes_per_rule_half_unbound": out["inrpd_rpz_bytes_per_rule"] <= out["unbound_rpz_bytes_per_rule"] / 2,
            "load_half_unbound": out["rpz_load_s"] <= out["unbound_rpz_load_s"] / 2,
            "rpz_cpu_within_10pct": rpz_us <= plain * 1.10,
            "dnstap_cpu_within_25pct": tap <= plain * 1.25,
        })
    print(json.dumps(out))


if __name__ == "__main__":
    main()
