#!/usr/bin/env bash
# Inspect every core made by make-all.sh and compare it with its ground truth.
#
#   tests/matrix/check.sh [--live] OUTROOT [PATTERN]
#
# For each cell of cells.txt (tests/matrix/cells.sh) whose "BUILD SCENARIO"
# matches the extended regex PATTERN: runs
# ${LUACORE_INSPECT:-src/luacore-inspect} --json on
# OUTROOT/BUILD/SCENARIO/{core,exe}, writes report.json beside the core and
# compares it with truth.tsv (compare.py).  With --live, compares instead
# the live report that make-all.sh wrote in the same run with
# LC_LIVE_INSPECT (live.json, live.rc, live.state), for the cells that have
# one to make (not crash, not interp_*); a report that another binary than
# this luacore-inspect made (live.by) fails.  ${LC_JOBS:-2} cells at a time.
# Writes result.core (result.live) in each cell: "PASS" or "FAIL: first
# difference", then the differences.  Prints a line per cell, in cell order,
# the start of the diff of failing cells, and "N passed, N failed"; exit
# status 1 on any failure.
set -uo pipefail

here=$(cd "$(dirname "$0")" && pwd)
repo=$(cd "$here/../.." && pwd)
# Debian's python3 first: a python3 shim (pyenv) costs a second per call.
py=${PYTHON:-$(command -v /usr/bin/python3 || command -v python3)}
. "$here/firstdiff.sh"

if [ "${1:-}" = --cell ]; then
	# One cell (run by xargs below): MODE ROOT BUILD SCENARIO.
	mode=$2 d=$3/$4/$5 res=$3/$4/$5/result.$2
	inspect=${LUACORE_INSPECT:-$repo/src/luacore-inspect}
	[ -d "$d" ] || exit 0	# no result: reported below
	rm -f "$res"
	if [ "$mode" = core ]; then
		if [ ! -f "$d/core" ] || [ ! -f "$d/truth.tsv" ]; then
			echo "FAIL: no core or truth (run tests/matrix/make-all.sh $3)" >"$res"
			exit 0
		fi
		if ! timeout 120 "$inspect" --json "$d/core" "$d/exe" >"$d/report.json" 2>"$d/report.err"; then
			echo "FAIL: luacore-inspect failed: $(tail -1 "$d/report.err")" >"$res"
			exit 0
		fi
		report=$d/report.json
	else
		if [ ! -f "$d/live.rc" ] || [ ! -f "$d/truth.tsv" ]; then
			echo "FAIL: no live report (make-all.sh with LC_LIVE_INSPECT)" >"$res"
			exit 0
		fi
		if [ "$(cat "$d/live.by" 2>/dev/null)" != "$(sha256sum <"$inspect" | cut -d' ' -f1)" ]; then
			echo "FAIL: live report made by another luacore-inspect than $inspect (run tests/run-matrix.sh again)" >"$res"
			exit 0
		fi
		if [ "$(cat "$d/live.state")" != running ]; then
			echo "FAIL: $(cat "$d/live.state")" >"$res"
			exit 0
		fi
		rc=$(cat "$d/live.rc")
		if [ "$rc" -gt 1 ]; then
			echo "FAIL: luacore-inspect -p exit $rc: $(tail -1 "$d/live.err")" >"$res"
			exit 0
		fi
		report=$d/live.json
	fi
	if out=$("$py" "$here/compare.py" -q "$d/truth.tsv" "$report"); then
		if [ "$mode" = live ]; then
			echo "PASS: $(grep -o 'stopped_seconds":[0-9.]*' "$report" | cut -d: -f2) s stopped" >"$res"
		else
			echo PASS >"$res"
		fi
	else
		{ echo "FAIL: $(echo "$out" | firstdiff)"; echo "$out"; } >"$res"
	fi
	exit 0
fi

mode=core
if [ "${1:-}" = --live ]; then mode=live; shift; fi
[ $# -ge 1 ] || { echo "usage: $0 [--live] OUTROOT [PATTERN]" >&2; exit 64; }
root=$(cd "$1" && pwd)
cells=$("$here/cells.sh" | grep -E -- "${2:-.}") || { echo "check: no cell matches ${2:-.}" >&2; exit 1; }
if [ $mode = live ]; then
	cells=$(echo "$cells" | awk '$2 != "crash" && $2 !~ /^interp_/')
fi
echo "$cells" | xargs -P "${LC_JOBS:-2}" -L 1 "$0" --cell $mode "$root"
pass=0 fail=0
while read -r build scen; do
	res=$root/$build/$scen/result.$mode
	first=$(head -1 "$res" 2>/dev/null || echo "FAIL: no cell (run tests/matrix/make-all.sh $root)")
	case $first in
	PASS*) pass=$((pass + 1)); echo "PASS $build $scen${first#PASS}" ;;
	*)	# The whole difference stays in result.MODE.
		fail=$((fail + 1)); echo "FAIL $build $scen${first#FAIL}"
		tail -n +2 "$res" 2>/dev/null | head -8 | sed 's/^/    /' ;;
	esac
done <<<"$cells"
echo "$pass passed, $fail failed"
[ "$fail" = 0 ]
