#!/usr/bin/env python3
"""Compare the Lua frames of one "lua-bt" output with the truth the Lua
script wrote at the same point (fixtures/lua/truth.lua's format).

usage: compare_truth.py LUA_BT_OUTPUT TRUTH_TSV

Each Lua frame line's source and current line must equal debug.getinfo's
short_src and currentline, frame by frame, innermost first ("[C]" and no
line for C functions).  Exit 0 if equal, 1 if not."""
import re
import sys

LUA = re.compile(r"^\s*lua: (\[C\]|.+?):(?:(\d+):)? in ")


def truth_frames(path):
    rows = []
    with open(path, errors="replace") as f:
        for line in f:
            p = line.rstrip("\n").split("\t")
            if p[0] != "frame":
                continue
            seq, what, source, cur = int(p[2]), p[3], p[4], int(p[5])
            if what == "C":
                src = "[C]"
            elif source[:1] in "@=":
                src = source[1:]
            else:
                src = source
            rows.append((seq, src, cur if cur > 0 else None))
    return [(s, c) for _, s, c in sorted(rows)]


def bt_frames(path):
    out = []
    with open(path, errors="replace") as f:
        for line in f:
            m = LUA.match(line)
            if m:
                out.append((m.group(1), int(m.group(2)) if m.group(2)
                            else None))
    return out


def main():
    want = truth_frames(sys.argv[2])
    got = bt_frames(sys.argv[1])
    if not want:
        print("no frame in the truth file")
        return 1
    # lua-bt prints short_src, which Lua shortens from the left to
    # "...tail" when the path is long (luaO_chunkid): such a source
    # matches the truth's path when it is that path's tail.
    for k, (w, g) in enumerate(zip(want, got)):
        if (g[0].startswith("...") and len(g[0]) > 3 and
                w[0].endswith(g[0][3:]) and w[1] == g[1]):
            got[k] = w
    if want == got:
        print("equal: %d Lua frames" % len(want))
        return 0
    print("DIFFERENT:")
    for k in range(max(len(want), len(got))):
        w = want[k] if k < len(want) else None
        g = got[k] if k < len(got) else None
        print("  %s truth %s  lua-bt %s" % ("  " if w == g else "! ", w, g))
    return 1


sys.exit(main())
