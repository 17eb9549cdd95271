#!/usr/bin/env bash
# luacore-sample --alloc: allocation profiles of programs it starts, through
# the preloaded shim (shim/libluacore-alloc.so), on Debian's shared Lua
# libraries (the deb-* builds' lchost links liblua5.x.so):
#  - shares: fixtures/scenarios/alloc/sites.lua allocates 60/30/10 from three
#    sites plus a rare 256 KiB site (1% of the bytes): each share within 2
#    points at >= 2,000 samples, the rare site within 25% of its bytes;
#    the threads copied themselves at some parks (uncapped, some 7,000 a
#    second: more than the sampler reads at times, and then a park
#    waits), and <= 1% of the parks were lost;
#  - coroutines: fixtures/scenarios/alloc/coro_sites.lua runs the sites
#    in three coroutines resumed in turn and a fourth made each round
#    (6/11, 3/11, 1/11, 1/11 of the bytes): each share within 2 points,
#    <= 1% of the parks lost;
#  - the cap on parks a second: the mean raised, the bytes estimated within
#    25% of the uncapped run's (from some 150 samples); the threads copied
#    themselves at >= 75% of the parks (no wait; the first few parks of a
#    thread wait, of some 80 to 220 here), <= 3% lost (a thread's copies
#    sent before it learnt that its stack grew are lost);
#  - lines: fixtures/scenarios/alloc/lines.lua allocates from a table
#    constructor after a loop: its own line has >= 95% of the bytes;
#  - totals: shim/test-alloc-known.lua allocates with the collector stopped
#    and prints Lua's own count of it: alloc_space within 10% of it;
#  - pprof: go tool pprof reads every sample type with -sample_index and
#    no other flag;
#  - in-use: fixtures/scenarios/alloc/inuse.lua: the site that keeps one
#    table in ten has inuse_space within 10% of what it retains (Lua's
#    count), the site that keeps none at most 5% of what it allocated;
#  - no leak to children: a child of the script sees neither the shim's
#    variables nor its sockets;
#  - refusal: a host with Lua linked in (src-5.4.7-O2) is refused with a
#    pointer to the heap census, exit status 2;
#  - SIGKILL of the sampler at random moments (LC_ALLOC_KILLS a build,
#    default 3): the program finishes with the output of an unsampled
#    run, and is never left stopped or traced.
# go (golang-go) is required: without it the test says so (exit 99).
set -uo pipefail
top_srcdir=${top_srcdir:-.}
top_builddir=${top_builddir:-.}
out=$(cd "${LUACORE_MATRIX_DIR:-$top_builddir/fixtures/out}" && pwd)
sample=$(cd "$top_builddir/src" && pwd)/luacore-sample
scen=$(cd "$top_srcdir/fixtures/scenarios/alloc" && pwd)
shim=$(cd "$top_srcdir/shim" && pwd)
export LC_TRUTH_LUA=$(cd "$top_srcdir/fixtures/lua" && pwd)/truth.lua
builds=${LC_ALLOC_BUILDS:-"deb-5.4 deb-5.3"}
kills=${LC_ALLOC_KILLS:-3}	# SIGKILLs of the sampler per build
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
status=0
pass() { echo "PASS $*"; }
fail() { echo "FAIL $*"; status=1; }

command -v go >/dev/null 2>&1 || {
	echo "ERROR: go not found; install golang-go: go tool pprof reads the allocation profiles" >&2
	exit 99
}
[ -x "$top_builddir/shim/.libs/libluacore-alloc.so" ] || {
	echo "ERROR: shim/.libs/libluacore-alloc.so not built (make builds it)" >&2
	exit 99
}

