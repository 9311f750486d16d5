#!/usr/bin/env python3
"""The RDE's files call each other one way (nbrpd/rde.h).

The files are nbrpd/meson.build's nbrpd_rde_sources.  A file calls another
when it names a function the other defines; a header's static inline
function counts as its module's (attrs_* attr.c's, rib_* rib.c's, ...).
Calls through function pointers (struct rde_signer, rde_ops,
unindex_later) are not calls here: they are how a lower file calls back.
Prints the order, callees first; fails on a circle, and on an inline
function in one of the RDE's headers that belongs to none of its files
(its calls would go unseen)."""
import graphlib
import pathlib
import re
import sys

nbrpd = pathlib.Path(sys.argv[1] if len(sys.argv) > 1 else pathlib.Path(__file__).parent.parent / 'nbrpd')
block = re.search(r'nbrpd_rde_sources = files\((.*?)\)', (nbrpd / 'meson.build').read_text(), re.S).group(1)
sources = re.findall(r"'([\w.]+\.c)'", block)
# a header's inline functions belong to the module their prefix names
OWNER = {'attrs_': 'attr.c', 'rib_': 'rib.c', 'entry_': 'rib.c', 'agg_table_': 'agg_table.c',
         'route_': 'rde.c', 'rde_': 'rde.c', 'adjout_': 'adjout.c',
         'role_': 'adjout.c'}


def code(path):
    s = path.read_text()
    s = re.sub(r'/\*.*?\*/', ' ', s, flags=re.S)
    s = re.sub(r'//[^\n]*', ' ', s)
    return re.sub(r'"(\\.|[^"\\])*"', '""', s)


def inline_bodies(s):
    for m in re.finditer(r'static inline [\w \*]*?\b(\w+)\s*\([^)]*\)\s*\{', s):
        i, depth = m.end(), 1
        while depth:
            depth += {'{': 1, '}': -1}.get(s[i], 0)
            i += 1
        yield m.group(1), s[m.end():i]


defined = {}
text = {f: code(nbrpd / f) for f in sources}
headers = {h.name: code(h) for h in nbrpd.glob('*.h')}
# an inline function of the RDE's own headers must belong to one of its files, or its calls go unseen
rde_headers = {f[:-2] + '.h' for f in sources} | {'rde.h', 'rde_internal.h'}
unowned = []
for f, s in text.items():
    for m in re.finditer(r'^(?!static)[a-z][\w \*]*?\b(\w+)\s*\([^;{]*\)\s*\{', s, re.M):
        defined[m.group(1)] = f
for h, s in headers.items():
    for name, _ in inline_bodies(s):
        owner = next((o for p, o in OWNER.items() if name.startswith(p)), None)
        if owner in text:
            defined.setdefault(name, owner)
        elif h in rde_headers:
            unowned.append(f'{h}: {name}')
if unowned:
    sys.exit('nbrpd: inline functions of the RDE\'s headers with no file in OWNER: ' + ', '.join(unowned))

calls = {f: set() for f in sources}


def note(caller, body):
    for m in re.finditer(r'\b(\w+)\s*\(', body):
        callee = defined.get(m.group(1))
        if callee and callee != caller:
            calls[caller].add(callee)


for f, s in text.items():
    note(f, s)
for s in headers.values():
    for name, body in inline_bodies(s):
        if name in defined:
            note(defined[name], body)

try:
    order = list(graphlib.TopologicalSorter(calls).static_order())
except graphlib.CycleError as e:
    sys.exit(f'nbrpd: the RDE\'s files call each other in a circle: {" -> ".join(e.args[1])}')
print('callees first:', ' < '.join(order))
