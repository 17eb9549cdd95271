#!/bin/bash
# run-alloc-test.sh [OUT]: build libluacore-alloc.so, test-alloc-server and
# test-alloc-host (against every liblua5.x / libluajit with headers here)
# into OUT (default /var/tmp/shim-build) with plain gcc, and run the checks:
#
#   accuracy   alloc bytes estimated from >= 2000 samples within 10 % of the
#              truth: Lua's own count with the collector stopped
#              (test-alloc-known.lua) and the host allocator's byte count
#   in-use     in-use estimate within 10 % of the live heap at exit
#   getallocf  a host that made its VM with its own allocator, or set one
#              later, gets its own back from lua_getallocf
#   buffers    lauxlib's buffers (allocated with lua_getallocf's allocator
#              in 5.4) are sampled: estimate within 10 % of the host's count
#   threads    4 VMs on 4 threads
#   env        a child of the script sees no variable and no socket
#   fork       a forked child runs Lua unsampled, the parent goes on
#   close      20 VMs made and closed: no growth (LuaJIT's arena)
#   kill       the sampler SIGKILLed at parks 1, 50, 300 and at 10 random
#              moments (2 threads): output identical to an unsampled run
#   hang       a park left unanswered: the shim stops after 100 ms, says so
#   static     Debian's lua5.x (Lua linked in): nothing interposed, no park
#   dlopen     a liblua dlopened RTLD_LOCAL: forwarded, not wrapped, no crash
#   overhead   (reported, not checked) wall and CPU of test-alloc-heavy.lua,
#              median and minimum of RUNS interleaved runs each: no shim /
#              wrapped, never sampling / default mean with a 32 KiB stack
#              copy per park / the same with the sampler reading NEW and
#              FREE every 10 ms instead of at each packet (-d 10)
#
# Exit 0 if every check passed, 1 otherwise.  OVERHEAD_RUNS (default 7)
# and OVERHEAD_ROUNDS (default 6000) size the overhead measurement.
set -u
S=$(cd "$(dirname "$0")" && pwd)
B=${1:-/var/tmp/shim-build}
RUNS=${OVERHEAD_RUNS:-7}
ROUNDS=${OVERHEAD_ROUNDS:-6000}
mkdir -p "$B" || exit 2
cd "$B" || exit 2
fails=0

pass() { echo "PASS $*"; }
fail() { echo "FAIL $*"; fails=$((fails + 1)); }
# kv KEY TEXT: the value of KEY=... in TEXT
kv() { printf '%s\n' "$2" | grep -oE "(^| )$1=[-0-9.]*" | tail -1 | cut -d= -f2; }
# within A B PCT: |A/B - 1| <= PCT %
within() { awk -v a="$1" -v b="$2" -v p="$3" 'BEGIN { exit !(b > 0 && (a / b - 1) ^ 2 <= (p / 100) ^ 2) }'; }
ratio() { awk -v a="$1" -v b="$2" 'BEGIN { printf "%+.1f %%", (a / b - 1) * 100 }'; }

W="-std=c11 -O2 -Wall -Wextra"
gcc $W -fPIC -shared -o libluacore-alloc.so "$S/luacore-alloc.c" -ldl -lpthread -lm &&
gcc $W -o test-alloc-server "$S/test-alloc-server.c" -lm &&
gcc $W -o test-alloc-dlopen "$S/test-alloc-dlopen.c" -ldl || exit 2
HOSTS=
for v in 5.1 5.3 5.4; do
	[ -f /usr/include/lua$v/lua.h ] || continue
	gcc -O2 -Wall -Wextra -I/usr/include/lua$v -o test-alloc-host-$v \
		"$S/test-alloc-host.c" -llua$v -ldl -lpthread && HOSTS="$HOSTS $v"
done
if [ -f /usr/include/luajit-2.1/lua.h ]; then
	gcc -O2 -Wall -Wextra -I/usr/include/luajit-2.1 -o test-alloc-host-luajit \
		"$S/test-alloc-host.c" -lluajit-5.1 -ldl -lpthread && HOSTS="$HOSTS luajit"
fi
case "$HOSTS" in
*5.4*) ;;
*) echo "FAIL no host: liblua5.4-dev is needed (apt-get install liblua5.4-dev)"; exit 1 ;;
esac
SHIM=$B/libluacore-alloc.so
srv() { ./test-alloc-server -s "$SHIM" "$@" 2>&1; }

