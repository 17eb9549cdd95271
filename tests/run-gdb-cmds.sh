#!/usr/bin/env bash
# The other gdb commands and the script's loading:
#  - on every post-mortem core (tests/run-post.sh makes them): lua-states
#    equals luacore-inspect's VM part; lua-vm and lua-stack of every
#    lua_State equal its block and slots there; lua-bt -a -full equals
#    the Lua frames and variables of luacore-inspect --locals;
#  - "make install-data-local" into a scratch prefix, then gdb's own
#    auto-load, with no LUACORE_LIB, loads the commands for a Lua core;
#  - help, completion, and the messages when the library cannot be
#    loaded or there is no process.
set -uo pipefail
top_srcdir=${top_srcdir:-.}
top_builddir=${top_builddir:-.}
out=${LUACORE_MATRIX_DIR:-$top_builddir/fixtures/out}
export LUACORE_INSPECT=$top_builddir/src/luacore-inspect
export LUAPROF=$top_srcdir/gdb/luaprof.py
export LUACORE_LIB=$top_builddir/libcore/.libs/libluacore.so
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
status=0

# The post cells of Debian's builds and of the 5.2.4 and 5.4.7 source
# builds (the whole matrix is tests/run-gdb.sh's).
cells=$("$top_srcdir/tests/matrix/cells.sh" -b 'deb-.*|src-5\.2\.4-O[02]|src-5\.4\.7-O[02]' \
	"$top_srcdir/tests/matrix/cells-post.txt" | awk '{ print d "/" $1 "/" $2 }' d="$out")
n=$(echo "$cells" | wc -l)
res=$(echo "$cells" | xargs -P "$(nproc)" -n1 "$top_srcdir/tests/gdb/check-cmds.sh")
echo "$res"
pass=$(grep -c '^PASS' <<<"$res")
echo "lua-states, lua-vm, lua-stack, lua-bt -full equal luacore-inspect in $pass of $n cores"
[ "$pass" -eq "$n" ] || status=1

check() {	# NAME FILE GREP-PATTERN
	if grep -q -- "$3" "$2"; then
		echo "PASS $1"
	else
		echo "FAIL $1: no '$3' in:"
		sed 's/^/    /' "$2" | tail -20
		status=1
	fi
}

# Auto-load, as installed: the stub named after the Lua library's real
# path sources the installed script, which finds the library through the
# directory install wrote into it.
cell=$out/deb-5.4/coroutines3
lib=$(readlink -f /usr/lib/x86_64-linux-gnu/liblua5.4.so.0)
make -s -C "$top_builddir" install-data-local prefix="$tmp/p" \
	libdir="$(cd "$top_builddir/libcore/.libs" && pwd)" GDB_AUTOLOAD_FOR="$lib" \
	>"$tmp/install.log" 2>&1 || { cat "$tmp/install.log"; status=1; }
env -u LUACORE_LIB gdb -nx -batch \
	-iex "set auto-load scripts-directory $tmp/p/share/gdb/auto-load" \
	-iex "add-auto-load-safe-path $tmp/p" \
	-ex 'info auto-load python-scripts' -ex 'lua-bt' \
	"$cell/exe" "$cell/core" >"$tmp/autoload.txt" 2>&1 </dev/null
check "auto-load: the stub is loaded" "$tmp/autoload.txt" "^Yes .*$lib-gdb.py"
check "auto-load: lua-bt runs" "$tmp/autoload.txt" "lua: .*coroutines3.lua:7: in upvalue 'innermost'"

# The library cannot be loaded.
LUACORE_LIB=$tmp/none.so gdb -nx -batch -x "$LUAPROF" -ex 'lua-bt' \
	"$cell/exe" "$cell/core" >"$tmp/nolib.txt" 2>&1 </dev/null
check "no library: message" "$tmp/nolib.txt" \
	"^luacore: cannot load libluacore; tried: $tmp/none.so (.*).  Build it (make), install it, or set LUACORE_LIB"

# No process, no core.
gdb -nx -batch -x "$LUAPROF" -ex 'lua-bt' >"$tmp/noproc.txt" 2>&1 </dev/null
check "no process: message" "$tmp/noproc.txt" "^luacore: no process or core file; run, attach or open a core first"

# Loaded twice (gdb -x, then source): no error, commands once.
gdb -nx -batch -x "$LUAPROF" -ex "source $LUAPROF" -ex 'help lua-bt' \
	-ex 'complete lua-bt -' -ex 'help user-defined' >"$tmp/help.txt" 2>&1 </dev/null
check "help lua-bt" "$tmp/help.txt" "^Usage: lua-bt \[-a\] \[-full\] \[THREAD...\]"
check "completion: -a" "$tmp/help.txt" "^lua-bt -a$"
check "completion: -full" "$tmp/help.txt" "^lua-bt -full$"
if grep -q 'Python Exception\|Error' "$tmp/help.txt"; then
	echo "FAIL loading twice:"; cat "$tmp/help.txt"; status=1
else
	echo "PASS loading twice"
fi

# lua-value on something that is not a Lua object.
gdb -nx -batch -x "$LUAPROF" -ex 'lua-value 1 + 1' -ex 'lua-value nosuchvar' \
	"$cell/exe" "$cell/core" >"$tmp/badvalue.txt" 2>&1 </dev/null
check "lua-value: not a Lua object" "$tmp/badvalue.txt" "^luacore: '1 + 1' is of type int, not a Lua object; cast it or say -tvalue or -gc"
check "lua-value: bad expression" "$tmp/badvalue.txt" "^luacore: cannot evaluate 'nosuchvar'"
exit "$status"
