#!/usr/bin/env bash
# The post-mortem checks (VMs, coroutine statuses, resume chains, locals and
# upvalues, nny, errorJmp, GC state, stale slots, 200 VMs): make the post_*
# cells of every Lua build (every release 5.1.1-5.5.0 at -O0 and -O2, and
# Debian's), inspect each with --json --locals --stack,
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
reports=$("$top_srcdir/tests/matrix/cells.sh" "$top_srcdir/tests/matrix/cells-post.txt" |
	awk '{ print d "/" $1 "/" $2 "/report-post.json" }' d="$out" |
	while read -r r; do [ -f "$r" ] && echo "$r"; done)
# shellcheck disable=SC2086
"$py" "$top_srcdir/tests/matrix/validate_schema.py" \
	"$top_srcdir/doc/luacore-inspect.schema.json" $reports || status=1
echo "== post checks per build and release"
"$py" "$top_srcdir/tests/matrix/summary.py" "$out" post || status=1
exit "$status"
