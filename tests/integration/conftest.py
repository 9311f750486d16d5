"""Fixtures that run real inrpd processes on loopback.

    def test_something(inrpd_factory):
        d = inrpd_factory('route "x.content" { server 127.0.0.9; }')
        r = d.udp("x.content", "A")

inrpd_factory(body, ...) writes a config (a `listen` line for a fresh
127.0.0.x address and free port, a `workers` line, then `body`, which may
also be a function of (addr, port) returning the text; listen=False leaves
the listen lines to it), starts `inrpd -f -c FILE`,
waits until it answers a query, and returns an Inrpd handle.  Every daemon
started in a test is stopped at teardown, also when the test failed; a
daemon that does not exit cleanly (status 0) on SIGTERM fails the test, so
sanitizer reports at exit (leaks included) are caught.

The binary is $INRPD, or build/inrpd/inrpd under the repository root.

Every process a test starts carries CR_TEST_OWNER=PID:START (this pytest
process, its start time) in its environment: a run killed before its
teardown (CI's timeout) leaves its daemons behind, and the next run's
start kills those whose owner is gone (sweep_leftovers).
"""

import os
import pathlib
import random
import re
import signal
import socket
import subprocess
import time
from contextlib import nullcontext

import dns.exception
import dns.message
import dns.query
import dns.rcode
import pytest

REPO = pathlib.Path(__file__).resolve().parents[2]


def _become_subreaper():
    """inrpd without -f forks away from its parent; its daemon would be
    reparented to PID 1, which in a container or sandbox may never reap
    it.  As a subreaper, this process gets those orphans instead."""
    import ctypes
    PR_SET_CHILD_SUBREAPER = 36
    try:
        ctypes.CDLL(None, use_errno=True).prctl(PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0)
    except (OSError, AttributeError):
        pass


_become_subreaper()


def reap_orphans():
    """Reaps every exited child: daemons that forked away and came back
    to this process as orphans.  Only for tests with no Popen of their own
    still to be waited for, whose exit status this would swallow."""
    while True:
        try:
            pid, _ = os.waitpid(-1, os.WNOHANG)
        except ChildProcessError:
            return
        if pid == 0:
            return
def owner_tag(pid):
    """PID:START, START the process's start time: a recycled pid is another owner."""
    try:
        stat = pathlib.Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return None
    return f"{pid}:{stat.rsplit(')', 1)[1].split()[19]}"


OWNER = owner_tag(os.getpid())


def sweep_leftovers():
    """Kills the processes of test runs whose owner is gone; returns their pids."""
    killed = []
    for proc in pathlib.Path("/proc").iterdir():
        if not proc.name.isdigit() or int(proc.name) == os.getpid():
            continue
        try:
            env = (proc / "environ").read_bytes().split(b"\0")
        except OSError:
            continue
        tag = next((e[len(b"CR_TEST_OWNER="):].decode() for e in env if e.startswith(b"CR_TEST_OWNER=")), None)
        if tag is None or owner_tag(tag.split(":")[0]) == tag:
            continue
        try:
            os.kill(int(proc.name), signal.SIGKILL)
            killed.append(int(proc.name))
        except ProcessLookupError:
            pass
    return killed


def pytest_sessionstart(session):
    sweep_leftovers()


def pytest_configure(config):
    config.addinivalue_line("markers", "slow: minutes long; scripts/test runs these only with --slow")


INRPD = os.environ.get("INRPD", str(REPO / "build" / "inrpd" / "inrpd"))
START_TIMEOUT = 15.0    # generous: sanitizer builds start slowly
STOP_TIMEOUT = 15.0

# In a sanitizer build, any report makes inrpd exit non-zero (UBSan only
# warns by default), which fails the test at teardown.
ENV = dict(os.environ, CR_TEST_OWNER=OWNER)
ENV.setdefault("UBSAN_OPTIONS", "halt_on_error=1:print_stacktrace=1")
ENV.setdefault("ASAN_OPTIONS", "detect_leaks=1:abort_on_error=0")


def wait_for(cond, timeout, what, interval=0.01):
    """Polls cond() until it returns a true value; fails after timeout seconds."""
    deadline = time.monotonic() + timeout
    while True:
        value = cond()
        if value:
            return value
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out after {timeout}s waiting for {what}")
        time.sleep(interval)


