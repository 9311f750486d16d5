"""Import and export policies per peer: allow or deny by name suffix, the
longest matching rule deciding, a default for names no rule matches."""

from conftest import wait_for
import nbrp_client as nc
from test_nbrpd import establish, lone, net, path_of  # noqa: F401  (fixtures)

SERVER = "127.0.0.99"


def test_import_policy_filters_what_a_peer_sends(lone):
    n = lone(peer_extra='import deny "bad.content"; import allow "content"; '
                        'import allow "ok.bad.content"; import default deny;')
    p = establish(n)
    names = ["a.content", "x.bad.content", "ok.bad.content", "www.ok.bad.content", "other.org"]
    p.send(nc.update(routes=[nc.route(names, n.x_addr, 5353, ["x"])]))
    wait_for(lambda: n.route("www.ok.bad.content") is not None, 10, "the allowed names")
    assert n.route("a.content") is not None and n.route("ok.bad.content") is not None
    assert n.route("x.bad.content") is None          # the longer deny wins over allow "content"
    assert n.route("other.org") is None              # no rule: the default, deny
    assert n.peers()["x"]["names"] == 3
    p.close()


def test_export_policy_filters_what_a_peer_is_told(net):
    rs = net(["r1", "r2"], [("r1", "r2")],
             content={"r1": f'content "a.content" {{ server {SERVER}; }}\n'
                            f'content "secret.content" {{ server {SERVER}; }}\n'},
             peer_extra={("r1", "r2"): 'export deny "secret.content";'})
    wait_for(lambda: path_of(rs["r2"], "a.content") == ["r1"], 20, "a.content at r2")
    assert rs["r2"].nbrpd.route("secret.content") is None
    assert rs["r1"].nbrpd.route("secret.content") is not None
