#!/usr/bin/env bash
# luacore-sample --at FUNCTION --count-only: the kernel's count of a
# function's calls (hardware breakpoints where they fire, else uprobes):
#  - launch mode: the program held before its main; the count of lchost's
#    l_now_s (a host C function) equals the script's own count
#    (fixtures/scenarios/at/calls.lua), on a shared-Lua and a static-Lua
#    build;
#  - -p: attached to a running lchost that waits, then calls it N times
#    (at/wait_calls.lua): the count equals its own;
#  - a function no module defines: a clear error, exit 2;
#  - as an unprivileged user on an own process: refused with the reason
#    (what is missing: CAP_SYS_ADMIN or perf_event_paranoid) when the
#    kernel refuses, or counted exactly when it allows;
#  - SIGKILL of the sampler while it counts: the program runs on with its
#    normal output, and nothing stays probed (its calls are no longer
#    counted by anything: no uprobe of its file is left in the kernel).
set -uo pipefail
top_srcdir=${top_srcdir:-.}
top_builddir=${top_builddir:-.}
out=$(cd "${LUACORE_MATRIX_DIR:-$top_builddir/fixtures/out}" && pwd)
sample=$(cd "$top_builddir/src" && pwd)/luacore-sample
scen=$(cd "$top_srcdir/fixtures/scenarios/at" && pwd)
export LC_TRUTH_LUA=$(cd "$top_srcdir/fixtures/lua" && pwd)/truth.lua
builds=${LC_AT_BUILDS:-"deb-5.4 src-5.4.7-O2"}
tmp=$(mktemp -d)
chmod 755 "$tmp"
trap 'rm -rf "$tmp"' EXIT
status=0
pass() { echo "PASS $*"; }
fail() { echo "FAIL $*"; status=1; }
count_of() { awk -v f="$2" '$2 == f { print $1; exit }' "$1"; }

for b in $builds; do
	host=$out/$b/lchost
	[ -x "$host" ] || { fail "$b: no $host (fixtures/build-lua.sh)"; continue; }

	"$sample" --at l_now_s --count-only -- "$host" "$scen/calls.lua" 20000 \
		>"$tmp/l.out" 2>"$tmp/l.err"
	rc=$?
	want=$(sed -n 's/^truth calls=//p' "$tmp/l.out")
	got=$(count_of "$tmp/l.out" l_now_s)
	if [ $rc = 0 ] && [ -n "$want" ] && [ "$got" = "$want" ]; then
		pass "$b launched: l_now_s counted $got times, the script counted $want; $(grep -o 'counted by [a-z ]*' "$tmp/l.err")"
	else
		fail "$b launched: counted ${got:-?}, the script ${want:-?} (exit $rc): $(tr '\n' ' ' <"$tmp/l.err")"
	fi

	rm -f "$tmp/go"
	"$host" "$scen/wait_calls.lua" "$tmp/go" 20000 >"$tmp/p.prog" 2>&1 &
	hp=$!
	sleep 0.3
	"$sample" --at l_now_s --count-only -p "$hp" >"$tmp/p.out" 2>"$tmp/p.err" &
	sp=$!
	sleep 1
	touch "$tmp/go"
	wait "$hp"
	wait "$sp"
	rc=$?
	want=$(sed -n 's/^truth calls=//p' "$tmp/p.prog")
	got=$(count_of "$tmp/p.out" l_now_s)
	if [ $rc = 0 ] && [ -n "$want" ] && [ "$got" = "$want" ]; then
		pass "$b -p: l_now_s counted $got times, the script counted $want"
	else
		fail "$b -p: counted ${got:-?}, the script ${want:-?} (exit $rc): $(tr '\n' ' ' <"$tmp/p.err")"
	fi
done

host=$out/deb-5.4/lchost
if [ -x "$host" ]; then
	"$sample" --at no_such_function_here --count-only -- "$host" "$scen/calls.lua" 10 \
		>"$tmp/n.out" 2>"$tmp/n.err"
	rc=$?
	if [ $rc = 2 ] && grep -q 'no module of process [0-9]* defines a function of that name' "$tmp/n.err"; then
		pass "an unknown function: exit 2, said"
	else
		fail "an unknown function: exit $rc: $(tr '\n' ' ' <"$tmp/n.err")"
	fi

	# an unprivileged user on its own process
	if command -v setpriv >/dev/null && [ "$(id -u)" = 0 ]; then
		setpriv --reuid=65534 --regid=65534 --clear-groups \
			env LC_TRUTH_LUA="$LC_TRUTH_LUA" "$sample" --at l_now_s --count-only -- \
			"$host" "$scen/calls.lua" 1000 >"$tmp/u.out" 2>"$tmp/u.err"
		rc=$?
		want=$(sed -n 's/^truth calls=//p' "$tmp/u.out")
		got=$(count_of "$tmp/u.out" l_now_s)
		if [ $rc = 2 ] && grep -q 'perf_event_paranoid is' "$tmp/u.err" &&
		   grep -q 'CAP_SYS_ADMIN' "$tmp/u.err"; then
			pass "unprivileged: refused, with what is missing: $(grep -o 'perf_event_open refused[^.]*' "$tmp/u.err" | head -1)"
		elif [ $rc = 0 ] && [ -n "$want" ] && [ "$got" = "$want" ]; then
			pass "unprivileged: the kernel allows it here: counted $got of $want"
		else
			fail "unprivileged: exit $rc: $(tr '\n' ' ' <"$tmp/u.err")"
		fi
	fi

	# SIGKILL of the sampler while it counts
	"$host" "$scen/calls.lua" 400000 >"$tmp/plain.out" 2>&1
	bad=0
	for i in 1 2 3; do
		"$sample" --at l_now_s --count-only -- "$host" "$scen/calls.lua" 400000 \
			>"$tmp/k.out" 2>/dev/null &
		sp=$!
		sleep "0.$((RANDOM % 9 + 1))"
		tp=$(pgrep -P "$sp" | head -1)
		kill -KILL "$sp"
		wait "$sp" 2>/dev/null
		for _ in $(seq 300); do
			[ -n "$tp" ] && [ -d "/proc/$tp" ] || break
			st=$(awk '/^State:/ { print $2 }' "/proc/$tp/status" 2>/dev/null)
			if [ "$st" = t ] || [ "$st" = T ]; then
				bad=$((bad + 1))
				echo "  kill $i: process $tp left stopped"
				kill -KILL "$tp"
				break
			fi
			sleep 0.05
		done
		grep -q '^truth calls=' "$tmp/k.out" || { bad=$((bad + 1)); echo "  kill $i: no normal output"; }
		if grep -q 'lchost' /sys/kernel/tracing/uprobe_events 2>/dev/null ||
		   grep -q 'lchost' /sys/kernel/debug/tracing/uprobe_events 2>/dev/null; then
			bad=$((bad + 1))
			echo "  kill $i: a uprobe on lchost is left"
		fi
	done
	if [ $bad = 0 ]; then
		pass "sampler SIGKILLed 3 times while counting: the program finished with its output, nothing left stopped or probed"
	else
		fail "sampler SIGKILLed while counting: $bad bad outcomes"
	fi
fi
exit $status