# folded_sum FILE PATTERN: the bytes of the stacks that match
folded_sum() { awk -v p="$2" 'index($0, p) { s += $NF } END { printf "%.0f\n", s }' "$1"; }
# within A B PCT: |A/B - 1| <= PCT %
within() { awk -v a="$1" -v b="$2" -v p="$3" 'BEGIN { exit !(b > 0 && (a / b - 1) ^ 2 <= (p / 100) ^ 2) }'; }
# points A B: |A - B| in percentage points of shares given as fractions
points() { awk -v a="$1" -v b="$2" 'BEGIN { d = (a - b) * 100; print (d < 0 ? -d : d) }'; }
# copies ERR: "PARKS parks, COPIED copied, LOST lost" from the report
copies() {
	awk '/ allocations sampled / { for (i = 1; i <= NF; i++) if ($i == "allocations") p = $(i - 1) }
	     / parks were copied by their thread/ {
		c = $2; for (i = 1; i <= NF; i++) if ($i == "of" && $(i + 1) == "them") l = $(i - 1)
		sub(/^\(?/, "", l) }
	     END { printf "%s parks, %s copied, %s lost\n", p, c, l }' "$1"
}
# copies_ok "P parks, C copied, L lost" PCT [LOSTPCT]: C >= PCT% of P,
# L <= LOSTPCT% of P (default 1)
copies_ok() {
	echo "$1" | awk -v pct="$2" -v lp="${3:-1}" '{ exit !($1 > 0 && $3 >= pct / 100 * $1 && $5 <= lp / 100 * $1) }'
}

for b in $builds; do
	host=$out/$b/lchost
	if [ ! -x "$host" ]; then
		fail "$b: no $host (fixtures/build-lua.sh)"
		continue
	fi
	case $(ldd "$host") in
	*liblua*) ;;
	*) fail "$b: $host does not load a shared liblua"; continue ;;
	esac

	# shares
	"$sample" --alloc --alloc-mean 65536 --alloc-max-parks 0 -o "$tmp/s.folded" -- \
		"$host" "$scen/sites.lua" 1700 >"$tmp/s.out" 2>"$tmp/s.err"
	rc=$?
	n=$(sed -n 's/.* \([0-9]*\) allocations sampled.*/\1/p' "$tmp/s.err")
	truth=$(grep '^truth ' "$tmp/s.out")
	if [ $rc != 0 ] || [ -z "$truth" ] || [ -z "$n" ]; then
		fail "$b shares: exit $rc: $(tail -3 "$tmp/s.err" | tr '\n' ' ')"
	else
		ca=$(echo "$truth" | sed 's/.* a=\([0-9]*\).*/\1/')
		cb=$(echo "$truth" | sed 's/.* b=\([0-9]*\).*/\1/')
		cc=$(echo "$truth" | sed 's/.* c=\([0-9]*\).*/\1/')
		cd=$(echo "$truth" | sed 's/.* d=\([0-9]*\).*/\1/')
		by=$(echo "$truth" | sed 's/.* bytes=\([0-9]*\).*/\1/')
		rare=$(echo "$truth" | sed 's/.* rare=\([0-9]*\).*/\1/')
		sa=$(folded_sum "$tmp/s.folded" site_a)
		sb=$(folded_sum "$tmp/s.folded" site_b)
		sc=$(folded_sum "$tmp/s.folded" site_c)
		sd=$(folded_sum "$tmp/s.folded" site_d)
		tot=$((sa + sb + sc + sd))
		# the truth: the same two allocations a call (rep's buffer and
		# its string), each of the call's size
		tt=$(awk -v a="$ca" -v b="$cb" -v c="$cc" -v d="$cd" -v y="$by" -v r="$rare" \
			'BEGIN { print (a + b + c) * y + d * r }')
		ok=1
		msg=
		for s in "a $sa $ca" "b $sb $cb" "c $sc $cc"; do
			set -- $s
			est=$(awk -v x="$2" -v t="$tot" 'BEGIN { print x / t }')
			tru=$(awk -v k="$3" -v y="$by" -v t="$tt" 'BEGIN { print k * y / t }')
			pt=$(points "$est" "$tru")
			msg="$msg site_$1 $(awk -v e="$est" -v t="$tru" 'BEGIN { printf "%.1f%% (truth %.1f%%)", 100 * e, 100 * t }')"
			awk -v p="$pt" 'BEGIN { exit !(p <= 2) }' || ok=0
		done
		dtrue=$(awk -v d="$cd" -v r="$rare" -v t="$tt" -v tot="$tot" 'BEGIN { print d * r / t * tot }')
		msg="$msg; rare site $sd bytes (truth $(printf '%.0f' "$dtrue"))"
		within "$sd" "$dtrue" 25 || ok=0
		[ "$n" -ge 2000 ] || ok=0
		copies=$(copies "$tmp/s.err")
		msg="$msg; $copies"
		copies_ok "$copies" 1 || ok=0
		if [ $ok = 1 ]; then
			pass "$b shares at $n samples:$msg"
		else
			fail "$b shares at $n samples (>= 2000 wanted):$msg"
		fi
	fi

	# coroutines: the thread's Lua state changes between every two
	# sites; a state made each round (site_d, named by its line: a
	# coroutine's body has no caller to name it; its string.rep is
	# named rep at times, by the upvalue it was called through)
	"$sample" --alloc --alloc-mean 65536 --alloc-max-parks 0 -o "$tmp/co.folded" -- \
		"$host" "$scen/coro_sites.lua" 3000 >"$tmp/co.out" 2>"$tmp/co.err"
	rc=$?
	truth=$(grep '^truth ' "$tmp/co.out")
	copies=$(copies "$tmp/co.err")
	if [ $rc != 0 ] || [ -z "$truth" ]; then
		fail "$b coroutines: exit $rc: $(tail -3 "$tmp/co.err" | tr '\n' ' ')"
	else
		qa=$(folded_sum "$tmp/co.folded" site_a)
		qb=$(folded_sum "$tmp/co.folded" site_b)
		qc=$(folded_sum "$tmp/co.folded" site_c)
		qd=$(folded_sum "$tmp/co.folded" 'coro_sites.lua:17>')
		qt=$((qa + qb + qc + qd))
		ok=1
		msg=
		for s in "a $qa 6" "b $qb 3" "c $qc 1" "d $qd 1"; do
			set -- $s
			est=$(awk -v x="$2" -v t="$qt" 'BEGIN { print (t > 0 ? x / t : 0) }')
			tru=$(awk -v k="$3" 'BEGIN { print k / 11 }')
			pt=$(points "$est" "$tru")
			msg="$msg site_$1 $(awk -v e="$est" -v t="$tru" 'BEGIN { printf "%.1f%% (truth %.1f%%)", 100 * e, 100 * t }')"
			awk -v p="$pt" 'BEGIN { exit !(p <= 2) }' || ok=0
		done
		copies_ok "$copies" 0 || ok=0
		if [ $ok = 1 ]; then
			pass "$b coroutines:$msg; $copies"
		else
			fail "$b coroutines:$msg; $copies"
		fi
	fi

	# the cap on parks: the mean raised, the estimate as before.  A cap
	# of 1000 a second over a run ten times as long as the one above
	# (that one: some 0.4 s): several hundred samples once the mean is
	# up, so 25% is five of their standard deviations; the pace under
	# the cap (the mean is raised at the first park, from the VM's
	# allocation rate, to bring it under half the cap); and the threads'
	# waits reported (each goes in the thread's next PARK, the last in
	# its BYE)
	"$sample" --alloc --alloc-mean 8192 --alloc-max-parks 1000 -o "$tmp/c.folded" -- \
		"$host" "$scen/sites.lua" 17000 >"$tmp/c.out" 2>"$tmp/c.err"
	rc=$?
	ctot=$(awk '{ s += $NF } END { printf "%.0f\n", s }' "$tmp/c.folded" 2>/dev/null)
	raised=$(grep -o 'the mean was raised from [0-9]* to [0-9]* bytes' "$tmp/c.err")
	pace=$(sed -n 's/.* allocations sampled (\([0-9.]*\) parks\/s).*/\1/p' "$tmp/c.err")
	waited=$(grep -o 'a park held its thread [0-9.]* us (median), [0-9.]* us (p99), [0-9.]* s in all' "$tmp/c.err")
	copies=$(copies "$tmp/c.err")
	if [ $rc = 0 ] && [ -n "$raised" ] && [ -n "${tot:-}" ] && [ -n "$pace" ] &&
	   within "$ctot" "$((tot * 10))" 25 &&
	   awk -v p="$pace" 'BEGIN { exit !(p <= 1000) }' && [ -n "$waited" ] &&
	   copies_ok "$copies" 75 3; then
		pass "$b at most 1000 parks/s: $pace parks/s, $raised; $ctot bytes estimated, 10 x $tot uncapped; $waited; $copies"
	else
		fail "$b park cap: exit $rc, ${pace:-?} parks/s, '${raised:-not raised}', $ctot bytes against 10 x ${tot:-?}, waits '${waited:-not reported}', $copies: $(tail -2 "$tmp/c.err" | tr '\n' ' ')"
	fi

	# lines: a table constructor after a loop, on its own line (5.4 at
	# -O2 saves no pc before it allocates)
	"$sample" --alloc --alloc-mean 65536 --alloc-max-parks 0 -o "$tmp/l.pb.gz" -- \
		"$host" "$scen/lines.lua" 200000 >"$tmp/l.out" 2>"$tmp/l.err"
	rc=$?
	want=$(sed -n 's/^truth line=//p' "$tmp/l.out")
	top=$(go tool pprof -lines -top -nodecount=1 "$tmp/l.pb.gz" 2>/dev/null |
		awk '/lines.lua:[0-9]+$/ { print $2, $NF; exit }')
	if [ $rc = 0 ] && [ -n "$want" ] && [ "${top##*lines.lua:}" = "$want" ] &&
	   awk -v p="${top%% *}" 'BEGIN { exit !(p + 0 >= 95) }'; then
		pass "$b lines: ${top%% *} of the bytes at lines.lua:$want, the constructor's line"
	else
		fail "$b lines: top '${top:-none}', the constructor is at line ${want:-?} (exit $rc)"
	fi

	# totals, and pprof's sample types
	"$sample" --alloc --alloc-mean 32768 --alloc-max-parks 0 -o "$tmp/k.pb.gz" -- \
		"$host" "$shim/test-alloc-known.lua" 300000 >"$tmp/k.out" 2>"$tmp/k.err"
	rc=$?
	truth=$(sed -n 's/^truth_bytes=//p' "$tmp/k.out")
	est=$(go tool pprof -raw "$tmp/k.pb.gz" 2>/dev/null | awk '
		/^Samples:/ { on = 1; next } /^Locations/ { on = 0 }
		on && /^ *[0-9]+ +[0-9]+ +[0-9]+ +[0-9]+:/ { s += $2 } END { print s + 0 }')
	if [ $rc = 0 ] && [ -n "$truth" ] && within "$est" "$truth" 10; then
		pass "$b alloc_space $est bytes, Lua counted $truth"
	else
		fail "$b alloc_space $est bytes, Lua counted ${truth:-?} (exit $rc: $(tail -2 "$tmp/k.err" | tr '\n' ' '))"
	fi
	for t in alloc_objects alloc_space inuse_objects inuse_space; do
		if go tool pprof -sample_index=$t -top "$tmp/k.pb.gz" 2>&1 | grep -q "^Type: $t"; then
			pass "$b pprof -sample_index=$t"
		else
			fail "$b pprof -sample_index=$t: $(go tool pprof -sample_index=$t -top "$tmp/k.pb.gz" 2>&1 | head -3)"
		fi
	done
	if go tool pprof -top "$tmp/k.pb.gz" 2>&1 | grep -q '^Type: alloc_space'; then
		pass "$b pprof without flags: alloc_space"
	else
		fail "$b pprof without flags: $(go tool pprof -top "$tmp/k.pb.gz" 2>&1 | head -3)"
	fi

	# in-use: the keeping site's in-use is what it retains, the churning
	# site's is (nearly) nothing
	"$sample" --alloc --alloc-mean 4096 --alloc-max-parks 0 -o "$tmp/i.pb.gz" -- \
		"$host" "$scen/inuse.lua" 200000 >"$tmp/i.out" 2>"$tmp/i.err"
	rc=$?
	live=$(sed -n 's/^truth retained=//p' "$tmp/i.out")
	site() {	# site SAMPLE_INDEX NAME: its flat bytes
		go tool pprof -sample_index="$1" -top -unit=B "$tmp/i.pb.gz" 2>/dev/null |
			awk -v f="$2" '$6 == f { sub(/B$/, "", $1); print $1; exit }'
	}
	keep=$(site inuse_space keep_site)
	churn=$(site inuse_space churn_site)
	churn_all=$(site alloc_space churn_site)
	if [ $rc = 0 ] && [ -n "$live" ] && [ -n "$keep" ] && within "$keep" "$live" 10 &&
	   [ -n "$churn_all" ] && awk -v c="${churn:-0}" -v a="$churn_all" 'BEGIN { exit !(c <= 0.05 * a) }'; then
		pass "$b in use: keep_site $keep bytes, it retains $live; churn_site ${churn:-0} of $churn_all allocated"
	else
		fail "$b in use: keep_site ${keep:-?} bytes against ${live:-?} retained; churn_site ${churn:-0} of ${churn_all:-?} allocated (exit $rc: $(tail -2 "$tmp/i.err" | tr '\n' ' '))"
	fi

	# nothing left to the script's children
	"$sample" --alloc -o "$tmp/e.folded" -- "$host" "$shim/test-alloc-env.lua" \
		>"$tmp/e.out" 2>"$tmp/e.err"
	if grep -q '^child_env=0 child_sockets=0$' "$tmp/e.out"; then
		pass "$b a child sees no shim variable and no socket"
	else
		fail "$b child: $(cat "$tmp/e.out" "$tmp/e.err" | tail -3 | tr '\n' ' ')"
	fi

	# SIGKILL of the sampler: the program's output is an unsampled run's
	"$host" "$scen/sites.lua" 600 >"$tmp/plain.out" 2>&1
	bad=0
	for i in $(seq "$kills"); do
		"$sample" --alloc --alloc-mean 16384 --alloc-max-parks 0 -o "$tmp/x.folded" -- \
			"$host" "$scen/sites.lua" 600 >"$tmp/x.out" 2>/dev/null &
		sp=$!
		# a random moment of the sampled run (about 1 s), parks or not
		sleep "$((RANDOM % 2)).$((RANDOM % 10))$((RANDOM % 10))"
		tp=$(pgrep -P "$sp" | head -1)
		kill -KILL "$sp" 2>/dev/null
		wait "$sp" 2>/dev/null
		for _ in $(seq 200); do
			[ -n "$tp" ] && [ -d "/proc/$tp" ] || break
			st=$(awk '/^State:/ { print $2 }' "/proc/$tp/status" 2>/dev/null)
			tr=$(awk '/^TracerPid:/ { print $2 }' "/proc/$tp/status" 2>/dev/null)
			if [ "$st" = t ] || [ "$st" = T ] || { [ -n "$tr" ] && [ "$tr" != 0 ]; }; then
				bad=$((bad + 1))
				echo "  kill $i: process $tp state $st tracer $tr"
				kill -KILL "$tp"
				break
			fi
			sleep 0.05
		done
		if ! cmp -s "$tmp/plain.out" "$tmp/x.out"; then
			bad=$((bad + 1))
			echo "  kill $i: output differs: $(head -c 200 "$tmp/x.out")"
		fi
	done
	if [ $bad = 0 ]; then
		pass "$b sampler SIGKILLed $kills times: the program finished as unsampled, never stopped or traced"
	else
		fail "$b sampler SIGKILLed: $bad bad outcomes"
	fi
done

# refusal: Lua linked into the program
host=$out/src-5.4.7-O2/lchost
if [ -x "$host" ]; then
	"$sample" --alloc -o "$tmp/r.folded" -- "$host" "$shim/test-alloc-known.lua" 1000 \
		>"$tmp/r.out" 2>"$tmp/r.err"
	rc=$?
	if [ $rc = 2 ] && grep -q 'luacore-inspect --heap' "$tmp/r.err" && [ ! -e "$tmp/r.folded" ]; then
		pass "Lua linked in: refused (exit 2), pointed to the heap census"
	else
		fail "Lua linked in: exit $rc, $(cat "$tmp/r.err" | tr '\n' ' ')"
	fi
else
	fail "no $host (fixtures/build-lua.sh)"
fi
exit $status
