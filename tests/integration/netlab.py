"""A testbed of content routers over real IP routing: each router a Linux
network namespace with a real BIRD 2, an nbrpd following that BIRD over
its control socket, and an inrpd; content servers and clients in
namespaces of their own; all joined by veth pairs.

A topology is one structure (a dict, or the same as a TOML file):

    routers = { a = { isp = 65001 }, b = { isp = 65001 }, c = { isp = 65002 } }
    links   = [ ["a", "b", 10], ["b", "c"] ]      # ends, OSPF cost (default 10)
    servers = { sb = { router = "b", content = "svc.content", load = 5 } }
    clients = { ca = { router = "a" } }
    sessions = [ ["a", "c"] ]    # NBRP sessions; default: one per router link
    nbrpd = { hold-time = "30s" }                 # more nbrpd.conf statements
    bird  = { poll-interval = "200ms" }           # nbrpd's bird { } block
    nbrpd_extra = { a = "..." }; bird_extra = { a = "..." }   # text added to a router's configs

A router's ISP is its AS number (default 65000).  Inside an ISP the BIRDs
run OSPF over the links; a link between two ISPs is an eBGP session, and
its border routers pass what they learn over eBGP into OSPF (as external
routes; there is no iBGP, so an ISP is transit only where one router
borders both neighbours).  Every BIRD programs its namespace's kernel
table, so NBRP sessions and INRP queries run between the routers'
addresses.

Addresses, only inside the namespaces: router i is 192.0.2.(i+1)/32 on
its lo (BIRD's router id, nbrpd's and inrpd's address); link k, servers'
and clients' links included, is the /31 198.51.100.2k (then
203.0.113.0/24).  Interfaces are named to-PEER.

Names: every namespace of a run is nl<PID>x<RANDOM>-<NAME>, its files in
/tmp/netlab-<PID>x<RANDOM>, PID the owner process.  Lab() first removes
what a run whose owner is gone left behind (a killed test); close() removes
everything this run made, and runs at exit and on SIGTERM too.

    lab = Lab(topology).up()      # returns when OSPF/BGP routes, NBRP sessions are up
    lab.routers["a"].nbrpd.route("svc.content")
    lab.dig("ca", "svc.content")  # a client asks its router's inrpd
    lab.link_down("a", "b"); lab.set_cost("a", "b", 30); lab.kill_bird("a")
    lab.close()
"""

import atexit
import contextlib
import ctypes
import os
import pathlib
import random
import re
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
import tomllib

import dns.exception
import dns.message
import dns.query
import dns.rcode
import dns.rdatatype

from conftest import NBRPD, START_TIMEOUT, STOP_TIMEOUT, Daemon, Inrpd, Nbrpd, wait_for

PREFIX = "nl"
NS_RX = re.compile(rf"^{PREFIX}(\d+)x([0-9a-f]+)-")
NBRP_PORT, DNS_PORT = 1790, 53
DEFAULT_ISP = 65000
LINK_POOLS = ("198.51.100", "203.0.113")
BIRD_LINE = re.compile(rb"^(\d{4})([ -])", re.M)


# ---- namespaces, from this process ----

_libc = ctypes.CDLL(None, use_errno=True)
CLONE_NEWNET = 0x40000000


@contextlib.contextmanager
def netns(name):
    """Runs the block with this thread in namespace `name`: sockets
    created there stay in it."""
    with open("/proc/thread-self/ns/net") as home, open(f"/run/netns/{name}") as there:
        if _libc.setns(there.fileno(), CLONE_NEWNET) != 0:
            raise OSError(ctypes.get_errno(), f"setns {name}")
        try:
            yield
        finally:
            _libc.setns(home.fileno(), CLONE_NEWNET)


def ns_socket(name, family=socket.AF_INET, kind=socket.SOCK_DGRAM):
    with netns(name):
        s = socket.socket(family, kind)
    s.setblocking(False)            # as dnspython wants it
    return s


def sh(*args, check=True, input=None):
    r = subprocess.run(args, input=input, capture_output=True, text=True, timeout=60)
    if check and r.returncode != 0:
        raise RuntimeError(f"{' '.join(args)}: {r.stderr.strip()}")
    return r


