#!/usr/bin/env python3
"""Compare a luacore-inspect JSON report with a fixture's ground truth.

    compare.py [-q] TRUTH.tsv REPORT.json

For every OS thread (tid) of the truth (fixtures/lua/truth.lua), the report's
thread with that tid must have exactly the truth's Lua-level frames: the
entries with kind == "lua", innermost first, compared field by field (what,
source, currentline, name, namewhat, istailcall) with the truth lines in seq
order.  Threads of the report that have no truth lines are ignored.  The
report's process.lua_version, when given, must have the truth's major.minor.

Prints one line per frame ("=" same, "!" differs, "-" only in the truth,
"+" only in the report); -q prints only the differing frames and the summary.
Exit status: 0 exact match, 1 mismatch, 2 unreadable input.
"""
import json
import sys

FIELDS = ("what", "source", "currentline", "name", "namewhat", "istailcall")


def unescape(s):
    out, i = [], 0
    while i < len(s):
        if s[i] == "\\" and i + 1 < len(s):
            out.append({"t": "\t", "n": "\n", "\\": "\\"}.get(s[i + 1], s[i : i + 2]))
            i += 2
        else:
            out.append(s[i])
            i += 1
    return "".join(out)


def read_truth(path):
    """-> (lua version "5.4" or None, {tid: [frame dict, ...] in seq order})"""
    version, threads = None, {}
    with open(path, encoding="utf-8", errors="surrogateescape") as f:
        for n, line in enumerate(f, 1):
            cols = line.rstrip("\n").split("\t")
            if cols[0] == "luaversion":
                version = cols[1].replace("Lua ", "")
            elif cols[0] == "frame" and len(cols) == 9:
                _, tid, seq, what, src, cur, name, nwhat, tail = cols
                threads.setdefault(int(tid), []).append((int(seq), {
                    "what": what, "source": unescape(src), "currentline": int(cur),
                    "name": unescape(name), "namewhat": nwhat, "istailcall": tail == "1"}))
            elif line.strip():
                raise ValueError("%s:%d: not a truth line: %r" % (path, n, line))
    for tid, frames in threads.items():
        frames.sort(key=lambda x: x[0])
        if [s for s, _ in frames] != list(range(len(frames))):
            raise ValueError("%s: tid %d: seq is not 0..%d" % (path, tid, len(frames) - 1))
        threads[tid] = [f for _, f in frames]
    return version, threads


def from_report(fr):
    """A report frame in the truth's terms (null name/namewhat -> "")."""
    return {
        "what": fr.get("what"), "source": fr.get("source"),
        "currentline": fr.get("currentline"), "name": fr.get("name") or "",
        "namewhat": fr.get("namewhat") or "", "istailcall": bool(fr.get("istailcall")),
    }


def show(fr):
    if fr is None:
        return "(none)"
    src = fr["source"] if isinstance(fr["source"], str) else repr(fr["source"])
    if len(src) > 50:
        src = "..." + src[-47:]
    s = "%-4s %s:%s" % (fr["what"], src, fr["currentline"])
    if fr["name"] or fr["namewhat"]:
        s += " %s(%s)" % (fr["name"] or "?", fr["namewhat"])
    if fr["istailcall"]:
        s += " [tail call]"
    return s


def diff_thread(truth, report):
    """-> list of (same?, text lines) per frame position."""
    rows = []
    for i in range(max(len(truth), len(report))):
        t = truth[i] if i < len(truth) else None
        r = report[i] if i < len(report) else None
        if t is None:
            rows.append((False, ["  + #%-3d report only: %s" % (i, show(r))]))
        elif r is None:
            rows.append((False, ["  - #%-3d truth only:  %s" % (i, show(t))]))
        else:
            bad = [k for k in FIELDS if t[k] != r[k]]
            if not bad:
                rows.append((True, ["  = #%-3d %s" % (i, show(t))]))
            else:
                rows.append((False, ["  ! #%-3d truth:  %s" % (i, show(t)),
                                     "         report: %s" % show(r)] +
                                    ["         %s: truth %r, report %r" % (k, t[k], r[k]) for k in bad]))
    return rows


def main(argv):
    quiet = "-q" in argv
    args = [a for a in argv if a != "-q"]
    if len(args) != 2:
        print("usage: " + __doc__.strip().splitlines()[2].strip(), file=sys.stderr)
        return 2
    try:
        version, truth = read_truth(args[0])
        with open(args[1], encoding="utf-8") as f:
            report = json.load(f)
        threads = {t["tid"]: t for t in report["threads"]}
    except (OSError, ValueError, KeyError, TypeError) as e:
        print("compare: %s" % e, file=sys.stderr)
        return 2
    if not truth:
        print("compare: %s has no frames" % args[0], file=sys.stderr)
        return 2

    ok = True
    got = (report.get("process") or {}).get("lua_version")
    if version and got and got.split(".")[:2] != version.split(".")[:2]:
        print("lua_version: truth Lua %s, report %s" % (version, got))
        ok = False
    for tid in sorted(truth):
        th = threads.get(tid)
        if th is None:
            print("thread %d: not in the report" % tid)
            ok = False
            continue
        frames = [from_report(fr) for fr in th.get("frames", []) if fr.get("kind") == "lua"]
        rows = diff_thread(truth[tid], frames)
        same = all(r[0] for r in rows)
        print("thread %d%s: %s (truth %d frames, report %d)" % (
            tid, " (partial)" if th.get("partial") else "",
            "match" if same else "MISMATCH", len(truth[tid]), len(frames)))
        for row_same, lines in rows:
            if not (quiet and row_same):
                print("\n".join(lines))
        ok = ok and same
    print("compare: %s" % ("match" if ok else "MISMATCH"))
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
