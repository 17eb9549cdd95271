#!/usr/bin/env bash
# luacore-sample --nonblocking on real programs, the scripts' own
# measurements as truth:
#  - shares: the 60/30/10 split, a C function hot spot and a two-VM host
#    under several builds (tests/sample/shares.py), and at least 95% of
#    the samples consistent (two reads agreed);
#  - coroutines, a new one every few rounds (fixtures/scenarios/sample/
#    coro.lua): every sample of the coroutine's work shows it resumed by
#    the main thread's coroutine.resume, and its share follows the
#    script's;
#  - skyhost, one worker running six VMs' bursty services, at 1 kHz:
#    each service's share within 3 points;
#  - the target is never stopped and never traced: its threads' State and
#    TracerPid, polled every millisecond all through a -p run, never show
#    it (the same poller does see the stopping sampler's traces: it can
#    fail);
#  - a program without Lua: a clear message, exit status 2.
set -uo pipefail
. "$(cd "$(dirname "$0")" && pwd)/lib.sh"
scen=$src/fixtures/scenarios/sample
proto=$src/tests/pprof/profile.proto
shares=$src/tests/sample/shares.py
export LC_TRUTH_LUA=$src/fixtures/lua/truth.lua
export LC_SAMPLE_SECONDS=${LC_SAMPLE_SECONDS:-2}
builds=${LC_SAMPLE_BUILDS:-"deb-5.1 deb-5.4 src-5.2.4-O0 src-5.4.7-O2 src-5.5.0-O0"}
command -v protoc >/dev/null || { echo "FAIL: protoc is missing (apt-get install protobuf-compiler)"; exit 1; }

# The share of samples consistent, from the end-of-run report.
consistent() { grep -o 'consistent ([0-9.]*%' "$1" | grep -o '[0-9.]*'; }