def can_run():
    """Why the testbed cannot run here, or None."""
    if os.geteuid() != 0:
        return "not root: network namespaces need root"
    for tool in ("ip", "bird", "birdc"):
        if not shutil.which(tool):
            return f"{tool} is not installed (scripts/setup installs it)"
    return None


def require():
    """For a test: skips it when not root (the machine's choice), fails it
    when a tool scripts/setup installs is missing (ours)."""
    import pytest
    reason = can_run()
    if reason and os.geteuid() != 0:
        pytest.skip(reason)
    if reason:
        pytest.fail(reason)


def _alive(pid):
    """pid runs (a zombie, dead but not yet reaped, does not)."""
    try:
        stat = pathlib.Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return False
    return stat.rsplit(")", 1)[1].split()[0] != "Z"


def clean_leftovers():
    """Removes namespaces, their processes and files of runs whose owner
    is gone.  Returns the namespaces removed."""
    removed = []
    for line in sh("ip", "netns", "list").stdout.splitlines():
        ns = line.split()[0] if line.strip() else ""
        m = NS_RX.match(ns)
        if not m or _alive(int(m.group(1))):
            continue
        _remove_ns(ns)
        removed.append(ns)
    for d in pathlib.Path(tempfile.gettempdir()).glob("netlab-*"):
        m = re.match(r"netlab-(\d+)x[0-9a-f]+$", d.name)
        if m and not _alive(int(m.group(1))):
            shutil.rmtree(d, ignore_errors=True)
    return removed


def _remove_ns(ns):
    """Kills what runs inside, then deletes the namespace (its veths go with it)."""
    for _ in range(50):
        pids = [int(p) for p in sh("ip", "netns", "pids", ns, check=False).stdout.split()]
        if not pids:
            break
        for p in pids:
            with contextlib.suppress(ProcessLookupError):
                os.kill(p, signal.SIGKILL)
        time.sleep(0.02)     # the kernel tears the killed processes down
    sh("ip", "netns", "del", ns, check=False)


# ---- BIRD's control socket ----

def bird_reply_split(buf):
    """(the first whole reply of a BIRD control socket in buf, as text,
    and the bytes after it), or (None, buf) while it is not all there."""
    for m in BIRD_LINE.finditer(buf):
        if m.group(2) == b" ":
            end = buf.find(b"\n", m.start()) + 1
            if end == 0:
                break
            return buf[:end].decode(errors="replace"), buf[end:]
    return None, buf


def bird_cmd(path, command, timeout=5.0):
    """One command to BIRD; returns the reply's text (the greeting dropped)."""
    with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as s:
        s.settimeout(timeout)
        s.connect(str(path))
        buf = b""
        sent = False
        while True:
            chunk = s.recv(65536)
            if not chunk:
                raise ConnectionError(f"BIRD {path} closed")
            buf += chunk
            while True:
                reply, buf = bird_reply_split(buf)
                if reply is None:
                    break
                if not sent:            # the greeting
                    s.sendall(command.encode() + b"\n")
                    sent = True
                    continue
                return reply


def bird_route(path, addr, table=None):
    """`show route for ADDR all`: (reachable, text)."""
    cmd = f"show route for {addr}" + (f" table {table}" if table else "") + " all"
    try:
        text = bird_cmd(path, cmd)
    except OSError:
        return False, ""
    return ("unicast" in text and ("\tvia " in text or "\tdev " in text)), text


# ---- the topology ----

def load_topology(src):
    """A dict as it is, a path read as TOML."""
    if isinstance(src, dict):
        return src
    with open(src, "rb") as f:
        return tomllib.load(f)


class Node:
    def __init__(self, lab, name, kind):
        self.lab, self.name, self.kind = lab, name, kind
        self.ns = f"{lab.tag}-{name}"
        self.dir = lab.dir / name
        self.dir.mkdir()
        self.ifaces = {}            # peer node name -> (iface, our address, their address, link)


