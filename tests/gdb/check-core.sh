#!/usr/bin/env bash
# Matrix cells: "lua-bt -a" in gdb against luacore-inspect on the same
# core.  usage: check-core.sh CELL_DIR...   (needs LUACORE_INSPECT,
# LUAPROF, LUACORE_LIB in the environment; LUACORE_GDB_INDEX_CACHE, a
# directory for gdb's index cache, is optional).
# One gdb session runs lua-bt on every cell (tests/gdb/bt-cores.py), with
# the Python script loaded once; then, per cell, luacore-inspect --no-scan
# and compare_bt.py.  Prints a PASS or FAIL line per cell and writes it to
# CELL/result.gdb (the comparison's output after it); exit status 1 if any
# cell failed.
set -uo pipefail
here=$(cd "$(dirname "$0")" && pwd)
. "$here/../matrix/firstdiff.sh"
py=${PYTHON:-$(command -v /usr/bin/python3 || command -v python3)}
[ $# -ge 1 ] || { echo "usage: $0 CELL_DIR..." >&2; exit 64; }
list=$(mktemp)
trap 'rm -f "$list"' EXIT
for cell in "$@"; do
	rm -f "$cell/gdb-bt.txt" "$cell/gdb-bt.err" "$cell/result.gdb"
	(cd "$cell" && pwd) >>"$list"
done
# gdb's index cache: the DWARF index of the executable and of libc's debug
# file is built once, not at every core-file.
ic=()
if [ -n "${LUACORE_GDB_INDEX_CACHE:-}" ]; then
	ic=(-iex "set index-cache directory $LUACORE_GDB_INDEX_CACHE" -iex "set index-cache enabled on")
fi
LUACORE_BT_CELLS=$list timeout $((60 + 30 * $#)) gdb -nx -batch "${ic[@]}" \
	-x "$LUAPROF" -x "$here/bt-cores.py" >"${list}.log" 2>&1 </dev/null
gdb_rc=$?
status=0
for cell in "$@"; do
	g=$cell/gdb-bt.txt
	i=$cell/inspect-bt.txt
	if [ ! -f "$g" ]; then
		res="FAIL $cell: gdb wrote no lua-bt output (exit $gdb_rc: $(grep -v '^warning' "${list}.log" | tail -1))"
	elif [ -s "$cell/gdb-bt.err" ] || grep -q '^luacore: \|^Python Exception' "$g"; then
		res="FAIL $cell: gdb: $(cat "$cell/gdb-bt.err" <(grep -h '^luacore: \|^Python Exception' "$g") | head -1)"
	else
		"$LUACORE_INSPECT" --no-scan "$cell/core" "$cell/exe" >"$i" 2>/dev/null
		if out=$("$py" "$here/compare_bt.py" "$g" "$i"); then
			res="PASS $cell: ${out##*$'\n'}"
		else
			res="FAIL $cell: $(echo "$out" | firstdiff)"$'\n'$out
		fi
	fi
	echo "$res" | head -1
	echo "$res" >"$cell/result.gdb.tmp"
	# result.gdb: "PASS..."/"FAIL: ..." first, as the other modes write.
	{ head -1 "$cell/result.gdb.tmp" | sed 's/^\(PASS\|FAIL\) [^:]*:/\1:/'; tail -n +2 "$cell/result.gdb.tmp"; } >"$cell/result.gdb"
	rm -f "$cell/result.gdb.tmp"
	case $res in PASS*) ;; *) status=1 ;; esac
done
rm -f "${list}.log"
exit $status
