#!/usr/bin/env python3
"""What dnstap costs inrpd a query, counted by callgrind's instructions
(Ir): a figure a loaded machine does not move, as it moves queries/s.

inrpd (one UDP worker, a local route) under `valgrind --tool=callgrind
--separate-threads=yes` answers N queries asked one at a time over UDP,
three times: dnstap off; on with a reader (fstrm_capture writing to
/dev/null); on with no reader (every message dropped and counted).
Counting starts once inrpd answers (`callgrind_control -z`) and stops
after the N answers (`callgrind_control -d`).  Prints one JSON object:
per run, the instructions a query in the UDP worker (the hot path) and
in the other threads (libfstrm's I/O thread writing, the main loop).

  python3 bench/dnstap_callgrind.py [--build DIR] [--queries N]
"""
import argparse
import glob
import json
import os
import re
import shutil
import socket
import struct
import subprocess
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
ADDR, PORT = "127.4.23.1", 25353


def query(i):
    name = b"".join(bytes([len(x)]) + x for x in (f"q{i}".encode(), b"local", b"content")) + b"\0"
    return struct.pack(">HHHHHH", i & 0xFFFF, 0x0100, 1, 0, 0, 0) + name + struct.pack(">HH", 1, 1)


def ask(s, i):
    s.send(query(i))
    return s.recv(4096)


def wait_answering(s, proc, timeout=120):
    deadline = time.monotonic() + timeout
    s.settimeout(0.5)
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            sys.exit("dnstap_callgrind: inrpd exited")
        try:
            ask(s, 0)
            return
        except (socket.timeout, ConnectionRefusedError):
            time.sleep(0.1)
    sys.exit("dnstap_callgrind: inrpd did not answer")


def thread_ir(out):
    """Ir of each thread's dump: {thread number: Ir}."""
    found = {}
    for path in glob.glob(out + "*"):
        m = re.search(r"-(\d+)$", path)
        with open(path) as f:
            for line in f:
                if line.startswith("summary:") or line.startswith("totals:"):
                    found[int(m.group(1)) if m else 0] = int(line.split()[1])
                    break
    return found


def run(inrpd, work, mode, n):
    conf = os.path.join(work, f"{mode}.conf")
    sock = os.path.join(work, f"{mode}.sock")
    out = os.path.join(work, f"callgrind.{mode}.out")
    body = f"listen {ADDR} port {PORT};\nworkers 1;\nlog-level warn;\n"
    body += 'route "local.content" { server 192.0.2.10; }\n'
    if mode != "off":
        body += f'dnstap {{ socket-path "{sock}"; }}\n'
    with open(conf, "w") as f:
        f.write(body)
    reader = None
    if mode == "reader":
        reader = subprocess.Popen(["fstrm_capture", "-t", "protobuf:dnstap.Dnstap", "-u", sock, "-w", "/dev/null"],
                                  stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        while not os.path.exists(sock):
            time.sleep(0.05)
    log = open(os.path.join(work, f"{mode}.log"), "w")
    dut = subprocess.Popen(["valgrind", "--tool=callgrind", "--separate-threads=yes", "--dump-instr=no",
                            f"--callgrind-out-file={out}", inrpd, "-f", "-c", conf],
                           stdout=log, stderr=subprocess.STDOUT)
    try:
        s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
        s.connect((ADDR, PORT))
        wait_answering(s, dut)
        if mode == "reader":
            time.sleep(2)       # the I/O thread connected
        subprocess.run(["callgrind_control", "-z", str(dut.pid)], check=True, stdout=subprocess.DEVNULL)
        for old in glob.glob(out + "*"):
            os.unlink(old)              # what start-up dumped
        s.settimeout(30)
        for i in range(n):
            ask(s, i)
        if mode == "reader":
            time.sleep(1.5)     # its flush timeout: the I/O thread writes what it holds
        subprocess.run(["callgrind_control", "-d", str(dut.pid)], check=True, stdout=subprocess.DEVNULL)
        deadline = time.monotonic() + 60
        while not glob.glob(out + "*") and time.monotonic() < deadline:
            time.sleep(0.1)
        time.sleep(1)
        ir = thread_ir(out)
    finally:
        dut.terminate()
        dut.wait()
        if reader:
            reader.terminate()
            reader.wait()
    # the worker is the thread that did the most: every query is its
    worker = max(ir, key=ir.get)
    others = sum(v for k, v in ir.items() if k != worker)
    return {"worker_ir_per_query": round(ir[worker] / n), "other_threads_ir_per_query": round(others / n)}


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--build", default=os.path.join(HERE, "..", "build"))
    ap.add_argument("--queries", type=int, default=20000)
    ap.add_argument("--keep", action="store_true", help="keep the callgrind files (callgrind_annotate them)")
    args = ap.parse_args()
    for tool in ("valgrind", "callgrind_control", "fstrm_capture"):
        if not shutil.which(tool):
            sys.exit(f"dnstap_callgrind: {tool} is missing")
    inrpd = os.path.join(args.build, "inrpd", "inrpd")
    work = tempfile.mkdtemp(prefix="dnstap-callgrind-")
    result = {"queries": args.queries}
    for mode in ("off", "reader", "no-reader"):
        result[mode] = run(inrpd, work, mode, args.queries)
    if args.keep:
        result["files"] = work
    else:
        shutil.rmtree(work)
    print(json.dumps(result))


if __name__ == "__main__":
    main()
