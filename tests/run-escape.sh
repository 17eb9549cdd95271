#!/usr/bin/env bash
# Strings a target supplies are printed escaped (base/escape.c, doc/
# luacore-inspect.1 "ESCAPING"): a valid Lua program cannot clear the
# terminal, colour it, set its title, or forge a line of the report.
#
# tests/escape/names.lua, under Debian's lua5.4, names its chunk
# "=ESC[2J\nfake  #0 0x0 in main () at x.c:1", a global function
# "gESC[31m\nfake\255\254x" and a field "fESC]0;tBEL" + U+009B (C1 CSI),
# and calls a function whose source is "@" and an OSC 8 hyperlink, whose
# local and upvalue names (renamed in its binary chunk) hold ESC, a
# newline and \255.  It runs as a program whose file name, and so its thread's name, is
# "ESC[2J\n#1 0x0 in".  It writes its own traceback, then parks in
# io.read.  Every output of ours is checked (tests/escape/check.py):
#  - luacore-inspect -p (text and JSON, with --locals), and on its core
#    (gcore);
#  - gdb's lua-bt -a and lua-states on that core (gdb/luaprof.py);
#  - luacore-sample -p -d 1 --wall: folded, SVG and speedscope files;
# for: valid UTF-8, no byte below 0x20 but newline and tab, no DEL, no
# ESC; no line of its own starting with a forged text ("fake  #0", "#1
# 0x0 in"); the names recognisable in their escaped form (\e, \n, \xff,
# \xc2\x9b, the folded stacks' ';' as ':'); the JSON still carrying the
# raw bytes; the Lua value in its Lua form ("g\027[31m\n...").
set -uo pipefail
top_srcdir=${top_srcdir:-.}
top_builddir=${top_builddir:-.}
inspect=$(cd "$top_builddir/src" && pwd)/luacore-inspect
sample=$(cd "$top_builddir/src" && pwd)/luacore-sample
LUAPROF=${LUAPROF:-$top_srcdir/gdb/luaprof.py}
export LUACORE_LIB=${LUACORE_LIB:-$(cd "$top_builddir/libcore/.libs" && pwd)/libluacore.so}
py=/usr/bin/python3; [ -x "$py" ] || py=python3
lua=/usr/bin/lua5.4
tmp=$(mktemp -d)
pid=
cleanup() {
	[ -n "$pid" ] && kill -KILL "$pid" 2>/dev/null
	exec 3>&-
	[ -n "${KEEP:-}" ] || rm -rf "$tmp"
}
trap cleanup EXIT
status=0

# lua5.4 and its -dbg package are in dev.sh's PACKAGES: missing, the test
# fails (no skip).
if [ ! -x "$lua" ]; then
	echo "FAIL: $lua missing (Debian's lua5.4, liblua5.4-0-dbg)"
	exit 1
fi

# The program.  Its thread's name (comm) is the basename of the path it
# was executed by: a symlink named with ESC and a newline.  The file it
# points to, a copy of lua5.4 (its debug info is found by build-id), is
# the executable and module the reports name: ESC and an "é" in its name.
# Not a newline there: /proc/PID/maps writes it as "\012", and neither
# libdwfl nor gcore's NT_FILE turn it back, so the file is not found.
# Not a byte that is not UTF-8 either: gdb 13's Python cannot read
# "info files" then (UnicodeDecodeError), and lua-bt stops with that.
comm=$'\e[2J\n#1 0x0 in'
exe=$'\e[31mlua\xc3\xa9'
cp "$lua" "$tmp/$exe"
ln -s "$tmp/$exe" "$tmp/$comm"
mkfifo "$tmp/in"
exec 3<>"$tmp/in"	# held open: io.read never sees the end
"$tmp/$comm" "$top_srcdir/tests/escape/names.lua" "$tmp/truth" \
	<"$tmp/in" >"$tmp/prog.log" 2>&1 &
pid=$!
for i in $(seq 100); do [ -e "$tmp/truth" ] && break; sleep 0.1; done
if [ ! -e "$tmp/truth" ]; then
	echo "FAIL: the program did not write its truth"; cat "$tmp/prog.log"
	exit 1
fi
# Parked in read(): sleeping.
for i in $(seq 50); do
	[ "$(sed 's/.*) //' "/proc/$pid/stat" | cut -c1)" = S ] && break
	sleep 0.1
done
echo "the program's own traceback (cat -v):"
cat -v "$tmp/truth"
comm_now=$(cat "/proc/$pid/comm")
[ "$comm_now" = "$comm" ] || { echo "FAIL: comm is not the symlink's name"; status=1; }

run() {	# NAME CMD...: stdout to $tmp/NAME.out, stderr to $tmp/NAME.err
	local name=$1 rc=0; shift
	"$@" >"$tmp/$name.out" 2>"$tmp/$name.err" || rc=$?
	echo "$name: exit $rc"
	echo "$rc" >"$tmp/$name.rc"
}
run live "$inspect" -p "$pid" --locals
run json "$inspect" -p "$pid" --json --locals
gcore -o "$tmp/core" "$pid" >"$tmp/gcore.log" 2>&1 ||
	{ echo "FAIL: gcore"; cat "$tmp/gcore.log"; status=1; }
run core "$inspect" "$tmp/core.$pid"
run gdb gdb -nx -batch -x "$LUAPROF" -ex 'echo @@BEGIN\n' -ex 'lua-bt -a' \
	-ex 'lua-states' -ex 'echo @@END\n' "$tmp/$exe" "$tmp/core.$pid"
for f in folded svg speedscope; do
	run "sample-$f" "$sample" -p "$pid" -d 1 --wall -q --format "$f" \
		-o "$tmp/profile.$f"
done
kill -KILL "$pid" 2>/dev/null
wait "$pid" 2>/dev/null
pid=

"$py" "$top_srcdir/tests/escape/check.py" "$tmp" || status=1
exit $status
