"""The operator's guides (docs/guide/) are run as written: every `sh` block
of a guide, in order, in one shell in an empty directory, with this
build's programs first on PATH.  A `text` block after an `sh` block is the
output a reader is shown: each of its lines must appear in what that
block printed.  A guide that drifts from the code fails here."""

import os
import pathlib
import re
import signal
import subprocess

import pytest

from conftest import ENV, INRPD, NBRPD, REPO

GUIDES = ["resolver.md", "peering.md", "load-testing.md"]
MARK = "@@guide-block {}@@"


def blocks(text):
    """[(sh_source, expected_lines or None)] in the guide's order."""
    out = []
    for m in re.finditer(r"^```(\w*)\n(.*?)^```$", text, re.S | re.M):
        kind, body = m.group(1), m.group(2)
        if kind == "sh":
            out.append([body, None])
        elif kind == "text" and out and out[-1][1] is None:
            out[-1][1] = [l.strip() for l in body.splitlines() if l.strip()]
    return out


@pytest.mark.parametrize("guide", GUIDES)
def test_the_guide_runs_as_written(guide, tmp_path):
    steps = blocks((REPO / "docs" / "guide" / guide).read_text())
    assert steps, f"{guide} has no sh block to run"
    script = ["set -eu"]
    for i, (src, _) in enumerate(steps):
        script += [f"echo '{MARK.format(i)}'", src]
    bins = [pathlib.Path(INRPD).parent, pathlib.Path(NBRPD).parent,
            pathlib.Path(NBRPD).parents[1] / "updgen"]
    env = dict(ENV, PATH=":".join(str(b) for b in bins) + ":" + os.environ["PATH"])
    log = tmp_path / "guide.out"   # a file, not a pipe: daemons left running must not hold it open
    with open(log, "w") as f:
        proc = subprocess.Popen(["bash", "-c", "\n".join(script)], cwd=tmp_path, env=env,
                                stdout=f, stderr=subprocess.STDOUT, start_new_session=True)
    try:
        proc.wait(timeout=120)
    except subprocess.TimeoutExpired:
        pytest.fail(f"{guide} did not finish in 120 s; it printed:\n{log.read_text()}")
    finally:
        # whatever the guide left running (its daemons share the shell's group)
        try:
            os.killpg(proc.pid, signal.SIGKILL)
        except ProcessLookupError:
            pass
        proc.wait()
    out = log.read_text()
    assert proc.returncode == 0, f"{guide} stopped with status {proc.returncode}:\n{out}"
    printed = re.split(r"^@@guide-block (\d+)@@$", out, flags=re.M)
    by_block = {int(printed[k]): printed[k + 1] for k in range(1, len(printed), 2)}
    for i, (src, expected) in enumerate(steps):
        for line in expected or []:
            assert line in by_block.get(i, ""), \
                f"{guide}, block {i + 1}:\n{src}\nexpected a line with {line!r}; it printed:\n{by_block.get(i, '')}"
