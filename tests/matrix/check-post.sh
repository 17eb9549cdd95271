#!/usr/bin/env bash
# Inspect every post_* core and compare it with its ground truth.
#
#   tests/matrix/check-post.sh OUTROOT [PATTERN]
#
# For each cell of cells-post.txt (made by make-all.sh --cells
# tests/matrix/cells-post.txt OUTROOT) whose "BUILD SCENARIO" matches the
# extended regex PATTERN: runs ${LUACORE_INSPECT:-src/luacore-inspect}
# --json --locals --stack on OUTROOT/BUILD/SCENARIO/{core,exe}, writes
# report-post.json beside the core and compares it with truth.tsv
# (compare_post.py).  Prints a line per cell, the diff of failing cells, and
# "N passed, N failed"; exit status 1 on any failure.
set -uo pipefail

here=$(cd "$(dirname "$0")" && pwd)
repo=$(cd "$here/../.." && pwd)
[ $# -ge 1 ] || { echo "usage: $0 OUTROOT [PATTERN]" >&2; exit 64; }
root=$1
inspect=${LUACORE_INSPECT:-$repo/src/luacore-inspect}
# Debian's python3 first: a python3 shim (pyenv) costs a second per call.
py=${PYTHON:-$(command -v /usr/bin/python3 || command -v python3)}
pass=0 fail=0

while read -r build scen; do
	d=$root/$build/$scen
	if [ ! -f "$d/core" ] || [ ! -f "$d/truth.tsv" ]; then
		echo "FAIL $build $scen: no core or truth (run tests/matrix/make-all.sh --cells $here/cells-post.txt $root)"
		fail=$((fail + 1))
		continue
	fi
	# Exit status 1 is a partial result: still compared (the truth decides).
	timeout 120 "$inspect" --json --locals --stack "$d/core" "$d/exe" >"$d/report-post.json" 2>"$d/report-post.err"
	rc=$?
	if [ $rc -ne 0 ] && [ $rc -ne 1 ]; then
		echo "FAIL $build $scen: luacore-inspect exit $rc: $(tail -1 "$d/report-post.err")"
		fail=$((fail + 1))
	elif out=$("$py" "$here/compare_post.py" -q "$d/truth.tsv" "$d/report-post.json"); then
		echo "PASS $build $scen$([ $rc = 1 ] && echo " (inspect: partial)")"
		pass=$((pass + 1))
	else
		echo "FAIL $build $scen$([ $rc = 1 ] && echo " (inspect: partial)")"
		echo "$out" | grep -v ': match (' | sed 's/^/    /'
		fail=$((fail + 1))
	fi
done < <(grep -v '^#' "$here/cells-post.txt" | grep -E -- "${2:-.}")

echo "$pass passed, $fail failed"
[ "$fail" = 0 ]
