#!/usr/bin/env bash
# The post-mortem checks (VMs, coroutine statuses, resume chains, locals and
# upvalues, nny, errorJmp, GC state, stale slots, 200 VMs): make the post_*
# cells of every Lua build, inspect each with --json --locals --stack,
# compare with the truth the scenario wrote, and validate every report
# against the JSON schema.
set -uo pipefail
top_srcdir=${top_srcdir:-.}
top_builddir=${top_builddir:-.}
out=${LUACORE_MATRIX_DIR:-$top_builddir/fixtures/out}
py=/usr/bin/python3; [ -x "$py" ] || py=python3
mkdir -p "$out"

echo "== the comparison itself (hand-written reports)"
"$py" "$top_srcdir/tests/matrix/test_compare_post.py" || exit 1
echo "== making cores"
"$top_srcdir/tests/matrix/make-all.sh" --cells "$top_srcdir/tests/matrix/cells-post.txt" "$out" || {
	echo "FAIL: some cells could not be made"; exit 1; }
echo "== inspecting"
status=0
LUACORE_INSPECT=$top_builddir/src/luacore-inspect \
	"$top_srcdir/tests/matrix/check-post.sh" "$out" || status=1
echo "== JSON schema, reports with --locals --stack"
"$py" "$top_srcdir/tests/matrix/validate_schema.py" \
	"$top_srcdir/doc/luacore-inspect.schema.json" "$out"/*/post_*/report-post.json || status=1
exit "$status"
