#!/usr/bin/env bash
# luacore-inspect -p and luacore-sample on hostile live targets (one Lua
# 5.4 script run by tests/live/lthost on a thread of its own, Debian's
# liblua5.4 with its -dbg DWARF; the truth is what the script writes):
#  - job control: SIGTSTP (and SIGTTIN, SIGTTOU) of either tool while it
#    holds the target stopped: no thread of the target is stopped while
#    the tool is; after SIGCONT inspect reads the process again from a
#    new stop (and says so), the sampler goes on sampling;
#  - a target SIGSTOPped by someone else stays stopped;
#  - a process whose main thread called pthread_exit (the leader is a
#    zombie) is read through its live threads; a kernel thread, a zombie
#    process and no process each get their own message;
#  - threads born at ~1000/s: no inspect marks a thread just born;
#  - 2000 idle threads (8 MiB stacks, untouched): the stop of one inspect
#    is bounded (printed), and a sampler tick costs under half the
#    period in CPU (the rate itself: bench/hostile.sh).
set -uo pipefail
top_srcdir=${top_srcdir:-.}
top_builddir=${top_builddir:-.}
inspect=$(cd "$top_builddir/src" && pwd)/luacore-inspect
sample=$(cd "$top_builddir/src" && pwd)/luacore-sample
lthost=$(cd "$top_builddir/tests/live" && pwd)/lthost
scripts=$(cd "$top_srcdir/tests/live" && pwd)
py=/usr/bin/python3; [ -x "$py" ] || py=python3
tmp=$(mktemp -d)
pids=()
cleanup() {
	for p in "${pids[@]}"; do kill -KILL "$p" 2>/dev/null; done
	rm -rf "$tmp"
}
trap cleanup EXIT
status=0
under() { [ -n "$1" ] && awk -v m="$1" -v l="$2" 'BEGIN { exit !(m < l) }'; }
# Exit status 0 and the spin script's Lua function in the profile.
spin_profile() { [ "$1" = 0 ] && grep -q 'work (.*spin.lua' "$2"; }
section() { echo "---- $* (at ${SECONDS} s)"; }
check() {	# NAME COND...
	local name=$1; shift
	if "$@"; then echo "PASS $name"; else echo "FAIL $name"; status=1; fi
}

# The target: lthost OPTIONS... SCRIPT; sets $pid once it is ready.
start() {
	rm -f "$tmp/ready" "$tmp/truth"
	LC_READY=$tmp/ready LC_TRUTH=$tmp/truth "$lthost" "$@" >"$tmp/host.log" 2>&1 &
	pid=$!
	pids+=("$pid")
	for _ in $(seq 300); do [ -e "$tmp/ready" ] && return 0; sleep 0.05; done
	echo "FAIL lthost $* not ready: $(cat "$tmp/host.log")"; status=1
	return 1
}
# The state letters of every thread of PID, one per line (one process:
# a fork per thread would take longer than some of the stops).
states() {
	awk '{ sub(/.*\) /, ""); print substr($0, 1, 1) }' /proc/"$1"/task/*/stat 2>/dev/null
}
# How many threads of PID are stopped (t: traced, T: job control).
nstopped() { states "$1" | grep -c '[tT]'; }
# How many threads of PID someone traces.
ntraced() { awk '/^TracerPid:/ && $2 != 0' /proc/"$1"/task/*/status 2>/dev/null | wc -l; }
state() { sed 's/.*) //' "/proc/$1/stat" 2>/dev/null | cut -c1; }
running() {	# PID: alive, not stopped, untraced
	local st tr
	st=$(state "$1")
	tr=$(awk '/^TracerPid:/ { print $2 }' "/proc/$1/status" 2>/dev/null)
	[ -n "$st" ] && [ "$st" != t ] && [ "$st" != T ] && [ "$st" != Z ] && [ "$tr" = 0 ]
}
# Run a command in a process group of its own, in our session: where
# SIGTSTP stops it (the kernel drops job-control stops sent to an orphaned
# group, and a shell's job control would stop this script's loops).  Run
# in the background, its $! is the command's pid (exec, twice).
pgrun() {
	exec "$py" -c 'import os, sys; os.setpgid(0, 0); os.execvp(sys.argv[1], sys.argv[1:])' "$@"
}
wait_state() {	# PID LETTER TENTHS: until PID is in that state
	for _ in $(seq "$3"); do [ "$(state "$1")" = "$2" ] && return 0; sleep 0.01; done
	return 1
}
# The "source:line" of the Lua frames of thread TID in a text report.
lua_frames() {
	awk -v t="Thread $2 " 'index($0, t) == 1 { on = 1; next } /^Thread |^VMs:/ { on = 0 }
		on && /^ *lua: / && !/^ *lua: \[C\]/ { sub(/^ *lua: /, ""); sub(/: in .*/, ""); print }' "$1"
}
truth_frames() { grep -v '^tid ' "$tmp/truth"; }
truth_tid() { sed -n 's/^tid //p' "$tmp/truth"; }

