#!/usr/bin/env python3
"""scripts/bench topology: convergence of one name over an ISP-like graph
of N content routers, NBRP beside BGP on the same graph, in one run.

The graph (seeded): a few ISPs (N/25, at least 2, at most 4), each a core
ring with access trees hanging off it, the ISPs in a ring of eBGP links.
Every router is a network namespace with BIRD (OSPF inside its ISP, eBGP
between ISPs), nbrpd and inrpd (tests/integration/netlab.py); NBRP
sessions run along every link.

  nbrp: bench.content is originated at a leaf X of the first ISP; then X
        withdraws it and a leaf Y of the ISP farthest away announces it
        (`reload` on nbrpd's control socket at X, then at Y without waiting
        for X's reply).  nbrp_converge_ms runs from the first reload to the
        moment the last router's inrpd answers with Y's server;
        nbrp_updates_total is the UPDATEs all routers sent for it
        (updates_out of every peer, before and after, once they stay put).
  bird: the same graph carries one IPv4 prefix over BGP: a table of its
        own in every BIRD, an eBGP session along every link (each router
        its own private AS), the prefix a static route at X, then disabled
        at X and enabled at Y (the same way, over BIRD's control sockets).
        bird_converge_ms runs from the first command to the moment the
        last router's best route comes from Y;
        bird_updates_total is the export updates and withdraws accepted by
        all those sessions.

Every router is polled on its own from the moment the commands went out
(their replies are read meanwhile; nbrp_reload_ms is when both reloads
had answered), again 20 ms after its last answer:
inrpd by a DNS query (a UDP socket made in its namespace, kept open), BIRD
by `show route for` over a control connection kept open.  A router counts
as converged at the moment its own answer showed the new origin (and
stayed so); the mean time between one router's answers
(nbrp_poll_interval_ms, bird_poll_interval_ms) bounds how late that can be
seen.  rss_mb_per_router is BIRD + nbrpd + inrpd.
The last line of output is one JSON object.
"""
import argparse
import json
import pathlib
import random
import re
import select
import socket
import struct
import sys
import threading
import time

ROOT = pathlib.Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "tests" / "integration"))

import dns.message  # noqa: E402
import dns.rdatatype  # noqa: E402

import netlab  # noqa: E402

NAME = "bench.content"
PREFIX = "203.0.113.0/24"       # in the bench's own BIRD table only
PROBE = "203.0.113.1"
ASN0 = 4200000000               # private 4-byte ASNs, one per router
INTERVAL = 0.02                 # a router is asked again this long after its answer
ASK_TIMEOUT = 0.1               # ... or after this long without one


