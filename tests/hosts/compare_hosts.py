#!/usr/bin/env python3
"""Compare luacore-inspect --json on a real host with its script's truth.

    compare_hosts.py [-q] TRUTH.tsv REPORT.json

The truth is what tests/hosts/capture.lua writes:
  frame     the running chain of the OS thread: compared as compare.py
            does (tests/matrix/compare.py), the report's thread with that
            tid, its kind == "lua" frames, innermost first
  coroutine ADDR STATUS ENDED LABEL: vms[].threads[] has a lua_State at
            ADDR with that status (running, normal, suspended)
  coframe   ADDR SEQ ...: the frames[] of that lua_State in vms[], field
            by field as for frame lines
Every Lua frame the report shows must be in the truth: a suspended
coroutine with frames that the truth does not name, and any Lua frame
marked partial or unplaced, is a mismatch.

Prints one line per frame ("=" same, "!" differs, "-" only in the truth,
"+" only in the report); -q prints only the differing frames and the
summaries.  Exit status: 0 exact match, 1 mismatch, 2 unreadable input.
"""
import json
import os
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "matrix"))
import compare  # noqa: E402  (the frame check of the fixture matrix)


def read_truth(path):
    """-> (version, {tid: [frames]}, [(addr, status, label)], {addr: [frames]})"""
    cofr, other = {}, {}
    version, threads = compare.read_truth(path, cofr, other)
    cos = []
    for cols in other.pop("coroutine", []):
        if len(cols) != 4:
            raise ValueError("%s: not a coroutine line: %r" % (path, cols))
        cos.append((int(cols[0], 16), cols[1], cols[3]))
    if other:
        raise ValueError("%s: not truth lines: %s" % (path, ", ".join(sorted(other))))
    return version, threads, cos, {int(a, 16): f for a, f in cofr.items()}


def main(argv):
    quiet = "-q" in argv
    args = [a for a in argv if a != "-q"]
    if len(args) != 2:
        print("usage: compare_hosts.py [-q] TRUTH.tsv REPORT.json", file=sys.stderr)
        return 2
    try:
        version, truth, cos, coframes = read_truth(args[0])
        with open(args[1], encoding="utf-8") as f:
            report = json.load(f)
        os_threads = {t["tid"]: t for t in report["threads"]}
        states = {}
        for vm in report["vms"]:
            for th in vm["threads"]:
                states[int(th["address"], 16)] = th
    except (OSError, ValueError, KeyError, TypeError) as e:
        print("compare_hosts: %s" % e, file=sys.stderr)
        return 2
    if not truth:
        print("compare_hosts: %s has no frames" % args[0], file=sys.stderr)
        return 2

    ok = True
    got = (report.get("process") or {}).get("lua_version")
    if version and got and got.split(".")[:2] != version.split(".")[:2]:
        print("lua_version: truth Lua %s, report %s" % (version, got))
        ok = False

    shown = []      # (where, report frame) of every Lua frame the report shows
    for tid in sorted(truth):
        th = os_threads.get(tid)
        if th is None:
            print("thread %d: not in the report" % tid)
            ok = False
            continue
        lua = [fr for fr in th.get("frames", []) if fr.get("kind") == "lua"]
        shown += [("thread %d" % tid, fr) for fr in lua]
        ok = compare.check("thread %d" % tid, truth[tid],
                           [compare.from_report(fr) for fr in lua],
                           th.get("partial"), quiet) and ok

    for a, status, label in cos:
        th = states.get(a)
        if th is None:
            print("coroutine 0x%x (%s): not in the report's vms" % (a, label))
            ok = False
            continue
        if th.get("status") != status:
            print("coroutine 0x%x (%s): status truth %s, report %s" % (a, label, status, th.get("status")))
            ok = False
        if a not in coframes:
            continue
        lua = th.get("frames") or []
        shown += [("coroutine 0x%x" % a, fr) for fr in lua]
        ok = compare.check("coroutine 0x%x %s (%s)" % (a, th.get("status"), label),
                           coframes[a], [compare.from_report(fr) for fr in lua],
                           th.get("partial"), quiet) and ok

    # Frames the truth does not cover: only those on an OS thread's stack
    # (running, normal: compared above) are left out.
    for a, th in sorted(states.items()):
        if th.get("frames") and a not in coframes and th.get("status") not in ("running", "normal"):
            print("lua_State 0x%x %s: %d Lua frames the truth does not name" % (
                a, th.get("status"), len(th["frames"])))
            ok = False
    for where, fr in shown:
        bad = [k for k in ("partial", "unplaced") if fr.get(k)]
        if bad:
            print("%s: frame %s marked %s" % (where, compare.show(compare.from_report(fr)), ", ".join(bad)))
            ok = False

    print("compare_hosts: %s" % ("match" if ok else "MISMATCH"))
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
