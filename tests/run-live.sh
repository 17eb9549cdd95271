#!/usr/bin/env bash
# luacore-inspect -p on running programs:
#  - every parking cell of the matrix (every scenario but crash and
#    interp_* under every Lua build) was inspected live by
#    tests/run-matrix.sh, in the same program run that took its core
#    (fixtures/make-core.sh with LC_LIVE_INSPECT): the report's Lua frames
#    must equal the truth the script wrote, and the program must have been
#    running, untraced, afterwards (tests/matrix/check.sh --live);
#  - ptrace refused (another user; another tracer): a clear message and
#    exit status 2, the program untouched;
#  - luacore-inspect killed (SIGKILL) or interrupted (SIGINT) at random
#    moments while attached: the program is never left stopped.
set -uo pipefail
top_srcdir=${top_srcdir:-.}
top_builddir=${top_builddir:-.}
out=$(cd "${LUACORE_MATRIX_DIR:-$top_builddir/fixtures/out}" && pwd)
inspect=$(cd "$top_builddir/src" && pwd)/luacore-inspect
py=/usr/bin/python3; [ -x "$py" ] || py=python3
tmp=$(mktemp -d)
pids=()
cleanup() {
	for p in "${pids[@]}"; do kill -KILL "$p" 2>/dev/null; done
	rm -rf "$tmp"
}
trap cleanup EXIT
status=0

res=$(LUACORE_INSPECT=$inspect "$top_srcdir/tests/matrix/check.sh" --live "$out")
echo "$res"
pass=$(grep -c '^PASS' <<<"$res")
n=$(grep -c '^PASS\|^FAIL' <<<"$res")
echo "luacore-inspect -p equals the truth in $pass of $n live programs, each left running"
[ "$pass" -eq "$n" ] && [ "$n" -gt 0 ] || status=1
# Stop times, for the record.
grep -o '[0-9.]* s stopped' <<<"$res" | sort -n | awk '
	{ v[NR] = $1 } END { if (NR) printf "stopped: median %.1f ms, max %.1f ms over %d runs\n", v[int((NR + 1) / 2)] * 1000, v[NR] * 1000, NR }'
"$py" "$top_srcdir/tests/matrix/summary.py" "$out" live || status=1

# A program to attach to: parks after writing its truth.
export LC_TRUTH_LUA=$top_srcdir/fixtures/lua/truth.lua
start_parked() {	# BUILD SCENARIO -> $pid
	rm -f "$tmp/ready" "$tmp/truth.tsv"
	LC_TRUTH=$tmp/truth.tsv LC_READY=$tmp/ready \
		"$out/$1/lchost" "$top_srcdir/fixtures/scenarios/$2.lua" >"$tmp/prog.log" 2>&1 &
	pid=$!
	pids+=("$pid")
	for i in $(seq 100); do [ -e "$tmp/ready" ] && return 0; sleep 0.1; done
	echo "FAIL: $1 $2 not ready"; status=1
}
running() {	# PID: alive, not stopped, untraced
	local st tr
	st=$(sed 's/.*) //' "/proc/$1/stat" 2>/dev/null | cut -c1)
	tr=$(awk '/^TracerPid:/ { print $2 }' "/proc/$1/status" 2>/dev/null)
	[ -n "$st" ] && [ "$st" != t ] && [ "$st" != T ] && [ "$st" != Z ] && [ "$tr" = 0 ]
}
check() {	# NAME COND...
	local name=$1; shift
	if "$@"; then echo "PASS $name"; else echo "FAIL $name"; status=1; fi
}

# ptrace refused: another user.
start_parked deb-5.4 coroutines3
rc=0
setpriv --reuid=65534 --regid=65534 --clear-groups "$inspect" -p "$pid" \
	>"$tmp/out" 2>"$tmp/err" || rc=$?
cat "$tmp/err"
check "another user: exit status 2" [ "$rc" = 2 ]
check "another user: says why" grep -q "cannot attach to process $pid: Operation not permitted: it belongs to uid 0 and luacore runs as uid 65534" "$tmp/err"
check "another user: program running" running "$pid"

# ptrace refused: a debugger holds the process.
gdb -nx -batch -p "$pid" -ex 'shell sleep 3' >/dev/null 2>&1 &
gdbpid=$!
for i in $(seq 50); do
	[ "$(awk '/^TracerPid:/ { print $2 }' "/proc/$pid/status")" != 0 ] && break
	sleep 0.1
done
rc=0
"$inspect" -p "$pid" >"$tmp/out" 2>"$tmp/err" || rc=$?
cat "$tmp/err"
check "another tracer: exit status 2" [ "$rc" = 2 ]
check "another tracer: says why" grep -q "cannot attach to process $pid: Operation not permitted" "$tmp/err"
wait "$gdbpid"
check "another tracer: program running after gdb" running "$pid"

# Killed at random moments while attached (a 200-VM program: reading
# it takes long enough to be caught in the middle).
kill -KILL "$pid"
start_parked deb-5.4 post_many_vms
stopped=0
for sig in KILL INT TERM; do
	for i in $(seq 10); do
		"$inspect" -p "$pid" >/dev/null 2>&1 &
		ip=$!
		sleep "0.0$((RANDOM % 10))$((RANDOM % 10))"
		kill -"$sig" "$ip" 2>/dev/null
		wait "$ip" 2>/dev/null
		sleep 0.05
		running "$pid" || { stopped=$((stopped + 1)); echo "left stopped after SIG$sig: $(grep State /proc/$pid/status)"; }
	done
done
check "30 runs killed by SIGKILL, SIGINT, SIGTERM: program never left stopped" [ "$stopped" = 0 ]
check "the program still parks (its ready file stays, it answers)" running "$pid"
exit "$status"
