#!/usr/bin/env python3
"""The fidelity matrix, per build and per release, from the cells' results.

    summary.py OUTROOT MODE...      MODE: core live gdb post

Each check writes OUTROOT/BUILD/SCENARIO/result.MODE ("PASS..." or
"FAIL: first difference"): core and live by tests/matrix/check.sh (the
cells of cells.txt; live without crash and interp_*), post by
check-post.sh (cells-post.txt), gdb by tests/run-gdb.sh (both).  A cell
without a result counts as failed.  Prints, per mode, one line per build
(passed/cells and the failing scenarios), then one line per release with
every mode's passed/cells.  Exit status 0 if every cell of every MODE
passed, else 1."""
import os
import re
import subprocess
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
MODES = ("core", "live", "gdb", "post")


def cells(name):
    out = subprocess.run([os.path.join(HERE, "cells.sh"), os.path.join(HERE, name)],
                         check=True, capture_output=True, text=True).stdout
    return [tuple(l.split()) for l in out.splitlines() if l.strip()]


def mode_cells(mode):
    if mode == "core":
        return cells("cells.txt")
    if mode == "live":
        return [c for c in cells("cells.txt")
                if c[1] != "crash" and not c[1].startswith("interp_")]
    if mode == "post":
        return cells("cells-post.txt")
    # gdb: the scenarios tests/run-gdb.sh compares ($LC_GDB_PICK, a
    # regular expression; all when unset).
    pick = re.compile(os.environ.get("LC_GDB_PICK", "."))
    return [c for c in cells("cells.txt") + cells("cells-post.txt")
            if pick.search(c[1])]


def release(build):
    """deb-5.4 -> "deb-5.4" (Debian's build is a release of its own);
    src-5.4.8-O2 -> "5.4.8"."""
    if build.startswith("src-"):
        return build[4:].rsplit("-", 1)[0]
    return build


def result(root, build, scen, mode):
    try:
        with open(os.path.join(root, build, scen, "result." + mode),
                  errors="replace") as f:
            first = f.readline().rstrip("\n")
    except OSError:
        return False, "no result"
    return first.startswith("PASS"), first


def main(argv):
    if len(argv) < 3 or any(m not in MODES for m in argv[2:]):
        print(__doc__.strip().splitlines()[2].strip(), file=sys.stderr)
        return 64
    root, modes = argv[1], argv[2:]
    builds, releases = [], []
    table = {}          # (mode, release) -> [passed, cells]
    ok = True
    for mode in modes:
        per_build = {}
        for build, scen in mode_cells(mode):
            if build not in per_build:
                per_build[build] = [0, 0, []]
                if build not in builds:
                    builds.append(build)
                if release(build) not in releases:
                    releases.append(release(build))
            passed, _ = result(root, build, scen, mode)
            b = per_build[build]
            b[1] += 1
            t = table.setdefault((mode, release(build)), [0, 0])
            t[1] += 1
            if passed:
                b[0] += 1
                t[0] += 1
            else:
                b[2].append(scen)
                ok = False
        print("== %s: cells passed per build" % mode)
        for build, (p, n, bad) in per_build.items():
            print("%-14s %3d/%-3d %s" % (build, p, n, "(all fail)" if not p and n > 1
                                          else " ".join(bad)))
    print("== cells passed per release (%s)" % ", ".join(modes))
    print("%-8s" % "release" + "".join(" %-9s" % m for m in modes) + " all")
    tp = tn = 0
    for rel in releases:
        line = "%-8s" % rel
        rp = rn = 0
        for mode in modes:
            p, n = table.get((mode, rel), (0, 0))
            rp, rn = rp + p, rn + n
            line += " %-9s" % ("%d/%d" % (p, n))
        tp, tn = tp + rp, tn + rn
        print(line + " %d/%d" % (rp, rn))
    print("total: %d of %d cells pass (%d releases and Debian builds, %d builds)"
          % (tp, tn, len(releases), len(builds)))
    return 0 if ok else 1


sys.exit(main(sys.argv))
