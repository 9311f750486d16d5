#!/usr/bin/env python3
"""scripts/bench scale: one content router taking N names (default
30,000,000) from nbrp-updgen, pushing them to its inrpd, and answering
random members.  On loopback (127.0.8.x); one run.

  nbrp-updgen source (gen, 127.0.8.9) -> nbrpd (127.0.8.1) -> inrpd
  (127.0.8.1) -> the names' next hop, a do-nothing DNS echo (127.0.8.20)

- load: from starting the source to nbrpd holding all N names
  (nbrpd_loaded_s) and to inrpd's FIB holding them (inrpd_loaded_s);
  then --check names of the sample asked at once, all answered
  (all_answered_s).  The sample is the first --sample names of the
  source's stream (the same generator, splitmix64 from --seed, written
  again here), which are a random draw of the set.
- RSS of nbrpd and inrpd once loaded (current and peak, /proc).
- lookup rate: dnsperf asking inrpd for the sample names for --seconds
  (each query looked up in the FIB and forwarded to the echo, the answer
  relayed).
The last line of output is one JSON object.
"""
import argparse
import json
import pathlib
import re
import socket
import subprocess
import sys
import tempfile
import time

ROOT = pathlib.Path(__file__).resolve().parents[1]
ROUTER, GEN, ECHO = "127.0.8.1", "127.0.8.9", "127.0.8.20"
NBRP_PORT, DNS_PORT, ECHO_PORT = 1790, 5390, 5391
M64 = (1 << 64) - 1
ALNUM = "abcdefghijklmnopqrstuvwxyz0123456789"


def stream(seed):
    """nbrp-updgen's names, in its order (updgen/updgen.c: make_name)."""
    s = seed
    seen = set()

    def nxt():
        nonlocal s
        s = (s + 0x9e3779b97f4a7c15) & M64
        z = s
        z = ((z ^ (z >> 30)) * 0xbf58476d1ce4e5b9) & M64
        z = ((z ^ (z >> 27)) * 0x94d049bb133111eb) & M64
        return z ^ (z >> 31)
    while True:
        r = nxt()
        length = 3 + r % 15
        pick = (r >> 8) % 10
        tld = "com" if pick < 8 else "org" if pick == 8 else "net"
        label, frac = [], 0
        for k in range(length):
            if k % 6 == 0:
                frac = nxt()
            frac *= 36
            label.append(ALNUM[frac >> 64])
            frac &= M64
        name = "".join(label) + "." + tld
        if name not in seen:
            seen.add(name)
            yield name


def rss(pid):
    out = {}
    for line in open(f"/proc/{pid}/status"):
        if line.startswith(("VmRSS:", "VmHWM:")):
            out[line.split(":")[0]] = int(line.split()[1]) * 1024
    return out


def ctl_json(cmd, sock, *words):
    r = subprocess.run([cmd, "-s", sock, "--json", *words], capture_output=True, text=True, timeout=120)
    return json.loads(r.stdout) if r.returncode == 0 and r.stdout.strip() else None


def ask_all(names, timeout=2.0):
    """The names inrpd did not answer NOERROR, asked all at once."""
    import dns.message
    import select
    left = set(names)
    for _ in range(3):                  # a lost datagram is not a missing name
        pending = {}
        with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as s:
            s.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 8 << 20)
            for i, n in enumerate(sorted(left)):
                q = dns.message.make_query(n, "A")
                q.id = i
                pending[i] = n
                s.sendto(q.to_wire(), (ROUTER, DNS_PORT))
                if i % 256 == 255:      # let the answers drain
                    time.sleep(0.002)
            end = time.monotonic() + timeout
            while pending and time.monotonic() < end:
                if not select.select([s], [], [], max(0, end - time.monotonic()))[0]:
                    break
                m = dns.message.from_wire(s.recv(4096))
                n = pending.pop(m.id, None)
                if n and m.rcode() == 0:
                    left.discard(n)
        if not left:
            break
    return left


