"""nbrpd reload (nbrc reload, SIGHUP): what changed applies, sessions the
change does not concern stay up, a broken file changes nothing."""

import signal

from conftest import wait_for
from test_nbrpd import net, path_of  # noqa: F401  (fixtures)

SERVER = "127.0.0.99"


def flaps(r, peer):
    return r.nbrpd.peers()[peer]["flaps"]


def test_content_and_export_changes_keep_the_session(net):
    rs = net(["r1", "r2"], [("r1", "r2")], content={"r2": f'content "a.content" {{ server {SERVER}; }}\n'})
    wait_for(lambda: path_of(rs["r1"], "a.content") == ["r2"], 20, "a.content")
    conf = rs["r2"].nbrpd.conf
    text = conf.read_text()
    conf.write_text(text.replace('content "a.content"', 'content "b.content"'))
    r = rs["r2"].nbrpd.nbrc("reload")
    assert r.returncode == 0 and "reloaded" in r.stdout, r.stderr
    wait_for(lambda: path_of(rs["r1"], "b.content") == ["r2"], 10, "b.content")
    wait_for(lambda: rs["r1"].nbrpd.route("a.content") is None, 10, "a.content withdrawn")
    # an export policy by SIGHUP: r1 stops hearing about b.content, still over the same session
    text = conf.read_text()
    conf.write_text(text.replace(f"port {rs['r1'].nbrp_port}; }}",
                                 f'port {rs["r1"].nbrp_port}; export deny "b.content"; }}'))
    rs["r2"].nbrpd.proc.send_signal(signal.SIGHUP)
    wait_for(lambda: rs["r1"].nbrpd.route("b.content") is None, 10, "the export policy")
    assert flaps(rs["r1"], "r2") == 0 and flaps(rs["r2"], "r1") == 0
    assert rs["r1"].nbrpd.peers()["r2"]["state"] == "Established"


def test_peers_added_and_removed(net):
    rs = net(["r1", "r2", "r3"], [("r1", "r2")], content={"r3": f'content "c.content" {{ server {SERVER}; }}\n'})
    wait_for(lambda: rs["r1"].nbrpd.peers()["r2"]["state"] == "Established", 20, "r1-r2")
    # r2 and r3 learn about each other: only the new session starts
    for a, b in (("r2", "r3"), ("r3", "r2")):
        conf = rs[a].nbrpd.conf
        conf.write_text(conf.read_text() + f'peer "{b}" {{ address {rs[b].addr} port {rs[b].nbrp_port}; }}\n')
        assert rs[a].nbrpd.nbrc("reload").returncode == 0
    wait_for(lambda: path_of(rs["r1"], "c.content") == ["r2", "r3"], 20, "c.content through r2")
    assert flaps(rs["r1"], "r2") == 0
    # r2 forgets r3: CEASE, and the route goes
    conf = rs["r2"].nbrpd.conf
    conf.write_text("\n".join(l for l in conf.read_text().split("\n") if not l.startswith('peer "r3"')))
    r = rs["r2"].nbrpd.nbrc("reload")
    assert r.returncode == 0 and "1 removed" in r.stdout, r.stdout
    wait_for(lambda: rs["r1"].nbrpd.route("c.content") is None, 10, "c.content withdrawn")
    assert "r3" not in rs["r2"].nbrpd.peers()
    wait_for(lambda: "NOTIFICATION 6/3 received (cease: peer de-configured)" in rs["r3"].nbrpd.log(),
             10, "r3 told why")


def test_a_broken_file_changes_nothing(net):
    rs = net(["r1", "r2"], [("r1", "r2")], content={"r2": f'content "a.content" {{ server {SERVER}; }}\n'})
    wait_for(lambda: path_of(rs["r1"], "a.content") == ["r2"], 20, "a.content")
    conf = rs["r2"].nbrpd.conf
    conf.write_text(conf.read_text() + "frobnicate yes;\n")
    r = rs["r2"].nbrpd.nbrc("reload")
    assert r.returncode == 1 and f"{conf}:" in r.stderr and "frobnicate" in r.stderr
    assert path_of(rs["r1"], "a.content") == ["r2"]
    assert rs["r2"].nbrpd.peers()["r1"]["state"] == "Established"


def test_a_reload_says_which_settings_wait_for_a_restart(nbrpd_factory, tmp_path):
    """state-dir added by reload: the reply and the log name it; the aggregate keeps saying why it
    is not kept until the restart, and after it is stored."""
    base = 'router-name "r1";\ninrp-address 127.0.0.1 port 53;\n'
    (tmp_path / "nbrpd-r1").mkdir()
    (tmp_path / "nbrpd-r1" / "m.names").write_text("a.example\n")
    agg = 'aggregate "hosted.agg" { server 127.0.0.9; file "m.names"; }\n'
    n = nbrpd_factory("r1", base)
    n.conf.write_text(f'control "{n.ctl}";\n' + base + f'state-dir "{tmp_path}/state";\n' + agg)
    r = n.nbrc("reload")
    assert r.returncode == 0 and "state-dir changed: takes effect on restart" in r.stdout, r.stdout
    assert "state-dir changed: takes effect on restart" in n.log()
    view = n.json("show", "aggregate", "hosted.agg")
    assert "no state-dir" in view["error"] and "restart" in view["error"], view
    assert "no state-dir, so its members are neither fetched nor served" in n.log()
    n.stop()
    n.restart()
    wait_for(lambda: n.json("show", "aggregate", "hosted.agg").get("version") is not None, 10,
             "the aggregate stored after the restart")