# ---- job control: inspect ----
section "job control: luacore-inspect"
# 250 idle threads, 1000 suspended coroutines and 400 MB of written
# memory: a report made while stopped (--no-copy, odd rounds) and a copy
# (the default, even rounds) take long enough to be stopped in the middle.
if LTHOST_BALLAST=400 LTHOST_COROUTINES=1000 start -n 250 "$scripts/many.lua"; then
	held=0 bad=0 ok=0 again=0
	for i in $(seq 10); do
		sig=TSTP
		[ "$i" = 9 ] && sig=TTIN
		[ "$i" = 10 ] && sig=TTOU
		mode=
		[ $((i % 2)) = 1 ] && mode=--no-copy
		pgrun "$inspect" $mode -p "$pid" >"$tmp/out" 2>"$tmp/err" &
		ip=$!
		# Until the target is stopped: then the tool holds it.
		for _ in $(seq 500); do [ "$(state "$pid")" = t ] && break; sleep 0.002; done
		[ "$(state "$pid")" = t ] && held=$((held + 1))
		kill -"$sig" "$ip"
		if wait_state "$ip" T 500; then
			n=$(nstopped "$pid") tr=$(ntraced "$pid")
			[ "$n" = 0 ] && [ "$tr" = 0 ] || { bad=$((bad + 1)); echo "SIG$sig $i: $n threads of the target stopped, $tr traced while luacore-inspect is stopped"; }
		else
			echo "SIG$sig $i: luacore-inspect did not stop (state $(state "$ip"))"; bad=$((bad + 1))
		fi
		kill -CONT "$ip"
		wait "$ip"; rc=$?
		r=0 full=0
		grep -q "reading it again" "$tmp/err" && { again=$((again + 1)); r=1; }
		[ "$rc" = 0 ] && grep -q "^Thread $(truth_tid) " "$tmp/out" && { ok=$((ok + 1)); full=1; }
		if [ "$full" = 0 ] || [ "$r" = 0 ]; then
			echo "SIG$sig $i ($mode): exit $rc, read again $r, report complete $full; its stderr:"
			sed 's/^/    /' "$tmp/err"
		fi
		running "$pid" || { bad=$((bad + 1)); echo "SIG$sig $i: target left stopped: $(grep State "/proc/$pid/status")"; }
	done
	echo "inspect: stopped 10 times while holding the target ($held seen held): $bad with the target stopped, $again read again, $ok reports complete"
	check "job control of luacore-inspect: the target never stopped while it is" [ "$bad" = 0 ]
	check "job control of luacore-inspect: caught while holding the target" [ "$held" -ge 8 ]
	# Seen held is not held when the signal lands: on a loaded machine a
	# copy's short stop can end between the look and the kill.  So: every
	# report complete, and most rounds caught the hold.
	check "job control of luacore-inspect: exit 0 and a full report after SIGCONT, every round" [ "$ok" = 10 ]
	check "job control of luacore-inspect: read again after SIGCONT (at least 5 of 10 rounds)" [ "$again" -ge 5 ]
	cat "$tmp/err"

	# Someone else's SIGSTOP stays.
	kill -STOP "$pid"
	wait_state "$pid" T 100
	rc=0; "$inspect" -p "$pid" >"$tmp/out" 2>"$tmp/err" || rc=$?
	check "a target SIGSTOPped by someone else: read (exit $rc)" [ "$rc" = 0 ]
	sleep 0.1
	check "a target SIGSTOPped by someone else stays stopped" [ "$(state "$pid")" = T ]
	# ... also when luacore-inspect is stopped by job control meanwhile.
	pgrun "$inspect" -p "$pid" >"$tmp/out" 2>"$tmp/err" &
	ip=$!
	for _ in $(seq 500); do [ "$(state "$pid")" = t ] && break; sleep 0.002; done
	kill -TSTP "$ip"
	wait_state "$ip" T 500
	check "... SIGTSTP of luacore-inspect meanwhile: the target stopped as it was, untraced" \
		[ "$(states "$pid" | sort -u)" = T -a "$(ntraced "$pid")" = 0 ]
	kill -CONT "$ip"
	rc=0; wait "$ip" || rc=$?
	check "... and the report read again, exit 0 (got $rc), the target still stopped" [ "$rc" = 0 -a "$(state "$pid")" = T ]
	kill -CONT "$pid"
	sleep 0.1
	check "... and runs on SIGCONT" running "$pid"
	kill -KILL "$pid"
