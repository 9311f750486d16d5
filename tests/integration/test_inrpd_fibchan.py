"""The FIB channel: nbrpd's routes pushed to inrpd over a unix socket
(full sync with an epoch, incremental updates, aggregates), the grace time
when the sender goes away, and a channel that bad input cannot break."""

import json
import os
import socket
import struct
import subprocess
import time

import dns.rcode
import dns.rdatatype
import pytest

from conftest import ENV, INRPD, wait_for
import fibchan_client as fc

INRPC = os.path.join(os.path.dirname(INRPD), "inrpc")


def status(d):
    r = subprocess.run([INRPC, "-s", str(d.ctl), "--json", "show", "status"], capture_output=True,
                       text=True, timeout=30, env=ENV)
    assert r.returncode == 0, r.stderr
    return json.loads(r.stdout)["fib_channel"]


def addrs(resp):
    return [rd.address for rrset in resp.answer if rrset.rdtype == dns.rdatatype.A for rd in rrset]


def answer(d, name):
    r = d.udp(name)
    return addrs(r) if r.rcode() == dns.rcode.NOERROR else dns.rcode.to_text(r.rcode())


@pytest.fixture
def router(inrpd_factory, tmp_path):
    def start(body="", grace="60s", **kw):
        sock, ctl = tmp_path / "fib.sock", tmp_path / "inrpd.ctl"
        d = inrpd_factory(f'fib-channel "{sock}";\nfib-grace-time {grace};\ncontrol "{ctl}";\n' + body, **kw)
        d.fib_sock, d.ctl = sock, ctl
        return d
    return start


def wait_synced(d, epoch, syncs=None):
    def done():
        st = status(d)
        return st["epoch"] == epoch and st["in_service"] and not st["syncing"] and \
            (syncs is None or st["syncs"] == syncs)
    wait_for(done, 10, f"epoch {epoch} in service")


def test_full_sync_then_incremental_updates(router):
    d = router()
    assert answer(d, "www.svc.content") == "REFUSED"
    assert status(d)["last_change"] is None
    ch = fc.FibChannel(d.fib_sock)
    before = time.time()
    ch.full_sync(1, fc.update(names=[fc.name_routes("svc.content", [fc.route("127.0.0.98")])]))
    wait_synced(d, 1)
    assert answer(d, "www.svc.content") == ["127.0.0.98"]
    st = status(d)
    assert st["connected"] and st["names"] == 1 and st["errors"] == 0
    assert before <= st["last_change"] <= time.time()      # the moment the epoch went into service

    # incremental: a new name, a changed one, then a withdrawal
    synced_at = st["last_change"]
    ch.send(fc.update(names=[fc.name_routes("other.content", [fc.route("127.0.0.97")]),
                             fc.name_routes("svc.content", [fc.route("127.0.0.96"), fc.route("127.0.0.95")])]))
    wait_for(lambda: answer(d, "other.content") == ["127.0.0.97"], 10, "the added name")
    assert answer(d, "svc.content") == ["127.0.0.96", "127.0.0.95"]
    assert status(d)["last_change"] > synced_at
    ch.send(fc.update(names=[fc.name_routes("other.content")]))
    wait_for(lambda: answer(d, "other.content") == "REFUSED", 10, "the withdrawal")
    ch.close()


def test_aggregates_share_routes(router):
    d = router()
    ch = fc.FibChannel(d.fib_sock)
    ch.full_sync(7, fc.update(
        aggregates=[fc.aggregate_routes("agg.content", 1, [fc.route("127.0.0.90")])],
        memberships=[fc.membership("agg.content", add=["a.shop.content", "b.shop.content"])]))
    wait_synced(d, 7)
    assert answer(d, "a.shop.content") == ["127.0.0.90"]
    assert answer(d, "b.shop.content") == ["127.0.0.90"]
    # one change to the aggregate moves every member
    ch.send(fc.update(aggregates=[fc.aggregate_routes("agg.content", 2, [fc.route("127.0.0.91")])]))
    wait_for(lambda: answer(d, "a.shop.content") == ["127.0.0.91"], 10, "the aggregate's new route")
    assert answer(d, "b.shop.content") == ["127.0.0.91"]
    ch.send(fc.update(memberships=[fc.membership("agg.content", remove=["b.shop.content"])]))
    wait_for(lambda: answer(d, "b.shop.content") == "REFUSED", 10, "the member removed")
    ch.close()


