#!/usr/bin/env bash
# gdb's lua-bt over the core matrix: for the cells of 8 scenarios (below)
# that tests/run-matrix.sh and tests/run-post.sh made on every build
# (cells.txt and cells-post.txt), "lua-bt -a" in gdb (gdb/luaprof.py) on EXE and CORE,
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

# The scenarios compared on every build: gdb reads through the same
# decoder as luacore-inspect, so what can differ is the bridge and the
# native side (threads, coroutines, several VMs, C++ names, a crash, the
# interpreters, yields, post-mortem detail), not each scenario.
# LC_GDB_ALL=1: every cell.
pick='^(coroutines3|crash|two_threads|multi_vm|yield_c|cxx_names|interp_lua5[1-5]|post_locals)$'
[ "${LC_GDB_ALL:-0}" = 1 ] && pick=.
cells=$({ "$top_srcdir/tests/matrix/cells.sh"; "$top_srcdir/tests/matrix/cells.sh" "$top_srcdir/tests/matrix/cells-post.txt"; } |
	awk -v pick="$pick" '$2 ~ pick { print $1, d "/" $1 "/" $2 }' d="$out")
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
LC_GDB_PICK=$pick "$py" "$top_srcdir/tests/matrix/summary.py" "$out" gdb
[ "$pass" -eq "$n" ] && [ "$missing" -eq 0 ]