fi

# ---- job control: the sampler ----
section "job control: luacore-sample"
if start -n 20 "$scripts/spin.lua"; then
	bad=0
	pgrun "$sample" -p "$pid" -r 200 -d 6 -o "$tmp/jc.folded" >"$tmp/out" 2>"$tmp/err" &
	sp=$!
	sleep 0.5
	for i in $(seq 12); do
		sig=TSTP
		[ "$i" = 11 ] && sig=TTIN
		[ "$i" = 12 ] && sig=TTOU
		kill -"$sig" "$sp"
		if wait_state "$sp" T 300; then
			n=$(nstopped "$pid") tr=$(ntraced "$pid")
			[ "$n" = 0 ] && [ "$tr" = 0 ] || { bad=$((bad + 1)); echo "SIG$sig $i: $n threads of the target stopped, $tr traced while luacore-sample is stopped"; }
		else
			echo "SIG$sig $i: luacore-sample did not stop (state $(state "$sp"))"; bad=$((bad + 1))
		fi
		kill -CONT "$sp"
		sleep "0.$((RANDOM % 3))$((RANDOM % 10))"
	done
	wait "$sp"; rc=$?
	cat "$tmp/err"
	check "job control of luacore-sample: the target never stopped while it is (12 stops)" [ "$bad" = 0 ]
	check "job control of luacore-sample: sampling went on, exit 0, Lua frames" \
		spin_profile "$rc" "$tmp/jc.folded"
	check "job control of luacore-sample: target running" running "$pid"
	kill -KILL "$pid"
fi

# ---- the leader a zombie, Lua on another thread ----
section "a zombie leader"
if start -x "$scripts/park.lua"; then
	# The leader exits once the Lua thread runs: it may not have yet.
	for _ in $(seq 100); do [ "$(state "$pid")" = Z ] && break; sleep 0.05; done
	check "pthread_exit of the main thread: the leader is a zombie" [ "$(state "$pid")" = Z ]
	rc=0; "$inspect" -p "$pid" >"$tmp/out" 2>"$tmp/err" || rc=$?
	cat "$tmp/err"
	check "zombie leader: luacore-inspect -p exit 0 (got $rc)" [ "$rc" = 0 ]
	check "zombie leader: the Lua frames of the live thread equal the truth" \
		diff <(truth_frames) <(lua_frames "$tmp/out" "$(truth_tid)")
	check "zombie leader: target running" running "$(truth_tid)"
	kill -KILL "$pid"
fi
if start -x "$scripts/spin.lua"; then
	rc=0; "$sample" -p "$pid" -d 1 -o "$tmp/z.folded" >"$tmp/out" 2>"$tmp/err" || rc=$?
	cat "$tmp/err"
	check "zombie leader: luacore-sample exit 0 (got $rc), Lua frames" \
		spin_profile "$rc" "$tmp/z.folded"
	kill -KILL "$pid"
fi

# ---- what is no Lua process: a kernel thread, a zombie, nothing ----
section "a kernel thread, a zombie, no process"
message() {	# NAME PID PATTERN: both tools exit 2 saying PATTERN
	local rc1=0 rc2=0
	"$inspect" -p "$2" >/dev/null 2>"$tmp/e1" || rc1=$?
	"$sample" -p "$2" -d 1 -o "$tmp/m.folded" >/dev/null 2>"$tmp/e2" || rc2=$?
	cat "$tmp/e1" "$tmp/e2"
	check "$1: exit 2 from both" [ "$rc1" = 2 -a "$rc2" = 2 ]
	check "$1: says so" [ "$(grep -l "$3" "$tmp/e1" "$tmp/e2" | wc -l)" = 2 ]
	check "$1: blames no tracer" [ "$(grep -c tracer "$tmp/e1" "$tmp/e2" | awk -F: '{ n += $2 } END { print n }')" = 0 ]
}
kthread=
for f in /proc/[0-9]*/stat; do
	# Field 9, the flags: PF_KTHREAD.
	fl=$(sed 's/.*) //' "$f" 2>/dev/null | awk '{ print $7 }')
	[ -n "$fl" ] && (( fl & 0x200000 )) && { kthread=$(basename "$(dirname "$f")"); break; }
done
if [ -n "$kthread" ]; then
	message "kernel thread $kthread ($(cat "/proc/$kthread/comm"))" "$kthread" "is a kernel thread"
