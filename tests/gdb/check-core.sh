#!/usr/bin/env bash
# One matrix cell: "lua-bt -a" in gdb against luacore-inspect on the same
# core.  usage: check-core.sh CELL_DIR   (needs LUACORE_INSPECT, LUAPROF,
# LUACORE_LIB in the environment)
set -uo pipefail
cell=$1
here=$(cd "$(dirname "$0")" && pwd)
g=$cell/gdb-bt.txt
i=$cell/inspect-bt.txt
timeout 120 gdb -nx -batch -x "$LUAPROF" -ex 'lua-bt -a' \
	"$cell/exe" "$cell/core" >"$g" 2>"$cell/gdb-bt.err" </dev/null
"$LUACORE_INSPECT" --no-scan "$cell/core" "$cell/exe" >"$i" 2>/dev/null
if grep -q '^luacore: \|^Python Exception' "$g" "$cell/gdb-bt.err"; then
	echo "FAIL $cell: gdb: $(grep -h '^luacore: \|^Python Exception' "$g" "$cell/gdb-bt.err" | head -1)"
	exit 1
fi
if res=$(python3 "$here/compare_bt.py" "$g" "$i"); then
	echo "PASS $cell: ${res##*$'\n'}"
else
	echo "FAIL $cell:"
	echo "$res" | sed 's/^/    /'
	exit 1
fi
