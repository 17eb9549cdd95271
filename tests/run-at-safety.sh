#!/usr/bin/env bash
# luacore-sample --at, killed: the program it stops at calls must never
# pay for it.  On lchost running at/loop.lua (now_s called back to back,
# then 1 ms apart), attached with -p:
#  - the sampler's main process SIGKILLed at a random moment (one in four
#    within 0.8 s of its start: before its holder exists, or as it seizes
#    and probes; the others within 0.4 s of the holder's start, as it
#    serves stops), LC_AT_KILLS times for each
#    (default 12; the closing note of the issue has 1000): the program
#    never dies, is never left stopped (State t/T) nor traced
#    (TracerPid), no holder is left (the events close with the holder's
#    descriptors), the back-to-back loop's call rate comes back to its
#    unprobed rate (within a third), and at the end its output checks;
#  - the holder itself SIGKILLed (LC_AT_HOLDER_KILLS, default 6; on calls
#    LC_AT_HOLDER_GAP ms apart, default 0), 0.05-0.45 s after it starts: what
#    it cannot clean up after.  How often the program died of it is
#    printed; it is a measurement, not a failure (luacore-sample(1));
#  - the holder sent SIGTERM (3 times): it cleans up as when the sampler
#    dies; the program runs on, untraced, and the sampler reports the
#    counts the holder sent before it ended.
set -uo pipefail
top_srcdir=${top_srcdir:-.}
top_builddir=${top_builddir:-.}
out=$(cd "${LUACORE_MATRIX_DIR:-$top_builddir/fixtures/out}" && pwd)
sample=$(cd "$top_builddir/src" && pwd)/luacore-sample
scen=$(cd "$top_srcdir/fixtures/scenarios/at" && pwd)
export LC_TRUTH_LUA=$(cd "$top_srcdir/fixtures/lua" && pwd)/truth.lua
kills=${LC_AT_KILLS:-12}
hkills=${LC_AT_HOLDER_KILLS:-6}
host=$out/deb-5.4/lchost
tmp=$(mktemp -d)
lp=
trap '[ -n "$lp" ] && kill -KILL "$lp" 2>/dev/null; rm -rf "$tmp"' EXIT
status=0
pass() { echo "PASS $*"; }
fail() { echo "FAIL $*"; status=1; }
[ -x "$host" ] || { fail "no $host (fixtures/build-lua.sh)"; exit 1; }

# the program: started, its first rates read
start_loop() {	# gap: sets lp
	rm -f "$tmp/stop" "$tmp/rate"
	"$host" "$scen/loop.lua" "$1" "$tmp/stop" "$tmp/rate" >"$tmp/loop.out" 2>&1 &
	lp=$!
	for _ in $(seq 100); do [ -s "$tmp/rate" ] && break; sleep 0.05; done
	sleep 0.3
}
rate() { cat "$tmp/rate" 2>/dev/null || echo 0; }
# no holder of ours left (one whose command line, the sampler's, names
# our program): wait for it to end (it detaches first)
holders() {
	local n=0 h
	for h in $(pgrep -x luacore-holder); do
		tr '\0' ' ' 2>/dev/null <"/proc/$h/cmdline" | grep -q -- "-p $lp " && n=$((n + 1))
	done
	echo $n
}
wait_holders() {
	for _ in $(seq 100); do [ "$(holders)" = 0 ] && return 0; sleep 0.05; done
	return 1
}
proc_state() { awk '/^State:/ { s = $2 } /^TracerPid:/ { t = $2 } END { print s, t }' "/proc/$1/status" 2>/dev/null; }

