"""The aggregate store under crashes and faults (docs/AGGREGATES.md, "On
disk"): nbrpd killed with SIGKILL at random moments while it fetches,
compacts and starts new histories reopens at a version at least the last
one it reported, and converges; a full state-dir (a small tmpfs) and a
read-only one refuse new versions, say so, and route on with the version
held; a second nbrpd on the same state-dir is refused.

Mounts happen in a private mount namespace of the nbrpd under test
(unshare -m), so nothing leaks on the host; the test enters it (nsenter)
to fill the disk.  CR_FULL_ATTACKS=1 kills 200 times instead of 20."""

import os
import random
import re
import shutil
import subprocess
import threading
import time

import pytest

from conftest import NBRPD, ENV, free_port, wait_for
import prom
from test_nbrpd import SERVER_FAR, answer, net  # noqa: F401  (net: a fixture)
from test_nbrpd_aggregates import AGG, agg_view, aggregate_block, routers_with_state, write_members

KILLS = 200 if os.environ.get("CR_FULL_ATTACKS") == "1" else 20

pytestmark = pytest.mark.skipif(os.geteuid() != 0, reason="mount namespaces need root")


def members(gen, n, period=5):
    """Version gen of the aggregate: each generation renames 1/period of the n members."""
    return [f"m{i}.t{(gen + i) // period}.example" for i in range(n)]


def not_older(a, b):
    """RFC 1982: serial a is b or newer."""
    return (a - b) % 2**32 < 2**31


def view(r):
    """What r's nbrpd reports of the aggregate, or None (not answering)."""
    try:
        return agg_view(r)
    except (AssertionError, ValueError, KeyError, IndexError, TypeError):
        return None


def version(r):
    """The version r's nbrpd reports stored, or None (none, or not answering)."""
    v = view(r)
    return v["version"] if v else None


def start_line(net, tmp_path, names, origin, n, more=None, period=5):
    defs = tmp_path / "hosted.names"
    write_members(defs, members(0, n, period))
    extra, _ = routers_with_state(tmp_path, names)
    for name, text in (more or {}).items():
        extra[name] += text
    rs = net(names, list(zip(names, names[1:])), content={origin: aggregate_block(defs)}, extra=extra)
    return rs, defs


def publish(origin, defs, gen, n, period=5):
    """The origin stores generation gen; its version, or None when it is down."""
    write_members(defs, members(gen, n, period))
    if origin.nbrpd.nbrc("reload").returncode != 0:
        return None
    return version(origin)


class Changer(threading.Thread):
    """Publishes a new generation at the origin every few tens of milliseconds."""

    def __init__(self, origin, defs, n, period):
        super().__init__(daemon=True)
        self.origin, self.defs, self.n, self.period = origin, defs, n, period
        self.gen = 0
        self.done = threading.Event()
        self.lock = threading.Lock()

    def run(self):
        while not self.done.is_set():
            with self.lock:
                self.gen += 1
                publish(self.origin, self.defs, self.gen, self.n, self.period)
            self.done.wait(random.uniform(0.03, 0.12))

    def stop(self):
        self.done.set()
        self.join()


def state_dir(tmp_path, name):
    return tmp_path / f"state-{name}"


