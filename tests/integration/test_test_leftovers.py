"""What a killed test run leaves (daemons still running after their
pytest died, CI's timeout) is killed when the next run starts; what a live
run owns is not touched (conftest.sweep_leftovers)."""

import os
import pathlib
import signal
import subprocess
import sys

from conftest import ENV, OWNER, owner_tag, sweep_leftovers


def test_a_dead_runs_daemons_go_and_a_live_ones_stay():
    dead = subprocess.Popen(["true"])
    tag = owner_tag(dead.pid)           # while it runs or is a zombie: its start time
    dead.wait()                         # reaped: an owner that is gone
    started = []
    try:
        for owner in (tag, OWNER):
            started.append(subprocess.Popen(["sleep", "600"], env=dict(ENV, CR_TEST_OWNER=owner),
                                            start_new_session=True))
        orphan, mine = started
        killed = sweep_leftovers()
        assert orphan.pid in killed and orphan.wait(10) == -9
        assert mine.pid not in killed and mine.poll() is None
    finally:
        for p in started:
            p.kill()
            p.wait()


def test_inrpd_of_a_killed_run_is_swept(tmp_path):
    """A run killed with SIGKILL mid-test: its inrpd lives on, until the sweep."""
    here = pathlib.Path(__file__).parent
    script = (f"import pathlib, sys, time\nsys.path.insert(0, {str(here)!r})\n"
              "import conftest\n"
              f"d = conftest.Inrpd(pathlib.Path({str(tmp_path)!r}), 'left')\n"
              "d.addr = conftest.loopback_addr()\nd.port = conftest.free_port(d.addr)\n"
              "d.start('')\nprint(d.proc.pid, flush=True)\ntime.sleep(600)\n")
    run = subprocess.Popen([sys.executable, "-c", script], stdout=subprocess.PIPE, text=True, env=ENV)
    try:
        pid = int(run.stdout.readline())
    finally:
        run.kill()
        run.wait()
    try:
        assert owner_tag(pid) is not None           # the daemon outlived its run
        assert pid in sweep_leftovers()
    finally:
        try:
            os.kill(pid, signal.SIGKILL)
        except ProcessLookupError:
            pass
    # reparented to this process (conftest makes it a subreaper): reap it
    assert os.waitpid(pid, 0)[1] == signal.SIGKILL