# Below the kernel's ephemeral range (ip_local_port_range, 32768-60999 by
# default): a port picked for a daemon cannot be taken by another process's
# outgoing socket (a forwarding engine, a client) before the daemon binds
# it, and no stray datagram from such a socket comes from it.
TEST_PORTS = (20000, 32767)
# pytest-xdist's workers (scripts/test runs two) each pick from their own
# share of the range, so two tests never pick the same port.
if os.environ.get("PYTEST_XDIST_WORKER_COUNT"):
    _n = int(os.environ["PYTEST_XDIST_WORKER_COUNT"])
    _i = int(os.environ.get("PYTEST_XDIST_WORKER", "gw0")[2:])
    _share = (TEST_PORTS[1] - TEST_PORTS[0] + 1) // _n
    TEST_PORTS = (TEST_PORTS[0] + _i * _share, TEST_PORTS[0] + (_i + 1) * _share - 1)


_handed_out = set()


def free_port(addr):
    """A port free for both UDP and TCP on addr right now, and never handed
    out before by this process: two ports asked for one after the other
    (a router's NBRP and DNS ports) are bound only later, and were once the
    same (nbrpd: address already in use)."""
    for _ in range(200):
        port = random.randint(*TEST_PORTS)
        if (addr, port) in _handed_out:
            continue
        family = socket.AF_INET6 if ":" in addr else socket.AF_INET
        with socket.socket(family, socket.SOCK_STREAM) as t, \
                socket.socket(family, socket.SOCK_DGRAM) as u:
            try:
                t.bind((addr, port))
                u.bind((addr, port))
            except OSError:
                continue
        _handed_out.add((addr, port))
        return port
    raise RuntimeError("no free port")


def tcp_listeners(pid):
    """The (address, port) of every listening TCP socket the process holds,
    from /proc: what it listens on, whether or not a client could connect."""
    import ipaddress
    inodes = set()
    for fd in pathlib.Path(f"/proc/{pid}/fd").iterdir():
        try:
            link = os.readlink(fd)
        except OSError:
            continue
        if link.startswith("socket:["):
            inodes.add(link[8:-1])
    found = set()
    for table in ("tcp", "tcp6"):
        for line in pathlib.Path(f"/proc/{pid}/net/{table}").read_text().splitlines()[1:]:
            f = line.split()
            if f[3] != "0A" or f[9] not in inodes:         # 0A: LISTEN
                continue
            hexaddr, hexport = f[1].split(":")
            raw = bytes.fromhex(hexaddr)
            # /proc prints the address as 32-bit words in host (little-endian) order
            raw = b"".join(raw[i:i + 4][::-1] for i in range(0, len(raw), 4))
            found.add((str(ipaddress.ip_address(raw)), int(hexport, 16)))
    return found


def loopback_addr():
    """A 127.0.0.x address other than 127.0.0.1, to keep tests apart."""
    return f"127.0.0.{random.randint(2, 250)}"


class Daemon:
    """What inrpd and nbrpd handles share: the process, its log, stopping."""

    label = "daemon"
    wrap = ()                   # a command to run it under (ip netns exec NS)
    proc = None
    killed = False              # by the test, on purpose
    _log = None

    def log(self):
        try:
            return self.logfile.read_text(errors="replace")
        except FileNotFoundError:
            return ""

    def wait_log(self, pattern, timeout=10.0, start=0):
        """Waits until the log (from offset start) matches the regex."""
        rx = re.compile(pattern)
        return wait_for(lambda: rx.search(self.log()[start:]), timeout, f"log line /{pattern}/")

    def signal(self, sig):
        self.proc.send_signal(sig)

    def stop(self):
        """SIGTERM, then wait; returns the exit status.  Kills if it hangs."""
        if self.proc is None:
            return None
        if self.proc.poll() is None:
            self.proc.send_signal(signal.SIGTERM)
            try:
                self.proc.wait(timeout=STOP_TIMEOUT)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()
                raise AssertionError(f"{self.label} did not stop on SIGTERM:\n{self.log()}")
            finally:
                self._close_log()
        self._close_log()
        return self.proc.returncode

    def _close_log(self):
        if self._log and not self._log.closed:
            self._log.close()

    def kill(self):
        """SIGKILL, on purpose: teardown does not count it as a failure."""
        if self.proc is not None and self.proc.poll() is None:
            self.killed = True
            self.proc.kill()
            self.proc.wait()