def ask(name):
    """inrpd's rcode for name (0: NOERROR), or None on timeout."""
    import dns.message
    import dns.query
    try:
        return dns.query.udp(dns.message.make_query(name, "A"), ROUTER, port=DNS_PORT, timeout=2).rcode()
    except Exception:
        return None


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--names", type=int, default=30_000_000)
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--sample", type=int, default=100_000)
    ap.add_argument("--seconds", type=int, default=10)
    ap.add_argument("--check", type=int, default=10_000, help="sample names asked once loaded")
    ap.add_argument("--build", default=str(ROOT / "build"))
    args = ap.parse_args()
    b = pathlib.Path(args.build)
    nbrpd, nbrc, updgen = b / "nbrpd/nbrpd", b / "nbrpd/nbrc", b / "updgen/nbrp-updgen"
    inrpd, inrpc, echo = b / "inrpd/inrpd", b / "inrpd/inrpc", b / "bench/udp_echo"
    sample = []
    for name in stream(args.seed):
        if len(sample) >= min(args.sample, args.names):
            break
        sample.append(name)

    work = pathlib.Path(tempfile.mkdtemp(prefix="bench-scale-"))
    procs = []

    def start(name, cmd):
        log = open(work / f"{name}.log", "wb")
        p = subprocess.Popen(cmd, stdin=subprocess.DEVNULL, stdout=log, stderr=log)
        procs.append(p)
        return p
    try:
        (work / "inrpd.conf").write_text(
            f"listen {ROUTER} port {DNS_PORT};\nworkers 1;\nfib-channel \"{work}/fib\";\n"
            f"fib-grace-time 600s;\ncontrol \"{work}/inrpd.ctl\";\nquery-timeout 2s;\n")
        (work / "nbrpd.conf").write_text(
            f'router-name "scale";\nlisten {ROUTER} port {NBRP_PORT};\n'
            f"inrp-address {ROUTER} port {DNS_PORT};\nhold-time 600s;\n"
            f'fib-channel "{work}/fib";\ncontrol "{work}/nbrpd.ctl";\n'
            f'peer "gen" {{ address {GEN}; passive; }}\n')
        start("echo", [str(echo), ECHO, str(ECHO_PORT)])
        ip = start("inrpd", [str(inrpd), "-f", "-c", str(work / "inrpd.conf")])
        deadline = time.monotonic() + 30
        while ask("ready.invalid") is None:
            if time.monotonic() > deadline:
                raise RuntimeError("inrpd does not answer")
        np_ = start("nbrpd", [str(nbrpd), "-f", "-c", str(work / "nbrpd.conf")])
        while ctl_json(str(nbrc), str(work / "nbrpd.ctl"), "show", "status") is None:
            if time.monotonic() > deadline:
                raise RuntimeError("nbrpd does not answer")
            time.sleep(0.05)
        t0 = time.monotonic()
        start("source", [str(updgen), "source", "--router", f"{ROUTER}:{NBRP_PORT}", "--name", "gen",
                         "--local", GEN, "--names", str(args.names), "--seed", str(args.seed),
                         "--next-hop", f"{ECHO}:{ECHO_PORT}", "--linger", "3600", "--json"])
        t_nbrpd = t_inrpd = None
        while t_inrpd is None:
            if time.monotonic() - t0 > 3600:
                raise RuntimeError("not loaded in an hour")
            for p in procs:
                if p.poll() is not None:
                    raise RuntimeError(f"{p.args[0]} exited with {p.returncode}; logs in {work}")
            if t_nbrpd is None:
                c = ctl_json(str(nbrc), str(work / "nbrpd.ctl"), "show", "route", "count")
                if c and c["names"] >= args.names:
                    t_nbrpd = time.monotonic() - t0
            s = ctl_json(str(inrpc), str(work / "inrpd.ctl"), "show", "status")
            if s and s["fib_channel"]["names"] >= args.names:
                t_inrpd = time.monotonic() - t0
            time.sleep(0.2)
        if t_nbrpd is None:
            t_nbrpd = t_inrpd
        missing = ask_all(sample[:args.check])
        t_all = time.monotonic() - t0
        mem = {"nbrpd": rss(np_.pid), "inrpd": rss(ip.pid)}
        qfile = work / "queries"
        qfile.write_text("".join(f"{n} A\n" for n in sample))
        out = subprocess.run(["dnsperf", "-s", ROUTER, "-p", str(DNS_PORT), "-d", str(qfile),
                              "-l", str(args.seconds), "-c", "8", "-q", "500", "-T", "1"],
                             capture_output=True, text=True, check=True).stdout
        qps = float(re.search(r"Queries per second:\s+([0-9.]+)", out).group(1))
        lost = int(re.search(r"Queries lost:\s+(\d+)", out).group(1))
        result = {"names": args.names, "seed": args.seed, "sample": len(sample),
                  "nbrpd_loaded_s": round(t_nbrpd, 2), "inrpd_loaded_s": round(t_inrpd, 2),
                  "checked": min(args.check, len(sample)), "all_answered_s": round(t_all, 2),
                  "checked_unanswered": len(missing),
                  "nbrpd_rss_mb": round(mem["nbrpd"]["VmRSS"] / 2**20), "nbrpd_peak_mb": round(mem["nbrpd"]["VmHWM"] / 2**20),
                  "inrpd_rss_mb": round(mem["inrpd"]["VmRSS"] / 2**20), "inrpd_peak_mb": round(mem["inrpd"]["VmHWM"] / 2**20),
                  "lookups_per_s": round(qps), "lookups_lost": lost}
        print(f"{args.names} names: nbrpd has them after {t_nbrpd:.1f} s, inrpd after {t_inrpd:.1f} s; "
              f"{min(args.check, len(sample)) - len(missing)}/{min(args.check, len(sample))} sampled answered at {t_all:.1f} s", file=sys.stderr)
    finally:
        for p in reversed(procs):
            if p.poll() is None:
                p.terminate()
        for p in procs:
            try:
                p.wait(60)
            except subprocess.TimeoutExpired:
                p.kill()
                p.wait()
        import shutil
        shutil.rmtree(work, ignore_errors=True)
    print(json.dumps(result))


if __name__ == "__main__":
    main()
