"""Man pages: every config keyword of both daemons' keyword tables and
every control command is in its page, and man renders every page without
a warning."""

import os
import pathlib
import re
import shutil
import subprocess

import pytest

from conftest import ENV, INRPD, REPO, free_port
from test_inrpd_control import inrpc

BUILD = pathlib.Path(os.environ.get("CR_BUILD", pathlib.Path(INRPD).parents[1]))
MAN = REPO / "man"
PAGES = ["inrpd.8", "inrpd.conf.5", "inrpc.8", "nbrpd.8", "nbrpd.conf.5", "nbrc.8", "nbrp-updgen.1", "nbrp-key.1"]

TABLE = re.compile(r"struct conf_keyword \w+\[\] = \{(.*?)\n\};", re.S)
ENTRY = re.compile(r'\{ "([a-z0-9-]+)",')


def keywords(daemon):
    """Every keyword of every conf_keyword table in the daemon's sources (blocks' included).
    The tables are read from the C source: they are the one list conf_dispatch walks."""
    found = set()
    for src in [*(REPO / daemon).rglob("*.c"), REPO / "lib" / "ops" / "service_conf.c"]:
        for table in TABLE.findall(src.read_text()):
            found.update(ENTRY.findall(table))
    assert len(found) > 15, found
    return found


def commands(help_text):
    """The command words of each `help` line ("show route [NAME] [json]" -> "show route")."""
    out = set()
    for line in help_text.splitlines():
        words = []
        for w in line.split():
            if not re.fullmatch(r"[a-z][a-z-]*", w):
                break
            words.append(w)
        if words:
            # the usage column ends where the description starts (two spaces or more)
            usage = re.split(r"\s{2,}", line.strip())[0]
            out.add(" ".join(w for w in words if w in usage.split()))
    return out


def documented(page, term):
    return f"*{term}*" in (MAN / f"{page}.scd").read_text()


@pytest.mark.parametrize("daemon", ["inrpd", "nbrpd"])
def test_every_keyword_is_in_the_config_page(daemon):
    missing = sorted(k for k in keywords(daemon) if not documented(f"{daemon}.conf.5", k))
    assert not missing, f"{daemon}.conf.5.scd misses {missing}"


def test_every_inrpd_command_is_in_inrpc_page(inrpd_factory, tmp_path):
    sock = tmp_path / "inrpd.ctl"
    inrpd_factory(f'control "{sock}";\n')
    cmds = commands(inrpc(sock, "help").stdout)
    assert {"show counters", "reload", "set log-level", "quit"} <= cmds
    missing = sorted(c for c in cmds if not documented("inrpc.8", c))
    assert not missing, f"inrpc.8.scd misses {missing}"


def test_every_nbrpd_command_is_in_nbrc_page(nbrpd_factory):
    n = nbrpd_factory("r1", f'router-name "r1";\nlisten 127.0.0.1 port {free_port("127.0.0.1")};\n'
                            "inrp-address 127.0.0.1 port 53;\n")
    cmds = commands(n.nbrc("help").stdout)
    assert {"show peers", "show route count", "disable", "set log-level"} <= cmds
    missing = sorted(c for c in cmds if not documented("nbrc.8", c))
    assert not missing, f"nbrc.8.scd misses {missing}"


@pytest.mark.parametrize("page", PAGES)
def test_man_renders_without_warnings(page):
    assert shutil.which("man"), "man (man-db) is needed"
    built = BUILD / "man" / page
    assert built.exists(), f"{built} was not built (scdoc missing?)"
    env = dict(ENV, MANWIDTH="80")
    r = subprocess.run(["man", "--warnings", "-l", str(built)], capture_output=True, text=True,
                       env=env, timeout=60)
    assert r.returncode == 0 and r.stderr == "", r.stderr
    text = re.sub(r".\x08", "", r.stdout)         # bold and underline by overstrike
    name = page.rsplit(".", 1)[0]
    assert re.search(rf"^NAME\n\s+{re.escape(name)} - ", text, re.M), text[:300]
