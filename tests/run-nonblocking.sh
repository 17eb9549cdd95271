#!/usr/bin/env bash
# luacore-inspect -p --nonblocking: the process is never stopped nor
# traced; its threads are unwound from where they sleep in the kernel
# (/proc/PID/task/TID/syscall), everything read as it runs, and reads
# are repeated until two agree.
#  - on parked programs of several scenarios and Lua builds (every
#    thread asleep): the Lua frames equal the script's truth, as the
#    report of a stopped process does, the reads agree, and a watcher
#    that polls the target's state and TracerPid all the while never
#    sees it stopped or traced;
#  - on a program that computes (split.lua): its thread's report says it
#    was running and has no machine stack, the exit status is 1, and the
#    target is never stopped or traced either;
#  - on a Lua stack that never holds still: no two reads agree, and it
#    says so (naming what changed, when one more read differs), exit 1.
set -uo pipefail
. "$(cd "$(dirname "$0")" && pwd)/lib.sh"
# The Lua builds and the parked scenarios (tests/lib.sh park) of the
# live tests.
builds=$LIVE_BUILDS
scenarios=$LIVE_SCENARIOS
# shellcheck disable=SC2086
fixtures $builds

# watch PID FILE: until FILE.stop exists, record every state letter and
# TracerPid of every thread of PID seen stopped (t, T) or traced.
watch() {
	while [ ! -e "$2.stop" ]; do
		for s in /proc/"$1"/task/*/status; do
			awk '/^State:/ { st = $2 } /^TracerPid:/ { tr = $2 }
			     END { if (st == "t" || st == "T" || tr != 0) print st, tr }' "$s" 2>/dev/null
		done >>"$2"
	done
}
# inspect_watched PID OUT ERR ARGS...: luacore-inspect under the
# watcher; rc its exit status, $OUT.seen what the watcher saw.
inspect_watched() {
	local pid=$1 o=$2 e=$3; shift 3
	: >"$o.seen"
	watch "$pid" "$o.seen" &
	local w=$!
	rc=0
	"$inspect" "$@" -p "$pid" >"$o" 2>"$e" || rc=$?
	touch "$o.seen.stop"
	wait "$w"
}

export LC_TRUTH_LUA=$src/fixtures/lua/truth.lua
for b in $builds; do
	for sc in $scenarios; do
		d=$tmp/$b-$sc
		park "$b" "$sc" "$d" || continue
		inspect_watched "$pid" "$d/nb.json" "$d/nb.err" --json --nonblocking
		check "$b $sc: --nonblocking's Lua frames equal the truth (exit $rc)" \
			eval "[ $rc = 0 ] && $py '$src/tests/matrix/compare.py' -q '$d/truth.tsv' '$d/nb.json' >/dev/null"
		check "$b $sc: ... two reads agree" grep -q 'the last two agree' "$d/nb.err"
		check "$b $sc: ... never stopped nor traced ($(sort -u "$d/nb.json.seen" | tr '\n' ' '))" \
			eval "[ ! -s '$d/nb.json.seen' ] && running $pid"
		[ "$status" = 0 ] || sed 's/^/    /' "$d/nb.err" | head -5
		kill -KILL "$pid" 2>/dev/null
	done
done

# A thread that computes: running when read.
LC_SAMPLE_SECONDS=60 "$out/deb-5.4/lchost" "$src/fixtures/scenarios/sample/split.lua" >/dev/null 2>&1 &
pid=$!
pids+=("$pid")
disown "$pid"
sleep 0.5
inspect_watched "$pid" "$tmp/busy.txt" "$tmp/busy.err" --nonblocking
sed 's/^/    /' "$tmp/busy.err"
check "a busy thread: said to be running, with no machine stack; exit 1 (got $rc)" \
	eval "[ $rc = 1 ] && grep -q 'running when read, and not stopped (--nonblocking): no machine stack' '$tmp/busy.txt'"
check "a busy thread: the header says the process was not stopped" \
	grep -q '(live; not stopped, read as it ran)' "$tmp/busy.txt"
check "a busy thread: its VM is still listed" grep -q '^VMs: [1-9]' "$tmp/busy.txt"
check "a busy thread: never stopped nor traced ($(sort -u "$tmp/busy.txt.seen" | tr '\n' ' '))" \
	eval "[ ! -s '$tmp/busy.txt.seen' ] && running $pid"

# A Lua stack that never holds still (a recursion of random depth, 1 to
# 400, from one of 8 call sites): no two reads agree; the last is shown,
# the VM list named as what changed, exit 1.
cat >"$tmp/restless.lua" <<'EOF'
local r = math.random
local function f(n)
	if n == 0 then return 0 end
	local k = r(8)
	if k == 1 then return 1 + f(n - 1) elseif k == 2 then return 2 + f(n - 1)
	elseif k == 3 then return 3 + f(n - 1) elseif k == 4 then return 4 + f(n - 1)
	elseif k == 5 then return 5 + f(n - 1) elseif k == 6 then return 6 + f(n - 1)
	elseif k == 7 then return 7 + f(n - 1) else return 8 + f(n - 1) end
end
while true do f(r(1, 400)) end
EOF
lua5.4 "$tmp/restless.lua" &
pid=$!
pids+=("$pid")
disown "$pid"
sleep 0.3
# Two reads agree when the program got no CPU between them (a loaded
# machine): up to 3 tries, each of 5 reads some 50 ms apart.
for try in 1 2 3; do
	inspect_watched "$pid" "$tmp/restless.txt" "$tmp/restless.err" --nonblocking
	grep -q 'no two in a row agree' "$tmp/restless.err" && break
done
sed 's/^/    /' "$tmp/restless.err" | cut -c1-240
check "a restless stack: 5 reads, no two agree, said; exit 1 (got $rc, try $try)" \
	eval "[ $rc = 1 ] && grep -q '5 reads in [0-9]* ms and no two in a row agree: it changed while it was read' '$tmp/restless.err'"
# What changed is named from one more read, when that differs too: the
# VM list (the program's only thread has no stack: it runs).
if grep -q 'a read after it differs in' "$tmp/restless.err"; then
	check "a restless stack: what changed is the VM list" \
		grep -q 'a read after it differs in the VM list;' "$tmp/restless.err"
fi
check "a restless stack: the last read shown" grep -q '^VMs: 1' "$tmp/restless.txt"
check "a restless stack: never stopped nor traced ($(sort -u "$tmp/restless.txt.seen" | tr '\n' ' '))" \
	eval "[ ! -s '$tmp/restless.txt.seen' ] && running $pid"
exit $status