class Router(Node):
    def __init__(self, lab, name, index, spec):
        super().__init__(lab, name, "router")
        self.addr = f"192.0.2.{index + 1}"
        self.isp = int(spec.get("isp", DEFAULT_ISP))
        self.bird_ctl = self.dir / "bird.ctl"
        self.bird_conf = self.dir / "bird.conf"
        self.fib = self.dir / "inrpd.fib"
        self.bird = None
        self.inrpd = None
        self.nbrpd = None
        self.peers = []             # NBRP peers (Router)
        self.content = []           # (server name, content, load)

    # what BIRD says about an address
    def route(self, addr, table=None):
        return bird_route(self.bird_ctl, addr, table)

    def birdc(self, command):
        return bird_cmd(self.bird_ctl, command)


class Link:
    def __init__(self, a, b, cost, net):
        self.a, self.b, self.cost = a, b, cost
        self.net = net              # the /31's first address; a gets it, b the next
        self.prepend = {}           # router name -> extra copies of its AS on eBGP export


class Bird(Daemon):
    label = "bird"

    def __init__(self, router):
        self.router = router
        self.label = f"bird {router.name}"
        self.logfile = router.dir / "bird.log"
        self.proc = None
        self.killed = False


class LabInrpd(Inrpd):
    """inrpd in a router's namespace, asked through sockets made there."""

    def __init__(self, router):
        super().__init__(router.dir, "inrpd")
        self.router = router
        self.addr, self.port = router.addr, DNS_PORT
        self.label = f"inrpd {router.name}"
        self.wrap = ("ip", "netns", "exec", router.ns)

    def socket(self):
        return ns_socket(self.router.ns)


class LabNbrpd(Nbrpd):
    def __init__(self, router):
        super().__init__(router.dir, router.name)
        self.wrap = ("ip", "netns", "exec", router.ns)


