#!/usr/bin/env python3
"""Compare the coroutines of gdb's "lua-states" with luacore-inspect's VMs
section, on the same live process.

usage: compare_states.py GDB_OUTPUT INSPECT_OUTPUT

From the "VMs:" line on, each "lua_State ADDR ..." line (address, kind,
status, thread, resumer) and the "lua: ..." lines under it (the frames of
a coroutine that is not on a thread's stack) must be the same in both, for
the same set of lua_States.  Prints a one-line summary; exit 0 if equal,
1 if not."""
import re
import sys

STATE = re.compile(r"^\s+lua_State (0x[0-9a-f]+) ")


def states(path):
    out, cur, seen = {}, None, False
    with open(path, errors="replace") as f:
        for line in f:
            line = line.rstrip("\n")
            if line.startswith("VMs: "):
                seen = True
                continue
            if not seen:
                continue
            m = STATE.match(line)
            if m:
                cur = out.setdefault(m.group(1), [line.strip()])
            elif cur is not None and line.strip().startswith("lua: "):
                cur.append(line.strip())
    return seen, out


def main():
    gseen, g = states(sys.argv[1])
    iseen, i = states(sys.argv[2])
    ok = gseen and iseen
    if not gseen:
        print("no VMs section in gdb's output")
    if not iseen:
        print("no VMs section in luacore-inspect's output")
    for a in sorted(set(g) | set(i)):
        x, y = g.get(a), i.get(a)
        if x != y:
            ok = False
            print("lua_State %s differs:" % a)
            for k in range(max(len(x or []), len(y or []))):
                p = x[k] if x and k < len(x) else "(none)"
                q = y[k] if y and k < len(y) else "(none)"
                print("  %sgdb:     %s" % ("  " if p == q else "! ", p))
                if p != q:
                    print("  ! inspect: %s" % q)
    nf = sum(len(v) - 1 for v in i.values())
    print("%s: %d lua_States, %d coroutine frames" % ("equal" if ok else "DIFFERENT", len(i), nf))
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
