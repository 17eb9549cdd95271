#!/usr/bin/env bash
# luacore-sample --at FUNCTION: the stacks that call a function, and
# with --count-only the kernel's count of its calls (hardware breakpoints
# where they fire, else uprobes).
#
# Stacks (a holder process stops the threads at the calls):
#  - launched, a stop at every call (--at-period 1) of l_now_s, called
#    from three Lua functions 60/30/10 (at/calls.lua): the shares within
#    2 points at >= 2000 stops, the count equal to the script's, and each
#    site's stack the script's own (debug.getinfo there) with now_s [C]
#    innermost and the host's main and run_script under the Lua frames;
#    pprof's sample types calls and stops;
#  - -p, a stop every 7 calls on average (random gaps): the shares again;
#  - (SIGKILLs of the sampler and of its holder: tests/run-at-safety.sh)
#  - under a seccomp filter that denies perf_event_open
#    (tests/at/seccomp-deny): -p refused, naming the filter; launched,
#    the shim interposes lua_pushnumber's PLT slots instead: its count
#    equals the kernel's (uprobes, no filter), the shares of the three
#    sites within 2 points at >= 2000 stops; a function called through no
#    PLT slot (l_now_s): refused, saying why;
#  - as root without CAP_SYS_ADMIN: hardware breakpoints where they fire,
#    else uprobes refused with the reason; five functions on hardware
#    breakpoints (--at-mechanism hardware): the "4 a thread" error.
#
# Counts:
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
trap 'rm -rf "$tmp" /tmp/luacore-at-u.$$.folded' EXIT
status=0
pass() { echo "PASS $*"; }
fail() { echo "FAIL $*"; status=1; }
count_of() { awk -v f="$2" '$2 == f { print $1; exit }' "$1"; }
# attached N OUT ARGS...: lchost running at/wait_calls.lua N, the sampler
# attached with ARGS while it waits (OUT.out, OUT.err, the program's
# output in OUT.prog); rc the sampler's exit status
attached() {
	local n=$1 o=$2 hp sp
	shift 2
	rm -f "$tmp/go"
	"$host" "$scen/wait_calls.lua" "$tmp/go" "$n" >"$o.prog" 2>&1 &
	hp=$!
	sleep 0.3
	"$sample" "$@" -p "$hp" >"$o.out" 2>"$o.err" &
	sp=$!
	sleep 1
	touch "$tmp/go"
	wait "$hp"
	wait "$sp"
	rc=$?
}

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

	attached 20000 "$tmp/p" --at l_now_s --count-only
	want=$(sed -n 's/^truth calls=//p' "$tmp/p.prog")
	got=$(count_of "$tmp/p.out" l_now_s)
	if [ $rc = 0 ] && [ -n "$want" ] && [ "$got" = "$want" ]; then
		pass "$b -p: l_now_s counted $got times, the script counted $want"
	else
		fail "$b -p: counted ${got:-?}, the script ${want:-?} (exit $rc): $(tr '\n' ' ' <"$tmp/p.err")"
	fi
done

# the stacks at calls
folded_sum() { awk -v k="$2" 'index($0, k) { s += $NF } END { print s + 0 }' "$1"; }
# a site's folded stack as the script writes it: "name:line;..." of the
# Lua frames (those in the scenario's files)
lua_part() {
	awk -v k="$2" 'index($0, k " (") {
		sub(/ [0-9]+$/, ""); n = split($0, f, ";"); out = ""
		for (i = 1; i <= n; i++)
			if (f[i] ~ /\/at\/[a-z_]*\.lua:[0-9]+\)$/) {
				name = f[i]; sub(/ \(.*$/, "", name)
				line = f[i]; sub(/^.*:/, "", line); sub(/\)$/, "", line)
				out = out (out == "" ? "" : ";") name ":" line
			}
		print out; exit }' "$1"
}
shares_ok() {	# folded file, label: "ok" and the message
	local f=$1 a b c t msg="" ok=1
	a=$(folded_sum "$f" "site_a (")
	b=$(folded_sum "$f" "site_b (")
	c=$(folded_sum "$f" "site_c (")
	t=$((a + b + c))
	[ "$t" -gt 0 ] || { echo "bad no stops"; return; }
	for s in "a $a 60" "b $b 30" "c $c 10"; do
		set -- $s
		msg="$msg site_$1 $(awk -v x="$2" -v t="$t" 'BEGIN { printf "%.1f%%", 100 * x / t }') (truth $3%)"
		awk -v x="$2" -v t="$t" -v w="$3" 'BEGIN { d = 100 * x / t - w; exit !(d <= 2 && d >= -2) }' || ok=0
	done
	[ $ok = 1 ] && echo "ok$msg" || echo "bad$msg"
}