for gap in ${LC_AT_GAPS-0 1}; do
	start_loop "$gap"
	base=$(rate)
	bad=0
	slow=0
	for i in $(seq "$kills"); do
		"$sample" --at l_now_s -o /dev/null -p "$lp" >/dev/null 2>&1 &
		sp=$!
		# one kill in four at any moment of the first 0.8 s (the
		# holder seizing and probing, or not yet there); the others
		# within 0.4 s of the holder's start, as it serves stops
		if [ $((i % 4)) != 0 ]; then
			for _ in $(seq 200); do
				pgrep -x -P "$sp" luacore-holder >/dev/null && break
				sleep 0.01
			done
			sleep "$(awk -v r="$RANDOM" 'BEGIN { printf "%.3f", r / 32768 * 0.4 }')"
		else
			sleep "$(awk -v r="$RANDOM" 'BEGIN { printf "%.3f", r / 32768 * 0.8 }')"
		fi
		kill -KILL "$sp" 2>/dev/null
		wait "$sp" 2>/dev/null
		if ! wait_holders; then
			echo "  gap $gap, kill $i: a holder is still there after 5 s"
			bad=$((bad + 1))
			for h in $(pgrep -x luacore-holder); do
				tr '\0' ' ' 2>/dev/null <"/proc/$h/cmdline" | grep -q -- "-p $lp " && kill -KILL "$h"
			done
		fi
		if ! kill -0 "$lp" 2>/dev/null; then
			echo "  gap $gap, kill $i: the program died: $(tail -2 "$tmp/loop.out" | tr '\n' ' ')"
			bad=$((bad + 1))
			start_loop "$gap"
			continue
		fi
		read -r st tr <<<"$(proc_state "$lp")"
		if [ "$st" = t ] || [ "$st" = T ] || [ "$tr" != 0 ]; then
			echo "  gap $gap, kill $i: State $st, TracerPid $tr"
			bad=$((bad + 1))
		fi
		if [ "$gap" = 0 ]; then
			ok=0
			for _ in $(seq 40); do
				sleep 0.05
				awk -v r="$(rate)" -v b="$base" 'BEGIN { exit !(r >= b / 3) }' && { ok=1; break; }
			done
			[ $ok = 1 ] || { slow=$((slow + 1)); echo "  gap $gap, kill $i: calls at $(rate)/s after 2 s, $base/s unprobed"; }
		fi
	done
	touch "$tmp/stop"
	wait "$lp"
	rc=$?
	if [ $bad = 0 ] && [ $slow = 0 ] && [ $rc = 0 ] && grep -q '^truth calls=[0-9]* sum=[0-9.]* ok$' "$tmp/loop.out"; then
		pass "gap $gap ms: the sampler SIGKILLed $kills times at random: the program ran on, never stopped, traced or left probed${base:+ (its calls $base/s unprobed, $(rate)/s at the end)}; its output checks: $(cat "$tmp/loop.out")"
	else
		fail "gap $gap ms: $bad bad outcomes, $slow slow to recover in $kills kills; exit $rc: $(tail -2 "$tmp/loop.out" | tr '\n' ' ')"
	fi
done

# holder_of PID TRIES DELAY: the pid of luacore-sample PID's holder, asked
# for TRIES times DELAY s apart; empty if none showed
holder_of() {
	local h=
	for _ in $(seq "$2"); do
		h=$(pgrep -x -P "$1" luacore-holder | head -1)
		[ -n "$h" ] && break
		sleep "$3"
	done
	echo "$h"
}

# the holder SIGKILLed: measured
died=0
done_n=0
hgap=${LC_AT_HOLDER_GAP:-0}
[ "$hkills" -gt 0 ] && start_loop "$hgap"
for i in $(seq "$hkills"); do
	"$sample" --at l_now_s -o /dev/null -p "$lp" >/dev/null 2>&1 &
	sp=$!
	hp=$(holder_of "$sp" 100 0.02)
	sleep "$(awk -v r="$RANDOM" 'BEGIN { printf "%.3f", 0.05 + r / 32768 * 0.4 }')"
	[ -n "$hp" ] && kill -KILL "$hp" 2>/dev/null
	wait "$sp" 2>/dev/null
	wait_holders
	done_n=$((done_n + 1))
	sleep 0.2
	if ! kill -0 "$lp" 2>/dev/null; then
		died=$((died + 1))
		wait "$lp" 2>/dev/null
		start_loop "$hgap"
	fi
done
touch "$tmp/stop"
[ -n "$lp" ] && wait "$lp"
# the holder sent SIGTERM: cleaned up, counts reported
start_loop 0
bad=0
for i in 1 2 3; do
	"$sample" --at l_now_s -o /dev/null -p "$lp" >"$tmp/t.out" 2>"$tmp/t.err" &
	sp=$!
	hp=$(holder_of "$sp" 200 0.01)
	sleep 0.3
	[ -n "$hp" ] && kill -TERM "$hp"
	wait "$sp"
	rc=$?
	read -r st tr <<<"$(proc_state "$lp")"
	if [ -z "$hp" ] || [ $rc != 0 ] || ! kill -0 "$lp" 2>/dev/null || [ "$st" = t ] ||
	   [ "$st" = T ] || [ "$tr" != 0 ] || ! grep -q 'l_now_s' "$tmp/t.out"; then
		bad=$((bad + 1))
		echo "  SIGTERM $i: holder ${hp:-none}, exit $rc, State $st, TracerPid $tr: $(tr '\n' ' ' <"$tmp/t.err")"
	fi
done
touch "$tmp/stop"
wait "$lp"
if [ $bad = 0 ] && grep -q ' ok$' "$tmp/loop.out"; then
	pass "the holder sent SIGTERM 3 times: it cleaned up, the program ran on untraced, the counts were reported"
else
	fail "the holder sent SIGTERM: $bad bad outcomes"
fi

echo "MEASURED holder SIGKILLed $done_n times on calls $hgap ms apart: the program died $died times"
pass "the holder SIGKILLed $done_n times: the program died $died times ($(awk -v d="$died" -v n="$done_n" 'BEGIN { printf "%.0f%%", n ? 100 * d / n : 0 }'))"
exit $status