for b in $builds; do
	for m in split cfunc two_vms; do
		d=$tmp/$b-$m
		rc=0
		"$sample" -q --nonblocking -r 250 -o "$d.pb.gz" -- "$out/$b/lchost" "$scen/$m.lua" \
			>"$d.out" 2>"$d.err" || rc=$?
		if [ "$rc" != 0 ] || ! grep -q "^$m done" "$d.out"; then
			echo "FAIL $b $m --nonblocking: exit $rc: $(tail -3 "$d.err")"
			status=1
			continue
		fi
		c=$(consistent "$d.err")
		if res=$(python3 "$shares" "$m" "$d.pb.gz" "$d.out" "$proto" 2>&1) &&
			awk -v c="${c:-0}" 'BEGIN { exit !(c >= 95) }'; then
			echo "PASS $b $m --nonblocking: shares, $c% consistent"
		else
			echo "FAIL $b $m --nonblocking: shares or consistency ($c%)"
			status=1
		fi
		echo "$res" | sed 's/^/    /'
	done
	# Coroutines.  Folded lines are root first: the coroutine's work
	# must sit on coroutine.resume; its share of the two works within
	# 10 points of the script's (~450 samples).
	d=$tmp/$b-coro
	rc=0
	"$sample" -q --nonblocking -r 250 -o "$d.folded" -- "$out/$b/lchost" "$scen/coro.lua" \
		>"$d.out" 2>"$d.err" || rc=$?
	if [ "$rc" = 0 ] && grep -q '^coro done' "$d.out" &&
		res=$(awk -F'\t' 'FNR == NR { if ($1 == "truth") t[$2] = $3; next }
			{ n = $0; sub(/.* /, "", n)
			  if ($0 ~ /co_work/) { c += n; if ($0 ~ /coroutine\.resume \[C\];[^;]*;co_work/) r += n }
			  if ($0 ~ /main_work/) m += n }
			END { want = 100 * t["co_work"] / (t["co_work"] + t["main_work"])
			      got = c + m ? 100 * c / (c + m) : 0
			      printf "co_work %d samples, %d on coroutine.resume; share %.1f%%, script %.1f%%\n", c, r, got, want
			      exit !(c > 0 && r == c && got - want < 10 && want - got < 10) }' \
			"$d.out" "$d.folded"); then
		echo "PASS $b coroutines --nonblocking: $res"
	else
		echo "FAIL $b coroutines --nonblocking: exit $rc: ${res:-} $(tail -2 "$d.err")"
		status=1
	fi
done

svc=$src/fixtures/scenarios/sky/service.lua
sky_services="$svc:spin,0.030,0.020 $svc:burst10,0.010,0.090 $svc:burst1,0.001,0.009 $svc:burst100,0.0001,0.0019 $svc:idle1,0,1 $svc:idle2,0,1"
d=$tmp/sky
"$sample" -q --nonblocking -r 1000 -o "$d.pb.gz" -- "$out/deb-5.4/skyhost" 1 4 $sky_services \
	>"$d.out" 2>"$d.err"
if grep -q "^skyhost done" "$d.out" &&
	res=$(python3 "$shares" sky "$d.pb.gz" "$d.out" "$proto" 3 2>&1); then
	echo "PASS skyhost --nonblocking, 1 kHz, 1 worker: services' shares within 3 points"
else
	echo "FAIL skyhost --nonblocking, 1 kHz, 1 worker: $(tail -2 "$d.err")"
	status=1
fi
echo "${res:-}" | sed 's/^/    /'

# Never stopped, never traced: poll every thread's State and TracerPid
# through the whole run.  Prints "POLLS STOPPED TRACED".
poll() {	# PID SECONDS
	"$py" - "$1" "$2" <<'PY'
import os, sys, time
pid, secs = sys.argv[1], float(sys.argv[2])
end = time.monotonic() + secs
polls = stopped = traced = 0
while time.monotonic() < end:
    try:
        tids = os.listdir("/proc/%s/task" % pid)
    except OSError:
        break
    for t in tids:
        try:
            with open("/proc/%s/task/%s/status" % (pid, t)) as f:
                st = f.read()
        except OSError:
            continue
        for line in st.splitlines():
            if line.startswith("State:") and line.split()[1] in ("t", "T"):
                stopped += 1
            if line.startswith("TracerPid:") and line.split()[1] != "0":
                traced += 1
    polls += 1
    time.sleep(0.0002)
print(polls, stopped, traced)
PY
}
LC_SAMPLE_SECONDS=8 "$out/deb-5.4/lchost" "$scen/split.lua" >"$tmp/long.out" 2>&1 &
lpid=$!
pids+=("$lpid")
sleep 0.3
for mode in nonblocking stopping; do
	flag=; [ $mode = nonblocking ] && flag=--nonblocking
	poll "$lpid" 2.6 >"$tmp/poll.$mode" &
	ppid=$!
	rc=0
	"$sample" -q $flag -r 1000 -d 2.5 -p "$lpid" -o "$tmp/p.$mode.folded" 2>"$tmp/p.$mode.err" || rc=$?
	wait "$ppid"
	read -r polls stopped traced <"$tmp/poll.$mode"
	echo "    $mode: $polls polls, $stopped stopped, $traced traced; exit $rc"
	if [ $mode = nonblocking ]; then
		check "-p --nonblocking: never stopped or traced in $polls polls, and a profile" \
			test "$rc" = 0 -a "$polls" -gt 500 -a "$stopped" = 0 -a "$traced" = 0 -a -s "$tmp/p.$mode.folded"
	else
		check "the poller sees the stopping sampler's traces (the check above can fail)" \
			test "$rc" = 0 -a "$traced" -gt 0
	fi
done
check "the target runs on, untraced" running "$lpid"

# No Lua: nothing --nonblocking could read.
rc=0
"$sample" -q --nonblocking -d 1 -o "$tmp/none.folded" -- sleep 2 >/dev/null 2>"$tmp/none.err" || rc=$?
check "--nonblocking without Lua: exit 2, said (got $rc: $(head -c 200 "$tmp/none.err"))" \
	eval 'test "$rc" = 2 && grep -q "nonblocking reads Lua stacks only" "$tmp/none.err"'
exit $status