class Lab:
    def __init__(self, topology, base_dir=None):
        reason = can_run()
        if reason:
            raise OSError(reason)
        self.topo = load_topology(topology)
        clean_leftovers()
        self.tag = f"{PREFIX}{os.getpid()}x{random.randrange(1 << 24):06x}"
        self.dir = pathlib.Path(base_dir or tempfile.gettempdir()) / f"netlab-{self.tag[len(PREFIX):]}"
        self.dir.mkdir()
        self.namespaces = []
        self.closed = False
        atexit.register(self.close)
        if signal.getsignal(signal.SIGTERM) is signal.SIG_DFL:
            with contextlib.suppress(ValueError):           # not the main thread
                signal.signal(signal.SIGTERM, _sigterm)
        self._build_model()

    # ---- the model: names, addresses, configs ----

    def _build_model(self):
        t = self.topo
        self.routers = {n: Router(self, n, i, spec or {}) for i, (n, spec) in enumerate(t["routers"].items())}
        if len(self.routers) > 254:
            raise ValueError("at most 254 routers (192.0.2.0/24)")
        self.hosts = {}             # servers and clients: name -> Node
        self.links = []
        for spec in t.get("links", []):
            a, b = spec[0], spec[1]
            self._link(self.routers[a], self.routers[b], int(spec[2]) if len(spec) > 2 else 10)
        for kind in ("servers", "clients"):
            for name, spec in t.get(kind, {}).items():
                if name in self.routers or name in self.hosts:
                    raise ValueError(f"duplicate node name {name}")
                h = Node(self, name, kind[:-1])
                h.spec = spec
                self.hosts[name] = h
                link = self._link(self.routers[spec["router"]], h, 10)
                h.addr = self._addr(link, 1)
                h.router = self.routers[spec["router"]]
                if kind == "servers":
                    h.router.content.append((name, spec["content"], int(spec.get("load", 5))))
        sessions = t.get("sessions")
        if sessions is None:
            sessions = [(l.a.name, l.b.name) for l in self.links if isinstance(l.b, Router)]
        for a, b in sessions:
            self.routers[a].peers.append(self.routers[b])
            self.routers[b].peers.append(self.routers[a])

    def _link(self, a, b, cost):
        k = len(self.links)
        if k >= 128 * len(LINK_POOLS):
            raise ValueError("too many links for the documentation ranges")
        if b.name in a.ifaces:
            raise ValueError(f"two links between {a.name} and {b.name}")
        for n in (a, b):
            if len(f"to-{n.name}") > 15:
                raise ValueError(f"node name {n.name} too long for an interface name")
        link = Link(a, b, cost, f"{LINK_POOLS[k // 128]}.{2 * (k % 128)}")
        self.links.append(link)
        a.ifaces[b.name] = (f"to-{b.name}", self._addr(link, 0), self._addr(link, 1), link)
        b.ifaces[a.name] = (f"to-{a.name}", self._addr(link, 1), self._addr(link, 0), link)
        return link

    @staticmethod
    def _addr(link, end):
        pre, last = link.net.rsplit(".", 1)
        return f"{pre}.{int(last) + end}"

    def link(self, a, b):
        return self.routers[a].ifaces[b][3]

    def node(self, name):
        return self.routers.get(name) or self.hosts[name]

    def bird_config(self, r):
        t = self.topo
        ospf_ifaces, bgp = [], []
        for peer, (iface, mine, theirs, link) in r.ifaces.items():
            other = self.routers.get(peer)
            if other is None or other.isp == r.isp:         # hosts are stub networks of the IGP
                stub = " stub yes;" if other is None else ""
                ospf_ifaces.append(f'\t\tinterface "{iface}" {{ type ptp; cost {link.cost}; hello 1; '
                                   f'dead count 3; retransmit 2;{stub} }};\n')
            else:
                prepend = "".join(f" bgp_path.prepend({r.isp});" for _ in range(link.prepend.get(r.name, 0)))
                bgp.append(f"protocol bgp ebgp_{peer} {{\n\tlocal {mine} as {r.isp};\n"
                           f"\tneighbor {theirs} as {other.isp};\n\thold time 6; keepalive time 2;\n"
                           "\tconnect retry time 1; error wait time 1, 4;\n"
                           "\tipv4 { import all; export filter {\n"
                           "\t\tif source = RTS_OSPF_EXT2 then reject;\n"
                           f"\t\tif source ~ [RTS_DEVICE, RTS_OSPF, RTS_BGP] then {{{prepend} accept; }}\n"
                           "\t\treject; }; };\n}\n")
        ospf = ""
        if ospf_ifaces or bgp:
            ospf = ("protocol ospf v2 ospf1 {\n\tipv4 { import all; export where source = RTS_BGP; };\n"
                    '\tarea 0 {\n\t\tinterface "lo" { stub yes; };\n' + "".join(ospf_ifaces) + "\t};\n}\n")
        return (f"# {r.name}, ISP (AS) {r.isp}: written by netlab\n"
                f"router id {r.addr};\n"
                f'log "{r.dir}/bird.log" all;\n'
                'timeformat protocol iso long ms;\n'
                "protocol device { scan time 10; }\n"
                'protocol direct { ipv4; interface "lo"; }\n'
                # the namespace's own table, for NBRP and INRP; packets leave
                # from the router's address, which every router can reach
                "protocol kernel { ipv4 { export filter { if source = RTS_DEVICE then reject; "
                f"krt_prefsrc = {r.addr}; accept; }}; }}; scan time 10; }}\n"
                + ospf + "".join(bgp) + t.get("bird_extra", {}).get(r.name, ""))

    def nbrpd_config(self, r):
        t = self.topo
        opts = {"hold-time": "9s", "connect-retry": "200ms", "load-ms-per-hop": "50",
                **t.get("nbrpd", {})}
        # settle-time 0: the lab starts nbrpd once BIRD has its routes
        bird = {"poll-interval": "200ms", "timeout": "1s", "unreachable-delay": "1s", "settle-time": "0s",
                **t.get("bird", {})}
        body = (f'router-name "{r.name}";\nlisten {r.addr} port {NBRP_PORT};\n'
                f"inrp-address {r.addr} port {DNS_PORT};\n"
                f'fib-channel "{r.fib}";\n'
                + "".join(f"{k} {v};\n" for k, v in opts.items())
                + f'bird {{ socket "{r.bird_ctl}"; '
                + "".join(f"{k} {v}; " for k, v in bird.items()) + "}\n")
        for p in r.peers:
            body += f'peer "{p.name}" {{ address {p.addr} port {NBRP_PORT}; }}\n'
        for server, content, load in r.content:
            body += f'content "{content}" {{ server {self.hosts[server].addr} load {load}; }}\n'
        return body + t.get("nbrpd_extra", {}).get(r.name, "")

    # ---- bringing it up ----

    def up(self, timeout=60.0):
        try:
            self._namespaces()
            for r in self.routers.values():
                self.start_bird(r.name)
            self.wait_routes(timeout)
            for r in self.routers.values():
                r.inrpd = LabInrpd(r)
                # its customers: the hosts behind it, and the router itself
                # (tools run in its namespace); other routers prove their
                # addresses with DNS cookies
                acl = "".join(f"allow-recursion {a}/32;\n" for a in
                              [r.addr] + [h.addr for h in self.hosts.values() if h.router is r])
                r.inrpd.start(f'fib-channel "{r.fib}";\nfib-grace-time 30s;\ncontrol "{r.dir}/inrpd.ctl";\n' + acl,
                              workers=1)
            for r in self.routers.values():
                r.nbrpd = LabNbrpd(r)
                r.nbrpd.start(self.nbrpd_config(r))
            self.wait_sessions(timeout)
        except BaseException:
            self.close()
            raise
        return self

    def _namespaces(self):
        nodes = [*self.routers.values(), *self.hosts.values()]
        for n in nodes:
            sh("ip", "netns", "add", n.ns)
            self.namespaces.append(n.ns)
        batch = [f"link add {l.a.ifaces[l.b.name][0]} netns {l.a.ns} type veth "
                 f"peer name {l.b.ifaces[l.a.name][0]} netns {l.b.ns}" for l in self.links]
        sh("ip", "-batch", "-", input="\n".join(batch) + "\n")
        for n in nodes:
            cmds = ["link set lo up"]
            if n.kind == "router":
                cmds.append(f"addr add {n.addr}/32 dev lo")
            for iface, mine, theirs, _ in n.ifaces.values():
                cmds += [f"addr add {mine}/31 dev {iface}", f"link set {iface} up"]
            if n.kind != "router":
                cmds.append(f"route add default via {n.ifaces[n.router.name][2]}")
            sh("ip", "-n", n.ns, "-batch", "-", input="\n".join(cmds) + "\n")
            if n.kind == "router":
                with netns(n.ns), open("/proc/sys/net/ipv4/ip_forward", "w") as f:
                    f.write("1\n")     # this namespace's own, off in a new one

    def start_bird(self, name):
        r = self.routers[name]
        r.bird_conf.write_text(self.bird_config(r))
        b = r.bird = Bird(r)
        b._log = open(r.dir / "bird.out", "ab")
        b.proc = subprocess.Popen(["ip", "netns", "exec", r.ns, "bird", "-f", "-c", str(r.bird_conf),
                                   "-s", str(r.bird_ctl)],
                                  stdin=subprocess.DEVNULL, stdout=b._log, stderr=b._log,
                                  start_new_session=True)     # Ctrl-C is for us, not for them

        def answers():
            if b.proc.poll() is not None:
                raise AssertionError(f"bird {name} exited with {b.proc.returncode}:\n"
                                     f"{(r.dir / 'bird.out').read_text()}{b.log()}")
            try:
                return "BIRD" in bird_cmd(r.bird_ctl, "show status")
            except OSError:
                return False
        wait_for(answers, START_TIMEOUT, f"bird {name} to answer")
        return b

    def kill_bird(self, name):
        self.routers[name].bird.kill()

    def wait_routes(self, timeout=30.0, routers=None):
        """Until each router's BIRD has a route to each of its NBRP peers
        and its servers: OSPF full and BGP established where it matters."""
        for r in (routers or self.routers.values()):
            for addr in [p.addr for p in r.peers] + [self.hosts[s].addr for s, _, _ in r.content]:
                wait_for(lambda: r.route(addr)[0], timeout, f"{r.name}'s BIRD to reach {addr}",
                         interval=0.05)

    def wait_sessions(self, timeout=30.0):
        for r in self.routers.values():
            want = {p.name for p in r.peers}
            wait_for(lambda: want <= {n for n, p in r.nbrpd.peers().items() if p["state"] == "Established"},
                     timeout, f"{r.name}'s NBRP sessions", interval=0.05)

    # ---- changing it ----

    def _set_link(self, a, b, up):
        iface = self.routers[a].ifaces[b][0] if a in self.routers else self.hosts[a].ifaces[b][0]
        sh("ip", "-n", self.node(a).ns, "link", "set", iface, "up" if up else "down")

    def link_down(self, a, b):
        """Takes a's end down; b's end loses its carrier."""
        self._set_link(a, b, False)

    def link_up(self, a, b):
        self._set_link(a, b, True)

    def reconfigure(self, name):
        """Writes the router's BIRD config again and has BIRD load it."""
        r = self.routers[name]
        r.bird_conf.write_text(self.bird_config(r))
        out = r.birdc("configure")
        if "Reconfigured" not in out and "Reconfiguration in progress" not in out:
            raise RuntimeError(f"birdc configure on {name}: {out}")

    def set_cost(self, a, b, cost):
        """A link's OSPF cost, on both ends, with `birdc configure`."""
        self.link(a, b).cost = cost
        self.reconfigure(a)
        self.reconfigure(b)

    def set_prepend(self, router, peer, n):
        """router's eBGP export to peer carries its AS n more times."""
        self.link(router, peer).prepend[router] = n
        self.reconfigure(router)

    # ---- asking ----

    def dig(self, client, name, rdtype="A"):
        """dig in the client's namespace, asking its router's inrpd: the
        addresses answered, or the rcode's name."""
        c = self.hosts[client]
        out = sh("ip", "netns", "exec", c.ns, "dig", "+tries=1", "+time=2", "+noall", "+answer",
                 "+comments", f"@{c.router.addr}", "-p", str(DNS_PORT), name, rdtype, check=False).stdout
        m = re.search(r"status: (\w+)", out)
        if not m:
            return None
        if m.group(1) != "NOERROR":
            return m.group(1)
        return sorted(line.split()[-1] for line in out.splitlines()
                      if line and not line.startswith(";") and line.split()[3:4] == [rdtype])

    def answer(self, router, name, timeout=2.0):
        """What the router's inrpd answers: addresses, or the rcode's name."""
        try:
            resp = self.routers[router].inrpd.udp(name, timeout=timeout)
        except dns.exception.Timeout:
            return "timeout"
        if resp.rcode() != dns.rcode.NOERROR:
            return dns.rcode.to_text(resp.rcode())
        return sorted(rd.address for rrset in resp.answer if rrset.rdtype == dns.rdatatype.A for rd in rrset)

    def path(self, router, name):
        routes = self.routers[router].nbrpd.route(name)
        return routes[0]["path"] if routes else None

    # ---- taking it down ----

    def close(self):
        """Stops every daemon (returns those that did not exit 0 on
        SIGTERM, with their logs), removes namespaces and files."""
        if self.closed:
            return []
        self.closed = True
        errors = []
        daemons = [d for r in self.routers.values() for d in (r.nbrpd, r.inrpd, r.bird) if d]
        for d in daemons:       # all at once: 100 routers stop in parallel
            if d.proc and d.proc.poll() is None:
                d.proc.send_signal(signal.SIGTERM)
        for d in daemons:
            if d.proc is None:
                continue
            try:
                rc = d.proc.wait(timeout=STOP_TIMEOUT)
            except subprocess.TimeoutExpired:
                errors.append(f"{d.label} did not stop on SIGTERM:\n{d.log()[-3000:]}")
                d.kill()
                continue
            finally:
                d._close_log()
            if rc != 0 and not d.killed:
                errors.append(f"{d.label} exited with {rc}:\n{d.log()[-3000:]}")
        for ns in self.namespaces:
            _remove_ns(ns)
        shutil.rmtree(self.dir, ignore_errors=True)
        atexit.unregister(self.close)
        return errors


