"""The Grafana dashboard (contrib/grafana/content-router.json) asks only
for metrics the daemons serve, in PromQL that Prometheus parses."""

import json
import re
import shutil
import subprocess

from conftest import REPO, free_port, wait_for
from prom import get
import sigtest as st

DASHBOARD = REPO / "contrib" / "grafana" / "content-router.json"
METRIC = re.compile(r"\b((?:inrpd|nbrpd)_[a-z0-9_]+)")


def exprs():
    d = json.loads(DASHBOARD.read_text())
    out = []
    for p in d["panels"]:
        for t in p.get("targets", []):
            out.append((p["title"], t["expr"]))
    return d, out


def families(addr, port):
    status, text = get(addr, port)
    assert status == 200
    return {line.split()[2] for line in text.splitlines() if line.startswith("# TYPE ")}


def test_every_metric_the_dashboard_asks_for_is_served(inrpd_factory, nbrpd_factory, tmp_path):
    iport, nport = free_port("127.0.0.1"), free_port("127.0.0.1")
    inrpd_factory(f"metrics 127.0.0.1 port {iport};\n")
    anchor, key = st.Key(), st.Key()
    key.write(tmp_path / "r1.key")
    st.trust_file(tmp_path / "trust", anchor, {"r1": key}, [])
    nbrpd_factory("r1", f'router-name "r1";\ninrp-address 127.0.0.1 port 53;\nmetrics 127.0.0.1 port {nport};\n'
                  f'key-file "{tmp_path}/r1.key";\ntrust-anchor "{anchor.text}";\ntrust-file "{tmp_path}/trust";\n')
    served = wait_for(lambda: families("127.0.0.1", iport) | families("127.0.0.1", nport), 10, "/metrics")
    d, targets = exprs()
    assert len(targets) >= 40
    asked = set()
    for title, e in targets:
        for m in METRIC.findall(e):
            asked.add(re.sub(r"_(bucket|sum|count)$", "", m) if m.endswith(("_bucket", "_sum", "_count"))
                      and re.sub(r"_(bucket|sum|count)$", "", m) in served else m)
    missing = sorted(m for m in asked if m not in served)
    assert not missing, f"the dashboard asks for metrics no daemon serves: {missing}"
    # both daemons' panels are there: queries, cache, latency, hops, RRL, peers, UPDATEs,
    # signature states, aggregates, transfers
    for m in ["inrpd_queries_total", "inrpd_cached_total", "inrpd_answer_duration_seconds", "inrpd_hop_srtt_seconds",
              "inrpd_rrl_dropped_total", "nbrpd_peer_up", "nbrpd_peer_updates_received_total",
              "nbrpd_peer_signed_routes_total", "nbrpd_aggregates", "nbrpd_aggregate_fetches_total"]:
        assert m in asked, m
    ids = [p["id"] for p in d["panels"]]
    assert len(ids) == len(set(ids))


def test_every_expression_parses_as_promql(tmp_path):
    """promtool checks each as a recording rule, Grafana's variables given values first."""
    tool = shutil.which("promtool")
    assert tool, "promtool (Debian's prometheus package) is needed"
    _, targets = exprs()
    rules = ["groups:", "- name: dashboard", "  rules:"]
    for i, (_, e) in enumerate(targets):
        e = e.replace("$__rate_interval", "5m").replace("$inrpd", ".*").replace("$nbrpd", ".*")
        rules += [f"  - record: dashboard:expr{i}", f"    expr: {json.dumps(e)}"]
    f = tmp_path / "rules.yml"
    f.write_text("\n".join(rules) + "\n")
    r = subprocess.run([tool, "check", "rules", str(f)], capture_output=True, text=True, timeout=60)
    assert r.returncode == 0, r.stdout + r.stderr
