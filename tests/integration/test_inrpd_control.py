"""inrpd's control socket and the inrpc CLI: statistics, status, reload,
and a protocol that bad clients cannot break."""

import json
import os
import socket
import subprocess

import pytest

from conftest import ENV, INRPD, run_inrpd, wait_for

INRPC = os.path.join(os.path.dirname(INRPD), "inrpc")
ROUTES = 'route "www.example.content" { server 127.0.0.10; }\n'


def inrpc(sock, *words, json_out=False):
    cmd = [INRPC, "-s", str(sock)] + (["--json"] if json_out else []) + list(words)
    return subprocess.run(cmd, capture_output=True, text=True, timeout=30, env=ENV)


def with_control(tmp_path, body=ROUTES):
    sock = tmp_path / "inrpd.ctl"
    return sock, f'control "{sock}";\n' + body


def counters(sock):
    r = inrpc(sock, "show", "counters", json_out=True)
    assert r.returncode == 0, r.stderr
    return json.loads(r.stdout)


def test_counters_count_what_was_asked(inrpd_factory, tmp_path):
    sock, body = with_control(tmp_path)
    d = inrpd_factory(body)
    before = counters(sock)
    d.udp("www.example.content")
    d.udp("not-routed.example")
    d.udp("also-not-routed.example")
    d.tcp("www.example.content")
    after = counters(sock)
    assert after["udp"]["queries"] - before["udp"]["queries"] == 3
    assert after["udp"]["answered"] - before["udp"]["answered"] == 3
    assert after["udp"]["refused"] - before["udp"]["refused"] == 2
    assert after["tcp"]["queries"] - before["tcp"]["queries"] == 1
    # the text form says the same, one counter a line
    r = inrpc(sock, "show", "counters")
    assert r.returncode == 0
    lines = r.stdout.splitlines()
    assert f"udp.refused {after['udp']['refused']}" in lines
    assert f"tcp.queries {after['tcp']['queries']}" in lines
    assert len(lines) == 2 * len(after["udp"]) and all(len(l.split()) == 2 for l in lines)


def test_status_describes_the_running_daemon(inrpd_factory, tmp_path):
    sock, body = with_control(tmp_path, ROUTES + 'route "shop.example.content" { server 127.0.0.20; }\n')
    d = inrpd_factory(body)
    r = inrpc(sock, "show", "status", json_out=True)
    assert r.returncode == 0, r.stderr
    st = json.loads(r.stdout)
    assert st["routes"] == 2 and st["fib_names"] == 2
    assert st["config"] == str(d.conf.resolve())
    text = inrpc(sock, "show", "status").stdout
    assert f"listen {d.addr} port {d.port}" in text


def test_reload_through_the_cli(inrpd_factory, tmp_path):
    sock, body = with_control(tmp_path)
    d = inrpd_factory(body)
    d.write_config(f'control "{sock}";\nroute "www.example.content" {{ server 127.0.0.99; }}\n')
    r = inrpc(sock, "reload")
    assert r.returncode == 0, r.stderr
    assert "reloaded" in r.stdout and "1 routes" in r.stdout
    assert [a.address for a in d.udp("www.example.content").answer[0]] == ["127.0.0.99"]
    # a broken file: the CLI fails with file:line, the daemon keeps the old config
    d.write_config(f'control "{sock}";\nroute "x" {{ server not-an-address; }}\n')
    r = inrpc(sock, "reload")
    assert r.returncode == 1
    assert f"{d.conf}:" in r.stderr and "reload failed" in r.stderr
    assert [a.address for a in d.udp("www.example.content").answer[0]] == ["127.0.0.99"]


def test_cli_errors(inrpd_factory, tmp_path):
    sock, body = with_control(tmp_path)
    inrpd_factory(body)
    r = inrpc(sock, "frobnicate")
    assert r.returncode == 1 and "unknown command 'frobnicate'" in r.stderr
    # a socket nobody listens on: the path, the keyword that sets it, and -s
    nowhere = tmp_path / "nowhere.ctl"
    r = inrpc(nowhere, "help")
    assert r.returncode == 2 and f"{nowhere}: No such file" in r.stderr
    assert f'control "{nowhere}";' in r.stderr and "-s PATH" in r.stderr
    r = inrpc(sock, "help")
    assert r.returncode == 0 and "show counters" in r.stdout


def raw_session(sock):
    s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    s.settimeout(10)
    s.connect(str(sock))
    f = s.makefile("rb")
    greeting = f.readline()
    return s, f, greeting


