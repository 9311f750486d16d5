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
        (both by `reload` on nbrpd's control socket, back to back).  nbrp_converge_ms runs from
        the reloads to the moment the last router's inrpd answers with Y's
        server; nbrp_updates_total is the UPDATEs all routers sent for it
        (updates_out of every peer, before and after, once they stay put).
  bird: the same graph carries one IPv4 prefix over BGP: a table of its
        own in every BIRD, an eBGP session along every link (each router
        its own private AS), the prefix a static route at X, then disabled
        at X and enabled at Y.  bird_converge_ms runs from the two birdc
        commands to the moment the last router's best route comes from Y;
        bird_updates_total is the export updates and withdraws accepted by
        all those sessions.

Both are polled in rounds, every 20 ms: inrpd by one DNS query to every
router at once (a UDP socket made in each namespace, kept open), BIRD by
one `show route for` after the other over its control socket; a router
counts as converged at the moment its own answer showed the new origin
(and stayed so).  The mean round time of each (nbrp_poll_round_ms,
bird_poll_round_ms) bounds how late that can be seen.  rss_mb_per_router
is BIRD + nbrpd + inrpd.
The last line of output is one JSON object.
"""
import argparse
import json
import pathlib
import random
import re
import select
import sys
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


class Poller:
    """Asks every router at once, over sockets kept open."""

    def __init__(self, lab):
        self.lab = lab
        self.dns = {r: netlab.ns_socket(lab.routers[r].ns) for r in lab.routers}

    def close(self):
        for s in self.dns.values():
            s.close()

    def inrpd_answers(self, timeout=0.1):
        """{router: ([addresses], when received)}; a router that did not
        answer within the timeout is left out (asked again next round)"""
        ids, out = {}, {}
        for r, s in self.dns.items():
            q = dns.message.make_query(NAME, "A")
            ids[q.id] = r
            try:
                s.sendto(q.to_wire(), (self.lab.routers[r].addr, netlab.DNS_PORT))
            except OSError:
                pass
        deadline = time.monotonic() + timeout
        socks = list(self.dns.values())
        while len(out) < len(ids) and time.monotonic() < deadline:
            ready, _, _ = select.select(socks, [], [], max(0, deadline - time.monotonic()))
            for s in ready:
                try:
                    m = dns.message.from_wire(s.recv(4096))
                except (OSError, Exception):
                    continue
                r = ids.get(m.id)
                if r:
                    out[r] = (sorted(rd.address for rr in m.answer if rr.rdtype == dns.rdatatype.A for rd in rr),
                              time.monotonic())
        return out

    def bird_best_as(self, r):
        """The last AS of the best route for the bench prefix at r, or None."""
        try:
            text = netlab.bird_cmd(self.lab.routers[r].bird_ctl, f"show route for {PROBE} table benchtab all")
        except OSError:
            return None
        if "unicast" in text or "blackhole" in text:
            if "[borigin" in text.split("\n", 2)[1]:
                return "self"
            m = re.search(r"BGP\.as_path: ([\d ]+)", text)
            if m:
                return int(m.group(1).split()[-1])
        return None


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


def converge(routers, done, timeout=60, t0=None):
    """Polls done() -> {router: (ok, when its answer came)} until every
    router is ok; returns ms from t0 (default now) to the answer that
    showed the last of them ok (and stayed ok)."""
    t0 = t0 or time.monotonic()
    first, last = {}, {}
    rounds = []
    while len(first) < len(routers) and time.monotonic() - t0 < timeout:
        t = time.monotonic()
        last = done()
        rounds.append(time.monotonic() - t)
        for r, (ok, when) in last.items():
            if ok and r not in first:
                first[r] = when
            elif not ok:
                first.pop(r, None)          # it moved away again: not converged
        time.sleep(0.02)
    if len(first) < len(routers):
        raise RuntimeError(f"not converged in {timeout}s: {sorted(set(routers) - set(first))[:10]}; "
                           f"last poll: {last}")
    converge.round_ms = sum(rounds) / len(rounds) * 1000     # the resolution
    return (max(first.values()) - t0) * 1000


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
    poller = None
    try:
        lab.up(timeout=300)
        up_s = time.monotonic() - t
        print(f"{args.routers} routers, {len(links)} links, ISPs {sorted(set(v['isp'] for v in routers.values()))}; "
              f"X={x} Y={y}; up in {up_s:.1f} s", file=sys.stderr)
        sx, sy = lab.hosts["sx"].addr, lab.hosts["sy"].addr
        poller = Poller(lab)
        names = list(lab.routers)
        # the start: everyone answers with X's server, every BIRD has X's prefix
        new_answer = lambda addr: {r: (a == [addr], t) for r, (a, t) in poller.inrpd_answers().items()}  # noqa: E731
        converge(names, lambda: new_answer(sx), 120)
        wait_bgp = lambda asn: {r: (poller.bird_best_as(r) in (asn, "self"), time.monotonic())  # noqa: E731
                                for r in names}
        converge(names, lambda: wait_bgp(ASN0 + names.index(x)), 120)
        nbrp0, bird0 = settle(lambda: nbrp_updates(lab)), settle(lambda: bird_updates(lab))

        # NBRP: X withdraws, Y announces
        rx, ry = lab.routers[x], lab.routers[y]
        rx.nbrpd.conf.write_text(rx.nbrpd.conf.read_text().replace(
            f'content "{NAME}" {{ server {sx} load 5; }}\n', ""))
        ry.nbrpd.conf.write_text(ry.nbrpd.conf.read_text() + f'content "{NAME}" {{ server {sy} load 5; }}\n')
        t0 = time.monotonic()
        for r in (rx, ry):      # over the control socket, as birdc below: no process to start
            out = netlab.bird_cmd(r.nbrpd.ctl, "reload")
            if not re.search(r"^0\d{3} ", out, re.M):
                raise RuntimeError(f"nbrpd {r.name}: reload: {out}")
        reload_ms = (time.monotonic() - t0) * 1000
        nbrp_ms = converge(names, lambda: new_answer(sy), t0=t0)
        nbrp_round = converge.round_ms
        nbrp_upd = settle(lambda: nbrp_updates(lab)) - nbrp0

        # BGP: the prefix moves from X to Y
        t0 = time.monotonic()
        rx.birdc("disable borigin")
        ry.birdc("enable borigin")
        bird_ms = converge(names, lambda: wait_bgp(ASN0 + names.index(y)), t0=t0)
        bird_round = converge.round_ms
        bird_upd = settle(lambda: bird_updates(lab)) - bird0

        pids = [d.proc.pid for r in lab.routers.values() for d in (r.bird, r.nbrpd, r.inrpd)]
        result = {"routers": args.routers, "links": len(links), "seed": args.seed,
                  "nbrp_converge_ms": round(nbrp_ms), "nbrp_updates_total": nbrp_upd,
                  "bird_converge_ms": round(bird_ms), "bird_updates_total": bird_upd,
                  "nbrp_reload_ms": round(reload_ms, 1), "nbrp_poll_round_ms": round(nbrp_round), "bird_poll_round_ms": round(bird_round),
                  "rss_mb_per_router": round(rss_mb(pids) / args.routers, 1),
                  "up_s": round(up_s, 1)}
    finally:
        if poller:
            poller.close()
        errors = lab.close()
        for e in errors:
            print(e[:2000], file=sys.stderr)
    print(json.dumps(result))


if __name__ == "__main__":
    main()
