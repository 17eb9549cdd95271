#!/usr/bin/env python3
"""compare_frames.py TRUTH FRAMES [SKIP]

TRUTH: the truth.tsv a scenario wrote (fixtures/lua/truth.lua) on the
line of its capture; FRAMES: lj-frames' output for the core taken there.
The first SKIP frames of FRAMES (default 1: the C function the script
parks in, which the truth, written just before the call, does not have)
of each VM are left out; then each OS thread's frames in the truth must
equal one VM's (or two or three VMs' one after the other: a VM run from
a C function of another), frame by frame, in any order: a Lua frame ("Lua" or
"main" in the truth) must have the same source and current line, a C
frame must be a C or fast function, and each its name and namewhat (from
the caller's bytecode).  Prints "equal: N frames (K Lua)" and exits 0, or
prints the first difference and exits 1.
"""
import itertools
import sys


def truth_blocks(path):
    """The truth's frames, one block per OS thread (tid), in file order."""
    blocks, order = {}, []
    for line in open(path, encoding="utf-8", errors="replace"):
        f = line.rstrip("\n").split("\t")
        if f[0] != "frame":
            continue
        tid, what, source, cur, name, namewhat = f[1], f[3], f[4], f[5], f[6], f[7]
        if tid not in blocks:
            blocks[tid] = []
            order.append(tid)
        if what in ("Lua", "main"):
            frame = "lua %s:%s" % (source, cur)
        else:
            frame = "C"
        blocks[tid].append("%s [%s %s]" % (frame, name, namewhat))
    return [blocks[t] for t in order]


def read_blocks(path, skip):
    """lj-frames' frames, one block per VM ("vm" lines)."""
    blocks = []
    for line in open(path, encoding="utf-8", errors="replace"):
        line = line.rstrip("\n")
        if line.startswith("vm "):
            blocks.append([])
        elif not blocks:
            continue
        elif line.startswith(("lua ", "c ", "ff ")):
            desc, name, namewhat = (line.split("\t") + ["", ""])[:3]
            frame = desc if desc.startswith("lua ") else "C"
            blocks[-1].append("%s [%s %s]" % (frame, name, namewhat))
    return [b[skip:] for b in blocks]


def first_diff(want, got):
    for i, (w, g) in enumerate(zip(want, got)):
        if w != g:
            return "frame %d: truth %s, read %s" % (i, w, g)
    if len(want) != len(got):
        return "truth has %d frames, read %d" % (len(want), len(got))
    return None


def main():
    skip = int(sys.argv[3]) if len(sys.argv) > 3 else 1
    want = truth_blocks(sys.argv[1])
    got = read_blocks(sys.argv[2], skip)
    if not want:
        print("no frame in the truth")
        return 1
    # Each OS thread's frames are one VM's running chain: match the
    # blocks whatever their order (the VMs are read in address order).
    # A thread that runs a VM from inside another's C function (lchost's
    # run_in_new_vm) has the frames of both, the inner VM's first: a
    # block may be matched by up to three VMs' chains one after another.
    unused = list(range(len(got)))
    for w in want:
        match = None
        for k in (1, 2, 3):
            for combo in itertools.permutations(unused, k):
                if first_diff(w, [f for i in combo for f in got[i]]) is None:
                    match = combo
                    break
            if match:
                break
        if not match:
            diffs = [first_diff(w, got[i]) for i in unused] or ["no VM left"]
            print(diffs[0])
            return 1
        for i in match:
            unused.remove(i)
    frames = sum(len(w) for w in want)
    lua = sum(1 for w in want for f in w if f.startswith("lua "))
    if any(got[i] for i in unused):
        print("read %d more VMs with frames than the truth has threads" % len(unused))
        return 1
    print("equal: %d frames (%d Lua)" % (frames, lua))
    return 0


sys.exit(main())
