"""Scraping a daemon's /metrics: the raw text, `promtool check metrics` on
it, and the samples as {(name, frozenset(labels.items())): value}."""

import http.client
import re
import shutil
import subprocess

SAMPLE = re.compile(r'^([a-zA-Z_:][a-zA-Z0-9_:]*)(?:\{(.*)\})? (\S+)$')
LABEL = re.compile(r'([a-zA-Z_][a-zA-Z0-9_]*)="((?:[^"\\]|\\.)*)"')


def get(addr, port, path="/metrics", method="GET", timeout=5, source=None):
    """(status, body text); no proxy, whatever the environment says.
    source: the client's address."""
    c = http.client.HTTPConnection(addr, port, timeout=timeout,
                                   source_address=(source, 0) if source else None)
    try:
        c.request(method, path)
        r = c.getresponse()
        return r.status, r.read().decode()
    finally:
        c.close()


def promtool(text):
    """promtool's complaints about the text ('' when there are none)."""
    tool = shutil.which("promtool")
    assert tool, "promtool (Debian's prometheus package) is needed"
    r = subprocess.run([tool, "check", "metrics"], input=text, capture_output=True, text=True, timeout=30)
    return (r.stdout + r.stderr).strip() if r.returncode != 0 or r.stdout.strip() or r.stderr.strip() else ""


def parse(text):
    samples = {}
    for line in text.splitlines():
        if not line or line.startswith("#"):
            continue
        m = SAMPLE.match(line)
        assert m, f"not a sample line: {line!r}"
        labels = frozenset((k, v) for k, v in LABEL.findall(m.group(2) or ""))
        samples[(m.group(1), labels)] = float(m.group(3))
    return samples


def scrape(addr, port, source=None):
    """Checks the text with promtool and returns the samples."""
    status, text = get(addr, port, source=source)
    assert status == 200, (status, text)
    problems = promtool(text)
    assert problems == "", problems
    return parse(text)


def value(samples, name, **labels):
    return samples[(name, frozenset(labels.items()))]
