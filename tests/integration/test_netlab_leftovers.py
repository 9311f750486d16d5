"""What a killed run of the testbed leaves (namespaces with daemons still
running in them, veths, its directory) is removed by the next one; what
a live run owns is not touched."""

import os
import pathlib
import subprocess
import tempfile

import netlab


def test_a_dead_owners_leftovers_go_and_a_live_ones_stay():
    netlab.require()
    dead = subprocess.Popen(["true"])
    dead.wait()                         # its pid: an owner that is gone
    mine = f"{netlab.PREFIX}{os.getpid()}x000001-x"
    gone = f"{netlab.PREFIX}{dead.pid}x000001-x"
    gone_peer = f"{netlab.PREFIX}{dead.pid}x000001-y"
    gone_dir = pathlib.Path(tempfile.gettempdir()) / f"netlab-{dead.pid}x000001"
    sleeper = None
    try:
        for ns in (mine, gone, gone_peer):
            netlab.sh("ip", "netns", "add", ns)
        netlab.sh("ip", "link", "add", "to-y", "netns", gone, "type", "veth", "peer", "name", "to-x",
                  "netns", gone_peer)
        sleeper = subprocess.Popen(["ip", "netns", "exec", gone, "sleep", "600"], start_new_session=True)
        gone_dir.mkdir()
        removed = netlab.clean_leftovers()
        assert {gone, gone_peer} <= set(removed)
        assert sleeper.wait(10) == -9
        left = netlab.sh("ip", "netns", "list").stdout
        assert mine in left and gone not in left and gone_peer not in left
        assert not gone_dir.exists()
    finally:
        if sleeper and sleeper.poll() is None:
            sleeper.kill()
            sleeper.wait()
        for ns in (mine, gone, gone_peer):
            netlab.sh("ip", "netns", "del", ns, check=False)
        if gone_dir.exists():
            gone_dir.rmdir()
