#!/usr/bin/env python3
"""Where the Lua frames' lines come from, over the matrix's reports.

    line_from.py OUTROOT/BUILD/SCENARIO/report.json ...

compare.py checks the lines against the truth; this checks that the cells
test what they are meant to (doc/json.md, line_from):
  - table_ctor under Lua 5.1, 5.4 and 5.5: the innermost Lua frame's line comes
    from luaV_execute's pc, and the CallInfo's savedpc gives another line
    (the capture is the VM's own allocation, after the last stored pc);
    under 5.2 and 5.3 (no such pc) from savedpc;
  - every other cell: wherever the line comes from the pc, savedpc gives the
    same line (luaV_execute called out, and stored its pc first).
Prints one line per finding; exit status 1 on any, 2 on unreadable input.
"""
import json
import os
import sys


def lua_frames(report):
    for th in report.get("threads", []):
        yield th, [f for f in th.get("frames", []) if f.get("kind") == "lua"]


def main(paths):
    bad = 0
    lag_cells = 0
    for path in paths:
        cell = os.path.basename(os.path.dirname(path))
        build = os.path.basename(os.path.dirname(os.path.dirname(path)))
        try:
            with open(path, encoding="utf-8") as f:
                report = json.load(f)
        except (OSError, ValueError) as e:
            print("line_from: %s: %s" % (path, e), file=sys.stderr)
            return 2
        version = (report.get("process") or {}).get("lua_version") or ""
        live_pc = version.startswith(("5.1", "5.4", "5.5"))
        for th, frames in lua_frames(report):
            if cell == "table_ctor" and frames:
                top = frames[0]
                if live_pc:
                    ok = top.get("line_from") == "pc" and \
                        top.get("savedpc_line") not in (None, top.get("currentline"))
                    lag_cells += ok
                else:
                    ok = top.get("line_from") == "savedpc"
                if not ok:
                    print("FAIL %s %s: innermost Lua frame: line_from %r, currentline %r, savedpc_line %r"
                          % (build, cell, top.get("line_from"), top.get("currentline"),
                             top.get("savedpc_line")))
                    bad += 1
                frames = frames[1:]
            for fr in frames:
                if fr.get("line_from") == "pc" and fr.get("savedpc_line") != fr.get("currentline"):
                    print("FAIL %s %s: thread %s: line %r from pc, savedpc says %r"
                          % (build, cell, th.get("tid"), fr.get("currentline"),
                             fr.get("savedpc_line")))
                    bad += 1
    print("line_from: %d reports, %d table_ctor cells where pc corrects a lagging savedpc, %d findings"
          % (len(paths), lag_cells, bad))
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
