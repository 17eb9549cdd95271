#!/usr/bin/env python3
"""Compare lua-states, lua-vm and lua-stack (gdb) with luacore-inspect's
text report of the same core.

usage: compare_cmds.py DIR

DIR holds inspect.txt (luacore-inspect), inspect-stack.txt (the same with
--stack --residue 8), states.txt (lua-states), and for some lua_States
ADDR vm-ADDR.txt (lua-vm ADDR) and stack-ADDR.txt (lua-stack ADDR -residue
8).  lua-states must equal the report's VM part line for line.  Every
state of a VM found by a thread must have both files, and so must at
least one state of a VM found by the scan if there is one.  lua-vm must
print exactly the state's block from the report, under its VM's header
(found "by state" for an idle VM: lua-vm does not scan); lua-stack the
same block with its Lua frames listed and the same slots.  Exit 0 if all
equal."""
import os
import re
import sys

STATE = re.compile(r"^  lua_State (0x[0-9a-f]+) ")
SLOT = re.compile(r"^    \[\s*-?\d+\] ")
FRAME = re.compile(r"^    lua: ")


def vm_part(lines):
    for i, line in enumerate(lines):
        if line.startswith("VMs: "):
            return lines[i:]
    return []


def blocks(lines):
    """{state: (vm header lines, state block lines)}"""
    out = {}
    head, cur = [], None
    for line in lines:
        if line.startswith("VM "):
            head, cur = [line], None
            continue
        m = STATE.match(line)
        if m:
            cur = out.setdefault(m.group(1), (list(head), []))[1]
        elif cur is None:
            if line.startswith("  "):
                head.append(line)
            continue
        if cur is not None and line.strip():
            cur.append(line)
    return out


def read(path):
    with open(path, errors="replace") as f:
        return f.read().splitlines()


def main():
    d = sys.argv[1]
    inspect = read(os.path.join(d, "inspect.txt"))
    ok = True
    want = [l for l in vm_part(inspect) if l.strip()]
    got = [l for l in vm_part(read(os.path.join(d, "states.txt")))
           if l.strip()]
    if not want:
        print("no VM in luacore-inspect's report")
        return 1
    if want != got:
        ok = False
        print("lua-states differs from the report's VM part")
    ref = blocks(vm_part(inspect))
    ref_stack = blocks(vm_part(read(os.path.join(d, "inspect-stack.txt"))))
    nvm = nstack = nref = 0
    idle_seen = not any("(found by scan)" in h[0] for h, _ in ref.values())
    for addr, (head, block) in sorted(ref.items()):
        path = os.path.join(d, "vm-%s.txt" % addr)
        if "(found by thread)" not in head[0]:
            if not os.path.exists(path):
                continue
            idle_seen = True
            head = [head[0].replace("(found by scan)", "(found by state)")] \
                + head[1:]
        nref += 1
        vm = read(path)
        b = blocks(vm).get(addr)
        if not b or b[0] != head or b[1] != block:
            ok = False
            print("lua-vm %s differs" % addr)
        else:
            nvm += 1
        st = blocks(read(os.path.join(d, "stack-%s.txt" % addr))).get(addr)
        slots = [l for l in ref_stack.get(addr, ([], []))[1]
                 if SLOT.match(l)]
        if not st or st[0] != head or \
                [l for l in st[1] if SLOT.match(l)] != slots or \
                not slots:
            ok = False
            print("lua-stack %s differs (%d slots in the report)" %
                  (addr, len(slots)))
        else:
            nstack += 1
    if not idle_seen:
        ok = False
        print("no lua-vm of an idle VM's state")
    print("%s: lua-states %s (%d states); lua-vm %d/%d; lua-stack %d/%d" %
          ("equal" if ok else "DIFFERENT", "equal" if want == got else
           "DIFFERENT", len(ref), nvm, nref, nstack, nref))
    return 0 if ok else 1


sys.exit(main())
