#!/usr/bin/env python3
"""Check where luacore-inspect spliced the Lua frames of a report.

Rules (README, report/stack.c): every Lua function frame follows the native
luaV_execute frame that runs it (possibly after other Lua frames of the
same run); a C function's frame follows its own native frame, or, when
optimized C left no frame of its own, the native frame just inside
luaD_precall (5.4.0-5.4.1: luaD_call).  A frame marked continued (a resumed coroutine's frame whose
native frames its yield discarded) follows the coroutine's lua_resume
frame, possibly after other continued frames.  No frame may be marked
unplaced.
usage: placement.py REPORT.json...   exit 0 if all hold, 1 otherwise."""
import json
import sys


def check(path):
    errors = []
    r = json.load(open(path))
    for t in r["threads"]:
        frames = t["frames"]
        for i, f in enumerate(frames):
            if f["kind"] != "lua":
                continue
            where = f"thread {t['tid']} frame {i} ({f['what']} {f.get('name')})"
            if f["unplaced"]:
                errors.append(f"{where}: unplaced")
                continue
            # The nearest native frame before it.
            j = i - 1
            while j >= 0 and frames[j]["kind"] == "lua":
                j -= 1
            if j < 0:
                errors.append(f"{where}: no native frame before it")
                continue
            native = frames[j]
            if f.get("continued"):
                if native["function"] != "lua_resume" or any(
                        not g.get("continued") for g in frames[j + 1:i]):
                    errors.append(f"{where}: continued, after {native['function']}, not lua_resume")
                continue
            if f["what"] in ("Lua", "main", "tail"):
                if native["function"] != "luaV_execute":
                    errors.append(f"{where}: after {native['function']}, not luaV_execute")
            elif f["what"] == "C":
                nxt = next((g for g in frames[i + 1:] if g["kind"] == "native"), None)
                own = native["function"] == f["function"]
                # (5.4.0 and 5.4.1: luaD_call calls C functions itself)
                tail = nxt is not None and nxt["function"] in ("luaD_precall", "precallC", "luaD_call")
                if i - j != 1 or not (own or tail):
                    errors.append(f"{where}: after {native['function']}, not its own frame {f['function']}")
    return errors


def main(argv):
    bad = 0
    for path in argv:
        errs = check(path)
        if errs:
            bad += 1
            print(f"{path}: {len(errs)} misplaced")
            for e in errs[:3]:
                print(f"    {e}")
            if len(errs) > 3:
                print(f"    ... and {len(errs) - 3} more")
    print(f"placement: {len(argv) - bad} of {len(argv)} reports right")
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