def test_kill9_during_transfers_compactions_and_new_histories(net, tmp_path):
    """r1 - r2 (origin) - r3: r2 publishes a version every few tens of ms, each half
    of 20,000 members renamed (r1 and r3 fetch IXFRs, AXFRs when behind, and
    compact every other version).  r1 (mostly) or r2 is killed with SIGKILL at
    random moments, right after a poll of the version it reports; sometimes r1's
    state-dir is wiped, so the next fetch is a full one into an empty store (a new
    history).  After each restart the version read back is not older than the
    last one reported; at the end r1 and r3 (never killed) hold the origin's
    version and answer alike."""
    n, period = 20000, 2
    rs, defs = start_line(net, tmp_path, ["r1", "r2", "r3"], "r2", n, period=period)
    wait_for(lambda: version(rs["r1"]) == version(rs["r2"]) is not None, 60, "r1 to fetch the aggregate")
    changer = Changer(rs["r2"], defs, n, period)
    changer.start()
    rng = random.Random(os.environ.get("CR_SEED", "27"))
    stats = {"checked": 0, "wiped": 0, "origin": 0, "compactions": 0, "full": 0}
    try:
        for k in range(KILLS):
            victim = rs["r2"] if rng.random() < 0.2 else rs["r1"]
            if victim is rs["r2"]:
                changer.lock.acquire()      # no reload racing the restart
            acked, compactions = None, 0
            deadline = time.monotonic() + rng.uniform(0.0, 1.2)
            while True:
                v = view(victim)
                if v and v["version"] is not None:
                    acked, compactions = v["version"], v["compactions"]
                if time.monotonic() >= deadline:
                    break
            if victim is rs["r1"]:
                stats["compactions"] += compactions
            victim.nbrpd.kill()
            wipe = victim is rs["r1"] and rng.random() < 0.15
            if wipe:
                shutil.rmtree(state_dir(tmp_path, "r1"))
                stats["wiped"] += 1
            victim.nbrpd.killed = False
            victim.nbrpd.restart()
            if victim is rs["r2"]:
                stats["origin"] += 1
                changer.lock.release()
            after = version(victim)
            if acked is not None and not wipe:
                assert after is not None and not_older(after, acked), \
                    f"kill {k}: {victim.name} reported version {acked}, reopened at {after}"
                stats["checked"] += 1
    finally:
        changer.stop()
    final = publish(rs["r2"], defs, changer.gen + 1, n, period)
    assert final is not None
    for name in ("r1", "r3"):
        wait_for(lambda: version(rs[name]) == final, 120, f"{name} to converge to version {final}")
    gen = changer.gen + 1
    now, gone = members(gen, n, period), members(gen - period, n, period)
    for i in (0, 1, 7, n - 1):
        wait_for(lambda: answer(rs["r1"], now[i]) == answer(rs["r3"], now[i]) == [SERVER_FAR], 20,
                 f"{now[i]} answered at r1 and r3")
        assert answer(rs["r1"], gone[i]) == answer(rs["r3"], gone[i]) == "REFUSED"
    stats["full"] = rs["r1"].nbrpd.log().count(": AXFR")
    print(f"aggstore crash: {KILLS} kills, {stats}")
    # what the kills met: versions checked, compactions and full transfers at r1
    assert stats["checked"] >= KILLS // 2
    assert stats["compactions"] > 0 and stats["full"] > 0


NS = ("unshare", "-m", "--propagation", "private")


def in_namespace(pid, script):
    return subprocess.run(["nsenter", "-t", str(pid), "-m", "--", "sh", "-c", script],
                          capture_output=True, text=True, timeout=60)


def test_a_full_state_dir_refuses_the_version_and_routes_on(net, tmp_path):
    """r1's state-dir is a 2 MiB tmpfs that the test then fills: the next version
    r2 publishes is refused (ENOSPC) with the version held kept and answered, the
    error shown and counted; once space is freed, the retry stores it."""
    n = 5000
    metrics = free_port("127.0.0.1")
    rs, defs = start_line(net, tmp_path, ["r1", "r2"], "r2", n, {"r1": f"metrics 127.0.0.1 port {metrics};\n"})
    v0 = version(rs["r2"])
    r1 = rs["r1"].nbrpd
    r1.stop()
    sd = state_dir(tmp_path, "r1")
    r1.wrap = (*NS, "sh", "-c", 'mount -t tmpfs -o size=2m,mode=0700 tmpfs "$0" && exec "$@"', str(sd))
    r1.restart()
    wait_for(lambda: version(rs["r1"]) == v0, 30, "r1 to fetch into its tmpfs")
    wait_for(lambda: answer(rs["r1"], members(0, n)[9]) == [SERVER_FAR], 20, "r1 to answer a member")
    assert in_namespace(r1.proc.pid, f'findmnt -n -o FSTYPE "{sd}"').stdout.strip() == "tmpfs"
    fill = in_namespace(r1.proc.pid, f'cat /dev/zero > "{sd}/fill"; df -k "{sd}" | tail -1')
    assert "No space left" in fill.stderr, fill.stderr

    v1 = publish(rs["r2"], defs, 1, n)
    assert v1 != v0
    wait_for(lambda: agg_view(rs["r1"])["store_errors"] >= 1, 30, "r1 to fail storing the version")
    view = agg_view(rs["r1"])
    assert view["version"] == v0 and view["members"] == n
    assert "No space left on device" in view["error"]
    assert "No space left on device" in r1.log()
    # routing on with what it has: a member of both versions answered, one new in v1 not routed yet
    # (m3 is in both; m4 is renamed by generation 1)
    assert answer(rs["r1"], members(0, n)[3]) == [SERVER_FAR]
    assert answer(rs["r1"], members(1, n)[4]) == "REFUSED"
    assert re.search(r"store errors [1-9]", r1.nbrc("show", "aggregate", AGG).stdout)
    assert prom.value(prom.scrape("127.0.0.1", metrics), "nbrpd_aggregate_store_errors_total") >= 1

    assert in_namespace(r1.proc.pid, f'rm "{sd}/fill"').returncode == 0
    wait_for(lambda: version(rs["r1"]) == v1, 60, "the retry to store the version once there is room")
    wait_for(lambda: answer(rs["r1"], members(1, n)[4]) == [SERVER_FAR], 20, "the new version answered")
    ls = in_namespace(r1.proc.pid, f'ls "{sd}"')
    assert "hosted.agg.snap" in ls.stdout and "fill" not in ls.stdout