def _sigterm(signum, frame):
    raise SystemExit(128 + signum)


# ---- by hand: scripts/netlab ----

def describe(lab):
    """What runs where, and how to ask it."""
    nbrc = pathlib.Path(NBRPD).parent / "nbrc"
    out = [f"{'node':<10} {'namespace':<24} {'address':<16} what"]
    for r in lab.routers.values():
        out.append(f"{r.name:<10} {r.ns:<24} {r.addr:<16} router, ISP (AS) {r.isp}; "
                   f"peers {', '.join(p.name for p in r.peers) or '-'}")
    for h in lab.hosts.values():
        what = f"server of {h.spec['content']}" if h.kind == "server" else "client"
        out.append(f"{h.name:<10} {h.ns:<24} {h.addr:<16} {what} at {h.router.name}")
    r = next(iter(lab.routers.values()))
    client = next((h for h in lab.hosts.values() if h.kind == "client"), None)
    name = next((h.spec["content"] for h in lab.hosts.values() if h.kind == "server"), "NAME")
    out += ["", "try:",
            f"  birdc -s {r.bird_ctl} show route",
            f"  {nbrc} -s {r.nbrpd.ctl} show route",
            f"  ip netns exec {(client or r).ns} dig +tries=1 @{(client.router if client else r).addr} -p {DNS_PORT} {name}",
            f"  ip -n {r.ns} link set {next(iter(r.ifaces.values()), ('IFACE',))[0]} down",
            f"logs and configs: {lab.dir}"]
    return "\n".join(out)


