#!/usr/bin/env bash
# gdb's lua-bt over the whole core matrix: for every cell that
# tests/run-matrix.sh and tests/run-post.sh made, run
#   gdb -nx -batch -x gdb/luaprof.py -ex 'lua-bt -a' EXE CORE
# and compare its Lua frames, thread by thread and with the native frame
# each follows, with luacore-inspect's on the same core.
set -uo pipefail
top_srcdir=${top_srcdir:-.}
top_builddir=${top_builddir:-.}
out=${LUACORE_MATRIX_DIR:-$top_builddir/fixtures/out}
export LUACORE_INSPECT=$top_builddir/src/luacore-inspect
export LUAPROF=$top_srcdir/gdb/luaprof.py
export LUACORE_LIB=$top_builddir/libcore/.libs/libluacore.so

cells=$(grep -hv '^#' "$top_srcdir/tests/matrix/cells.txt" \
	"$top_srcdir/tests/matrix/cells-post.txt" |
	awk 'NF >= 2 { print d "/" $1 "/" $2 }' d="$out")
n=0
missing=0
for c in $cells; do
	n=$((n + 1))
	[ -f "$c/core" ] || { echo "FAIL $c: no core (run tests/run-matrix.sh and tests/run-post.sh first)"; missing=$((missing + 1)); }
done
res=$(printf '%s\n' $cells | while read -r c; do [ -f "$c/core" ] && echo "$c"; done |
	xargs -P "$(nproc)" -n1 "$top_srcdir/tests/gdb/check-core.sh")
echo "$res"
pass=$(grep -c '^PASS' <<<"$res")
echo "lua-bt -a equals luacore-inspect in $pass of $n cores"
[ "$pass" -eq "$n" ] && [ "$missing" -eq 0 ]
