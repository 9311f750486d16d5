"""The Debian packages (scripts/package) installed into a fresh Debian root
(mmdebstrap) booted by a real systemd (systemd-nspawn -b, with a network
namespace of its own: its daemons listen on its own loopback): the units
are enabled by the install, start as their own users with only
CAP_NET_BIND_SERVICE, answer a query routed by nbrpd, take a reload and a
restart, report healthy, log to the journal and go on purge; nbrpd's state-dir
/var/lib/nbrpd is writable under ProtectSystem=strict.

Slow (a package build, a root from the Debian archive, a boot): marked
slow, run once by `scripts/test --slow`.  CR_DEBS=DIR uses the .debs in DIR
instead of building them."""

import json
import os
import pathlib
import re
import shutil
import signal
import subprocess
import time

import pytest

from conftest import ENV, REPO, wait_for

pytestmark = pytest.mark.slow

SUITE = "bookworm"
PACKAGES = ["inrpd", "nbrpd", "nbrp-updgen"]
# the packages the archive gives a fresh root, kept between runs
APT_CACHE = REPO / "build-deb" / "apt-cache"

# what the test adds to the packaged configs before the first boot
NBRPD_EXTRA = """
state-dir "/var/lib/nbrpd";
aggregate "agg.test" {
	server 127.0.0.11 load 5;
	member "a.agg.test" "b.agg.test";
}
"""
INRPD_RELOADED = """
route "reload.test" { server 127.0.0.12; }
"""


def debs():
    """The .debs of CR_DEBS, or those scripts/package builds now."""
    where = os.environ.get("CR_DEBS")
    if not where:
        r = subprocess.run([str(REPO / "scripts" / "package")], capture_output=True, text=True, timeout=1200)
        assert r.returncode == 0, r.stdout + r.stderr
        where = r.stdout.strip().splitlines()[-1]
    found = {p: sorted(pathlib.Path(where).glob(f"{p}_*.deb")) for p in PACKAGES}
    assert all(len(v) == 1 for v in found.values()), found
    return [v[0] for v in found.values()]


def make_root(root, packages):
    APT_CACHE.mkdir(parents=True, exist_ok=True)
    cmd = ["mmdebstrap", "--variant=minbase", "--mode=root", "--skip=essential/unlink",
           "--include=" + ",".join(["systemd", "systemd-sysv", "dbus"] + [str(p) for p in packages]),
           "--hook-dir=/usr/share/mmdebstrap/hooks/file-mirror-automount",
           "--setup-hook=mkdir -p \"$1\"/var/cache/apt/archives/",
           f"--setup-hook=sync-in {APT_CACHE} /var/cache/apt/archives/",
           f"--customize-hook=sync-out /var/cache/apt/archives {APT_CACHE}",
           SUITE, str(root)]
    r = subprocess.run(cmd, capture_output=True, text=True, timeout=900)
    assert r.returncode == 0, r.stdout[-4000:] + r.stderr[-4000:]
    # the file-mirror hook's copies are not cached: they are ours, rebuilt each run
    for p in packages:
        (APT_CACHE / p.name).unlink(missing_ok=True)


def unmount_under(root):
    """Unmounts what a failed mmdebstrap left mounted in root (its hooks
    bind-mount the .debs), deepest first; True when nothing is left."""
    def mounts():
        return [line.split()[4] for line in pathlib.Path("/proc/self/mountinfo").read_text().splitlines()
                if line.split()[4].startswith(f"{root}/")]
    for path in sorted(mounts(), key=len, reverse=True):
        subprocess.run(["umount", path], capture_output=True, timeout=30)
    return not mounts()


def children(pid):
    out = []
    for task in pathlib.Path(f"/proc/{pid}/task").glob("*"):
        try:
            out += [int(c) for c in (task / "children").read_text().split()]
        except OSError:
            pass
    return out