# accuracy: a mean that gives about 2500 samples of the known bytes
for h in $HOSTS; do
	truth=$(kv truth_bytes "$(./test-alloc-host-$h "$S/test-alloc-known.lua")")
	mean=$((truth / 2500))
	for a in std own set; do
		out=$(srv -m $mean -- ./test-alloc-host-$h -a $a "$S/test-alloc-known.lua")
		est=$(kv est_bytes "$out") parks=$(kv parks "$out")
		what="accuracy $h -a $a: $parks samples at mean $mean, estimate $est vs Lua's count $truth ($(ratio "$est" "$truth"))"
		if [ "$a" != std ]; then
			hb=$(kv alloc_bytes "$out")
			what="$what, vs host allocator $hb ($(ratio "$est" "$hb"))"
			within "$est" "$hb" 10 || what="$what OFF"
			printf '%s\n' "$out" | grep -q 'getallocf=own' &&
				pass "getallocf $h -a $a: the host got its own allocator" ||
				fail "getallocf $h -a $a"
		fi
		if [ "$parks" -ge 2000 ] && within "$est" "$truth" 10 &&
		   [ "${what% OFF}" = "$what" ] && [ "$(kv exit "$out")" = 0 ]; then
			pass "$what"
		else
			fail "$what"
		fi
	done
	out=$(srv -m 8192 -- ./test-alloc-host-$h "$S/test-alloc-inuse.lua")
	live=$(kv live_bytes "$out") inuse=$(kv inuse_bytes "$out")
	what="in-use $h: estimate $inuse vs live heap $live ($(ratio "$inuse" "$live")), frees matched $(kv matched "$out") unmatched $(kv unmatched "$out") dropped $(kv dropped "$out")"
	within "$inuse" "$live" 10 && [ "$(kv unmatched "$out")" = 0 ] && pass "$what" || fail "$what"
done

out=$(srv -m 100000 -- ./test-alloc-host-5.4 -a own "$S/test-alloc-buffers.lua")
est=$(kv est_bytes "$out") hb=$(kv alloc_bytes "$out")
what="buffers 5.4: $(kv parks "$out") samples, estimate $est vs host allocator $hb ($(ratio "$est" "$hb"))"
within "$est" "$hb" 10 && [ "$(kv parks "$out")" -ge 1000 ] && pass "$what" || fail "$what"

out=$(srv -m 65536 -- ./test-alloc-host-5.4 -a own -t 4 "$S/test-alloc-known.lua")
est=$(kv est_bytes "$out") hb=$(kv alloc_bytes "$out")
what="threads: 4 VMs on 4 threads, $(kv hellos "$out") thread sockets, estimate $est vs host allocator $hb ($(ratio "$est" "$hb")), stall median $(kv stall_med_us "$out") us"
within "$est" "$hb" 10 && [ "$(kv hellos "$out")" = 4 ] && [ "$(kv bad "$out")" = 0 ] &&
	pass "$what" || fail "$what"

out=$(srv -m 4096 -- ./test-alloc-host-5.4 "$S/test-alloc-env.lua")
printf '%s\n' "$out" | grep -q 'child_env=0 child_sockets=0' && [ "$(kv parks "$out")" -gt 0 ] &&
	pass "env: $(printf '%s\n' "$out" | grep child_) after $(kv parks "$out") parks" ||
	fail "env: $(printf '%s\n' "$out" | grep child_)"

out=$(srv -m 8192 -- ./test-alloc-host-5.4 -f "$S/test-alloc-env.lua")
what="fork: $(kv closes "$out") VMs closed in the sampled process (2 expected), unmatched FREE $(kv unmatched "$out"), exit $(kv exit "$out")"
[ "$(kv closes "$out")" = 2 ] && [ "$(kv unmatched "$out")" = 0 ] && [ "$(kv exit "$out")" = 0 ] &&
	pass "$what" || fail "$what"

for h in $HOSTS; do
	r1=$(kv maxrss_kb "$(srv -m 65536 -- ./test-alloc-host-$h -r 1 "$S/test-alloc-known.lua")")
	out=$(srv -m 65536 -- ./test-alloc-host-$h -r 20 "$S/test-alloc-known.lua")
	r20=$(kv maxrss_kb "$out")
	what="close $h: max RSS $r1 KiB for 1 VM, $r20 KiB for 20 in turn, $(kv closes "$out") CLOSE, overflow $(kv overflow "$out")"
	[ "$r20" -lt $((r1 * 3 / 2)) ] && [ "$(kv closes "$out")" = 20 ] && pass "$what" || fail "$what"
done

./test-alloc-host-5.4 "$S/test-alloc-heavy.lua" 6000 > plain.out
./test-alloc-host-5.4 -t 2 "$S/test-alloc-heavy.lua" 3000 > plain2.out
# wait_gone PIDFILE: the target outlives its killed sampler; wait for it
wait_gone() {
	local pid
	pid=$(cat "$1") || return
	while kill -0 "$pid" 2>/dev/null; do sleep 0.05; done
}
for k in 1 50 300; do
	rm -f t.pid
	# in the background: bash says nothing of a waited-for job's death
	./test-alloc-server -s "$SHIM" -k $k -p t.pid -- \
		./test-alloc-host-5.4 "$S/test-alloc-heavy.lua" 6000 > k.out 2> k.err &
	wait $! 2> /dev/null
	wait_gone t.pid
	cmp -s plain.out k.out && grep -q 'sampling off: the sampler is gone' k.err &&
		pass "kill at park $k: output identical, shim said: $(grep -o 'sampling off.*' k.err)" ||
		fail "kill at park $k: $(cat k.err)"
