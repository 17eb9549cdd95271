#!/usr/bin/env python3
"""compare_busy.py TRUTH REPORT MODE

TRUTH: the truth.tsv fixtures/scenarios/luajit/busy.lua wrote: its frames
just before its endless loop, and "busy FIRST LAST", the loop's lines;
REPORT: luacore-inspect --json of the spinning program (live or its
core); MODE: "interp" (JIT off), "jit", or "inline"
(fixtures/scenarios/luajit/inline.lua: a compiled loop calling step,
which the trace inlines: the innermost frame is either the loop's, or
step's at a line of its body ("inline FIRST LAST CALL" in the truth),
from the trace's snapshot, with the loop's frame below it at the CALL
line; the last line printed says "inlined" then).  The report's Lua frames of the
thread must equal the truth's (tests/matrix/compare.py's fields and
traceback lines), except the innermost one's current line, which must
lie in FIRST..LAST (its traceback line with it).  With "interp" the
innermost frame's line comes from the interpreter's PC register
(line_from "pc"); with "jit" from the running trace (line_from
"snapshot"), a native frame named "LuaJIT trace N" is on the thread's
stack and machine frames below the trace are unwound to main.  Prints
"equal: ..." and exits 0, or what differs and exits 1.
"""
import json
import os
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "matrix"))
import compare  # noqa: E402


def main(argv):
    if len(argv) != 3:
        print(__doc__.strip().splitlines()[0], file=sys.stderr)
        return 2
    other = {}
    _, truth = compare.read_truth(argv[0], None, other)
    first, last = (int(x) for x in other["busy"][0][:2])
    report = json.load(open(argv[1]))
    mode = argv[2]
    inlined = None
    problems = []
    if len(truth) != 1:
        print("truth: %d threads, not 1" % len(truth))
        return 1
    tid, want = next(iter(truth.items()))
    th = {t["tid"]: t for t in report["threads"]}.get(tid)
    if th is None:
        print("thread %d: not in the report" % tid)
        return 1
    frames = th.get("frames", [])
    lua = [f for f in frames if f.get("kind") == "lua"]
    got = [compare.from_report(f) for f in lua]
    if not got:
        print("thread %d: no Lua frames (%s)" % (tid, th.get("note")))
        return 1
    if mode == "inline" and got[0].get("name") == "step":
        sfirst, slast, call = (int(x) for x in other["inline"][0][:3])
        f0, lf0 = got[0], lua[0].get("line_from")
        if not (isinstance(f0["currentline"], int) and sfirst <= f0["currentline"] <= slast):
            problems.append("inlined step at line %r, not in its body %d..%d" % (
                f0["currentline"], sfirst, slast))
        if f0.get("namewhat") != "upvalue" or lf0 != "snapshot":
            problems.append("inlined step: namewhat %r, line_from %r" % (f0.get("namewhat"), lf0))
        if len(got) < 2 or got[1]["currentline"] != call:
            problems.append("below inlined step: line %r, not the call's %d" % (
                got[1]["currentline"] if len(got) > 1 else None, call))
        inlined = f0["currentline"]
        got, lua = got[1:], lua[1:]
    line = got[0]["currentline"]
    if not isinstance(line, int) or not first <= line <= last:
        problems.append("innermost line %r, not in the loop's %d..%d" % (line, first, last))
    else:
        # The truth's innermost frame, at the line read.
        w = dict(want[0])
        old = ":%d:" % w["currentline"]
        w["currentline"] = line
        if w.get("traceback"):
            w["traceback"] = w["traceback"].replace(old, ":%d:" % line, 1)
        want = [w] + want[1:]
    if not compare.check("thread %d" % tid, want, got, th.get("partial"), True):
        problems.append("frames differ from the truth")
    lf = lua[0].get("line_from")
    expect = "pc" if mode == "interp" else None if inlined else "snapshot"
    if lf != expect and not (mode == "inline" and not inlined and lf == "trace start"):
        problems.append("innermost line_from %r, not %r" % (lf, expect))
    natives = [f.get("function") or "" for f in frames if f.get("kind") == "native"]
    if mode != "interp":
        if not any(n.startswith("LuaJIT trace ") for n in natives):
            problems.append("no native frame of a trace: %s" % natives[:3])
        if "main" not in natives:
            problems.append("the machine frames do not reach main: %s" % natives)
    # The VM's own state: g->vmstate the interpreter's, or the trace
    # whose machine frame the stack shows; the compiler off or on, with
    # at least that trace; cur_L the running thread, checked.
    vm = next((v for v in report.get("vms", []) if v.get("luajit")), None)
    if vm is None:
        problems.append("no VM with LuaJIT's state in the report")
    else:
        lj = vm["luajit"]
        running = vm["chain"][-1] if vm.get("chain") else None
        if mode == "interp":
            if lj.get("vmstate") != "interpreter" or lj.get("compiler_on") is not False:
                problems.append("VM: vmstate %r, compiler_on %r; not the interpreter with the compiler off" % (
                    lj.get("vmstate"), lj.get("compiler_on")))
        else:
            traces = [n[len("LuaJIT trace "):] for n in natives if n.startswith("LuaJIT trace ")]
            if lj.get("vmstate") != "trace" or str(lj.get("trace")) not in traces:
                problems.append("VM: vmstate %r trace %r; the stack runs trace %s" % (
                    lj.get("vmstate"), lj.get("trace"), traces))
            if lj.get("compiler_on") is not True or not (lj.get("traces") or 0) >= 1:
                problems.append("VM: compiler_on %r, %r traces" % (lj.get("compiler_on"), lj.get("traces")))
        if lj.get("cur_L_note") or lj.get("cur_L") != running:
            problems.append("VM: cur_L %r (%s), the running thread %r" % (
                lj.get("cur_L"), lj.get("cur_L_note"), running))
    if problems:
        for p in problems:
            print("FAIL: " + p)
        return 1
    print("equal: %d Lua frames, the innermost at line %d (%s)%s; vmstate %s, %s traces%s" % (
        len(got), line, lf, ", %s" % natives[0] if mode != "interp" else "",
        vm["luajit"]["vmstate"], vm["luajit"]["traces"],
        "; inlined step at line %d above it" % inlined if inlined else ""))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