else
	echo "NOTE: no kernel thread is visible here (a PID namespace shows none): that case is not tested on this machine"
fi
bash -c 'sleep 0.01 & echo $! >"$1"; exec sleep 30' _ "$tmp/zpid" &
pids+=($!)
sleep 0.3
zpid=$(cat "$tmp/zpid")
check "a zombie process to look at" [ "$(state "$zpid")" = Z ]
message "zombie process $zpid" "$zpid" "has exited: it is a zombie"
nopid=$(( $(cat /proc/sys/kernel/pid_max) - 1 ))
while [ -e "/proc/$nopid" ]; do nopid=$((nopid - 1)); done
message "no process $nopid" "$nopid" "no process $nopid"

# ---- threads born during the stop ----
section "threads born during the stop"
if start -c 1000 "$scripts/park.lua"; then
	marked=0 born=0 fail=0
	for i in $(seq 20); do
		rc=0; "$inspect" -p "$pid" >"$tmp/out" 2>"$tmp/err" || rc=$?
		grep -q overwritten "$tmp/out" && { marked=$((marked + 1)); grep -B3 overwritten "$tmp/out"; }
		[ "$rc" = 0 ] || { fail=$((fail + 1)); echo "exit $rc:"; grep -B2 '^note:\|partial' "$tmp/out" | head -20; cat "$tmp/err"; }
		# A thread stopped at its first instruction shows one frame.
		born=$((born + $(grep -A1 '^Thread ' "$tmp/out" | grep -c 'clone')))
	done
	echo "threads born at 1000/s: 20 inspects, $marked said overwritten, $fail exited non-zero; $born threads seen at their first instruction"
	check "threads born during the stop: no false mark in 20 inspects" [ "$marked" = 0 -a "$fail" = 0 ]
	kill -KILL "$pid"
fi

# ---- 2000 idle threads ----
section "2000 idle threads"
if start -n 2000 "$scripts/park.lua"; then
	rc=0; "$inspect" -p "$pid" >"$tmp/out" 2>"$tmp/err" || rc=$?
	ms=$(sed -n 's/.*(live; stopped for \([0-9.]*\) ms).*/\1/p' "$tmp/out")
	echo "2001 threads: luacore-inspect -p stopped the process ${ms:-?} ms, $(grep -c '^Thread ' "$tmp/out") threads shown"
	check "2001 threads: exit 0 (got $rc), every thread shown" [ "$rc" = 0 -a "$(grep -c '^Thread ' "$tmp/out")" = 2002 ]
	check "2001 threads: the stop is printed and under 3 s" under "$ms" 3000
	check "2001 threads: the Lua frames equal the truth" \
		diff <(truth_frames) <(lua_frames "$tmp/out" "$(truth_tid)")
	check "2001 threads: target running" running "$pid"
	kill -KILL "$pid"
fi
if start -n 2000 "$scripts/spin.lua"; then
	rc=0; "$sample" -p "$pid" -r 100 -d 3 -o "$tmp/idle.folded" >"$tmp/out" 2>"$tmp/err" || rc=$?
	cat "$tmp/err"
	taken=$(sed -n 's/.*samples: [0-9]* attempted, \([0-9]*\) taken.*/\1/p' "$tmp/err")
	echo "2000 idle threads and one Lua thread: ${taken:-?} samples in 3 s at -r 100: $(awk -v n="${taken:-0}" 'BEGIN { printf "%.1f", n / 3 }') Hz"
	check "2000 idle threads: luacore-sample exit 0 (got $rc), Lua frames" \
		spin_profile "$rc" "$tmp/idle.folded"
	# The rate a loaded machine allows is bench/hostile.sh's to measure;
	# what is checked here is that the idle threads do not make a tick
	# cost the sampler more CPU than half the period (5 ms; its
	# start, ~0.2 s of CPU, counted in).
	att=$(sed -n 's/.*samples: \([0-9]*\) attempted.*/\1/p' "$tmp/err")
	cpu=$(sed -n 's/.*sampler CPU \([0-9.]*\) s.*/\1/p' "$tmp/err")
	per=$(awk -v c="${cpu:-0}" -v n="${att:-0}" 'BEGIN { if (n > 0) printf "%.2f", c * 1000 / n }')
	echo "2000 idle threads: sampler CPU ${cpu:-?} s for ${att:-?} ticks: ${per:-?} ms a tick"
	check "2000 idle threads: sampler CPU per tick under 5 ms (${per:-?} ms), 60 ticks at least (${att:-?})" \
		eval 'under "$per" 5 && [ "${att:-0}" -ge 60 ]'
	kill -KILL "$pid"
fi
section "done"
exit "$status"