done
ok=0
for i in $(seq 1 10); do
	rm -f t.pid
	d=$(awk -v s="$i$$" 'BEGIN { srand(s); printf "%.2f", 0.05 + rand() * 1.2 }')
	./test-alloc-server -s "$SHIM" -p t.pid -- \
		./test-alloc-host-5.4 -t 2 "$S/test-alloc-heavy.lua" 3000 > k.out 2> k.err &
	sp=$!
	sleep "$d"
	kill -9 $sp 2>/dev/null
	wait $sp 2>/dev/null
	wait_gone t.pid
	cmp -s plain2.out k.out && ok=$((ok + 1))
done
[ $ok = 10 ] && pass "kill at random moments, 2 threads: $ok/10 outputs identical" ||
	fail "kill at random moments, 2 threads: $ok/10 outputs identical"

./test-alloc-server -s "$SHIM" -H 5 -- ./test-alloc-host-5.4 "$S/test-alloc-heavy.lua" 6000 > h.out 2> h.err
cmp -s plain.out h.out && grep -q 'did not answer within 100 ms' h.err &&
	pass "hang: output identical, shim said: $(grep -o 'sampling off.*' h.err)" ||
	fail "hang: $(cat h.err)"

for l in lua5.1 lua5.3 lua5.4; do
	command -v $l > /dev/null || continue
	out=$(srv -m 4096 -- $l "$S/test-alloc-env.lua")
	printf '%s\n' "$out" | grep -q 'child_env=0 child_sockets=0' && [ "$(kv parks "$out")" = 0 ] &&
		[ "$(kv exit "$out")" = 0 ] &&
		pass "static: Debian's $l (Lua linked in): 0 parks, exit 0, child clean" ||
		fail "static $l: $out"
done

out=$(srv -- ./test-alloc-dlopen)
printf '%s\n' "$out" | grep -q 'dlopen: 100000' && [ "$(kv exit "$out")" = 0 ] &&
	pass "dlopen: liblua5.4 dlopened RTLD_LOCAL runs, $(kv parks "$out") parks" ||
	fail "dlopen: $out"

# overhead, interleaved so that load changes hit every configuration alike
echo "overhead: test-alloc-heavy.lua $ROUNDS rounds, $RUNS runs each, interleaved; load: $(cut -d' ' -f1-3 /proc/loadavg)"
: > overhead.txt
for i in $(seq 1 "$RUNS"); do
	for c in plain wrapped sampled lazy; do
		case $c in
		plain) o=(-n) ;;
		wrapped) o=(-s "$SHIM" -m 1e18) ;;
		sampled) o=(-s "$SHIM" -c 32768) ;;
		lazy) o=(-s "$SHIM" -c 32768 -d 10) ;;
		esac
		out=$(./test-alloc-server "${o[@]}" -- ./test-alloc-host-5.4 "$S/test-alloc-heavy.lua" "$ROUNDS" 2>&1 >/dev/null)
		echo "$c $(kv wall_s "$out") $(kv cpu_s "$out") $(kv parks "$out") $(kv parks_per_s "$out") $(kv stall_med_us "$out") $(kv stall_p99_us "$out") $(kv service_med_us "$out")" >> overhead.txt
	done
done
awk '
function sort(a, n,   i, j, t) {
	for (i = 2; i <= n; i++) for (j = i; j > 1 && a[j - 1] > a[j]; j--) { t = a[j]; a[j] = a[j - 1]; a[j - 1] = t }
}
function med(a, n) { sort(a, n); return n % 2 ? a[(n + 1) / 2] : (a[n / 2] + a[n / 2 + 1]) / 2 }
{ n[$1]++; k = n[$1]; w[$1, k] = $2; c[$1, k] = $3; p[$1, k] = $4; r[$1, k] = $5; s[$1, k] = $6; q[$1, k] = $7; v[$1, k] = $8 }
END {
	printf "  %-8s %8s %8s %8s %8s %8s %8s %7s %8s %10s %10s %11s\n", "", "wall s", "", "cpu s", "", "min wall", "min cpu", "parks", "parks/s", "stall med", "stall p99", "service med"
	for (x = 1; x <= 4; x++) {
		m = x == 1 ? "plain" : x == 2 ? "wrapped" : x == 3 ? "sampled" : "lazy"
		for (k = 1; k <= n[m]; k++) { W[k] = w[m, k]; C[k] = c[m, k]; P[k] = p[m, k]; R[k] = r[m, k]; SS[k] = s[m, k]; Q[k] = q[m, k]; V[k] = v[m, k] }
		mw = med(W, n[m]); mc = med(C, n[m]); lw = W[1]; lc = C[1]
		if (x == 1) { bw = mw; bc = mc; blw = lw; blc = lc }
		printf "  %-8s %8.3f %+7.1f%% %8.3f %+7.1f%% %+7.1f%% %+7.1f%% %7d %8.0f %7.1f us %7.1f us %8.1f us\n", m, mw, (mw / bw - 1) * 100, mc, (mc / bc - 1) * 100, (lw / blw - 1) * 100, (lc / blc - 1) * 100, med(P, n[m]), med(R, n[m]), med(SS, n[m]), med(Q, n[m]), med(V, n[m])
	}
}' overhead.txt

echo "$fails checks failed"
[ $fails = 0 ]
