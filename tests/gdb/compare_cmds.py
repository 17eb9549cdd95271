#!/usr/bin/env python3
"""Compare lua-states, lua-vm, lua-stack, lua-heap and lua-path (gdb) with
luacore-inspect's text report and --heap text of the same core.

usage: compare_cmds.py DIR

DIR holds inspect.txt (luacore-inspect), inspect-stack.txt (the same with
--stack --residue 8), states.txt (lua-states), and for some lua_States
ADDR vm-ADDR.txt (lua-vm ADDR) and stack-ADDR.txt (lua-stack ADDR -residue
8).  lua-states must equal the report's VM part line for line.  Every
state of a VM found by a thread must have both files, and so must at
least one state of a VM found by the scan if there is one.  lua-vm must
print exactly the state's block from the report, under its VM's header
(found "by state" for an idle VM: lua-vm does not scan); lua-stack the
same block with its Lua frames listed and the same slots.

lua-heap (heap.txt) must equal luacore-inspect --heap (inspect-heap.txt)
line for line.  If DIR holds expect.tsv (a heap_paths core: one line
"expect<TAB>NAME<TAB>ADDR<TAB>PATH" per planted object), lua-path ADDR
(path-ADDR.txt) must print ADDR's VM line and the line "  path to ADDR
(TYPE, BYTES): PATH", marked "[held only through a weak reference]" iff
PATH ends in "(weak)", and that line must be the one of luacore-inspect
--heap --path for every ADDR (inspect-paths.txt); lua-path ADDR --strong
(strong-ADDR.txt) the same, with "unreachable through strong references"
for a weak one, as inspect-strong.txt; and lua-path of an address inside
the first object (path-none.txt) "ADDR: no object of any VM starts
there".  Exit 0 if all equal."""
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


WEAK = "  [held only through a weak reference]"


def path_lines(lines):
    """{address: line} of the "  path to ADDR (...): ..." lines."""
    out = {}
    for line in lines:
        m = re.match(r"^  path to (0x[0-9a-f]+) \(", line)
        if m:
            out[m.group(1)] = line
    return out


def read_opt(path):
    return read(path) if os.path.exists(path) else []


def heap(d):
    """(ok, summary) of lua-heap and lua-path against luacore-inspect."""
    ok = True
    want = read_opt(os.path.join(d, "inspect-heap.txt"))
    got = read_opt(os.path.join(d, "heap.txt"))
    if not any(l.startswith("  by type:") for l in want):
        ok = False
        print("no census in luacore-inspect --heap")
    if got != want:
        ok = False
        print("lua-heap differs from luacore-inspect --heap")
    summary = "lua-heap %s (%d lines)" % ("equal" if got == want else
                                           "DIFFERENT", len(want))
    expect = [l.split("\t") for l in read_opt(os.path.join(d, "expect.tsv"))]
    if not expect:
        return ok, summary
    counts = {}
    for strong in (False, True):
        ref = path_lines(read_opt(os.path.join(
            d, "inspect-strong.txt" if strong else "inspect-paths.txt")))
        n = 0
        for _, name, addr, want in expect:
            lines = read_opt(os.path.join(d, "%s-%s.txt" % (
                "strong" if strong else "path", addr)))
            got = path_lines(lines).get(addr)
            weak = want.endswith("(weak)")
            tail = got.split("): ", 1)[1] if got and "): " in got else None
            if strong and weak:
                good = tail == "unreachable through strong references"
            else:
                good = tail == want + (WEAK if weak else "")
            # Its VM's line first, the path line as luacore-inspect's.
            if good and lines and lines[0].startswith("VM 0x") and \
                    got == ref.get(addr):
                n += 1
            else:
                ok = False
                print("lua-path %s%s (%s): want %r, got %r (luacore-inspect "
                      "%r)" % (addr, " --strong" if strong else "", name,
                               want, got, ref.get(addr)))
        counts[strong] = n
    none = read_opt(os.path.join(d, "path-none.txt"))
    addr = "0x%x" % (int(expect[0][2], 16) + 1)
    none_ok = none == ["%s: no object of any VM starts there" % addr]
    if not none_ok:
        ok = False
        print("lua-path %s: want no object there, got %r" % (addr, none))
    summary += "; lua-path %d/%d, --strong %d/%d, no object %s" % (
        counts[False], len(expect), counts[True], len(expect),
        "said" if none_ok else "NOT SAID")
    return ok, summary


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
    heap_ok, heap_summary = heap(d)
    ok = ok and heap_ok
    print("%s: lua-states %s (%d states); lua-vm %d/%d; lua-stack %d/%d; %s" %
          ("equal" if ok else "DIFFERENT", "equal" if want == got else
           "DIFFERENT", len(ref), nvm, nref, nstack, nref, heap_summary))
    return 0 if ok else 1


sys.exit(main())
