#!/usr/bin/env python3
"""compare_frames.py TRUTH FRAMES [SKIP]

TRUTH: the truth.tsv a scenario wrote (fixtures/lua/truth.lua) on the
line of its capture; FRAMES: lj-frames' output for the core taken there.
The first SKIP frames of FRAMES (default 1: the C function the script
parks in, which the truth, written just before the call, does not have)
are left out; then frame by frame: a Lua frame ("Lua" or "main" in the
truth) must have the same source and current line, a C frame must be a C
or fast function.  Prints "equal: N frames (K Lua)" and exits 0, or
prints the first difference and exits 1.
"""
import sys


def truth_frames(path):
    out = []
    for line in open(path, encoding="utf-8", errors="replace"):
        f = line.rstrip("\n").split("\t")
        if f[0] != "frame":
            continue
        what, source, cur = f[3], f[4], f[5]
        if what in ("Lua", "main"):
            out.append("lua %s:%s" % (source, cur))
        else:
            out.append("C")
    return out


def read_frames(path, skip):
    out = []
    for line in open(path, encoding="utf-8", errors="replace"):
        line = line.rstrip("\n")
        if line.startswith("lua "):
            out.append(line)
        elif line.startswith("c ") or line.startswith("ff "):
            out.append("C")
    return out[skip:]


def main():
    skip = int(sys.argv[3]) if len(sys.argv) > 3 else 1
    want = truth_frames(sys.argv[1])
    got = read_frames(sys.argv[2], skip)
    if not want:
        print("no frame in the truth")
        return 1
    for i, (w, g) in enumerate(zip(want, got)):
        if w != g:
            print("frame %d: truth %s, read %s" % (i, w, g))
            return 1
    if len(want) != len(got):
        print("truth has %d frames, read %d" % (len(want), len(got)))
        return 1
    print("equal: %d frames (%d Lua)" % (len(want), sum(1 for w in want if w != "C")))
    return 0


sys.exit(main())