def test_static_routes_and_channel_routes_side_by_side(router):
    d = router('route "static.content" { server 127.0.0.10; }\n'
               'route "tie.content" { server 127.0.0.11; }\n')
    ch = fc.FibChannel(d.fib_sock)
    ch.full_sync(1, fc.update(names=[
        fc.name_routes("deeper.static.content", [fc.route("127.0.0.20")]),
        fc.name_routes("tie.content", [fc.route("127.0.0.21")])]))
    wait_synced(d, 1)
    assert answer(d, "x.static.content") == ["127.0.0.10"]
    assert answer(d, "x.deeper.static.content") == ["127.0.0.20"]   # the longer match
    assert answer(d, "tie.content") == ["127.0.0.11"]               # same length: static
    # a reload rebuilds the static table and leaves nbrpd's alone
    mark = d.reload(lambda a, p: f'fib-channel "{d.fib_sock}";\ncontrol "{d.ctl}";\n'
                    'route "static.content" { server 127.0.0.12; }\n')
    d.wait_log("reloaded", start=mark)
    assert answer(d, "x.static.content") == ["127.0.0.12"]
    assert answer(d, "x.deeper.static.content") == ["127.0.0.20"]
    assert answer(d, "tie.content") == ["127.0.0.21"]
    ch.close()


def test_resync_sweeps_what_the_new_epoch_did_not_send(router):
    d = router()
    ch = fc.FibChannel(d.fib_sock)
    ch.full_sync(1, fc.update(names=[fc.name_routes("old.content", [fc.route("127.0.0.31")]),
                                     fc.name_routes("kept.content", [fc.route("127.0.0.32")])]))
    wait_synced(d, 1)
    ch.close()                      # nbrpd restarts
    wait_for(lambda: not status(d)["connected"], 10, "the disconnect")
    st = status(d)
    assert st["stale"] and st["in_service"]
    # while it is away, the stale routes keep answering
    assert answer(d, "old.content") == ["127.0.0.31"]
    ch = fc.FibChannel(d.fib_sock)
    ch.send(fc.sync_begin(2), fc.update(names=[fc.name_routes("kept.content", [fc.route("127.0.0.33")])]))
    wait_for(lambda: status(d)["syncing"], 10, "the sync to begin")
    assert answer(d, "old.content") == ["127.0.0.31"]     # until SyncEnd, the old epoch serves
    ch.send(fc.sync_end(2))
    wait_synced(d, 2)
    assert answer(d, "old.content") == "REFUSED"
    assert answer(d, "kept.content") == ["127.0.0.33"]
    assert not status(d)["stale"]
    ch.close()


def test_routes_dropped_after_the_grace_time(router):
    d = router(grace="300ms")
    ch = fc.FibChannel(d.fib_sock)
    ch.full_sync(1, fc.update(names=[fc.name_routes("gone.content", [fc.route("127.0.0.41")])]))
    wait_synced(d, 1)
    synced_at = status(d)["last_change"]
    ch.close()
    wait_for(lambda: not status(d)["in_service"], 10, "the grace time to run out")
    assert answer(d, "gone.content") == "REFUSED"
    assert status(d)["last_change"] > synced_at      # dropping them was a change too
    d.wait_log("no sync within fib-grace-time")


BAD_INPUTS = {
    "update before sync": fc.frame(fc.update(names=[fc.name_routes("x.content", [fc.route("127.0.0.1")])])),
    "sync end without begin": fc.frame(fc.sync_end(1)),
    "epoch mismatch": fc.frame(fc.sync_begin(1)) + fc.frame(fc.sync_end(2)),
    "oversize frame": struct.pack(">I", 64 << 20) + b"\0" * 16,
    "not protobuf": fc.frame(b"\xff" * 32),
    "empty message": fc.frame(b""),
    "bad name": fc.frame(fc.sync_begin(1)) + fc.frame(
        b"\x12" + bytes([len(b"\x0a\x06\x0a\x04\x03a\x00b")]) + b"\x0a\x06\x0a\x04\x03a\x00b"),
    "bad address": fc.frame(fc.sync_begin(1)) + fc.frame(fc.update(names=[
        fc.name_routes("x.content", [b"\x08\x01\x12\x03\x01\x02\x03"])])),
}


