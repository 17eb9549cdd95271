#!/usr/bin/env python3
"""Compare the Lua frames of "lua-bt -a" (gdb) with luacore-inspect's on
the same core.

usage: compare_bt.py [--vars] GDB_OUTPUT INSPECT_OUTPUT

Per OS thread, the Lua frame lines ("lua: ...") must be the same, in the
same order, each after a native frame of the same function.  Native
frames themselves may differ: gdb stops at main, libdwfl goes on to
_start.  Prints a one-line summary; exit 0 if equal, 1 if not."""
import re
import sys

THREAD = re.compile(r"^Thread (\d+)")
# What libdwfl unwinds to below main and gdb does not show.
OUTER = ("__libc_start_call_main", "__libc_start_main", "__libc_start_main_impl",
         "_start")
VAR = re.compile(r"^\s+(local|vararg|upvalue) ")
# A C++ name has spaces ("ns::f(std::vector<int, std::allocator<int> >&)"):
# the name ends at the frame's own " ()", the last one on the line.
NATIVE = re.compile(r"^#\d+\s+(?:0x[0-9a-f]+|\[inlined\])\s+in (.*) \(\)")


def lua_frames(path, with_vars=False):
    threads = {}
    cur = None
    after = None
    with open(path, errors="replace") as f:
        for line in f:
            line = line.rstrip("\n")
            m = THREAD.match(line)
            if m:
                cur = threads.setdefault(int(m.group(1)), [])
                after = None
                continue
            if line.startswith("VMs: "):
                cur = None
                continue
            if cur is None:
                continue
            m = NATIVE.match(line)
            if m:
                # Frames outside main (unplaced ones go after the last)
                # follow gdb's last frame, main, and libdwfl's, _start.
                if m.group(1) not in OUTER:
                    after = m.group(1)
                continue
            s = line.strip()
            if s.startswith("lua: "):
                cur.append("%s | after %s" % (s, after))
            elif with_vars and VAR.match(line):
                cur.append("    " + s)
    return threads


def main():
    args = sys.argv[1:]
    with_vars = args[0] == "--vars"
    if with_vars:
        args = args[1:]
    g = lua_frames(args[0], with_vars)
    i = lua_frames(args[1], with_vars)
    ng = sum(1 for v in g.values() for x in v if x.startswith("lua: "))
    ni = sum(1 for v in i.values() for x in v if x.startswith("lua: "))
    nv = sum(1 for v in i.values() for x in v if not x.startswith("lua: "))
    ok = True
    for tid in sorted(set(g) | set(i)):
        a, b = g.get(tid), i.get(tid)
        if a is None or b is None:
            print("thread %d only in %s" % (tid, "gdb" if b is None
                                            else "luacore-inspect"))
            ok = False
            continue
        if a != b:
            ok = False
            print("thread %d differs:" % tid)
            for k in range(max(len(a), len(b))):
                x = a[k] if k < len(a) else "(none)"
                y = b[k] if k < len(b) else "(none)"
                mark = "  " if x == y else "! "
                print("  %sgdb:     %s" % (mark, x))
                if x != y:
                    print("  %sinspect: %s" % (mark, y))
    if ni == 0:
        print("no Lua frame in luacore-inspect's report: nothing compared")
        ok = False
    print("%s: %d threads, %d Lua frames (gdb %d)%s" %
          ("equal" if ok else "DIFFERENT", len(i), ni, ng,
           ", %d variables" % nv if with_vars else ""))
    return 0 if ok else 1


sys.exit(main())
