#!/usr/bin/env bash
# Inspect every core made by make-all.sh and compare it with its ground truth.
#
#   tests/matrix/check.sh OUTROOT [PATTERN]
#
# For each cell of cells.txt (whose "BUILD SCENARIO" matches the extended
# regex PATTERN): runs ${LUACORE_INSPECT:-src/luacore-inspect} --json on
# OUTROOT/BUILD/SCENARIO/{core,exe}, writes report.json beside the core and
# compares it with truth.tsv (compare.py).  Prints a line per cell, the diff
# of failing cells, and "N passed, N failed"; exit status 1 on any failure.
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
		echo "FAIL $build $scen: no core or truth (run tests/matrix/make-all.sh $root)"
		fail=$((fail + 1))
		continue
	fi
	if ! timeout 120 "$inspect" --json "$d/core" "$d/exe" >"$d/report.json" 2>"$d/report.err"; then
		echo "FAIL $build $scen: luacore-inspect failed: $(tail -1 "$d/report.err")"
		fail=$((fail + 1))
	elif out=$("$py" "$here/compare.py" -q "$d/truth.tsv" "$d/report.json"); then
		echo "PASS $build $scen"
		pass=$((pass + 1))
	else
		echo "FAIL $build $scen"
		echo "$out" | sed 's/^/    /'
		fail=$((fail + 1))
	fi
done < <(grep -v '^#' "$here/cells.txt" | grep -E -- "${2:-.}")

echo "$pass passed, $fail failed"
[ "$fail" = 0 ]
