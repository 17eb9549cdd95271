#!/usr/bin/env bash
# The scenario x Lua-build matrix: build the Lua matrix (every release
# 5.1.1-5.5.0 at -O0 and -O2, and Debian's builds; cached under the build
# tree), make every cell's core and ground truth, inspect each core,
# compare with the truth the script wrote, and print the matrix.  Each
# parking cell's program is also inspected live in the same run
# (make-core.sh's LC_LIVE_INSPECT); tests/run-live.sh checks those reports.
set -uo pipefail
top_srcdir=${top_srcdir:-.}
top_builddir=${top_builddir:-.}
out=${LUACORE_MATRIX_DIR:-$top_builddir/fixtures/out}
log=$(mktemp)
trap 'rm -f "$log"' EXIT
mkdir -p "$out"
py=/usr/bin/python3; [ -x "$py" ] || py=python3
t0=$SECONDS

echo "== making cores and live reports (tests/matrix/make-all.sh $out)"
if ! LC_LIVE_INSPECT=$(cd "$top_builddir/src" && pwd)/luacore-inspect \
	"$top_srcdir/tests/matrix/make-all.sh" "$out"; then
	echo "FAIL: some cells could not be made (see above)"
	exit 1
fi
echo "== inspecting ($((SECONDS - t0))s)"
LUACORE_INSPECT=$top_builddir/src/luacore-inspect \
	"$top_srcdir/tests/matrix/check.sh" "$out" | tee "$log"
status=${PIPESTATUS[0]}
echo "== placement of Lua frames in the native stacks ($((SECONDS - t0))s)"
reports=$("$top_srcdir/tests/matrix/cells.sh" | awk '{ print d "/" $1 "/" $2 "/report.json" }' d="$out" |
	while read -r r; do [ -f "$r" ] && echo "$r"; done)
# shellcheck disable=SC2086
if "$py" "$top_srcdir/tests/matrix/placement.py" $reports; then
	echo "placement: every Lua frame follows its luaV_execute or C function frame"
else
	status=1
fi

echo "== a kernel core at SIGQUIT (the -O0 builds' parked cells): who sent it"
c=$out/src-5.4.7-O0/coroutines3
if [ -f "$c/core" ] && grep -q '^core_by=kernel' "$c/info"; then
	# (not piped: grep -q stops reading at the match, and pipefail
	# would count the writer's SIGPIPE)
	rep=$("$top_builddir/src/luacore-inspect" "$c/core" "$c/exe" 2>&1)
	if grep -Eq '^signal: 3 \(SIGQUIT\) code 0, sent by process [0-9]+ \(uid [0-9]+\)$' <<<"$rep"; then
		echo "PASS: signal: 3 (SIGQUIT) code 0, sent by process N (uid N)"
	else
		echo "FAIL: src-5.4.7-O0/coroutines3: no 'sent by process' signal line"
		status=1
	fi
else
	echo "(src-5.4.7-O0/coroutines3 was not dumped by the kernel here: core_pattern is not 'core')"
fi

echo "== where the lines come from (luaV_execute's pc or the CallInfo's savedpc)"
"$py" "$top_srcdir/tests/matrix/line_from.py" "$out"/*/*/report.json || status=1

echo "== JSON schema (doc/luacore-inspect.schema.json)"
# shellcheck disable=SC2086
"$py" "$top_srcdir/tests/matrix/validate_schema.py" \
	"$top_srcdir/doc/luacore-inspect.schema.json" $reports || status=1

echo "== matrix (a cell passes when every Lua frame matches the script's debug.getinfo)"
"$py" "$top_srcdir/tests/matrix/summary.py" "$out" core || status=1
echo "run-matrix: $((SECONDS - t0))s"
exit "$status"
