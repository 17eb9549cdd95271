#!/usr/bin/env bash
# Real hosts: three programs from Debian that embed Debian's shared Lua
# (its DWARF in liblua5.X-0-dbg), not written here, each driven by a
# script of tests/hosts/ that writes its own debug.getinfo as the truth
# (tests/hosts/capture.lua) and then blocks reading a FIFO:
#  - nmap (Lua 5.3), an NSE prerule script: the action, in a coroutine
#    the engine resumed, blocks; a worker sleeps in stdnse.sleep, a C
#    function that yields (lua_yieldk with one value);
#  - haproxy (Lua 5.3), lua-load: an HTTP service, resumed by haproxy
#    from C after a yield from C (core.msleep) and after count-hook
#    yields, blocks; a task sleeps in core.sleep (lua_yieldk, no value,
#    a continuation);
#  - lighttpd (Lua 5.4), mod_magnet: the request's chunk resumes a
#    coroutine that calls a coroutine.wrap function, which blocks; two
#    coroutines are suspended in coroutine.yield.
# For each, while the host is blocked:
#  - luacore-inspect --json -p: every Lua frame shown equals the truth,
#    on the thread's stack and in each suspended coroutine
#    (tests/hosts/compare_hosts.py), with the coroutines' statuses;
#  - gdb -p with gdb/luaprof.py: "lua-bt -a" equals luacore-inspect -p
#    (tests/gdb/compare_bt.py) and "lua-states" its VMs section, the
#    suspended coroutines' frames included (tests/hosts/compare_states.py);
#  - the host is running and untraced afterwards, and goes on: a line
#    written to the FIFO comes back in the host's answer.
# Then all of it again as shipped, as if no -dbg package were installed:
# the same hosts and libraries, luacore-inspect --debuginfo-path and gdb's
# debug-file-directory naming an empty directory, so no separate debug
# file is found.  The layout is then the built-in one of the release,
# which the reports must say; Debian's libraries keep no symbol for
# luaV_execute or luaD_precall, and the frames must still equal the
# truth, every one spliced (none unplaced): the interpreter's function
# is recognised by what it holds.
# The hosts are installed by dev.sh (PACKAGES); a missing one fails.
# Network: 127.0.0.1 only, on ports the kernel says are free.
set -uo pipefail
top_srcdir=$(cd "${top_srcdir:-.}" && pwd)
top_builddir=$(cd "${top_builddir:-.}" && pwd)
inspect=$top_builddir/src/luacore-inspect
luaprof=$top_srcdir/gdb/luaprof.py
hosts=$top_srcdir/tests/hosts
export LUACORE_LIB=$top_builddir/libcore/.libs/libluacore.so
export LC_TRUTH_LUA=$top_srcdir/fixtures/lua/truth.lua
export HOST_CAPTURE_LUA=$hosts/capture.lua
py=/usr/bin/python3; [ -x "$py" ] || py=python3
tmp=$(mktemp -d)
pids=()
cleanup() {
	for p in "${pids[@]}"; do kill -KILL "$p" 2>/dev/null; done
	rm -rf "$tmp"
}
trap cleanup EXIT
status=0
t_start=$EPOCHREALTIME

