#!/usr/bin/env bash
# Inspect every post_* core and compare it with its ground truth.
#
#   tests/matrix/check-post.sh OUTROOT [PATTERN]
#
# For each cell of cells-post.txt (tests/matrix/cells.sh; made by
# make-all.sh --cells tests/matrix/cells-post.txt OUTROOT) whose "BUILD
# SCENARIO" matches the extended regex PATTERN: runs
# ${LUACORE_INSPECT:-src/luacore-inspect} --json --locals --stack on
# OUTROOT/BUILD/SCENARIO/{core,exe}, writes report-post.json beside the core
# and compares it with truth.tsv (compare_post.py), ${LC_JOBS:-2} cells at a
# time.  Writes result.post in each cell ("PASS" or "FAIL: first
# difference", then the differences).  Prints a line per cell, in cell
# order, the differences of failing cells, and "N passed, N failed"; exit
# status 1 on any failure.
set -uo pipefail

here=$(cd "$(dirname "$0")" && pwd)
repo=$(cd "$here/../.." && pwd)
# Debian's python3 first: a python3 shim (pyenv) costs a second per call.
py=${PYTHON:-$(command -v /usr/bin/python3 || command -v python3)}
. "$here/firstdiff.sh"

if [ "${1:-}" = --cell ]; then
	# One cell (run by xargs below): ROOT BUILD SCENARIO.
	d=$2/$3/$4 res=$2/$3/$4/result.post
	inspect=${LUACORE_INSPECT:-$repo/src/luacore-inspect}
	[ -d "$d" ] || exit 0	# no result: reported below
	rm -f "$res"
	if [ ! -f "$d/core" ] || [ ! -f "$d/truth.tsv" ]; then
		echo "FAIL: no core or truth (run tests/matrix/make-all.sh --cells $here/cells-post.txt $2)" >"$res"
		exit 0
	fi
	# Exit status 1 is a partial result: still compared (the truth decides).
	timeout 120 "$inspect" --json --locals --stack "$d/core" "$d/exe" >"$d/report-post.json" 2>"$d/report-post.err"
	rc=$?
	partial=$([ $rc = 1 ] && echo " (inspect: partial)")
	if [ $rc -ne 0 ] && [ $rc -ne 1 ]; then
		echo "FAIL: luacore-inspect exit $rc: $(tail -1 "$d/report-post.err")" >"$res"
	elif out=$("$py" "$here/compare_post.py" -q "$d/truth.tsv" "$d/report-post.json"); then
		echo "PASS$partial" >"$res"
	else
		out=$(echo "$out" | grep -v ': match (')
		{ echo "FAIL$partial: $(echo "$out" | firstdiff)"; echo "$out"; } >"$res"
	fi
	exit 0
fi

[ $# -ge 1 ] || { echo "usage: $0 OUTROOT [PATTERN]" >&2; exit 64; }
root=$(cd "$1" && pwd)
cells=$("$here/cells.sh" "$here/cells-post.txt" | grep -E -- "${2:-.}") ||
	{ echo "check-post: no cell matches ${2:-.}" >&2; exit 1; }
echo "$cells" | xargs -P "${LC_JOBS:-2}" -L 1 "$0" --cell "$root"
pass=0 fail=0
while read -r build scen; do
	res=$root/$build/$scen/result.post
	first=$(head -1 "$res" 2>/dev/null || echo "FAIL: no cell (run tests/matrix/make-all.sh --cells $here/cells-post.txt $root)")
	case $first in
	PASS*) pass=$((pass + 1)); echo "PASS $build $scen${first#PASS}" ;;
	*)	# The whole difference stays in result.post.
		fail=$((fail + 1)); echo "FAIL $build $scen${first#FAIL}"
		tail -n +2 "$res" 2>/dev/null | head -12 | sed 's/^/    /' ;;
	esac
done <<<"$cells"
echo "$pass passed, $fail failed"
[ "$fail" = 0 ]
