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
        for X's reply).  A round's time runs from the first reload to the
        moment the last router's inrpd answers with Y's server; its
        UPDATEs are those all routers sent for it (updates_out of every
        peer, before and after, once none is on its way: nbrp_quiet).
  bird: the same graph carries one IPv4 prefix over BGP: a table of its
        own in every BIRD, an eBGP session along every link (each router
        its own private AS), the prefix a static route at X, then disabled
        at X and enabled at Y (the same way, over BIRD's control sockets).
        A round's time runs from the first command to the moment the last
        router's best route comes from Y; its updates are the export
        updates and withdraws accepted by all those sessions.

A run makes --rounds (5) moves each way in turn, X to Y, Y to X, ...,
a move of the name by NBRP then of the prefix by BGP each time, so that
both meet the machine as it then is; nbrp_converge_ms,
nbrp_updates_total, bird_converge_ms and bird_updates_total are the
medians over the rounds (on two shared CPUs one move of either varies
by a factor of two), and the *_rounds lists are every round's.  Then as
many NBRP moves again, with nbrpd asked as BIRD is (`show route` over
its control socket, kept open): nbrp_rib_converge_ms, until the last
router's best route ends at the new origin; the difference from
nbrp_converge_ms is inrpd's data path under the polls.  And from each
NBRP move itself, nbrp_settled_ms: until the last change to any router's
inrpd routes, as inrpd stamped it (`show status`), read once the move
settled; no poll decides it, so it shows how much of nbrp_converge_ms is
the polls.  (BIRD's log stamps are not fine enough to set beside it:
nbrp_settled.)  nbrp_rde_settled_ms: the same from each nbrpd's own
stamp of its last best-route change (`show status`, last_best_change),
and nbrp_settled_by_router_rounds each router's, the order they settled
in.

Every router is polled on its own from the moment the commands went out
(their replies are read meanwhile; nbrp_reload_ms is when both reloads
had answered, the median), again 20 ms after its last answer:
inrpd by a DNS query (a UDP socket made in its namespace, kept open), BIRD
by `show route for` over a control connection kept open (nbrpd the same
way by `show route`).  A router counts
as converged at the moment its own answer showed the new origin (and
stayed so); the mean time between one router's answers
(nbrp_poll_interval_ms, bird_poll_interval_ms) bounds how late that can be
seen.  With answers 20 ms apart, that interval, not the protocols, sets
a round's time when both converge within it; nbrp_converge_polls and
bird_converge_polls (medians; *_rounds) count the answers it took, at
most, of any router to show it converged, 1 for the answer to the
question sent with the commands, so that a DNS answer's trip through
the data path does not count against NBRP where BIRD's probe is a
lookup in its own table.  nbrp_floor_ms and bird_floor_ms (medians;
*_rounds): the soonest the same answers could have shown a round
converged had the protocol been done at once, when the last router whose
first answer was not ok gave its second; a round at its floor says
nothing of the protocol but that it was done within one interval, and
there the two probes' latency decides.  rss_mb_per_router is BIRD +
nbrpd + inrpd.
The last line of output is one JSON object.
"""
import argparse
import functools
import json
import pathlib
import random
import re
import select
import socket
import statistics
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


def topology(n, seed):
    """The testbed of graph(n, seed) for netlab.Lab, and its X and Y: X
    serves NAME (sx), Y's server (sy) is announced by the moves.  The
    bench's own BGP table is added by main (bench_bird_config)."""
    routers, links, x, y = graph(n, seed)
    return {"routers": routers, "links": links,
            "servers": {"sx": {"router": x, "content": NAME, "load": 5}},
            "clients": {"sy": {"router": y}},       # Y's server, announced later
            # one route per name for inrpd: it picks among ranked routes by
            # RTT and load, not path length, and may send a query back along
            # a longer alternate (see docs/benchmarks/topology.md)
            "nbrpd": {"hold-time": "90s", "max-routes": "1"},
            "bird": {"poll-interval": "1s", "unreachable-delay": "5s"}}, x, y


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


class TableProbe(Control):
    """A daemon's table at one router, asked by one command over its
    control connection, kept open; answer(text) reads the reply."""
    resend = False              # a stream: the answer comes

    def __init__(self, path, command):
        super().__init__(path)
        self.command = command

    def send(self):
        super().send(self.command)

    def read(self):
        text = super().read()
        return None if text is None else self.answer(text)

    def close(self):
        self.sock.close()


class BirdProbe(TableProbe):
    """BIRD: `show route for` the bench prefix.  The answer: the last AS of
    the best route's path, "self" for the static route, or () for none."""

    def __init__(self, lab, r):
        super().__init__(lab.routers[r].bird_ctl, f"show route for {PROBE} table benchtab all")

    def answer(self, text):
        if "unicast" in text or "blackhole" in text:
            if "[borigin" in text.split("\n", 2)[1]:
                return "self"
            m = re.search(r"BGP\.as_path: ([\d ]+)", text)
            if m:
                return int(m.group(1).split()[-1])
        return ()               # no route: an answer all the same


class NbrpdProbe(TableProbe):
    """nbrpd: `show route` the name, as BirdProbe asks BIRD.  The answer:
    the origin of the best route (the end of its path; the router itself
    for its own content), or () for none."""

    def __init__(self, lab, r):
        super().__init__(lab.routers[r].nbrpd.ctl, f"show route {NAME}")
        self.name = r

    def answer(self, text):
        m = re.search(r"^\S*\s+\* ranked (?:via .*?path \[([^\]]*)\]|local content)", text, re.M)
        if not m:
            return ()
        return m.group(1).split()[-1] if m.group(1) else self.name


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
        self.t0, self.t0_wall = time.monotonic(), time.time()
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
    between one router's answers, the resolution of the result;
    converge.polls: how many answers it took, at most, of any router to
    show it ok (and stay so), 1 for the answer to the question sent at t0:
    the same for both protocols whatever each answer's latency.
    converge.floor_ms: the soonest these answers could have shown it, had
    the protocol been done the moment its commands went out: when the
    last router whose first answer was not ok gave its second."""
    t0 = t0 or time.monotonic()
    first, sent, next_at, gaps, last_answer = {}, {}, {}, [], {}
    late, second = set(), {}        # routers whose first answer was not ok; second answers
    answers = dict.fromkeys(probes, 0)
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
            answers[r] += 1
            if answers[r] == 1 and not ok(answer):
                late.add(r)
            elif answers[r] == 2:
                second[r] = when
            if ok(answer):
                first.setdefault(r, (when, answers[r]))
            else:
                first.pop(r, None)          # it moved away again: not converged
        if len(first) == len(probes):
            converge.interval_ms = sum(gaps) / len(gaps) * 1000 if gaps else 0
            converge.polls = max(n for _, n in first.values())
            done = max(when for when, _ in first.values())
            converge.floor_ms = (max((second[r] for r in late), default=done) - t0) * 1000
            return (done - t0) * 1000
    raise RuntimeError(f"not converged in {timeout}s: {sorted(set(probes) - set(first))[:10]}")


def nbrp_send_move(lab, a, b, servers):
    """a's nbrpd to stop originating NAME, b's to start: their configs
    written, `reload` sent to both, b's without waiting for a's reply.
    Returns the BackToBack (its t0_wall: the move's start)."""
    line = lambda r: f'content "{NAME}" {{ server {servers[r]} load 5; }}\n'     # noqa: E731
    ra, rb = lab.routers[a], lab.routers[b]
    ra.nbrpd.conf.write_text(ra.nbrpd.conf.read_text().replace(line(a), ""))
    rb.nbrpd.conf.write_text(rb.nbrpd.conf.read_text() + line(b))
    return BackToBack([(ra.nbrpd.ctl, "reload"), (rb.nbrpd.ctl, "reload")])


def nbrp_reloaded(a, b, cmds):
    """Raises unless both reloads of nbrp_send_move succeeded."""
    for r, out in zip((a, b), cmds.join()):
        if not re.search(r"^0\d{3} ", out, re.M):
            raise RuntimeError(f"nbrpd {r}: reload: {out}")


def nbrp_move(lab, probes, a, b, ok, servers):
    """The name moves from a to b: a's nbrpd stops originating it, b's
    starts (`reload` at both, b's sent without waiting for a's reply).
    ms: from the first reload to the answer that showed the last router
    ok() (inrpd answering with b's server, or nbrpd's best route ending
    at b)."""
    cmds = nbrp_send_move(lab, a, b, servers)
    ms = converge(probes, ok, t0=cmds.t0)
    interval, polls, floor = converge.interval_ms, converge.polls, converge.floor_ms
    nbrp_reloaded(a, b, cmds)
    return {"ms": ms, "polls": polls, "interval_ms": interval, "floor_ms": floor,
            "reload_ms": (cmds.done - cmds.t0) * 1000, "t0_wall": cmds.t0_wall}


def from_origin(names, r):
    """ok() for a BIRD probe: the best route comes from r (or is r's own)."""
    asn = ASN0 + names.index(r)
    return lambda ans: ans in (asn, "self")


def bird_move(lab, probes, a, b, ok):
    """The prefix moves from a to b: `disable borigin` at a, `enable
    borigin` at b, the same way.  ms: until the last router's best route
    has b's AS at the end of its path."""
    ra, rb = lab.routers[a], lab.routers[b]
    cmds = BackToBack([(ra.bird_ctl, "disable borigin"), (rb.bird_ctl, "enable borigin")])
    ms = converge(probes, ok, t0=cmds.t0)
    interval, polls, floor = converge.interval_ms, converge.polls, converge.floor_ms
    for r, out in zip((ra, rb), cmds.join()):
        if "abled" not in out:
            raise RuntimeError(f"BIRD {r.name}: {out}")
    return {"ms": ms, "polls": polls, "interval_ms": interval, "floor_ms": floor}


def nbrp_settled(lab, move):
    """ms from the first command to the last change to any router's inrpd
    routes, stamped by inrpd as it makes it (`show status`), read once the
    move settled: finer than converge()'s answers, and no trip through the
    data path; but when the routes stopped changing, not when an answer
    showed it.  A router none of whose routes changed (its next hop the
    same whatever the origin) is passed over.  BIRD has no such stamp: its
    log's is the time its loop took before it last slept, so a change made
    on waking can carry an earlier turn's time (here, stamps up to 20 ms
    before probe answers that still showed the old route).
    Also move["settled_by_router"] and move["rde_settled_ms"]: each
    router's settle moment as its nbrpd stamped it (nbrp_stamps), the
    order the routers settled in (scripts/bench sim --compare)."""
    last = {}
    for r in lab.routers.values():
        text = netlab.bird_cmd(r.dir / "inrpd.ctl", "show status json")
        when = json.loads(text[text.index("{"):text.rindex("}") + 1])["fib_channel"]["last_change"]
        if when and when >= move["t0_wall"]:
            last[r.name] = round((when - move["t0_wall"]) * 1000, 2)
    move["settled_by_router"] = nbrp_stamps(lab, move["t0_wall"])
    move["rde_settled_ms"] = max(move["settled_by_router"].values())
    return max(last.values())


def nbrp_stamps(lab, t0_wall):
    """{router: ms from t0_wall to the last time its nbrpd moved a best
    route} (`show status`'s last_best_change: the wall clock, which every
    namespace shares), for the routers that moved one since t0_wall.  The
    moment the RDE decided, not when its inrpd got a CPU to install it."""
    out = {}
    for r in lab.routers.values():
        when = r.nbrpd.json("show", "status")["last_best_change"]
        if when is not None and when >= t0_wall:
            out[r.name] = round((when - t0_wall) * 1000, 3)
    return out


def nbrp_quiet(lab, timeout=60):
    """Waits until no UPDATE is on its way or about to be: every session's
    UPDATEs out at one end equal those in at the other, and no counter
    moved between two such readings of all routers; returns the routers'
    UPDATEs out, summed.  (A router that read its last UPDATE in the first
    reading sends what it makes of it before the second.)"""
    end, last = time.monotonic() + timeout, None
    while True:
        peers = {r: lab.routers[r].nbrpd.peers() for r in lab.routers}
        now = {(r, q): (p["updates_out"], p["updates_in"]) for r, ps in peers.items() for q, p in ps.items()}
        owed = [(r, q) for (r, q), (out, _) in now.items() if (q, r) in now and out != now[q, r][1]]
        if not owed and now == last:
            return sum(out for out, _ in now.values())
        if time.monotonic() > end:
            raise RuntimeError(f"UPDATEs still on their way after {timeout}s: {owed[:10]}")
        last = None if owed else now


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
    ap.add_argument("--rounds", type=int, default=5,
                    help="moves of the name, each way in turn, for each protocol (default 5)")
    args = ap.parse_args()
    reason = netlab.can_run()
    if reason:
        sys.exit(f"bench topology: {reason}")
    topo, x, y = topology(args.routers, args.seed)
    routers, links = topo["routers"], topo["links"]
    t = time.monotonic()
    lab = netlab.Lab(topo)
    for r in lab.routers.values():
        topo.setdefault("bird_extra", {})[r.name] = bench_bird_config(lab, r, r.name == x)
    dns_probes, bird_probes, nbrpd_probes = {}, {}, {}
    try:
        lab.up(timeout=300)
        up_s = time.monotonic() - t
        print(f"{args.routers} routers, {len(links)} links, ISPs {sorted(set(v['isp'] for v in routers.values()))}; "
              f"X={x} Y={y}; up in {up_s:.1f} s", file=sys.stderr)
        servers = {x: lab.hosts["sx"].addr, y: lab.hosts["sy"].addr}
        names = list(lab.routers)
        dns_probes = {r: DnsProbe(lab, r) for r in names}
        bird_probes = {r: BirdProbe(lab, r) for r in names}
        # the start: everyone answers with X's server, every BIRD has X's prefix
        at_dns = lambda r: lambda ans: ans == [servers[r]]     # noqa: E731  ok() once r originates
        at_bird = lambda r: from_origin(names, r)               # noqa: E731
        at_rib = lambda r: lambda ans: ans == r                 # noqa: E731
        direction = lambda i: (x, y) if i % 2 == 0 else (y, x)  # noqa: E731
        converge(dns_probes, at_dns(x), 120)
        converge(bird_probes, at_bird(x), 120)
        bird_quiet = lambda lab: settle(lambda: bird_updates(lab))     # noqa: E731
        counts = {"nbrp": nbrp_quiet(lab), "bird": bird_quiet(lab)}
        rounds = {"nbrp": [], "bird": []}
        for i in range(args.rounds):
            a, b = direction(i)
            for proto, move, probes, at, quiet in (
                    ("nbrp", functools.partial(nbrp_move, servers=servers), dns_probes, at_dns, nbrp_quiet),
                    ("bird", bird_move, bird_probes, at_bird, bird_quiet)):
                r = move(lab, probes, a, b, at(b))
                now = quiet(lab)
                r["updates"], counts[proto] = now - counts[proto], now
                if proto == "nbrp":
                    r["settled_ms"] = nbrp_settled(lab, r)
                rounds[proto].append(r)
            n, g = rounds["nbrp"][-1], rounds["bird"][-1]
            print(f"round {i + 1}, {a} -> {b}: NBRP {n['ms']:.0f} ms (answer {n['polls']}, floor {n['floor_ms']:.0f}), "
                  f"{n['updates']} UPDATEs, routes settled at {n['settled_ms']:.1f} ms; "
                  f"BGP {g['ms']:.0f} ms (answer {g['polls']}, floor {g['floor_ms']:.0f}), {g['updates']} updates",
                  file=sys.stderr)

        # nbrpd's own tables, asked as BIRD's are: the same moves, after
        # the rounds above (asking both would load the data path's run)
        nbrpd_probes = {r: NbrpdProbe(lab, r) for r in names}
        rounds["nbrp_rib"] = []
        for i in range(args.rounds, 2 * args.rounds):
            a, b = direction(i)
            rounds["nbrp_rib"].append(nbrp_move(lab, nbrpd_probes, a, b, at_rib(b), servers))
            nbrp_quiet(lab)
        print(f"nbrpd's tables: {[round(r['ms']) for r in rounds['nbrp_rib']]} ms", file=sys.stderr)

        def med(proto, key):
            return statistics.median(r[key] for r in rounds[proto])

        pids = [d.proc.pid for r in lab.routers.values() for d in (r.bird, r.nbrpd, r.inrpd)]
        result = {"routers": args.routers, "links": len(links), "seed": args.seed, "rounds": args.rounds,
                  "nbrp_converge_ms": round(med("nbrp", "ms")), "nbrp_updates_total": med("nbrp", "updates"),
                  "bird_converge_ms": round(med("bird", "ms")), "bird_updates_total": med("bird", "updates"),
                  "nbrp_converge_ms_rounds": [round(r["ms"]) for r in rounds["nbrp"]],
                  "bird_converge_ms_rounds": [round(r["ms"]) for r in rounds["bird"]],
                  "nbrp_updates_rounds": [r["updates"] for r in rounds["nbrp"]],
                  "bird_updates_rounds": [r["updates"] for r in rounds["bird"]],
                  "nbrp_converge_polls": med("nbrp", "polls"), "bird_converge_polls": med("bird", "polls"),
                  "nbrp_converge_polls_rounds": [r["polls"] for r in rounds["nbrp"]],
                  "bird_converge_polls_rounds": [r["polls"] for r in rounds["bird"]],
                  "nbrp_floor_ms": round(med("nbrp", "floor_ms")), "bird_floor_ms": round(med("bird", "floor_ms")),
                  "nbrp_floor_ms_rounds": [round(r["floor_ms"]) for r in rounds["nbrp"]],
                  "bird_floor_ms_rounds": [round(r["floor_ms"]) for r in rounds["bird"]],
                  "nbrp_settled_ms": round(med("nbrp", "settled_ms"), 1),
                  "nbrp_settled_ms_rounds": [round(r["settled_ms"], 1) for r in rounds["nbrp"]],
                  "nbrp_rde_settled_ms": round(med("nbrp", "rde_settled_ms"), 1),
                  "nbrp_rde_settled_ms_rounds": [round(r["rde_settled_ms"], 1) for r in rounds["nbrp"]],
                  "nbrp_settled_by_router_rounds": [r["settled_by_router"] for r in rounds["nbrp"]],
                  "nbrp_rib_converge_ms": round(med("nbrp_rib", "ms")),
                  "nbrp_rib_converge_ms_rounds": [round(r["ms"]) for r in rounds["nbrp_rib"]],
                  "nbrp_reload_ms": round(med("nbrp", "reload_ms"), 1),
                  "nbrp_poll_interval_ms": round(med("nbrp", "interval_ms")),
                  "bird_poll_interval_ms": round(med("bird", "interval_ms")),
                  "rss_mb_per_router": round(rss_mb(pids) / args.routers, 1),
                  "up_s": round(up_s, 1)}
    finally:
        for p in [*dns_probes.values(), *bird_probes.values(), *nbrpd_probes.values()]:
            p.close()
        errors = lab.close()
        for e in errors:
            print(e[:2000], file=sys.stderr)
    print(json.dumps(result))


if __name__ == "__main__":
    main()
