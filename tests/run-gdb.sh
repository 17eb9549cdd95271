#!/usr/bin/env bash
# gdb's lua-bt over the whole core matrix: for every cell that
# tests/run-matrix.sh and tests/run-post.sh made (cells.txt and
# cells-post.txt), "lua-bt -a" in gdb (gdb/luaprof.py) on EXE and CORE,
# compared, thread by thread and with the native frame each Lua frame
# follows, with luacore-inspect's on the same core.  One gdb session per
# Lua build opens each of its cores in turn (tests/gdb/check-core.sh), the
# builds $(nproc) at a time.
set -uo pipefail
top_srcdir=${top_srcdir:-.}
top_builddir=${top_builddir:-.}
out=$(cd "${LUACORE_MATRIX_DIR:-$top_builddir/fixtures/out}" && pwd)
export LUACORE_INSPECT=$top_builddir/src/luacore-inspect
export LUAPROF=$top_srcdir/gdb/luaprof.py
export LUACORE_LIB=$top_builddir/libcore/.libs/libluacore.so
# gdb's DWARF indexes, keyed by build id: kept with the builds.
export LUACORE_GDB_INDEX_CACHE=$out/gdb-index-cache
mkdir -p "$LUACORE_GDB_INDEX_CACHE"
py=/usr/bin/python3; [ -x "$py" ] || py=python3
t0=$SECONDS

cells=$({ "$top_srcdir/tests/matrix/cells.sh"; "$top_srcdir/tests/matrix/cells.sh" "$top_srcdir/tests/matrix/cells-post.txt"; } |
	awk '{ print $1, d "/" $1 "/" $2 }' d="$out")
n=$(echo "$cells" | wc -l)
missing=0
have=$(while read -r b c; do
	if [ -f "$c/core" ]; then echo "$b $c"; else
		echo "FAIL $c: no core (run tests/run-matrix.sh and tests/run-post.sh first)" >&2
		rm -f "$c/result.gdb"
	fi
done <<<"$cells")
missing=$((n - $(grep -c . <<<"$have")))
# One line per build: its cells, for one check-core.sh.
res=$(awk '!($1 in c) { order[n++] = $1; c[$1] = $2; next } { c[$1] = c[$1] " " $2 }
	END { for (i = 0; i < n; i++) print c[order[i]] }' <<<"$have" |
	xargs -P "$(nproc)" -L 1 "$top_srcdir/tests/gdb/check-core.sh")
echo "$res"
pass=$(grep -c '^PASS' <<<"$res")
echo "lua-bt -a equals luacore-inspect in $pass of $n cores ($((SECONDS - t0))s)"
"$py" "$top_srcdir/tests/matrix/summary.py" "$out" gdb
[ "$pass" -eq "$n" ] && [ "$missing" -eq 0 ]