host=$out/deb-5.4/lchost
if [ -x "$host" ]; then
	"$sample" --at l_now_s --at-period 1 -o "$tmp/s.folded" -- "$host" "$scen/calls.lua" 300 \
		>"$tmp/s.out" 2>"$tmp/s.err"
	rc=$?
	want=$(sed -n 's/^truth calls=//p' "$tmp/s.out")
	got=$(count_of "$tmp/s.out" l_now_s)
	stops=$(sed -n 's/.*; \([0-9]*\) stops.*/\1/p' "$tmp/s.err" | head -1)
	sh=$(shares_ok "$tmp/s.folded")
	if [ $rc = 0 ] && [ -n "$want" ] && [ "$got" = "$want" ] && [ "${stops:-0}" -ge 2000 ] &&
	   [ "${sh%%[ ]*}" = ok ]; then
		pass "launched, a stop a call: $stops stops,${sh#ok}; counted $got, the script $want"
	else
		fail "launched, a stop a call: exit $rc, ${stops:-?} stops,${sh#??}; counted ${got:-?}, the script ${want:-?}: $(tail -3 "$tmp/s.err" | tr '\n' ' ')"
	fi
	for site in site_a site_b site_c; do
		truth=$(sed -n "s/^truth stack $site=//p" "$tmp/s.out")
		line=$(grep -m1 "$site (" "$tmp/s.folded")
		got=$(lua_part "$tmp/s.folded" "$site")
		if [ -n "$truth" ] && [ "$got" = "$truth" ] &&
		   [[ $line == *";main;run_script;main chunk ("*";now_s [C] "* ]]; then
			pass "the stack at $site: $got, as the script saw it, now_s [C] innermost, main;run_script under it"
		else
			fail "the stack at $site: '${got:-none}' against the script's '${truth:-?}': $line"
		fi
	done
	"$sample" --at l_now_s --at-period 1 -o "$tmp/s.pb.gz" -- "$host" "$scen/calls.lua" 100 \
		>/dev/null 2>"$tmp/s.err"
	c=$(go tool pprof -sample_index=calls -raw "$tmp/s.pb.gz" 2>/dev/null | grep -c 'calls/count')
	d=$(go tool pprof -top "$tmp/s.pb.gz" 2>/dev/null | grep -c '^Type: calls')
	e=$(go tool pprof -sample_index=stops -top "$tmp/s.pb.gz" 2>/dev/null | grep -c '^Type: stops')
	if [ "$c" -ge 1 ] && [ "$d" = 1 ] && [ "$e" = 1 ]; then
		pass "pprof: sample types calls (the default) and stops"
	else
		fail "pprof: sample types: calls $c, default $d, stops $e"
	fi

	# -p, a stop every 7 calls on average
	attached 3000 "$tmp/p" --at l_now_s --at-period 7 -o "$tmp/p.folded"
	want=$(sed -n 's/^truth calls=//p' "$tmp/p.prog")
	got=$(count_of "$tmp/p.out" l_now_s)
	stops=$(sed -n 's/.*; \([0-9]*\) stops.*/\1/p' "$tmp/p.err" | head -1)
	sh=$(shares_ok "$tmp/p.folded")
	est=$(awk '{ s += $NF } END { print s + 0 }' "$tmp/p.folded")
	if [ $rc = 0 ] && [ "$got" = "$want" ] && [ "${stops:-0}" -ge 2000 ] && [ "${sh%%[ ]*}" = ok ] &&
	   awk -v e="$est" -v w="$want" 'BEGIN { exit !(e >= 0.9 * w && e <= 1.1 * w) }'; then
		pass "-p, a stop every 7 calls: $stops stops,${sh#ok}; $est calls estimated, $got counted, the script $want"
	else
		fail "-p, a stop every 7 calls: exit $rc, ${stops:-?} stops,${sh#??}; $est estimated, ${got:-?} counted, the script ${want:-?}: $(tail -3 "$tmp/p.err" | tr '\n' ' ')"
	fi

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

	# stacks as an unprivileged user on its own process
	if command -v setpriv >/dev/null && [ "$(id -u)" = 0 ]; then
		setpriv --reuid=65534 --regid=65534 --clear-groups \
			env LC_TRUTH_LUA="$LC_TRUTH_LUA" "$sample" --at l_now_s -o /tmp/luacore-at-u.$$.folded -- \
			"$host" "$scen/calls.lua" 1000 >"$tmp/u.out" 2>"$tmp/u.err"
		rc=$?
		want=$(sed -n 's/^truth calls=//p' "$tmp/u.out")
		got=$(count_of "$tmp/u.out" l_now_s)
		if [ $rc = 2 ] && grep -q 'perf_event_paranoid is' "$tmp/u.err" &&
		   grep -q 'CAP_SYS_ADMIN' "$tmp/u.err" && [ ! -s /tmp/luacore-at-u.$$.folded ]; then
			pass "unprivileged, stacks: refused, with what is missing, nothing run"
		elif [ $rc = 0 ] && [ -n "$want" ] && [ "$got" = "$want" ]; then
			pass "unprivileged, stacks: the kernel allows it here: counted $got of $want"
		else
			fail "unprivileged, stacks: exit $rc: $(tr '\n' ' ' <"$tmp/u.err")"
		fi
	fi

	# root without CAP_SYS_ADMIN: hardware breakpoints where they fire,
	# else uprobes refused with the reason
	if command -v setpriv >/dev/null && [ "$(id -u)" = 0 ]; then
		setpriv --bounding-set=-sys_admin --inh-caps=-sys_admin \
			"$sample" --at l_now_s -o "$tmp/r.folded" -- \
			"$host" "$scen/calls.lua" 1000 >"$tmp/r.out" 2>"$tmp/r.err"
		rc=$?
		want=$(sed -n 's/^truth calls=//p' "$tmp/r.out")
		got=$(count_of "$tmp/r.out" l_now_s)
		if [ $rc = 0 ] && grep -q 'counted by hardware breakpoints' "$tmp/r.err" &&
		   [ "$got" = "$want" ]; then
			pass "root without CAP_SYS_ADMIN: hardware breakpoints, $got calls of $want"
		elif [ $rc = 2 ] && grep -q 'do not fire' "$tmp/r.err" &&
		     grep -q 'Uprobes need CAP_SYS_ADMIN, which this process lacks' "$tmp/r.err"; then
			pass "root without CAP_SYS_ADMIN: hardware breakpoints do not fire on this machine, uprobes refused with the reason: $(grep -o 'perf_event_open refused[^)]*)' "$tmp/r.err")"
		else
			fail "root without CAP_SYS_ADMIN: exit $rc: $(tr '\n' ' ' <"$tmp/r.err")"
		fi
	fi

	# under a seccomp filter that denies perf_event_open
	deny=$top_builddir/tests/at/seccomp-deny
	if [ ! -x "$deny" ]; then
		fail "no $deny (make check builds it)"
	else
		rm -f "$tmp/go"
		"$host" "$scen/wait_calls.lua" "$tmp/go" 100 >/dev/null 2>&1 &
		hp=$!
		sleep 0.3
		"$deny" "$sample" --at l_now_s -o "$tmp/c.folded" -p "$hp" >"$tmp/c.out" 2>"$tmp/c.err"
		rc=$?
		touch "$tmp/go"
		wait "$hp"
		if [ $rc = 2 ] && grep -q 'runs under a seccomp filter' "$tmp/c.err"; then
			pass "seccomp, -p: refused, naming the filter"
		else
			fail "seccomp, -p: exit $rc: $(tr '\n' ' ' <"$tmp/c.err")"
		fi
		"$sample" --at lua_pushnumber --count-only -- "$host" "$scen/calls.lua" 300 \
			>"$tmp/k.out" 2>/dev/null
		kern=$(count_of "$tmp/k.out" lua_pushnumber)
		"$deny" "$sample" --at lua_pushnumber --at-period 1 -o "$tmp/c.folded" -- \
			"$host" "$scen/calls.lua" 300 >"$tmp/c.out" 2>"$tmp/c.err"
		rc=$?
		got=$(count_of "$tmp/c.out" lua_pushnumber)
		stops=$(sed -n 's/.*; \([0-9]*\) stops.*/\1/p' "$tmp/c.err" | head -1)
		sh=$(shares_ok "$tmp/c.folded")
		if [ $rc = 0 ] && grep -q 'stopping through the allocation shim' "$tmp/c.err" &&
		   [ -n "$kern" ] && [ "$got" = "$kern" ] && [ "${stops:-0}" -ge 2000 ] &&
		   [ "${sh%%[ ]*}" = ok ]; then
			pass "seccomp, launched: through the shim, lua_pushnumber counted $got times (the kernel: $kern), $stops stops,${sh#ok}"
		else
			fail "seccomp, launched: exit $rc, counted ${got:-?} (the kernel: ${kern:-?}), ${stops:-?} stops,${sh#??}: $(tr '\n' ' ' <"$tmp/c.err")"
		fi
		"$deny" "$sample" --at l_now_s -o "$tmp/c.folded" -- \
			"$host" "$scen/calls.lua" 300 >"$tmp/c.out" 2>"$tmp/c.err"
		rc=$?
		if [ $rc = 2 ] && grep -q 'no module loaded at start calls these functions through a PLT slot' "$tmp/c.err" &&
		   ! grep -q '^truth' "$tmp/c.out"; then
			pass "seccomp, launched, a host's own function: refused, saying why"
		else
			fail "seccomp, launched, a host's own function: exit $rc: $(tr '\n' ' ' <"$tmp/c.err")"
		fi
	fi

	# five functions on hardware breakpoints
	"$sample" --at l_now_s,l_sleep_ms,lua_gettop,lua_settop,lua_pushnumber \
		--at-mechanism hardware -o "$tmp/h.folded" -- "$host" "$scen/calls.lua" 10 \
		>"$tmp/h.out" 2>"$tmp/h.err"
	rc=$?
	if [ $rc = 2 ] && grep -q 'hardware breakpoints: a thread has 4, and 5 functions were asked for' "$tmp/h.err" &&
	   ! grep -q '^truth' "$tmp/h.out"; then
		pass "five functions on hardware breakpoints: $(cat "$tmp/h.err")"
	else
		fail "five functions on hardware breakpoints: exit $rc: $(tr '\n' ' ' <"$tmp/h.err")"
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
