#!/usr/bin/env bash
# luacore-sample on bursty work: a skynet-like host (fixtures/host/
# skyhost.c) whose services run message handlers on worker threads that
# wait on a condition variable between messages, several VMs per
# thread.  Each service measures its own CPU time per message with the
# thread's CPU clock; the profile's share of each service (the samples
# whose stack holds its function) is printed beside that share of the
# process's CPU time, at >= 5,000 samples:
#   spin      30 ms of work every 50 ms  (about 60% of the process's CPU)
#   burst10   10 ms every 100 ms         (about 10%)
#   burst1    1 ms every 10 ms           (about 10%)
#   burst100  100 us every 2 ms          (about 5%)
# and three idle services.  Runs: 2 workers at 100 Hz (60 s) and 1 kHz
# (8 s), 1 worker at 1 kHz (10 s); then the steady 60/30/10 split
# (fixtures/scenarios/sample/split.lua, one thread) at 1 kHz for 10 s.
# Target: every share within 2 points (1 point for the steady split).
# With LC_BASELINE=OTHER_BUILDDIR, the same runs with that build's
# sampler beside this one's.
#   bench/sky.sh [BUILDDIR] [BUILD]      (BUILD default deb-5.4)
set -uo pipefail
. "$(dirname "$0")/lib.sh"
svc=$here/fixtures/scenarios/sky/service.lua
proto=$here/tests/pprof/profile.proto
shares=$here/tests/sample/shares.py
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
[ -x "$sky" ] || { echo "no $sky: run make check (or fixtures/build-lua.sh) first" >&2; exit 1; }
command -v protoc >/dev/null || { echo "protoc is missing (apt-get install protobuf-compiler)" >&2; exit 1; }

samplers="$builddir/src/luacore-sample"
[ -n "${LC_BASELINE:-}" ] && samplers="$(cd "$LC_BASELINE" && pwd)/src/luacore-sample $samplers"

services="$svc:spin,0.030,0.020 $svc:burst10,0.010,0.090 $svc:burst1,0.001,0.009 $svc:burst100,0.0001,0.0019 $svc:idle1,0,1 $svc:idle2,0,1 $svc:idle3,0,1"

# run SAMPLER RATE WORKERS SECONDS
run() {
	local s=$1 r=$2 w=$3 d=$4 f=$tmp/run
	"$s" -q -r "$r" -o "$f.pb.gz" -- "$sky" "$w" "$d" $services >"$f.out" 2>"$f.err"
	echo "  $s, $r Hz, $w worker(s), $d s:"
	grep -E "samples:|CPU:|not on a CPU|warning" "$f.err" | sed 's/^luacore-sample: /    /'
	python3 "$shares" sky "$f.pb.gz" "$f.out" "$proto" 2 | sed "s/^/    /"
}

echo "== bursty services, shares of the process's CPU time: profile beside the services' own clocks (target: within 2 points)"
for s in $samplers; do
	run "$s" 100 2 "${SKY_SLOW_S:-60}"
	run "$s" 1000 2 8
	run "$s" 1000 1 10
done

echo "== the steady 60/30/10 split at 1 kHz, 10 s (target: within 1 point)"
for s in $samplers; do
	LC_SAMPLE_SECONDS=10 "$s" -q -r 1000 -o "$tmp/split.pb.gz" -- "$host" "$here/fixtures/scenarios/sample/split.lua" \
		>"$tmp/split.out" 2>"$tmp/split.err"
	echo "  $s:"
	python3 "$shares" split "$tmp/split.pb.gz" "$tmp/split.out" "$proto" 1 | sed 's/^/    /'
done
