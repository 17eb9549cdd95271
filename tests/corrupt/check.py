#!/usr/bin/env python3
"""Check a corrupted core's report against the unmodified core's.

    check.py SCENARIO ORIG.json MUTANT.json WHAT

WHAT is what tests/corrupt/corrupt printed.  Checks, for every scenario:
  - partial marks propagate: a partial frame's thread is partial, a
    partial Lua thread's VM is, and anything partial makes the report so;
  - nothing differs from the unmodified core unmarked: a thread whose
    frames differ (kind, what, line, name, in order) is marked partial.
and per scenario what must be marked: the damaged frame (by its
CallInfo) for the frame scenarios, the frame it calls for hook-bit,
upval-desc and startpc-order, the thread of the C function
a state lost for ci-lost, the report for mainthread-other, the thread whose state's status lies
for status-flip, the VM whose list lost a coroutine for gc-skip, every C frame
named from the module whose table is unreadable for loaded-table, a
damaged coroutine for co-header, a loop note for every
changed coroutine for ci-loops.  Prints what is wrong; exit 1 if any."""
import json
import re
import sys

sc, orig_p, mut_p, what_p = sys.argv[1:5]
orig = json.load(open(orig_p))
mut = json.load(open(mut_p))
what = open(what_p).read()
bad = []


def frame_key(f):
    return (f.get("kind"), f.get("what"), f.get("currentline"), f.get("name"))


# Propagation.
for th in mut["threads"]:
    if any(f.get("partial") for f in th["frames"]) and not th["partial"]:
        bad.append("thread %s has a partial frame but is not partial" % th["tid"])
    if th["partial"] and not mut["process"]["partial"]:
        bad.append("thread %s is partial but the report is not" % th["tid"])
for vm in mut.get("vms", []):
    for lt in vm["threads"]:
        if any(f.get("partial") for f in lt.get("frames", [])) and not lt["partial"]:
            bad.append("lua_State %s has a partial frame but is not partial" % lt["address"])
        if lt["partial"] and not vm["partial"]:
            bad.append("lua_State %s is partial but its VM is not" % lt["address"])
    if vm["partial"] and not mut["process"]["partial"]:
        bad.append("VM %s is partial but the report is not" % vm["address"])

# Nothing differs unmarked.
otids = {th["tid"]: th for th in orig["threads"]}
for th in mut["threads"]:
    o = otids.get(th["tid"])
    if o is None:
        continue
    ok = [frame_key(f) for f in o["frames"] if f["kind"] == "lua"]
    mk = [frame_key(f) for f in th["frames"] if f["kind"] == "lua"]
    if ok != mk and not th["partial"]:
        bad.append("thread %s: Lua frames differ from the unmodified core's, unmarked" % th["tid"])

m = re.search(r"CallInfo (0x[0-9a-f]+), Proto", what)


def frame_and_callee(ci):
    """The frame of CallInfo ci and the next Lua frame inward (the one it
    calls), each None if not in the report."""
    for th in mut["threads"]:
        fs = th["frames"]
        for i, f in enumerate(fs):
            if f.get("ci") == ci:
                inner = [g for g in fs[:i] if g["kind"] == "lua"]
                return f, inner[-1] if inner else None
    return None, None


if sc in ("upval-desc", "startpc-order"):
    # Names from the damaged Proto's code: the frame it calls.
    ci = m.group(1) if m else None
    frame, callee = frame_and_callee(ci)
    if frame is None:
        bad.append("no frame of CallInfo %s in the report" % ci)
    elif callee is None:
        bad.append("no frame called from CallInfo %s in the report" % ci)
    elif not callee.get("partial"):
        bad.append("the frame CallInfo %s calls (%s), named from its code, is not marked partial"
                   % (ci, callee.get("name")))
elif sc == "ci-lost":
    if not any(th["partial"] and "older than its call" in (th.get("note") or "")
               for th in mut["threads"]):
        bad.append("no thread is marked for the C function its state's CallInfo lost")
elif sc == "mainthread-other":
    if not mut["process"]["partial"]:
        bad.append("the report is not partial")
elif sc == "hook-bit":
    # The damaged frame, and (5.3+, which name it from the damaged one)
    # the next Lua frame inward.
    ci = m.group(1) if m else None
    release = re.search(r"Lua (\d+)\.(\d+)", what)
    names_from_bit = release and (int(release.group(1)), int(release.group(2))) >= (5, 3)
    frame, callee = frame_and_callee(ci)
    if frame is None:
        bad.append("no frame of CallInfo %s in the report" % ci)
    elif not frame.get("partial"):
        bad.append("the damaged frame (CallInfo %s) is not marked partial" % ci)
    if names_from_bit:
        if callee is None:
            bad.append("no frame called from CallInfo %s in the report" % ci)
        elif not callee.get("partial"):
            bad.append("the frame CallInfo %s calls (%s) is not marked partial"
                       % (ci, callee.get("name")))
elif sc in ("savedpc-null", "savedpc-below", "savedpc-odd", "lineinfo",
          "linedefined", "kind-bits", "k-self", "line-later"):
    ci = m.group(1) if m else None
    hit = [f for th in mut["threads"] for f in th["frames"] if f.get("ci") == ci]
    if not hit:
        bad.append("no frame of CallInfo %s in the report" % ci)
    for f in hit:
        if not f.get("partial"):
            bad.append("the damaged frame (CallInfo %s) is not marked partial" % ci)
        if sc == "kind-bits" and f.get("what") == "C":
            bad.append("the damaged frame (CallInfo %s) is shown as a C function" % ci)
elif sc == "status-flip":
    n_o = sum(1 for th in orig["threads"] for f in th["frames"] if f["kind"] == "lua")
    n_m = sum(1 for th in mut["threads"] for f in th["frames"] if f["kind"] == "lua")
    if n_m != n_o:
        bad.append("%d Lua frames on the threads, the unmodified core has %d" % (n_m, n_o))
    if not any(th["partial"] for th in mut["threads"]):
        bad.append("no thread is marked")
elif sc == "gc-skip":
    if not any(vm["partial"] and "not on the GC lists" in (vm.get("note") or "")
               for vm in mut["vms"]):
        bad.append("no VM is marked for the coroutine its list lost")
elif sc == "loaded-table":
    # Every C frame the unmodified core names from that module is either
    # still named or marked.
    onamed = {f["ci"] for th in orig["threads"] for f in th["frames"]
              if f["kind"] == "lua" and f.get("what") == "C" and
              (f.get("global_name") or "").startswith("coroutine.")}
    if not onamed:
        bad.append("the unmodified core names no C function from coroutine")
    for th in mut["threads"]:
        for f in th["frames"]:
            if f.get("ci") in onamed and not f.get("global_name") and not f.get("partial"):
                bad.append("C frame %s lost its name unmarked" % f["ci"])
elif sc == "co-header":
    if not any(lt.get("status") == "damaged" for vm in mut["vms"] for lt in vm["threads"]):
        bad.append("no coroutine listed as damaged")
elif sc == "ci-loops":
    n = int(re.search(r"(\d+) coroutines changed", what).group(1))
    loops = sum(1 for vm in mut["vms"] for lt in vm["threads"]
                if "loops" in (lt.get("note") or ""))
    if loops != n:
        bad.append("%d coroutines changed, %d noted as looping" % (n, loops))

for b in bad:
    print(b)
sys.exit(1 if bad else 0)
