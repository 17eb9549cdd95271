#!/usr/bin/env bash
# The scenario x Lua-build matrix: build the Lua matrix (cached under the
# build tree), make every cell's core and ground truth, inspect each core,
# compare with the truth the script wrote, and print the matrix.
set -uo pipefail
top_srcdir=${top_srcdir:-.}
top_builddir=${top_builddir:-.}
out=${LUACORE_MATRIX_DIR:-$top_builddir/fixtures/out}
log=$(mktemp)
trap 'rm -f "$log"' EXIT
mkdir -p "$out"

echo "== making cores (tests/matrix/make-all.sh $out)"
if ! "$top_srcdir/tests/matrix/make-all.sh" "$out"; then
	echo "FAIL: some cells could not be made (see above)"
	exit 1
fi
echo "== inspecting"
LUACORE_INSPECT=$top_builddir/src/luacore-inspect \
	"$top_srcdir/tests/matrix/check.sh" "$out" | tee "$log"
status=${PIPESTATUS[0]}
echo "== placement of Lua frames in the native stacks"
py=/usr/bin/python3; [ -x "$py" ] || py=python3
if "$py" "$top_srcdir/tests/matrix/placement.py" "$out"/*/*/report.json; then
	echo "placement: every Lua frame follows its luaV_execute or C function frame"
else
	status=1
fi

echo "== where the lines come from (luaV_execute's pc or the CallInfo's savedpc)"
"$py" "$top_srcdir/tests/matrix/line_from.py" "$out"/*/*/report.json || status=1

echo "== JSON schema (doc/luacore-inspect.schema.json)"
"$py" "$top_srcdir/tests/matrix/validate_schema.py" \
	"$top_srcdir/doc/luacore-inspect.schema.json" "$out"/*/*/report.json || status=1

# The matrix: one row per scenario, one column per build.
echo "== matrix (ok = every Lua frame matches the script's debug.getinfo)"
awk '
/^(PASS|FAIL) [^ ]+ [^ ]+$/ || /^(PASS|FAIL) [^ ]+ [^ :]+:/ {
	b = $2; s = $3; sub(/:$/, "", s)
	r[b, s] = ($1 == "PASS") ? "ok" : "FAIL"
	if (!(b in bs)) { bs[b] = 1; border[nb++] = b }
	if (!(s in ss)) { ss[s] = 1; sorder[ns++] = s }
}
END {
	printf "%-15s", ""
	for (i = 0; i < nb; i++) printf " %-13s", border[i]
	printf "\n"
	for (j = 0; j < ns; j++) {
		printf "%-15s", sorder[j]
		for (i = 0; i < nb; i++) {
			v = r[border[i], sorder[j]]
			printf " %-13s", (v == "" ? "-" : v)
		}
		printf "\n"
	}
}' "$log"
exit "$status"