class Machine:
    """A booted root; run() is a command in all its namespaces (nsenter)."""

    def __init__(self, root, log):
        self.root = root
        self.log = log
        self.proc = subprocess.Popen(
            ["systemd-nspawn", "--quiet", "--register=no", "--keep-unit", "--private-network",
             f"--machine=cr-test-{os.getpid()}",
             "-D", str(root), "-b"],
            stdin=subprocess.DEVNULL, stdout=log, stderr=subprocess.STDOUT, env=ENV, start_new_session=True)
        # the container's init: the child of nspawn that runs systemd (the first
        # child sets the container up, forks init and exits)
        self.leader = wait_for(self.init, 60, "the container's init", interval=0.1)

    def init(self):
        if self.proc.poll() is not None:
            self.log.flush()
            raise AssertionError(f"systemd-nspawn exited {self.proc.returncode}: "
                                 f"{(self.root.parent / 'console.log').read_text()[-3000:]}")
        for pid in children(self.proc.pid):
            try:
                if pathlib.Path(f"/proc/{pid}/comm").read_text().strip() == "systemd":
                    return pid
            except OSError:
                pass
        return None

    def run(self, *cmd, net_only=False, check=True, timeout=120):
        ns = ["--net"] if net_only else ["--all"]
        r = subprocess.run(["nsenter", "--target", str(self.leader), *ns, *cmd],
                           capture_output=True, text=True, timeout=timeout)
        if check:
            assert r.returncode == 0, f"{' '.join(cmd)}: {r.returncode}\n{r.stdout}{r.stderr}"
        return r

    def stop(self):
        if self.proc.poll() is None:
            self.proc.send_signal(signal.SIGTERM)        # nspawn: an orderly poweroff of the container
            try:
                self.proc.wait(timeout=60)
            except subprocess.TimeoutExpired:
                os.killpg(self.proc.pid, signal.SIGKILL)
                self.proc.wait(timeout=30)


@pytest.fixture
def machine(tmp_path):
    if os.geteuid() != 0:
        pytest.skip("not root: mmdebstrap and systemd-nspawn need root")
    for tool in ("mmdebstrap", "systemd-nspawn", "nsenter", "dig"):
        assert shutil.which(tool), f"{tool} is missing (scripts/setup installs it)"
    root = tmp_path / "root"
    packages = debs()
    started = time.monotonic()
    log = open(tmp_path / "console.log", "w")
    m = None
    try:
        make_root(root, packages)
        print(f"mmdebstrap: {time.monotonic() - started:.0f} s")
        with open(root / "etc/content-router/nbrpd.conf", "a") as f:
            f.write(NBRPD_EXTRA)
        m = Machine(root, log)
        # "offline" until the container's systemd is up; then --wait waits for the boot's end
        state = wait_for(lambda: m.run("systemctl", "is-system-running", "--wait", check=False,
                                       timeout=180).stdout.strip() not in ("", "offline") and
                         m.run("systemctl", "is-system-running", check=False).stdout.strip(),
                         180, "the container's boot", interval=0.5)
        assert state in ("running", "degraded"), m.run("systemctl", "--failed", check=False).stdout
        yield m
    finally:
        if m and m.proc.poll() is None:      # for a failure's report (pytest shows it then)
            print(m.run("journalctl", "--no-pager", "-n", "60", "-u", "inrpd", "-u", "nbrpd",
                        check=False).stdout)
        if m:
            m.stop()
        log.close()
        print(f"root, boot and test: {time.monotonic() - started:.0f} s")
        if unmount_under(root):
            shutil.rmtree(root, ignore_errors=True)


def query(m, name):
    """The A records inrpd on the container's loopback gives for name (dig +short)."""
    r = m.run("dig", "+short", "+time=2", "+tries=1", "-p", "5353", "@127.0.0.1", name, "A",
              net_only=True, check=False)
    return r.stdout.split() if r.returncode == 0 else None


def aggregate_version(m):
    """agg.test's version, defined here, both members stored without a store error."""
    text = m.run("nbrc", "--json", "show", "aggregates").stdout
    agg = next((a for a in json.loads(text) if a["name"] == "agg.test."), None)
    assert agg and agg["origin"] == "local" and agg["members"] == 2 and agg["snapshot_bytes"] > 0 and \
        agg["store_errors"] == 0 and not agg["read_only"], text
    return agg["version"]


