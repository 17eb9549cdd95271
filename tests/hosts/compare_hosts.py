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


def frame(cols):
    what, src, cur, name, nwhat, tail = cols
    return {"what": what, "source": compare.unescape(src), "currentline": int(cur),
            "name": compare.unescape(name), "namewhat": nwhat, "istailcall": tail == "1"}


def read_truth(path):
    """-> (version, {tid: [frames]}, [(addr, status, label)], {addr: [frames]})"""
    version, threads, cos, coframes, tbs = None, {}, [], {}, {}
    with open(path, encoding="utf-8", errors="surrogateescape") as f:
        for n, line in enumerate(f, 1):
            cols = line.rstrip("\n").split("\t")
            if cols[0] == "luaversion" and len(cols) == 2:
                version = cols[1].replace("Lua ", "")
            elif cols[0] == "frame" and len(cols) == 9:
                threads.setdefault(int(cols[1]), []).append((int(cols[2]), frame(cols[3:])))
            elif cols[0] == "coframe" and len(cols) == 9:
                coframes.setdefault(int(cols[1], 16), []).append((int(cols[2]), frame(cols[3:])))
            elif cols[0] == "tb" and len(cols) == 4:
                tbs[(int(cols[1]), int(cols[2]))] = compare.unescape(cols[3])
            elif cols[0] == "cotb" and len(cols) == 4:
                tbs[(int(cols[1], 16), int(cols[2]))] = compare.unescape(cols[3])
            elif cols[0] == "coroutine" and len(cols) == 5:
                cos.append((int(cols[1], 16), cols[2], cols[4]))
            elif line.strip():
                raise ValueError("%s:%d: not a truth line: %r" % (path, n, line))
    for d in (threads, coframes):
        for k, frames in d.items():
            frames.sort(key=lambda x: x[0])
            if [s for s, _ in frames] != list(range(len(frames))):
                raise ValueError("%s: %x: seq is not 0..%d" % (path, k, len(frames) - 1))
            for s, fr in frames:
                if (k, s) in tbs:
                    fr["traceback"] = tbs[(k, s)]
            d[k] = [fr for _, fr in frames]
    return version, threads, cos, coframes


def rows_text(rows, quiet):
    return "\n".join(line for same, lines in rows if not (quiet and same) for line in lines)


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
        rows = compare.diff_thread(truth[tid], [compare.from_report(fr) for fr in lua])
        same = all(r[0] for r in rows)
        print("thread %d%s: %s (truth %d frames, report %d)" % (
            tid, " (partial)" if th.get("partial") else "",
            "match" if same else "MISMATCH", len(truth[tid]), len(lua)))
        if rows_text(rows, quiet):
            print(rows_text(rows, quiet))
        ok = ok and same

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
        rows = compare.diff_thread(coframes[a], [compare.from_report(fr) for fr in lua])
        same = all(r[0] for r in rows)
        print("coroutine 0x%x %s (%s)%s: %s (truth %d frames, report %d)" % (
            a, th.get("status"), label, " (partial)" if th.get("partial") else "",
            "match" if same else "MISMATCH", len(coframes[a]), len(lua)))
        if rows_text(rows, quiet):
            print(rows_text(rows, quiet))
        ok = ok and same

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