def test_protocol_survives_bad_clients(inrpd_factory, tmp_path):
    sock, body = with_control(tmp_path)
    d = inrpd_factory(body)
    s, f, greeting = raw_session(sock)
    assert greeting.startswith(b"0001 inrpd ")
    # several commands in one write, an empty line, a NUL byte
    s.sendall(b"help\n\nshow counters\nshow\x00 status\n")
    lines = []
    while len([x for x in lines if x[4:5] == b" "]) < 3:
        lines.append(f.readline())
    finals = [x for x in lines if x[4:5] == b" "]
    assert finals[0].startswith(b"0000") and finals[1].startswith(b"0000")
    assert finals[2].startswith(b"8001") and b"NUL" in finals[2]
    # a line longer than the limit: an error, then the server hangs up
    s.sendall(b"x" * 5000)
    assert f.readline().startswith(b"8002")
    assert f.readline() == b""
    s.close()
    # a client that connects and goes away mid-command
    s, f, _ = raw_session(sock)
    s.sendall(b"show cou")
    s.close()
    # too many clients at once: the one past 16 is told so (14 or 15 may fit while the two clients
    # that went away above are still being reaped: their closes are read on the server's loop)
    held = []
    try:
        while True:
            s2, f2, greeting = raw_session(sock)
            if greeting.startswith(b"9002"):
                s2.close()
                break
            assert greeting.startswith(b"0001") and len(held) < 16, greeting
            held.append((s2, f2, greeting))
        assert len(held) >= 14
    finally:
        for s, f, _ in held:
            s.close()
    # and it still serves both the CLI and DNS, once it has seen them go (each close is read on its loop)
    wait_for(lambda: inrpc(sock, "show", "counters").returncode == 0, 10, "the closed clients to be reaped")
    assert d.udp("www.example.content").answer


def test_socket_file_lifecycle(inrpd_factory, tmp_path):
    sock, body = with_control(tmp_path)
    # a stale socket file from a daemon that died is replaced
    stale = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    stale.bind(str(sock))
    stale.close()
    d = inrpd_factory(body)
    assert inrpc(sock, "help").returncode == 0
    assert oct(os.stat(sock).st_mode & 0o777) == "0o660"
    d.stop()
    assert not sock.exists()


def test_control_must_be_an_absolute_path(tmp_path):
    conf = tmp_path / "bad.conf"
    conf.write_text('listen 127.0.0.1 port 5399;\ncontrol "relative.ctl";\n')
    r = run_inrpd("-t", "-c", str(conf))
    assert r.returncode == 1 and f"{conf}:2:" in r.stderr and "absolute" in r.stderr


def test_show_route_says_which_route_a_name_takes(inrpd_factory, tmp_path):
    sock, body = with_control(tmp_path, ROUTES + 'route "shop.example.content" { server 127.0.0.20; '
                              'server 127.0.0.21 load 30; }\n'
                              'route "old.content" { redirect "example.content"; }\n')
    inrpd_factory(body)
    r = inrpc(sock, "show", "route", "a.b.shop.example.content")
    assert r.returncode == 0, r.stderr
    assert "route shop.example.content., from configuration, its own" in r.stdout, r.stdout
    assert "1. server 127.0.0.20" in r.stdout and "2. server 127.0.0.21, load 30 ms" in r.stdout, r.stdout
    v = json.loads(inrpc(sock, "show", "route", "x.www.example.content", json_out=True).stdout)
    assert v["route"] == "www.example.content." and v["table"] == "configuration" and v["own"]
    assert v["routes"] == [{"kind": "server", "address": "127.0.0.10", "port": 0, "load_ms": 0}]
    assert "redirect to example.content." in inrpc(sock, "show", "route", "x.old.content").stdout
    # no route: the upstreams' (what the cache holds of it is below)
    r = inrpc(sock, "show", "route", "nowhere.example")
    assert r.returncode == 0 and "nowhere.example: no route: to the upstreams" in r.stdout, r.stdout
    assert json.loads(inrpc(sock, "show", "route", "nowhere.example", json_out=True).stdout)["table"] == "none"
    assert inrpc(sock, "show", "route", "a..b").returncode == 1


# ---- show route: what the packet cache holds of a name ----

def next_router(inrpd_factory, names, ttl=300):
    """An inrpd with the servers of names (a next router, or an upstream answering them)."""
    body = f"answer-ttl {ttl};\n" + "".join(f'route "{n}" {{ server 127.0.0.5; }}\n' for n in names)
    return inrpd_factory(body)


def cache_view(sock, name, *typ):
    """show route's cache part by type, asked again while a worker is busy (a loaded machine)."""
    out = {}

    def looked():
        r = inrpc(sock, "show", "route", name, *typ, json_out=True)
        assert r.returncode == 0, r.stderr
        v = json.loads(r.stdout)
        out.update({c["type"]: c for c in v["cache"]}, busy=v["cache_busy"], view=v)
        return not v["cache_busy"]
    wait_for(looked, 10, f"every worker to answer show route {name}")
    return out