# Each host: its program, the package it comes from, and the debug file of
# the Lua library it links.
missing=
for need in nmap:/usr/bin/nmap haproxy:/usr/sbin/haproxy \
	lighttpd:/usr/sbin/lighttpd lighttpd-modules-lua:/usr/lib/lighttpd/mod_magnet.so \
	liblua5.3-0-dbg:/usr/lib/x86_64-linux-gnu/liblua5.3.so.0 \
	liblua5.4-0-dbg:/usr/lib/x86_64-linux-gnu/liblua5.4.so.0 gdb:/usr/bin/gdb; do
	pkg=${need%%:*} file=${need#*:}
	if [ ! -e "$file" ] || ! dpkg-query -W -f='${Status}' "$pkg" 2>/dev/null | grep -q 'ok installed'; then
		missing="$missing $pkg"
	fi
done
if [ -n "$missing" ]; then
	echo "FAIL: the real hosts are not installed: package(s)$missing missing (./dev.sh deps installs them)"
	exit 1
fi

since() {	# EPOCHREALTIME -> seconds since, one decimal
	awk -v a="$1" -v b="$EPOCHREALTIME" 'BEGIN { printf "%.1f", b - a }'
}

running() {	# PID: alive, not stopped, untraced
	local st tr
	st=$(awk '/^State:/ { print $2 }' "/proc/$1/status" 2>/dev/null)
	tr=$(awk '/^TracerPid:/ { print $2 }' "/proc/$1/status" 2>/dev/null)
	[ -n "$st" ] && [ "$st" != t ] && [ "$st" != T ] && [ "$st" != Z ] && [ "$tr" = 0 ]
}

wait_for() {	# FILE SECONDS PID...: FILE exists (0); a PID ended, or timeout (1)
	local p file=$1 n=$(($2 * 20))
	shift 2
	for _ in $(seq "$n"); do
		[ -e "$file" ] && return 0
		for p in "$@"; do kill -0 "$p" 2>/dev/null || return 1; done
		sleep 0.05
	done
	return 1
}

fail() {	# NAME DIR TEXT
	echo "FAIL $1: $3"
	for f in "$2"/host.log "$2"/error.log; do
		[ -s "$f" ] && tail -15 "$f" | sed 's/^/    /'
	done
	status=1
}

# check NAME DIR PID: the host is blocked at the capture; compare luacore
# (JSON and text) and gdb with the truth and with each other.  -> 0 if all
# matched.
check() {
	local name=$1 d=$2 pid=$3 rc=0 res ok=0 t0=$EPOCHREALTIME layout
	local dbg=() gdbdbg=()
	if [ -n "$nodwarf" ]; then
		dbg=(--debuginfo-path "$nodwarf")
		gdbdbg=(-iex "set debug-file-directory $nodwarf")
	fi
	"$inspect" "${dbg[@]}" --json -p "$pid" >"$d/report.json" 2>"$d/report.err" || rc=$?
	if [ "$rc" != 0 ]; then
		echo "FAIL $name: luacore-inspect --json -p exit $rc: $(tail -1 "$d/report.err")"
		ok=1
	fi
	layout=$("$py" -c 'import json,sys; print(json.load(open(sys.argv[1]))["process"]["lua_layout"] or "")' \
		"$d/report.json" 2>/dev/null)
	if [ -n "$nodwarf" ]; then
		if [[ "$layout" == "built-in layout of Lua 5."*" (the module has no DWARF), validated against memory: "* ]]; then
			echo "PASS $name: $layout"
		else
			echo "FAIL $name: not the built-in layout: '$layout'"
			ok=1
		fi
	elif [[ "$layout" != "DWARF of "* ]]; then
		echo "FAIL $name: not the DWARF's layout: '$layout'"
		ok=1
	fi
	if res=$("$py" "$hosts/compare_hosts.py" -q "$d/truth.tsv" "$d/report.json" 2>&1); then
		echo "PASS $name: luacore-inspect equals the truth: $(grep -c '^frame' "$d/truth.tsv") frames on the thread, $(grep -c '^coframe' "$d/truth.tsv") in $(awk -F'\t' '$1 == "coroutine" && $3 == "suspended"' "$d/truth.tsv" | wc -l) suspended coroutine(s)"
	else
		echo "FAIL $name: luacore-inspect -p differs from the truth:"
		echo "$res" | sed 's/^/    /'
		ok=1
	fi
	"$inspect" "${dbg[@]}" -p "$pid" >"$d/inspect.txt" 2>"$d/inspect.err"
	timeout 120 gdb -nx -batch "${gdbdbg[@]}" -p "$pid" -x "$luaprof" -ex 'lua-bt -a' \
		-ex 'lua-states' >"$d/gdb.txt" 2>"$d/gdb.err" </dev/null
	if grep -q '^luacore: \|Python Exception' "$d/gdb.txt" "$d/gdb.err"; then
		echo "FAIL $name: gdb: $(grep -h '^luacore: \|Python Exception' "$d/gdb.txt" "$d/gdb.err" | head -1)"
		ok=1
	fi
	if res=$("$py" "$top_srcdir/tests/gdb/compare_bt.py" "$d/gdb.txt" "$d/inspect.txt" 2>&1); then
		echo "PASS $name: gdb lua-bt -a equals luacore-inspect -p: ${res##*$'\n'}"
	else
		echo "FAIL $name: gdb lua-bt -a differs from luacore-inspect -p:"
		echo "$res" | sed 's/^/    /'
		ok=1
	fi
	if res=$("$py" "$hosts/compare_states.py" "$d/gdb.txt" "$d/inspect.txt" 2>&1); then
		echo "PASS $name: gdb lua-states equals luacore-inspect -p: ${res##*$'\n'}"
	else
		echo "FAIL $name: gdb lua-states differs from luacore-inspect -p:"
		echo "$res" | sed 's/^/    /'
		ok=1
	fi
	if running "$pid"; then
		echo "PASS $name: running and untraced after luacore-inspect and gdb ($(grep -o '"stopped_seconds": *[0-9.]*' "$d/report.json" | grep -o '[0-9.]*$') s stopped; $(since "$t0") s to check)"
	else
		echo "FAIL $name: left $(grep -E '^(State|TracerPid)' "/proc/$pid/status" 2>/dev/null | tr '\n\t' '  ')"
		ok=1
	fi
	return $ok
}

# host NAME: a directory with a FIFO held open for writing (so that the
# host's open does not block, and its read does), and the environment of
# tests/hosts/capture.lua.
setup() {
	d=$tmp/$1
	mkdir -p "$d"
	mkfifo "$d/fifo"
	export LC_TRUTH=$d/truth.tsv LC_READY=$d/ready HOST_FIFO=$d/fifo
}

# http_host NAME WHO COMMAND...: run an HTTP host (COMMAND) whose Lua, at
# a request, writes its truth and blocks reading the FIFO; request, check
# it at the capture, then let it go on and answer with the line written
# to the FIFO.  WHO names what runs the Lua ("the service").
http_host() {
	local name=$1 who=$2 get
	shift 2
	exec {fifo}<>"$d/fifo"
	"$@" >"$d/host.log" 2>&1 {fifo}>&- </dev/null &
	pid=$!
	pids+=("$pid")
	"$py" "$hosts/get.py" "$port" "$d/answer" {fifo}>&- 2>"$d/get.err" &
	pids+=("$!")
	get=$!
	if ! wait_for "$d/ready" 60 "$pid" "$get"; then
		fail "$name" "$d" "$who did not reach its capture point ($(cat "$d/get.err"; head -c 200 "$d/answer" 2>/dev/null | tr "\r\n" "  "))"
	else
		check "$name" "$d" "$pid" || status=1
		echo go >&"$fifo"
		wait "$get"
		if grep -q '^HTTP/1.[01] 200' "$d/answer" && grep -qx 'go' "$d/answer"; then
			echo "PASS $name: went on after the capture: $who answered with the line"
		else
			fail "$name" "$d" "did not go on after the capture: answer $(head -c 200 "$d/answer" | tr '\r\n' '  ')"
		fi
		running "$pid" || fail "$name" "$d" "not running after its answer"
	fi
	kill -TERM "$pid" 2>/dev/null
	exec {fifo}>&-
}

# run_hosts SUFFIX: the three hosts, their names ending in SUFFIX.
run_hosts() {
sfx=$1
# ---- nmap: NSE, no target (prerule scripts only), no network ----------
setup "nmap$sfx"
exec {fifo}<>"$d/fifo"
nmap -n --script "$hosts/nmap.nse" >"$d/host.log" 2>&1 {fifo}>&- </dev/null &
pid=$!
pids+=("$pid")
if ! wait_for "$d/ready" 60 "$pid"; then
	fail "nmap$sfx" "$d" "the script did not reach its capture point"
else
	check "nmap$sfx" "$d" "$pid" || status=1
	echo go >&"$fifo"
	for _ in $(seq 400); do kill -0 "$pid" 2>/dev/null || break; sleep 0.05; done
	rc=0
	if kill -0 "$pid" 2>/dev/null; then rc="none: still running 20 s later"; else wait "$pid" || rc=$?; fi
	if [ "$rc" = 0 ] && grep -q '^|_nmap: read go$' "$d/host.log"; then
		echo "PASS nmap$sfx: went on after the capture: the script read the line and nmap finished"
	else
		fail "nmap$sfx" "$d" "did not go on after the capture (exit $rc)"
	fi
fi
exec {fifo}>&-

# ---- haproxy: lua-load, one HTTP service, one task --------------------
setup "haproxy$sfx"
port=$("$py" "$hosts/free-port.py")
cat >"$d/haproxy.cfg" <<EOF
global
	nbthread 1
	tune.lua.forced-yield 1000
	lua-load $hosts/haproxy.lua
defaults
	mode http
	timeout connect 5s
	timeout client 600s
	timeout server 600s
frontend luacore
	bind 127.0.0.1:$port
	http-request use-service lua.luacore
EOF
http_host "haproxy$sfx" "the service" haproxy -db -f "$d/haproxy.cfg"

# ---- lighttpd: mod_magnet ----------------------------------------------
setup "lighttpd$sfx"
port=$("$py" "$hosts/free-port.py")
mkdir -p "$d/www"
cat >"$d/lighttpd.conf" <<EOF
server.document-root = "$d/www"
server.bind = "127.0.0.1"
server.port = $port
server.modules = ( "mod_magnet" )
server.errorlog = "$d/error.log"
magnet.attract-raw-url-to = ( "$hosts/lighttpd.lua" )
EOF
http_host "lighttpd$sfx" "the script" lighttpd -D -f "$d/lighttpd.conf"

}

nodwarf=
run_hosts ""
# As shipped: no separate debug file within reach.
nodwarf=$tmp/no-debug-files
mkdir -p "$nodwarf"
run_hosts " (as shipped, no debug files)"
echo "real hosts checked in $(since "$t_start") s"
exit "$status"