def stop_all(started, ignore=lambda d: False):
    """Teardown: stops every daemon; fails the test if one did not exit 0
    (sanitizer reports included), unless it was killed on purpose."""
    errors = []
    for d in started:
        try:
            rc = d.stop()
        except AssertionError as e:
            errors.append(str(e))
            continue
        finally:
            d.kill()
        if rc not in (None, 0) and not d.killed and not ignore(d):
            errors.append(f"{d.label} exited with {rc}:\n{d.log()}")
    if errors:
        pytest.fail("\n".join(errors))


class Inrpd(Daemon):
    label = "inrpd"

    def __init__(self, tmp_path, name):
        self.dir = tmp_path / name
        self.dir.mkdir()
        self.conf = self.dir / "inrpd.conf"
        self.logfile = self.dir / "inrpd.log"
        self.proc = None
        self.killed = False             # by the test, on purpose
        self.addr = None
        self.port = None

    # ---- process ----

    def write_config(self, body, listen=True, workers=2):
        """body: config text, or a function (addr, port) -> text."""
        if callable(body):
            body = body(self.addr, self.port)
        text = ""
        if listen:
            text += f"listen {self.addr} port {self.port};\n"
        if workers:
            text += f"workers {workers};\n"
        text += body
        self.conf.write_text(text)

    def start(self, body, listen=True, workers=2, args=()):
        self.write_config(body, listen, workers)
        self._log = open(self.logfile, "ab")
        self.proc = subprocess.Popen(
            [*self.wrap, INRPD, "-f", "-c", str(self.conf), *args],
            stdin=subprocess.DEVNULL, stdout=self._log, stderr=self._log, env=ENV,
            start_new_session=True)
        self.wait_ready()

    def wait_ready(self):
        def answers():
            if self.proc.poll() is not None:
                raise AssertionError(
                    f"inrpd exited with {self.proc.returncode} during startup:\n{self.log()}")
            try:
                q = dns.message.make_query("ready.check.invalid", "A")
                # a datagram from anywhere else is not our daemon's answer
                with self.socket() as s:
                    dns.query.udp(q, self.addr, port=self.port, timeout=0.1, ignore_unexpected=True,
                                  sock=s)
                return True
            except (dns.exception.Timeout, OSError):
                return False
        wait_for(answers, START_TIMEOUT, f"inrpd on {self.addr}:{self.port} to answer")

    def reload(self, body, listen=True, workers=2):
        """Writes a new config and sends SIGHUP; returns the log offset before it."""
        mark = len(self.log())
        self.write_config(body, listen, workers)
        self.signal(signal.SIGHUP)
        return mark

    # ---- queries ----

    def socket(self):
        """The UDP socket to ask from (a context); None: dnspython makes one."""
        return nullcontext(None)

    def udp(self, name, rdtype="A", timeout=2.0, **kw):
        q = dns.message.make_query(name, rdtype, **kw)
        with self.socket() as s:
            return dns.query.udp(q, self.addr, port=self.port, timeout=timeout, sock=s)

    def tcp(self, name, rdtype="A", timeout=2.0, **kw):
        q = dns.message.make_query(name, rdtype, **kw)
        return dns.query.tcp(q, self.addr, port=self.port, timeout=timeout)

    def udp_raw(self, wire, timeout=2.0):
        """Sends raw bytes; returns the raw response or None on timeout."""
        with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as s:
            s.settimeout(timeout)
            s.sendto(wire, (self.addr, self.port))
            try:
                return s.recv(65535)
            except socket.timeout:
                return None


@pytest.fixture
def inrpd_factory(tmp_path):
    """Starts inrpd daemons for one test: factory(body, **kw) -> Inrpd."""
    started = []

    def start(body, listen=True, workers=2, args=(), addr=None, port=None):
        """addr and port: where it listens (body then has the listen line)."""
        last = None
        for attempt in range(5):       # a port can be taken between probe and bind
            d = Inrpd(tmp_path, f"inrpd{len(started)}-{attempt}")
            d.addr = addr or loopback_addr()
            d.port = port or free_port(d.addr)
            started.append(d)
            try:
                d.start(body, listen=listen, workers=workers, args=args)
                return d
            except AssertionError as e:
                if "in use" not in d.log():
                    raise
                last = e
        raise last

    yield start
    stop_all(started, ignore=lambda d: "in use" in d.log())


