#!/usr/bin/env python3
"""lib/'s rooms and the one direction of their arrows (docs/ARCHITECTURE.md).

Each room's meson.build says, on its "# May use:" line, which rooms it may
include from.  The build enforces that for the files it compiles (a room's
include path holds only those rooms); this check covers every header too,
and fails on a room that names a room that does not exist or on a circle."""
import pathlib
import re
import sys

lib = pathlib.Path(sys.argv[1] if len(sys.argv) > 1 else pathlib.Path(__file__).parent.parent / 'lib')
rooms = sorted(p.name for p in lib.iterdir() if (p / 'meson.build').exists())
home = {}
for r in rooms:
    for f in (lib / r).iterdir():
        if f.suffix == '.h':
            home[f.name] = r
        elif f.name.endswith('.proto'):
            home[f.name[:-len('.proto')] + '.pb-c.h'] = r

may = {}
bad = []
for r in rooms:
    m = re.search(r'^# May use: (.*)\.$', (lib / r / 'meson.build').read_text(), re.M)
    if not m:
        bad.append(f'lib/{r}/meson.build: no "# May use:" line')
        continue
    uses = [] if m.group(1).startswith('nothing') else [u.strip() for u in m.group(1).split(',')]
    for u in uses:
        if u not in rooms:
            bad.append(f'lib/{r}/meson.build: may use "{u}", which is not a room')
    may[r] = set(uses)

def reaches(a, b, seen=()):
    return any(u == b or (u not in seen and reaches(u, b, seen + (u,))) for u in may.get(a, ()))

for r in rooms:
    if reaches(r, r):
        bad.append(f'lib/{r}: the rooms it may use lead back to it')
    for f in sorted((lib / r).iterdir()):
        if f.suffix not in ('.c', '.h'):
            continue
        for n, line in enumerate(f.read_text().splitlines(), 1):
            m = re.match(r'\s*#\s*include\s+"([^"]+)"', line)
            if not m or m.group(1) not in home:
                continue
            to = home[m.group(1)]
            if to != r and to not in may.get(r, ()):
                bad.append(f'lib/{r}/{f.name}:{n}: includes {m.group(1)} from room {to}, '
                           f'which {r} may not use')

for b in bad:
    print(b)
print(f'{len(rooms)} rooms, {len(home)} headers: ' + ('ok' if not bad else f'{len(bad)} wrong'))
sys.exit(1 if bad else 0)
