#!/usr/bin/env python3
"""The include graph of libcore between its source files, and its cycles.

usage: include-graph.py LIBCORE_DIR [--edges]

A .c file depends on the .c files that implement what the headers it
includes declare: a header belongs to the files that define the
functions it declares (internal.h to target.c, live.c and error.c,
say); luacore.h, the public header every file may include, belongs to
none.  The cycles are the strongly connected components of that graph
with more than one file.  Files in one layer's folder may depend on each
other; a cycle that spans two layers (or, in a flat tree, any cycle) is
what the include rule forbids.

Prints the cycles (and with --edges every edge first); exits 1 when a
cycle spans more than one folder, else 0."""
import os
import re
import sys

INCLUDE = re.compile(r'^\s*#\s*include\s*"([^"]+)"', re.M)
DECL = re.compile(r'^(?!static\b)[A-Za-z_][^;{}()#]*?\b(lc_[a-z0-9_]+)\s*\(', re.M)


def strip_comments(s):
    return re.sub(r'/\*.*?\*/', ' ', s, flags=re.S)


def main():
    root = sys.argv[1].rstrip('/')
    files = {}
    for d, _, names in os.walk(root):
        for n in names:
            if n.endswith(('.c', '.h')):
                p = os.path.join(d, n)
                rel = os.path.relpath(p, root)
                with open(p, errors='replace') as f:
                    files[rel] = strip_comments(f.read())
    # Which .c files define each function (non-static definitions).
    defined = {}
    for rel, s in files.items():
        if not rel.endswith('.c'):
            continue
        for m in DECL.finditer(s):
            rest = s[m.end():m.end() + 4000]
            depth, i = 1, 0
            while i < len(rest) and depth:
                depth += {'(': 1, ')': -1}.get(rest[i], 0)
                i += 1
            if rest[i:].lstrip().startswith('{'):
                defined.setdefault(m.group(1), set()).add(rel)
    # A header belongs to the .c files defining what it declares; not the
    # public header, which every layer includes for the data types and
    # whose functions each layer implements a part of.
    owner = {}
    for rel, s in files.items():
        if rel.endswith('.h') and rel != 'luacore.h':
            own = set()
            for m in DECL.finditer(s):
                own |= defined.get(m.group(1), set())
            owner[rel] = own

    def resolve(rel, inc):
        for cand in (inc, os.path.normpath(os.path.join(os.path.dirname(rel), inc))):
            if cand in files:
                return cand
        return None

    def headers(rel, seen):
        """The headers rel includes, directly or through other headers."""
        for inc in INCLUDE.findall(files[rel]):
            h = resolve(rel, inc)
            if h and h not in seen:
                seen.add(h)
                headers(h, seen)
        return seen

    edges = {}
    for rel in sorted(files):
        if not rel.endswith('.c'):
            continue
        deps = set()
        for h in headers(rel, set()):
            deps |= owner.get(h, set())
        deps.discard(rel)
        edges[rel] = sorted(deps)
    if '--edges' in sys.argv:
        for a, bs in edges.items():
            for b in bs:
                print('  %s -> %s' % (a, b))
    # Tarjan's strongly connected components.
    index, low, stack, on, comps = {}, {}, [], set(), []
    counter = [0]

    def visit(v):
        index[v] = low[v] = counter[0]
        counter[0] += 1
        stack.append(v)
        on.add(v)
        for w in edges.get(v, []):
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            comp = []
            while True:
                w = stack.pop()
                on.discard(w)
                comp.append(w)
                if w == v:
                    break
            if len(comp) > 1:
                comps.append(sorted(comp))

    sys.setrecursionlimit(10000)
    for v in edges:
        if v not in index:
            visit(v)
    bad = 0
    for comp in comps:
        folders = sorted({os.path.dirname(c) or '.' for c in comp})
        spans = len(folders) > 1 or folders == ['.']
        bad += spans
        print('%s: %s' % ('cycle across layers' if spans else 'cycle within ' + folders[0] + '/',
                          ' '.join(comp)))
    print('%d source files, %d dependencies, %d cycles, %d across layers' % (
        len(edges), sum(len(b) for b in edges.values()), len(comps), bad))
    return 1 if bad else 0


sys.exit(main())