def test_a_read_only_state_dir_keeps_its_versions_and_refuses_new_ones(net, tmp_path):
    """r1 restarted with its state-dir bind-mounted read-only: it opens the version
    stored, says the directory is read-only, answers its members; a new version is
    refused and counted; back on a writable directory, it fetches it."""
    n = 3000
    rs, defs = start_line(net, tmp_path, ["r1", "r2"], "r2", n)
    v0 = version(rs["r2"])
    wait_for(lambda: version(rs["r1"]) == v0, 30, "r1 to fetch")
    r1 = rs["r1"].nbrpd
    assert r1.stop() == 0
    sd = str(state_dir(tmp_path, "r1"))
    r1.wrap = (*NS, "sh", "-c", 'mount --bind "$0" "$0" && mount -o remount,bind,ro "$0" && exec "$@"', sd)
    r1.restart()
    view = agg_view(rs["r1"])
    assert view["version"] == v0 and view["read_only"] is True
    assert "is read-only" in r1.log()
    wait_for(lambda: answer(rs["r1"], members(0, n)[3]) == [SERVER_FAR], 20, "r1 to answer the stored version")

    v1 = publish(rs["r2"], defs, 1, n)
    wait_for(lambda: agg_view(rs["r1"])["store_errors"] >= 1, 30, "r1 to refuse the new version")
    view = agg_view(rs["r1"])
    assert view["version"] == v0 and "read-only" in view["error"]
    assert answer(rs["r1"], members(0, n)[3]) == [SERVER_FAR]       # in both versions
    assert answer(rs["r1"], members(1, n)[4]) == "REFUSED"          # new in v1: not stored here

    assert r1.stop() == 0
    r1.wrap = ()
    r1.restart()
    wait_for(lambda: version(rs["r1"]) == v1, 30, "r1 to fetch the new version once writable")
    assert agg_view(rs["r1"])["read_only"] is False


def test_a_second_nbrpd_on_the_same_state_dir_is_refused(net, tmp_path):
    """A second nbrpd with the same state-dir exits at start naming the first; the
    first is untouched."""
    n = 100
    rs, defs = start_line(net, tmp_path, ["r1"], "r1", n)
    v0 = version(rs["r1"])
    sd = state_dir(tmp_path, "r1")
    other = tmp_path / "other.conf"
    # r1's own configuration, with a control socket of its own: the state-dir is what clashes
    body = rs["r1"].nbrpd.conf.read_text().split("\n", 1)[1]
    other.write_text(f'control "{tmp_path}/other.ctl";\n' + body)
    r = subprocess.run([NBRPD, "-f", "-c", str(other)], capture_output=True, text=True, timeout=30, env=ENV)
    assert r.returncode == 1
    assert f"state-dir {sd} is in use by another process (pid {rs['r1'].nbrpd.proc.pid})" in r.stderr
    # the first one is untouched
    assert version(rs["r1"]) == v0 and rs["r1"].nbrpd.nbrc("show", "status").returncode == 0
