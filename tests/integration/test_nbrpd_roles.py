"""Roles (local-role, RFC 9234) against route leaks: four real nbrpd, m in
the middle with a provider p, a peer q and a customer c.  What p and q tell
m goes only to c; what c tells m goes everywhere."""

from conftest import wait_for
from test_nbrpd import net, path_of  # noqa: F401  (fixtures)

SERVER = "127.0.0.99"
ROLES = {("m", "p"): "customer", ("m", "q"): "peer", ("m", "c"): "provider",
         ("p", "m"): "provider", ("q", "m"): "peer", ("c", "m"): "customer"}


def roles_net(net):
    return net(["m", "p", "q", "c"], [("m", "p"), ("m", "q"), ("m", "c")],
               content={x: f'content "{x}.content" {{ server {SERVER}; }}\n' for x in "pqc"},
               peer_extra={k: f"local-role {v};" for k, v in ROLES.items()})


def reload(r, old, new, line=""):
    """r's configuration with old made new (on the line starting with `line`), reloaded."""
    lines = r.nbrpd.conf.read_text().split("\n")
    at = next(i for i, x in enumerate(lines) if x.startswith(line) and old in x)
    lines[at] = lines[at].replace(old, new)
    r.nbrpd.conf.write_text("\n".join(lines))
    res = r.nbrpd.nbrc("reload")
    assert res.returncode == 0 and "reloaded" in res.stdout, res.stderr


def mark(rs, name):
    """c announces a new name, which m passes on to p and q after everything it
    learned before (one TCP session each): once they have it, a leak would be there."""
    reload(rs["c"], 'content "c.content"', f'content "{name}" {{ server {SERVER}; }}\ncontent "c.content"')
    for x in "pq":
        wait_for(lambda: path_of(rs[x], name) == ["m", "c"], 20, f"{name} at {x}")


def test_a_peers_and_a_providers_routes_are_not_leaked_a_customers_are(net):
    rs = roles_net(net)
    for x in "pqc":
        wait_for(lambda: path_of(rs["m"], f"{x}.content") == [x], 20, f"{x}.content at m")
    # the customer hears everything; the provider and the peer the customer's route
    wait_for(lambda: path_of(rs["c"], "p.content") == ["m", "p"], 20, "p.content at c")
    wait_for(lambda: path_of(rs["c"], "q.content") == ["m", "q"], 20, "q.content at c")
    mark(rs, "late.content")
    assert path_of(rs["p"], "c.content") == ["m", "c"]
    assert path_of(rs["q"], "c.content") == ["m", "c"]
    # the leak: m would pass its peer's route to its provider, its provider's to its peer
    assert rs["p"].nbrpd.route("q.content") is None
    assert rs["q"].nbrpd.route("p.content") is None
    peers = rs["m"].nbrpd.peers()
    assert {x: peers[x]["local_role"] for x in "pqc"} == {"p": "customer", "q": "peer", "c": "provider"}
    assert "local role customer" in rs["m"].nbrpd.nbrc("show", "peers").stdout


def test_a_role_changed_by_reload_restarts_the_session_and_applies(net):
    rs = roles_net(net)
    wait_for(lambda: path_of(rs["p"], "c.content") == ["m", "c"], 20, "c.content at p")
    wait_for(lambda: path_of(rs["m"], "q.content") == ["q"], 20, "q.content at m")
    flaps = rs["p"].nbrpd.peers()["m"]["flaps"]
    # m told p is its customer (a misconfiguration): p now hears m's peer's route
    reload(rs["m"], "local-role customer;", "local-role provider;", 'peer "p"')
    wait_for(lambda: path_of(rs["p"], "q.content") == ["m", "q"], 20, "q.content at p")
    assert rs["p"].nbrpd.peers()["m"]["flaps"] > flaps
    assert rs["m"].nbrpd.peers()["p"]["local_role"] == "provider"
    # and back: the session starts over, and p is told c.content but not q.content
    reload(rs["m"], "local-role provider;", "local-role customer;", 'peer "p"')
    wait_for(lambda: rs["p"].nbrpd.route("q.content") is None, 20, "q.content withdrawn at p")
    mark(rs, "late.content")
    assert rs["p"].nbrpd.route("q.content") is None
    assert path_of(rs["p"], "c.content") == ["m", "c"]
