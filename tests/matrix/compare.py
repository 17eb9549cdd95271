#!/usr/bin/env python3
"""Compare a luacore-inspect JSON report with a fixture's ground truth.

    compare.py [-q] [--other-states-below] TRUTH.tsv REPORT.json

For every OS thread (tid) of the truth (fixtures/lua/truth.lua), the report's
thread with that tid must have exactly the truth's Lua-level frames: the
entries with kind == "lua", innermost first, compared field by field (what,
source, currentline, name, namewhat, istailcall) with the truth lines in seq
order, and with each frame's "tb" line (Lua's own luaL_traceback line for
it) the report frame's "traceback".  Threads of the report that have no
truth lines are ignored.  Each suspended coroutine of the truth (coframe and
cotb lines, by the lua_State's address) must have exactly those frames in
the report's vms[].threads[] entry of that address.  The report's
process.lua_version (or one of process.luas[], in a process with two
interpreters), when given, must have the truth's major.minor (a LuaJIT
report's, "LuaJIT 2.1...", goes with the truth's "Lua 5.1").

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


def _frame(what, src, cur, name, nwhat, tail):
    return {"what": what, "source": unescape(src), "currentline": int(cur),
            "name": unescape(name), "namewhat": nwhat, "istailcall": tail == "1"}


def read_truth(path, coroutines=None, other=None):
    """-> (lua version "5.4" or None, {tid: [frame dict, ...] in seq order});
    with a dict as coroutines, fills it {address: [frame dict, ...]}; with a
    dict as other, lines of other kinds go there ({kind: [columns after
    the kind, ...]}) instead of being an error."""
    version, threads, tbs, cos, cotbs = None, {}, {}, {}, {}
    with open(path, encoding="utf-8", errors="surrogateescape") as f:
        for n, line in enumerate(f, 1):
            cols = line.rstrip("\n").split("\t")
            if cols[0] == "luaversion":
                version = cols[1].replace("Lua ", "")
            elif cols[0] == "frame" and len(cols) == 9:
                _, tid, seq = cols[:3]
                threads.setdefault(int(tid), []).append((int(seq), _frame(*cols[3:])))
            elif cols[0] == "tb" and len(cols) == 4:
                tbs[(int(cols[1]), int(cols[2]))] = unescape(cols[3])
            elif cols[0] == "coframe" and len(cols) == 9:
                cos.setdefault(cols[1], []).append((int(cols[2]), _frame(*cols[3:])))
            elif cols[0] == "cotb" and len(cols) == 4:
                cotbs[(cols[1], int(cols[2]))] = unescape(cols[3])
            elif other is not None and line.strip():
                other.setdefault(cols[0], []).append(cols[1:])
            elif line.strip():
                raise ValueError("%s:%d: not a truth line: %r" % (path, n, line))
    for tid, frames in threads.items():
        frames.sort(key=lambda x: x[0])
        if [s for s, _ in frames] != list(range(len(frames))):
            raise ValueError("%s: tid %d: seq is not 0..%d" % (path, tid, len(frames) - 1))
        for s, fr in frames:
            if (tid, s) in tbs:
                fr["traceback"] = tbs[(tid, s)]
        threads[tid] = [f for _, f in frames]
    for a, frames in cos.items():
        frames.sort(key=lambda x: x[0])
        if [s for s, _ in frames] != list(range(len(frames))):
            raise ValueError("%s: coroutine %s: levels are not 0..%d" % (path, a, len(frames) - 1))
        for s, fr in frames:
            if (a, s) in cotbs:
                fr["traceback"] = cotbs[(a, s)]
        if coroutines is not None:
            coroutines[a] = [f for _, f in frames]
    return version, threads


def from_report(fr):
    """A report frame in the truth's terms (null name/namewhat -> "")."""
    return {
        "what": fr.get("what"), "source": fr.get("source"),
        "currentline": fr.get("currentline"), "name": fr.get("name") or "",
        "namewhat": fr.get("namewhat") or "", "istailcall": bool(fr.get("istailcall")),
        "traceback": fr.get("traceback"),
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
    if fr.get("traceback") is not None:
        s += "  | %s" % fr["traceback"]
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
            bad = [k for k in FIELDS + ("traceback",) if k in t and t[k] != r[k]]
            if not bad:
                rows.append((True, ["  = #%-3d %s" % (i, show(t))]))
            else:
                rows.append((False, ["  ! #%-3d truth:  %s" % (i, show(t)),
                                     "         report: %s" % show(r)] +
                                    ["         %s: truth %r, report %r" % (k, t[k], r[k]) for k in bad]))
    return rows


def check(label, truth, frames, partial, quiet):
    """Print how the report's frames of one stack compare with the truth's
    (label: "thread 123", "coroutine 0x..."); -> True if they match."""
    rows = diff_thread(truth, frames)
    same = all(r[0] for r in rows)
    print("%s%s: %s (truth %d frames, report %d)" % (
        label, " (partial)" if partial else "",
        "match" if same else "MISMATCH", len(truth), len(frames)))
    for row_same, lines in rows:
        if not (quiet and row_same):
            print("\n".join(lines))
    return same


def main(argv):
    quiet = "-q" in argv
    # --other-states-below: a thread's report frames past the truth's
    # are left out when none is of a lua_State of the truth's frames: the
    # script's VM runs it on a thread of its own (LuaJIT's finalizers run
    # on the VM thread, whose debug.getinfo does not see the thread that
    # called the collector).
    below = "--other-states-below" in argv
    args = [a for a in argv if a not in ("-q", "--other-states-below")]
    if len(args) != 2:
        print("usage: " + __doc__.strip().splitlines()[2].strip(), file=sys.stderr)
        return 2
    try:
        cos = {}
        version, truth = read_truth(args[0], cos)
        with open(args[1], encoding="utf-8") as f:
            report = json.load(f)
        threads = {t["tid"]: t for t in report["threads"]}
    except (OSError, ValueError, KeyError, TypeError) as e:
        print("compare: %s" % e, file=sys.stderr)
        return 2
    if not truth and not cos:
        print("compare: %s has no frames" % args[0], file=sys.stderr)
        return 2

    ok = True
    proc = report.get("process") or {}
    gots = [l.get("version") for l in proc.get("luas") or []] or [proc.get("lua_version")]

    def same(got):
        # LuaJIT ("LuaJIT 2.1.N") says _VERSION "Lua 5.1".
        if got and got.startswith("LuaJIT "):
            return version.startswith("5.1")
        return not got or got.split(".")[:2] == version.split(".")[:2]
    if version and not any(same(g) for g in gots):
        print("lua_version: truth Lua %s, report %s" % (version, " and ".join(map(str, gots))))
        ok = False
    for tid in sorted(truth):
        th = threads.get(tid)
        if th is None:
            print("thread %d: not in the report" % tid)
            ok = False
            continue
        raw = [fr for fr in th.get("frames", []) if fr.get("kind") == "lua"]
        if below and len(raw) > len(truth[tid]):
            ours = {fr.get("state") for fr in raw[:len(truth[tid])]}
            if not ours & {fr.get("state") for fr in raw[len(truth[tid]):]}:
                print("thread %d: %d report frames of other lua_States below the truth's, left out"
                      % (tid, len(raw) - len(truth[tid])))
                raw = raw[:len(truth[tid])]
        frames = [from_report(fr) for fr in raw]
        ok = check("thread %d" % tid, truth[tid], frames, th.get("partial"), quiet) and ok
    # Suspended coroutines: their lua_State in the report's VMs.
    states = {}
    for vm in report.get("vms") or []:
        for lt in vm.get("threads") or []:
            states[lt.get("address")] = lt
    for a in sorted(cos):
        lt = states.get(a) or states.get(int(a, 16) if a.startswith("0x") else a)
        if lt is None:
            print("coroutine %s: not in the report's VMs" % a)
            ok = False
            continue
        frames = [from_report(fr) for fr in lt.get("frames", []) if fr.get("kind") == "lua"]
        ok = check("coroutine %s %s" % (a, lt.get("status")), cos[a], frames,
                   lt.get("partial"), quiet) and ok
    print("compare: %s" % ("match" if ok else "MISMATCH"))
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