def run_inrpd(*args, timeout=30):
    """Runs the inrpd binary to completion (e.g. -t); returns CompletedProcess."""
    return subprocess.run([INRPD, *args], stdin=subprocess.DEVNULL, capture_output=True,
                          text=True, timeout=timeout, env=ENV)


NBRPD = os.environ.get("NBRPD", str(pathlib.Path(INRPD).parents[1] / "nbrpd" / "nbrpd"))
NBRC = str(pathlib.Path(NBRPD).parent / "nbrc")
UPDGEN = str(pathlib.Path(NBRPD).parents[1] / "updgen" / "nbrp-updgen")


def _sanitized(path):
    try:
        with open(path, "rb") as f:
            return b"__asan_init" in f.read()
    except OSError:
        return False


# ASan+UBSan builds run several times slower: tests that move big tables use smaller ones there
SANITIZED = _sanitized(NBRPD)


def rss_kib(pid):
    with open(f"/proc/{pid}/status") as f:
        for line in f:
            if line.startswith("VmRSS:"):
                return int(line.split()[1])
    return 0


class Nbrpd(Daemon):
    """One nbrpd process: config written by the test, control socket for nbrc."""

    def __init__(self, tmp_path, name):
        self.name = name
        self.label = f"nbrpd {name}"
        self.dir = tmp_path / f"nbrpd-{name}"
        self.dir.mkdir(exist_ok=True)
        self.conf = self.dir / "nbrpd.conf"
        self.ctl = self.dir / "nbrpd.ctl"
        self.logfile = self.dir / "nbrpd.log"
        self.proc = None
        self.killed = False

    def start(self, body):
        self.conf.write_text(f'control "{self.ctl}";\n' + body)
        self._log = open(self.logfile, "ab")
        self.proc = subprocess.Popen([*self.wrap, NBRPD, "-f", "-c", str(self.conf)], stdin=subprocess.DEVNULL,
                                     stdout=self._log, stderr=self._log, env=ENV,
            start_new_session=True)

        def ready():
            if self.proc.poll() is not None:
                raise AssertionError(f"nbrpd exited with {self.proc.returncode}:\n{self.log()}")
            return self.nbrc("show", "status").returncode == 0
        wait_for(ready, START_TIMEOUT, f"nbrpd {self.name} to answer on its control socket")

    def restart(self):
        self.start(self.conf.read_text().split("\n", 1)[1])

    def nbrc(self, *words):
        return subprocess.run([NBRC, "-s", str(self.ctl), *words], capture_output=True, text=True,
                              timeout=30, env=ENV)

    def json(self, *words):
        import json
        r = self.nbrc("--json", *words)
        assert r.returncode == 0, r.stderr
        return json.loads(r.stdout) if r.stdout.strip() else None

    def route(self, name):
        """The name's routes, best first, or None."""
        r = self.nbrc("--json", "show", "route", name)
        if r.returncode != 0:
            return None
        import json
        return json.loads(r.stdout)["routes"] or None     # only refused routes: none

    def peers(self):
        return {p["name"]: p for p in self.json("show", "peers")}


@pytest.fixture
def nbrpd_factory(tmp_path):
    """factory(name, body) -> a started Nbrpd; all are stopped at teardown
    and must exit with status 0 (sanitizer reports included)."""
    started = []

    def start(name, body):
        n = Nbrpd(tmp_path, name)
        started.append(n)
        n.start(body)
        return n
    yield start
    stop_all(started)


@pytest.fixture
def netlab():
    """factory(topology) -> a netlab.Lab that is up (tests/integration/netlab.py):
    routers in network namespaces with real BIRD, nbrpd and inrpd.  Every
    lab is removed at teardown; a daemon that did not exit 0 fails the test."""
    import netlab as nl
    nl.require()
    labs = []

    def start(topology):
        lab = nl.Lab(topology)
        labs.append(lab)
        return lab.up()
    yield start
    errors = [e for lab in labs for e in lab.close()]
    if errors:
        pytest.fail("\n".join(errors))