def failover(lab, client, router, peer, name):
    """For scripts/demo: the answer at client, then the link router-peer
    down and the answer again, with what BIRD and nbrpd say."""
    r = lab.routers[router]
    nbrc = pathlib.Path(NBRPD).parent / "nbrc"

    def show():
        print(f"$ ip netns exec {lab.hosts[client].ns} dig @{r.addr} {name}   # from client {client}")
        print(f"  -> {', '.join(lab.dig(client, name) or ['no answer'])}")
        print(f"$ nbrc show route {name}   # at {router}")
        out = subprocess.run([str(nbrc), "-s", str(r.nbrpd.ctl), "show", "route", name],
                             capture_output=True, text=True).stdout
        print("".join("  " + line + "\n" for line in out.splitlines()[1:]))
    wait_for(lambda: lab.path(router, name) == [peer], 30, f"{router} to route {name} via {peer}")
    want = [h.addr for h in lab.hosts.values() if h.kind == "server" and h.router.name == peer]
    wait_for(lambda: lab.dig(client, name) == want, 30, f"{client} to get {peer}'s server")
    show()
    print(f"$ ip -n {r.ns} link set {r.ifaces[peer][0]} down   # the link {router}-{peer} fails")
    lab.link_down(router, peer)
    wait_for(lambda: lab.path(router, name) not in (None, [peer]), 30, "the route to move")
    wait_for(lambda: lab.dig(client, name) not in (None, want), 30, "the answer to move")
    show()


