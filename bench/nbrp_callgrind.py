#!/usr/bin/env python3
"""nbrpd's instructions per name, counted by callgrind: deterministic where
bench nbrp's names/s are not (a shared machine), for comparing two builds.

One nbrp-updgen source -> nbrpd under `valgrind --tool=callgrind` -> one
sink, as bench nbrp's K=1.  Counting starts once the sink's session is up
(`callgrind_control -z`) and stops when the sink has every name
(`callgrind_control -d`): start-up and shutdown are left out.  --cache-sim
adds callgrind's simulated cache misses (its L1 and last level only).

  python3 bench/nbrp_callgrind.py [--build DIR] [--names N] [--seed S] [--cache-sim] [--top T]

--build is the build whose nbrpd is measured (another commit built
elsewhere, to compare); the generator is always this tree's.  Prints the
top functions by instructions (their own, per name), then one JSON object.
"""
import argparse
import json
import os
import re
import shutil
import signal
import subprocess
import sys
import tempfile
import time

from bench_nbrp import nbrc, wait_until

HERE = os.path.dirname(os.path.abspath(__file__))
B = "127.4.17"      # .1 nbrpd, .9 source, .10 the sink's base (.11 its session)


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--build", default=os.path.join(HERE, "..", "build"))
    ap.add_argument("--names", type=int, default=500_000)
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--cache-sim", action="store_true")
    ap.add_argument("--top", type=int, default=20)
    args = ap.parse_args()
    for tool in ("valgrind", "callgrind_control", "callgrind_annotate"):
        if not shutil.which(tool):
            sys.exit(f"nbrp_callgrind: {tool} is missing (Debian's valgrind)")
    nbrpd = os.path.join(args.build, "nbrpd", "nbrpd")
    nbrc_bin = os.path.join(HERE, "..", "build", "nbrpd", "nbrc")
    updgen = os.path.join(HERE, "..", "build", "updgen", "nbrp-updgen")
    work = tempfile.mkdtemp(prefix="nbrp-callgrind-")
    conf, ctl, out = (os.path.join(work, f) for f in ("nbrpd.conf", "ctl", "callgrind.out"))
    with open(conf, "w") as f:
        f.write(f'router-name "dut";\nlisten {B}.1 port 1790;\ninrp-address {B}.1 port 53;\nhold-time 600s;\n'
                f'control "{ctl}";\nlog-level warn;\npeer "gen" {{ address {B}.9; passive; }}\n'
                f'peer "sink1" {{ address {B}.11; passive; }}\n')
    vg = ["valgrind", "--tool=callgrind", f"--callgrind-out-file={out}", "--dump-instr=no"]
    if args.cache_sim:
        vg.append("--cache-sim=yes")
    log = open(os.path.join(work, "nbrpd.log"), "w")
    dut = subprocess.Popen(vg + [nbrpd, "-f", "-c", conf], stdout=log, stderr=subprocess.STDOUT)
    procs = [dut]
    try:
        wait_until(lambda: nbrc(nbrc_bin, ctl, "show", "status"), 120, "nbrpd under valgrind", interval=0.2)
        sink = subprocess.Popen([updgen, "sink", "--router", f"{B}.1", "--name", "sink", "--local", f"{B}.10",
                                 "--sinks", "1", "--expect", str(args.names), "--timeout", "1800"],
                                stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        procs.append(sink)
        wait_until(lambda: any(p["state"] == "Established" for p in nbrc(nbrc_bin, ctl, "show", "peers") or []),
                   120, "the sink's session", interval=0.2)
        subprocess.run(["callgrind_control", "-z", str(dut.pid)], check=True, capture_output=True)
        src = subprocess.Popen([updgen, "source", "--router", f"{B}.1", "--name", "gen", "--local", f"{B}.9",
                                "--names", str(args.names), "--seed", str(args.seed), "--linger", "1800"],
                               stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        procs.append(src)
        if sink.wait(timeout=3600) != 0:
            raise RuntimeError("the sink did not get every name")
        subprocess.run(["callgrind_control", "-d", str(dut.pid)], check=True, capture_output=True)
        dumps = sorted(f for f in os.listdir(work) if f.startswith("callgrind.out."))
        ann = subprocess.run(["callgrind_annotate", "--threshold=100", "--auto=no", os.path.join(work, dumps[-1])],
                             check=True, capture_output=True, text=True).stdout
    finally:
        for p in procs[1:]:
            if p.poll() is None:
                p.send_signal(signal.SIGINT)
        dut.send_signal(signal.SIGTERM)
        for p in procs:
            try:
                p.wait(timeout=60)
            except subprocess.TimeoutExpired:
                p.kill()
                p.wait()
        log.close()
        shutil.rmtree(work, ignore_errors=True)

    events = re.search(r"^Events shown:\s+(.*)$", ann, re.M).group(1).split()
    line = next(l for l in ann.splitlines() if "PROGRAM TOTALS" in l)
    tot = dict(zip(events, (int(v.replace(",", "")) for v in re.findall(r"([\d,]+) \(", line))))
    n = args.names
    print(f"{'Ir/name':>8}  function (its own instructions)")
    shown = 0
    for line in ann.split("file:function", 1)[1].splitlines():
        m = re.match(r"\s*([\d,]+) \(", line)
        fn = re.sub(r" \[.*\]$", "", line.rsplit("%)", 1)[-1].strip())
        if not m or shown >= args.top or re.search(r"main\b|libc_start|below main|0x0000", fn):
            continue
        print(f"{int(m.group(1).replace(',', '')) / n:8.1f}  {fn}")
        shown += 1
    res = {"names": n, "seed": args.seed, "nbrpd": os.path.abspath(nbrpd), "instructions": tot["Ir"],
           "instructions_per_name": round(tot["Ir"] / n, 1)}
    if args.cache_sim:
        res["d1_misses_per_name"] = round((tot["D1mr"] + tot["D1mw"]) / n, 2)
        res["ll_misses_per_name"] = round((tot["DLmr"] + tot["DLmw"]) / n, 2)
    print(json.dumps(res))


if __name__ == "__main__":
    main()