def graph(n, seed):
    """routers {name: {isp}}, links [[a, b, cost]], X, Y."""
    rng = random.Random(seed)
    nisp = max(2, min(4, n // 25))
    sizes = [n // nisp + (1 if i < n % nisp else 0) for i in range(nisp)]
    routers, links, isps = {}, [], []
    k = 0
    for i, size in enumerate(sizes):
        names = [f"r{k + j}" for j in range(size)]
        k += size
        for r in names:
            routers[r] = {"isp": 65001 + i}
        core = names[:max(3, size // 5)] if size >= 3 else names
        for j in range(len(core)):
            if len(core) > 1 and (len(core) > 2 or j == 0):
                links.append([core[j], core[(j + 1) % len(core)], 10])
        for j, r in enumerate(names[len(core):], start=len(core)):
            links.append([r, names[rng.randrange(j)], rng.choice((10, 20, 30))])
        isps.append(names)
    for i in range(nisp if nisp > 2 else 1):     # ISPs in a ring of eBGP links
        a, b = isps[i], isps[(i + 1) % nisp]
        links.append([a[0], b[1 % len(b)], 10])
    leaf = lambda names: names[-1]               # noqa: E731  the last attached
    return routers, links, leaf(isps[0]), leaf(isps[nisp // 2])


def bench_bird_config(lab, r, origin):
    """The bench's BGP: its own table, a session along every router link."""
    i = list(lab.routers).index(r.name)
    out = ["ipv4 table benchtab;\n",
           f"protocol static borigin {{ ipv4 {{ table benchtab; }}; route {PREFIX} blackhole; "
           f"{'' if origin else 'disabled;'} }}\n"]
    for peer, (iface, mine, theirs, link) in r.ifaces.items():
        if peer not in lab.routers:
            continue
        j = list(lab.routers).index(peer)
        # between the routers' own addresses: a border link's addresses
        # already carry the ISPs' eBGP session
        out.append(f"protocol bgp bb_{peer} {{ local {r.addr} as {ASN0 + i}; "
                   f"neighbor {lab.routers[peer].addr} as {ASN0 + j}; multihop 2; "
                   "connect retry time 1; error wait time 1, 4; "
                   "ipv4 { table benchtab; igp table master4; import all; export all; }; }\n")
    return "".join(out)


class DnsProbe:
    """inrpd at one router: a UDP socket in its namespace, kept open.  The
    query is made once and the answer read by hand (a_records): through
    dnspython a poll cost some 80 us of Python, 40 times BIRD's probe, on
    the same two CPUs the routers converge on."""
    resend = True               # a datagram may be lost

    def __init__(self, lab, r):
        self.addr = (lab.routers[r].addr, netlab.DNS_PORT)
        self.sock = netlab.ns_socket(lab.routers[r].ns)
        self.query = bytearray(dns.message.make_query(NAME, "A").to_wire())
        self.id = None

    def send(self):
        self.id = random.getrandbits(16)
        self.query[0:2] = self.id.to_bytes(2, "big")
        try:
            self.sock.sendto(self.query, self.addr)
        except OSError:
            pass

    def read(self):
        """The answer's addresses, or None if what came is not it."""
        try:
            return a_records(self.sock.recv(4096), self.id)
        except OSError:
            return None

    def close(self):
        self.sock.close()


def a_records(wire, qid):
    """The sorted addresses of the A records in the answer section of the
    DNS message wire if its id is qid, else None."""
    def skip_name(pos):
        while wire[pos] and wire[pos] < 0xc0:
            pos += wire[pos] + 1
        return pos + (2 if wire[pos] else 1)
    try:
        if int.from_bytes(wire[:2], "big") != qid:
            return None
        qdcount, ancount = struct.unpack_from(">HH", wire, 4)
        pos = 12
        for _ in range(qdcount):
            pos = skip_name(pos) + 4
        out = []
        for _ in range(ancount):
            pos = skip_name(pos)
            rtype, _, _, rdlen = struct.unpack_from(">HHIH", wire, pos)
            pos += 10
            if rtype == dns.rdatatype.A and rdlen == 4 and pos + 4 <= len(wire):
                out.append(socket.inet_ntoa(wire[pos:pos + 4]))
            pos += rdlen
        return sorted(out)
    except (IndexError, struct.error):
        return None


class Control:
    """A control socket (BIRD's, or nbrpd's, which speaks the same), connected and greeted."""

    def __init__(self, path):
        self.sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        self.sock.settimeout(10)
        self.sock.connect(str(path))
        self.buf = b""
        self.reply()                    # the greeting

    def send(self, command):
        self.sock.sendall(command.encode() + b"\n")

    def read(self):
        """The next reply if it is all there, after one read; else None."""
        chunk = self.sock.recv(65536)
        if not chunk:
            raise ConnectionError("control socket closed")
        text, self.buf = netlab.bird_reply_split(self.buf + chunk)
        return text

    def reply(self):
        text, self.buf = netlab.bird_reply_split(self.buf)
        while text is None:
            text = self.read()
        return text


class BirdProbe(Control):
    """BIRD at one router: `show route for` the bench prefix, over one
    control connection kept open.  The answer: the last AS of the best
    route's path, "self" for the static route, or () for none."""
    resend = False              # a stream: the answer comes

    def __init__(self, lab, r):
        super().__init__(lab.routers[r].bird_ctl)

    def send(self):
        super().send(f"show route for {PROBE} table benchtab all")

    def read(self):
        text = super().read()
        if text is None:
            return None
        if "unicast" in text or "blackhole" in text:
            if "[borigin" in text.split("\n", 2)[1]:
                return "self"
            m = re.search(r"BGP\.as_path: ([\d ]+)", text)
            if m:
                return int(m.group(1).split()[-1])
        return ()               # no route: an answer all the same

    def close(self):
        self.sock.close()


class BackToBack(threading.Thread):
    """Sends each (control socket, command) in turn without waiting for a
    reply, the origin's withdrawal first, and reads the replies on a thread
    of its own, so the routers are polled from the moment the commands went
    out, not from when the daemons got round to answering.  Connected
    beforehand, so t0 (the time before the first was sent) covers the
    commands only.  join() returns the replies; .done: when the last came."""

    def __init__(self, commands):
        super().__init__(daemon=True)
        self.ctls = [(Control(path), cmd) for path, cmd in commands]
        self.replies, self.done, self.error = [], None, None
        self.t0 = time.monotonic()
        for c, cmd in self.ctls:
            c.send(cmd)
        self.start()

    def run(self):
        try:
            self.replies = [c.reply() for c, _ in self.ctls]
            self.done = time.monotonic()
        except Exception as e:          # noqa: BLE001  handed to join()
            self.error = e
        finally:
            for c, _ in self.ctls:
                c.sock.close()

    def join(self, timeout=60):
        super().join(timeout)
        if self.error or self.done is None:
            raise RuntimeError(f"no replies to {[cmd for _, cmd in self.ctls]}: {self.error}")
        return self.replies


def converge(probes, ok, timeout=60, t0=None):
    """Asks every router on its own, again INTERVAL after each answer (and
    after ASK_TIMEOUT without one), until every router's last answer is
    ok(); returns ms from t0 (default now) to the answer that showed the
    last of them ok (and stayed so).  converge.interval_ms: the mean time
    between one router's answers, the resolution of the result."""
    t0 = t0 or time.monotonic()
    first, sent, next_at, gaps, last_answer = {}, {}, {}, [], {}
    by_sock = {p.sock: r for r, p in probes.items()}
    for r in probes:
        next_at[r] = time.monotonic()
    while time.monotonic() - t0 < timeout:
        now = time.monotonic()
        for r, p in probes.items():
            if r not in sent and now >= next_at[r] or p.resend and r in sent and now - sent[r] > ASK_TIMEOUT:
                p.send()
                sent[r] = now
        wake = min([next_at[r] for r in probes if r not in sent] +
                   [sent[r] + ASK_TIMEOUT for r in sent if probes[r].resend] + [now + ASK_TIMEOUT])
        ready, _, _ = select.select(list(by_sock), [], [], max(0, wake - time.monotonic()))
        for s in ready:
            r = by_sock[s]
            answer = probes[r].read()
            if answer is None or r not in sent:
                continue
            when = time.monotonic()
            del sent[r]
            next_at[r] = when + INTERVAL
            if r in last_answer:
                gaps.append(when - last_answer[r])
            last_answer[r] = when
            if ok(answer):
                first.setdefault(r, when)
            else:
                first.pop(r, None)          # it moved away again: not converged
        if len(first) == len(probes):
            converge.interval_ms = sum(gaps) / len(gaps) * 1000 if gaps else 0
            return (max(first.values()) - t0) * 1000
    raise RuntimeError(f"not converged in {timeout}s: {sorted(set(probes) - set(first))[:10]}")


def nbrp_updates(lab):
    return sum(p["updates_out"] for r in lab.routers.values() for p in r.nbrpd.peers().values())


def bird_updates(lab):
    total = 0
    for r in lab.routers.values():
        text = r.birdc("show protocols all")
        for proto in re.split(r"\n(?=1002-)", text):
            if not re.match(r"(?:\d{4}-)?bb_", proto.strip()):
                continue
            for kind in ("Export updates", "Export withdraws"):
                m = re.search(kind + r":\s+(\S+)\s+(\S+)\s+(\S+)\s+(\S+)\s+(\S+)", proto)
                if m and m.group(5).isdigit():
                    total += int(m.group(5))
    return total


def settle(fn, quiet=1.0, timeout=60):
    """fn() once it has not changed for `quiet` seconds."""
    last, since, end = fn(), time.monotonic(), time.monotonic() + timeout
    while time.monotonic() < end:
        time.sleep(0.2)
        v = fn()
        if v != last:
            last, since = v, time.monotonic()
        elif time.monotonic() - since >= quiet:
            return v
    return last


def rss_mb(pids):
    total = 0
    for p in pids:
        try:
            for line in open(f"/proc/{p}/status"):
                if line.startswith("VmRSS:"):
                    total += int(line.split()[1])
        except OSError:
            pass
    return total / 1024


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--routers", type=int, default=50)
    ap.add_argument("--seed", type=int, default=1)
    args = ap.parse_args()
    reason = netlab.can_run()
    if reason:
        sys.exit(f"bench topology: {reason}")
    routers, links, x, y = graph(args.routers, args.seed)
    topo = {"routers": routers, "links": links,
            "servers": {"sx": {"router": x, "content": NAME, "load": 5}},
            "clients": {"sy": {"router": y}},       # Y's server, announced later
            # one route per name for inrpd: it picks among ranked routes by
            # RTT and load, not path length, and may send a query back along
            # a longer alternate (see docs/BENCHMARKS.md)
            "nbrpd": {"hold-time": "90s", "max-routes": "1"},
            "bird": {"poll-interval": "1s", "unreachable-delay": "5s"}}
    t = time.monotonic()
    lab = netlab.Lab(topo)
    for r in lab.routers.values():
        topo.setdefault("bird_extra", {})[r.name] = bench_bird_config(lab, r, r.name == x)
    dns_probes, bird_probes = {}, {}
    try:
        lab.up(timeout=300)
        up_s = time.monotonic() - t
        print(f"{args.routers} routers, {len(links)} links, ISPs {sorted(set(v['isp'] for v in routers.values()))}; "
              f"X={x} Y={y}; up in {up_s:.1f} s", file=sys.stderr)
        sx, sy = lab.hosts["sx"].addr, lab.hosts["sy"].addr
        names = list(lab.routers)
        dns_probes = {r: DnsProbe(lab, r) for r in names}
        bird_probes = {r: BirdProbe(lab, r) for r in names}
        # the start: everyone answers with X's server, every BIRD has X's prefix
        converge(dns_probes, lambda a: a == [sx], 120)
        from_as = lambda asn: lambda a: a in (asn, "self")     # noqa: E731
        converge(bird_probes, from_as(ASN0 + names.index(x)), 120)
        nbrp0, bird0 = settle(lambda: nbrp_updates(lab)), settle(lambda: bird_updates(lab))

        # NBRP: X withdraws, Y announces
        rx, ry = lab.routers[x], lab.routers[y]
        rx.nbrpd.conf.write_text(rx.nbrpd.conf.read_text().replace(
            f'content "{NAME}" {{ server {sx} load 5; }}\n', ""))
        ry.nbrpd.conf.write_text(ry.nbrpd.conf.read_text() + f'content "{NAME}" {{ server {sy} load 5; }}\n')
        cmds = BackToBack([(rx.nbrpd.ctl, "reload"), (ry.nbrpd.ctl, "reload")])
        nbrp_ms = converge(dns_probes, lambda a: a == [sy], t0=cmds.t0)
        nbrp_interval = converge.interval_ms
        for r, out in zip((rx, ry), cmds.join()):
            if not re.search(r"^0\d{3} ", out, re.M):
                raise RuntimeError(f"nbrpd {r.name}: reload: {out}")
        reload_ms = (cmds.done - cmds.t0) * 1000
        nbrp_upd = settle(lambda: nbrp_updates(lab)) - nbrp0

        # BGP: the prefix moves from X to Y
        cmds = BackToBack([(rx.bird_ctl, "disable borigin"), (ry.bird_ctl, "enable borigin")])
        bird_ms = converge(bird_probes, from_as(ASN0 + names.index(y)), t0=cmds.t0)
        bird_interval = converge.interval_ms
        for r, out in zip((rx, ry), cmds.join()):
            if "abled" not in out:
                raise RuntimeError(f"BIRD {r.name}: {out}")
        bird_upd = settle(lambda: bird_updates(lab)) - bird0

        pids = [d.proc.pid for r in lab.routers.values() for d in (r.bird, r.nbrpd, r.inrpd)]
        result = {"routers": args.routers, "links": len(links), "seed": args.seed,
                  "nbrp_converge_ms": round(nbrp_ms), "nbrp_updates_total": nbrp_upd,
                  "bird_converge_ms": round(bird_ms), "bird_updates_total": bird_upd,
                  "nbrp_reload_ms": round(reload_ms, 1), "nbrp_poll_interval_ms": round(nbrp_interval),
                  "bird_poll_interval_ms": round(bird_interval),
                  "rss_mb_per_router": round(rss_mb(pids) / args.routers, 1),
                  "up_s": round(up_s, 1)}
    finally:
        for p in list(dns_probes.values()) + list(bird_probes.values()):
            p.close()
        errors = lab.close()
        for e in errors:
            print(e[:2000], file=sys.stderr)
    print(json.dumps(result))


if __name__ == "__main__":
    main()