def main_pid(m, unit):
    return int(m.run("systemctl", "show", "-P", "MainPID", unit).stdout)


def test_packages_boot_under_systemd(machine):
    m = machine
    for unit in ("inrpd", "nbrpd"):
        assert m.run("systemctl", "is-enabled", unit).stdout.strip() == "enabled"
    m.run("systemctl", "start", "inrpd", "nbrpd")

    # their own users, nbrpd in inrpd's group, only CAP_NET_BIND_SERVICE
    assert "inrpd" in m.run("id", "-nG", "nbrpd").stdout.split()
    for unit in ("inrpd", "nbrpd"):
        status = m.run("cat", f"/proc/{main_pid(m, unit)}/status").stdout
        uid = re.search(r"^Uid:\s+(\d+)", status, re.M).group(1)
        assert m.run("id", "-u", unit).stdout.strip() == uid
        assert re.search(r"^CapEff:\s+0*400$", status, re.M), status   # bit 10, CAP_NET_BIND_SERVICE

    # a static route, and nbrpd's content name over the FIB channel in /run/inrpd
    assert wait_for(lambda: query(m, "www.example.content") == ["127.0.0.10"], 30, "a static route",
                    interval=0.5)
    assert wait_for(lambda: query(m, "x.example.content") == ["127.0.0.10"], 60, "nbrpd's route in inrpd",
                    interval=0.5)
    # the aggregate stored in state-dir, nbrpd's own under ProtectSystem=strict
    version = aggregate_version(m)
    assert m.run("stat", "-c", "%U %a", "/var/lib/nbrpd").stdout.split() == ["nbrpd", "700"]
    m.run("inrpc", "show", "status")                    # the default control sockets
    m.run("nbrc", "show", "status")

    # reload: a new route in the conffile is answered, same process
    pids = {u: main_pid(m, u) for u in ("inrpd", "nbrpd")}
    with open(m.root / "etc/content-router/inrpd.conf", "a") as f:
        f.write(INRPD_RELOADED)
    m.run("systemctl", "reload", "inrpd", "nbrpd")
    assert wait_for(lambda: query(m, "reload.test") == ["127.0.0.12"], 30, "the reloaded route",
                    interval=0.5)
    assert pids == {u: main_pid(m, u) for u in ("inrpd", "nbrpd")}

    # restart: new processes, answering again, the aggregate read back from state-dir
    m.run("systemctl", "restart", "inrpd", "nbrpd")
    assert all(main_pid(m, u) not in (0, pids[u]) for u in pids)
    assert wait_for(lambda: query(m, "x.example.content") == ["127.0.0.10"], 60, "answers after restart",
                    interval=0.5)
    assert aggregate_version(m) == version              # read back from /var/lib/nbrpd
    for unit in ("inrpd", "nbrpd"):
        st = m.run("systemctl", "status", "--no-pager", unit)   # 0: active
        assert "active (running)" in st.stdout, st.stdout
        show = m.run("systemctl", "show", "-P", "NRestarts", unit).stdout.strip()
        assert show == "0", f"{unit} restarted on failure {show} times"

    # the journal has each daemon's start, reload and stop
    j = m.run("journalctl", "--no-pager", "-o", "cat", "-u", "inrpd").stdout
    assert re.search(r"inrpd \S+ started", j) and "reloaded /etc/content-router/inrpd.conf" in j \
        and "shutting down" in j, j
    j = m.run("journalctl", "--no-pager", "-o", "cat", "-u", "nbrpd").stdout
    assert re.search(r"nbrpd \S+ started", j) and "reloaded /etc/content-router/nbrpd.conf" in j, j

    # purge: the unit stopped, the conffile and the state gone
    m.run("dpkg", "--purge", "nbrpd")
    assert m.run("systemctl", "is-active", "nbrpd", check=False).stdout.strip() == "inactive"
    assert not (m.root / "etc/content-router/nbrpd.conf").exists()
    assert not (m.root / "var/lib/nbrpd").exists()
    assert wait_for(lambda: query(m, "www.example.content") == ["127.0.0.10"], 30, "inrpd without nbrpd",
                    interval=0.5)
