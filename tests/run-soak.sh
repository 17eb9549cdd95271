#!/usr/bin/env bash
# Target safety soak, live: one program after another (soak.lua, a fixed
# amount of work whose output does not depend on timing, starting and
# ending a thread with its own VM every round) is sampled and inspected
# over and over while it runs, for $LC_SOAK_SECONDS (default 60):
# luacore-sample runs of random length, rate and mode, some killed with
# SIGKILL or SIGINT at random moments, luacore-inspect -p in between; the
# program ends while being sampled.  After every action the program must
# be running, not stopped and not traced; at the end its output must be
# the unsampled run's, and its exit status 0 (a stray signal would have
# killed or stopped it).  Prints the counts.
set -uo pipefail
top_srcdir=${top_srcdir:-.}
top_builddir=${top_builddir:-.}
out=${LUACORE_MATRIX_DIR:-$top_builddir/fixtures/out}
sample=$top_builddir/src/luacore-sample
inspect=$top_builddir/src/luacore-inspect
scen=$(cd "$top_srcdir/fixtures/scenarios/sample" && pwd)
host=$out/${LC_SOAK_BUILD:-deb-5.4}/lchost
export LC_TRUTH_LUA=$(cd "$top_srcdir/fixtures/lua" && pwd)/truth.lua
export LC_SOAK_ROUNDS=${LC_SOAK_ROUNDS:-150}
budget=${LC_SOAK_SECONDS:-60}
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
fail=0

"$host" "$scen/soak.lua" >"$tmp/ref" 2>&1 || { echo "FAIL: the unsampled run failed"; exit 1; }

# The program is alive, running or sleeping, and nobody traces it.
healthy() {
	local st tr
	st=$(awk '/^State:/ { print $2 }' "/proc/$1/status" 2>/dev/null) || return 0
	tr=$(awk '/^TracerPid:/ { print $2 }' "/proc/$1/status" 2>/dev/null)
	[ -z "$st" ] && return 0	# it has just ended
	case $st in
	t|T) return 1 ;;
	esac
	# A tracer may be on its way out for a moment after a kill.
	[ "${tr:-0}" = 0 ] || { sleep 0.2; tr=$(awk '/^TracerPid:/ { print $2 }' "/proc/$1/status" 2>/dev/null); [ "${tr:-0}" = 0 ]; }
}

programs=0 runs=0 kills=0 ints=0 inspects=0 samples=0 bad=0
start=$SECONDS
while [ $((SECONDS - start)) -lt "$budget" ]; do
	"$host" "$scen/soak.lua" >"$tmp/out" 2>&1 &
	prog=$!
	programs=$((programs + 1))
	sleep 0.0$((RANDOM % 9 + 1))
	while kill -0 "$prog" 2>/dev/null && [ "$(awk '{ print $3 }' "/proc/$prog/stat" 2>/dev/null)" != Z ]; do
		r=$((RANDOM % 6))
		rate=$(( (RANDOM % 3 == 0) ? 1000 : (RANDOM % 2 ? 500 : 100) ))
		wall=
		[ $((RANDOM % 3)) = 0 ] && wall=--wall
		case $r in
		0|1|2)	# a whole run, which may outlive the program
			"$sample" -q $wall -r "$rate" -d "0.$((RANDOM % 5 + 1))" -p "$prog" \
				-o "$tmp/p.pb.gz" 2>"$tmp/err"
			rc=$?
			runs=$((runs + 1))
			n=$(sed -n 's/.* attempted, \([0-9]*\) taken.*/\1/p' "$tmp/err")
			samples=$((samples + ${n:-0}))
			if [ "$rc" -gt 1 ] && kill -0 "$prog" 2>/dev/null &&
				! grep -q "no such process\|gone\|ended" "$tmp/err"; then
				echo "FAIL luacore-sample exit $rc: $(tail -2 "$tmp/err")"; bad=$((bad + 1))
			fi ;;
		3|4)	# killed at a random moment
			sig=KILL
			[ "$r" = 4 ] && sig=INT
			"$sample" -q $wall -r "$rate" -p "$prog" -o "$tmp/k.pb.gz" 2>/dev/null &
			s=$!
			sleep 0.$((RANDOM % 3))$((RANDOM % 10))
			kill -$sig "$s" 2>/dev/null
			wait "$s" 2>/dev/null
			if [ "$sig" = KILL ]; then kills=$((kills + 1)); else ints=$((ints + 1)); fi ;;
		5)
			"$inspect" -p "$prog" >/dev/null 2>&1
			inspects=$((inspects + 1)) ;;
		esac
		if ! healthy "$prog"; then
			echo "FAIL: program $prog left $(grep -E '^(State|TracerPid)' "/proc/$prog/status" | tr '\n' ' ') after action $r"
			bad=$((bad + 1))
			kill -CONT "$prog" 2>/dev/null
		fi
	done
	rc=0
	wait "$prog" || rc=$?
	if [ "$rc" != 0 ] || ! cmp -s "$tmp/ref" "$tmp/out"; then
		echo "FAIL: program $programs: exit $rc, output $(cmp -s "$tmp/ref" "$tmp/out" && echo same || echo DIFFERENT)"
		diff "$tmp/ref" "$tmp/out" | head -5 | sed 's/^/    /'
		bad=$((bad + 1))
	fi
done
echo "soak: $((SECONDS - start)) s, $programs programs, $runs sampler runs ($samples samples), $kills SIGKILLs and $ints SIGINTs of the sampler, $inspects luacore-inspect -p; $bad problems"
[ "$bad" = 0 ] && [ "$programs" -gt 0 ]
