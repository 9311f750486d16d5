#!/usr/bin/env python3
"""Comments and docs name only files that exist (docs/ARCHITECTURE.md).

Every file name a C comment, a doc (docs/*.md, README.md) or a man page
(man/*.scd) mentions (something.c, .h, .py, .proto, .scd, .md, .build,
.sh) must be a file of the tree: by its path, a path's tail, or, bare, by
its name anywhere in it; ../ from the naming file's folder.  A system header (under /usr/include) counts, a
placeholder in capitals (fuzz_NAME.c) does not need to exist, and config
file names (.conf) are examples, not checked."""
import os
import pathlib
import re
import sys

root = pathlib.Path(sys.argv[1] if len(sys.argv) > 1 else pathlib.Path(__file__).parent.parent)
SKIP = {'.git', 'subprojects'}
paths = set()
for d, subdirs, names in os.walk(root):
    rel = pathlib.Path(d).relative_to(root)
    subdirs[:] = [s for s in subdirs if s not in SKIP and not (str(rel) == '.' and s.startswith('build'))]
    paths.update(str(rel / n) if str(rel) != '.' else n for n in names)
names = {pathlib.PurePath(p).name for p in paths}

FILE = re.compile(r'(?<![\w/.-])([\w./-]*[\w-]\.(?:c|h|py|proto|scd|md|build|sh))\b(?![\w/-])')


def exists(t, where):
    if t.startswith('../'):
        return os.path.normpath(os.path.join(os.path.dirname(where), t)) in paths
    t = t.removeprefix('./')
    if re.search(r'(^|[/_.-])[A-Z][A-Z_]+([/_.-]|$)', t) and not t.endswith('.md'):
        return True             # a placeholder: fuzz_NAME.c, TEST_FILE.py
    if os.path.exists(os.path.join('/usr/include', t)):
        return True
    if '/' in t:
        return t in paths or any(p.endswith('/' + t) for p in paths)
    return t in names


def comments(text):
    return (m.group(0) for m in re.finditer(r'/\*.*?\*/|//[^\n]*', text, re.S))


bad = []
for p in sorted(paths):
    if p.endswith(('.c', '.h')):
        texts = comments((root / p).read_text(errors='replace'))
    elif (p.startswith('docs/') and p.endswith('.md')) or p == 'README.md' or \
            (p.startswith('man/') and p.endswith('.scd')):
        texts = [(root / p).read_text(errors='replace')]
    else:
        continue
    for t in texts:
        bad += [f'{p}: names {m.group(1)}, which is not in the tree'
                for m in FILE.finditer(t) if not exists(m.group(1), p)]
if bad:
    sys.exit('\n'.join(sorted(set(bad))))
print(f'{len(paths)} files: every file named is there')