def main(argv):
    import argparse
    ap = argparse.ArgumentParser(prog="scripts/netlab", description=__doc__.split("\n\n")[0])
    sub = ap.add_subparsers(dest="cmd", required=True)
    up = sub.add_parser("up", help="bring TOPOLOGY (a TOML file) up; Ctrl-C takes it down")
    up.add_argument("topology")
    sub.add_parser("down", help="remove what runs whose owner is gone left behind")
    fo = sub.add_parser("failover", help="bring TOPOLOGY up, show CLIENT's answer for NAME, "
                        "take the link ROUTER-PEER down, show it again, take it all down")
    for a in ("topology", "client", "router", "peer", "name"):
        fo.add_argument(a)
    args = ap.parse_args(argv)
    reason = can_run()
    if reason:
        print(f"netlab: {reason}", file=sys.stderr)
        return 1
    if args.cmd == "down":
        for ns in clean_leftovers():
            print(f"removed {ns}")
        return 0
    signal.signal(signal.SIGINT, signal.default_int_handler)     # also when started in the background
    lab = Lab(args.topology)
    if args.cmd == "failover":
        try:
            lab.up()
            failover(lab, args.client, args.router, args.peer, args.name)
        finally:
            errors = lab.close()
        for e in errors:
            print(e, file=sys.stderr)
        return 1 if errors else 0
    try:
        t = time.monotonic()
        lab.up()
        print(f"up in {time.monotonic() - t:.1f} s\n")
        print(describe(lab))
        print("\nCtrl-C takes it down.")
        signal.pause()
    except KeyboardInterrupt:
        pass
    finally:
        for e in lab.close():
            print(e, file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