@pytest.mark.parametrize("what", sorted(BAD_INPUTS))
def test_bad_input_closes_the_channel_and_changes_nothing(router, what):
    d = router()
    ch = fc.FibChannel(d.fib_sock)
    ch.full_sync(1, fc.update(names=[fc.name_routes("good.content", [fc.route("127.0.0.51")])]))
    wait_synced(d, 1)
    ch.close()
    bad = fc.FibChannel(d.fib_sock)
    bad.send_raw(BAD_INPUTS[what])
    assert bad.closed_by_peer()
    bad.close()
    st = status(d)
    assert st["errors"] == 1 and st["in_service"]
    assert answer(d, "good.content") == ["127.0.0.51"]
    assert answer(d, "x.content") == "REFUSED"
    # and a good sender is served again
    ch = fc.FibChannel(d.fib_sock)
    ch.full_sync(2, fc.update(names=[fc.name_routes("good.content", [fc.route("127.0.0.52")])]))
    wait_synced(d, 2)
    assert answer(d, "good.content") == ["127.0.0.52"]
    ch.close()


def test_a_new_sender_replaces_the_old_one(router):
    d = router()
    first = fc.FibChannel(d.fib_sock)
    first.full_sync(1, fc.update(names=[fc.name_routes("a.content", [fc.route("127.0.0.61")])]))
    wait_synced(d, 1)
    second = fc.FibChannel(d.fib_sock)
    assert first.closed_by_peer()
    second.full_sync(2, fc.update(names=[fc.name_routes("b.content", [fc.route("127.0.0.62")])]))
    wait_synced(d, 2)
    assert answer(d, "a.content") == "REFUSED" and answer(d, "b.content") == ["127.0.0.62"]
    first.close()
    second.close()


def test_restart_after_kill_reuses_the_socket_path(router, inrpd_factory):
    d = router()
    ch = fc.FibChannel(d.fib_sock)
    ch.full_sync(1, fc.update(names=[fc.name_routes("k.content", [fc.route("127.0.0.71")])]))
    wait_synced(d, 1)
    d.kill()
    ch.close()
    assert os.path.exists(d.fib_sock)       # left behind by SIGKILL
    d.start(d.conf.read_text(), listen=False, workers=0)
    ch = fc.FibChannel(d.fib_sock)
    ch.full_sync(1, fc.update(names=[fc.name_routes("k.content", [fc.route("127.0.0.71")])]))
    wait_synced(d, 1)
    assert answer(d, "k.content") == ["127.0.0.71"]
    ch.close()


def test_a_cached_answer_is_not_served_once_the_name_has_another_origin(router, inrpd_factory, tmp_path):
    # the next router answers for the name, first from one server, then another
    nxt_ctl = tmp_path / "nxt.ctl"
    nxt_conf = f'control "{nxt_ctl}";\nanswer-ttl 3600;\n'
    nxt = inrpd_factory(nxt_conf + 'route "mv.content" { server 127.0.0.91; }\n')
    d = router(workers=1)                   # one worker, one cache
    ch = fc.FibChannel(d.fib_sock)
    via = lambda origin: fc.update(names=[fc.name_routes(  # noqa: E731
        "mv.content", [fc.route(nxt.addr, fc.ROUTER, nxt.port, origin=origin)])])
    ch.full_sync(1, via(origin=11))
    wait_synced(d, 1)
    assert answer(d, "mv.content") == ["127.0.0.91"]
    mark = nxt.reload(nxt_conf + 'route "mv.content" { server 127.0.0.92; }\n')
    nxt.wait_log("reload", start=mark)
    # the same route: the answer is held for its hour
    assert answer(d, "mv.content") == ["127.0.0.91"]
    # the name's origin changed behind the same next hop (nbrpd says so): asked again
    ch.send(via(origin=12))
    wait_for(lambda: answer(d, "mv.content") == ["127.0.0.92"], 10, "the new origin's answer")
    ch.close()