def test_show_route_says_whether_an_answer_is_cached(inrpd_factory, tmp_path):
    """A routed name forwarded once and a name answered by the upstream show as cached, their TTL
    counting down, in the one shard that answered; a name never asked, and everything after
    `flush cache`, not."""
    hop = next_router(inrpd_factory, ["svc.content", "fallback.example"])
    sock, body = with_control(tmp_path, f'route "svc.content" {{ router {hop.addr} port {hop.port}; }}\n'
                              f"upstream {hop.addr} port {hop.port};\n")
    d = inrpd_factory(body)                     # two UDP workers
    assert [a.address for a in d.udp("www.svc.content").answer[0]] == ["127.0.0.5"]
    assert [a.address for a in d.udp("fallback.example").answer[0]] == ["127.0.0.5"]
    stats = json.loads(inrpc(sock, "show", "cache", json_out=True).stdout)
    for name in ("www.svc.content", "fallback.example"):
        # the query landed in one worker's shard, and the command found it there
        c = cache_view(sock, name)
        assert c["A"]["cached"] and len(c["A"]["entries"]) == 1, c
        e = c["A"]["entries"][0]
        assert e["shard"] in ("udp0", "udp1") and e["flags"] == ["rd"] and e["rcode"] == "NOERROR"
        assert e["lifetime"] == 300 and e["ttl"] <= 300 and not e["stale"] and e["route_matches"], e
        assert not c["AAAA"]["cached"] and c["AAAA"]["entries"] == []
        wait_for(lambda: cache_view(sock, name)["A"]["entries"][0]["ttl"] < 300, 10, "the TTL to count down")
    # looking changed nothing: no hit, miss or store counted, nothing moved
    assert json.loads(inrpc(sock, "show", "cache", json_out=True).stdout) == stats
    text = inrpc(sock, "show", "route", "www.svc.content").stdout
    assert "A cached in udp worker " in text and "(rd): NOERROR, ttl " in text and "under this route" in text
    assert "AAAA not cached" in text, text
    text = inrpc(sock, "show", "route", "fallback.example").stdout
    assert "no route: to the upstreams" in text and "A cached in udp worker " in text, text
    # over TCP: the stream transports' shard; the type asked for too
    d.tcp("www.svc.content", "TXT")
    c = cache_view(sock, "www.svc.content", "TXT")
    assert [(e["shard"], e["rcode"]) for e in c["TXT"]["entries"]] == [("tcp", "NOERROR")], c
    assert inrpc(sock, "show", "route", "www.svc.content", "TYPE16").stdout.count("TXT cached in tcp") == 1
    # never asked
    c = cache_view(sock, "other.svc.content")
    assert not c["A"]["cached"] and not c["AAAA"]["cached"]
    assert "A not cached" in inrpc(sock, "show", "route", "other.svc.content").stdout
    # flushed: no shard holds it
    assert inrpc(sock, "flush", "cache").returncode == 0
    for name in ("www.svc.content", "fallback.example"):
        c = cache_view(sock, name, "TXT")
        assert not c["A"]["cached"] and not c["TXT"]["cached"], c
    r = inrpc(sock, "show", "route", "www.svc.content", "NOTATYPE")
    assert r.returncode == 1 and 'bad type "NOTATYPE"' in r.stderr


def test_show_route_says_an_answer_was_cached_under_another_route(inrpd_factory, tmp_path):
    """After a reload sends the name to another next router, the answer kept from the first is
    listed as cached under another route (and is not served: the next query goes out again)."""
    first = next_router(inrpd_factory, ["svc.content"])
    second = next_router(inrpd_factory, ["svc.content"])
    sock, body = with_control(tmp_path, f'route "svc.content" {{ router {first.addr} port {first.port}; }}\n')
    d = inrpd_factory(body)
    d.udp("www.svc.content")
    assert cache_view(sock, "www.svc.content")["A"]["entries"][0]["route_matches"]
    d.write_config(f'control "{sock}";\nroute "svc.content" {{ router {second.addr} port {second.port}; }}\n')
    assert inrpc(sock, "reload").returncode == 0
    e = cache_view(sock, "www.svc.content")["A"]["entries"]
    assert len(e) == 1 and not e[0]["route_matches"] and not e[0]["stale"], e
    assert "cached under another route" in inrpc(sock, "show", "route", "www.svc.content").stdout
    # asked again (perhaps in the other worker): an answer under the route in force
    wait_for(lambda: (d.udp("www.svc.content"), any(
        x["route_matches"] for x in cache_view(sock, "www.svc.content")["A"]["entries"]))[1], 10,
        "an answer under the new route")


def test_show_route_says_an_answer_is_stale(inrpd_factory, tmp_path):
    """Past its lifetime but inside cache-serve-stale: listed as stale, TTL 0."""
    hop = next_router(inrpd_factory, ["svc.content"], ttl=1)
    sock, body = with_control(tmp_path, f'route "svc.content" {{ router {hop.addr} port {hop.port}; }}\n'
                              "cache-serve-stale 1h;\n")
    d = inrpd_factory(body)
    d.udp("www.svc.content")
    wait_for(lambda: cache_view(sock, "www.svc.content")["A"]["entries"][0]["stale"], 10, "the answer to expire")
    e = cache_view(sock, "www.svc.content")["A"]["entries"][0]
    assert e["ttl"] == 0 and e["lifetime"] == 1 and e["route_matches"], e
    assert ", stale, under this route" in inrpc(sock, "show", "route", "www.svc.content").stdout
