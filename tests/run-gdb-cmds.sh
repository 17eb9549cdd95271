#!/usr/bin/env bash
# The other gdb commands and the script's loading:
#  - on every post-mortem core (tests/run-post.sh makes them) and on a
#    heap_paths core of three builds (made here): lua-states equals
#    luacore-inspect's VM part; lua-vm and lua-stack of every lua_State
#    equal its block and slots there; lua-bt -a -full equals the Lua
#    frames and variables of luacore-inspect --locals; lua-heap equals
#    luacore-inspect --heap; on the heap_paths cores, lua-path of each
#    planted object prints the path the script expects, as
#    luacore-inspect --heap --path does, and lua-path --strong too;
#  - "make install-data-local" into a scratch prefix, then gdb's own
#    auto-load, with no LUACORE_LIB, loads the commands for a Lua core;
#  - help, completion, and the messages when the library cannot be
#    loaded or there is no process, and lua-heap's and lua-path's.
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
# heap_paths cores (lua-path's planted objects) of a 5.1 and a 5.4 source
# build and Debian's shared 5.4, made in $tmp: the builds as tests/lib.sh's
# fixtures makes them.  The scenario writes no frame truth, so
# make-core.sh says "no truth written" and links no exe: the core and the
# expect lines in its log are what is wanted.
heap_builds="src-5.1.5-O2 src-5.4.7-O2 deb-5.4"
# shellcheck disable=SC2086
"$top_srcdir/fixtures/build-lua.sh" "$out" $heap_builds >"$tmp/build.log" 2>&1 ||
	{ cat "$tmp/build.log"; echo "FAIL: fixtures/build-lua.sh"; status=1; }
for b in $heap_builds; do
	LC_BUILDS=$out "$top_srcdir/fixtures/make-core.sh" "$b" heap_paths \
		"$tmp/$b/heap_paths" >"$tmp/$b.make.log" 2>&1 &
done
wait
for b in $heap_builds; do
	c=$tmp/$b/heap_paths
	if [ -e "$c/core" ] && grep -q $'^expect\t' "$c/log"; then
		ln -sf "$(cd "$out/$b" && pwd)/lchost" "$c/exe"
		cells+=$'\n'$c
	else
		echo "FAIL $b: no heap_paths core: $(tail -3 "$tmp/$b.make.log")"
		status=1
	fi
done
n=$(echo "$cells" | wc -l)
res=$(echo "$cells" | xargs -P "$(nproc)" -n1 "$top_srcdir/tests/gdb/check-cmds.sh")
echo "$res"
pass=$(grep -c '^PASS' <<<"$res")
echo "lua-states, lua-vm, lua-stack, lua-bt -full, lua-heap equal luacore-inspect in $pass of $n cores"
# heap_paths.lua plants six objects.
npaths=$(grep -c '^PASS .*lua-path 6/6, --strong 6/6, no object said' <<<"$res")
nheap=$(wc -w <<<"$heap_builds")
echo "lua-path prints the planted paths in $npaths of $nheap heap_paths cores"
[ "$pass" -eq "$n" ] || status=1
[ "$npaths" -eq "$nheap" ] || status=1

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

# lua-heap and lua-path: usage, and a library error as a gdb error.
gdb -nx -batch -x "$LUAPROF" -ex 'lua-heap --vm 0x10' -ex 'lua-heap --top 0' \
	-ex 'lua-path' -ex 'help lua-path' \
	"$cell/exe" "$cell/core" >"$tmp/heap.txt" 2>&1 </dev/null
check "lua-heap: no VM there" "$tmp/heap.txt" "^luacore: no VM has its global_State at 0x10 "
check "lua-heap: --top" "$tmp/heap.txt" "^luacore: --top takes a number from 1 to 1000"
check "lua-path: usage" "$tmp/heap.txt" "^luacore: usage: lua-path ADDR \[--strong\]"
check "help lua-path" "$tmp/heap.txt" "^Usage: lua-path ADDR \[--strong\]"
exit "$status"
