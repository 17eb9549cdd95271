#!/usr/bin/env bash
# luacore-sample on an oversubscribed machine: the share of the target's
# wall time its threads spend stopped, at 100 Hz (and 1 kHz), with the
# machine idle and with twice as many busy loops as CPUs beside it
# (started and stopped here), side by side in one run.  The target is
# the skyhost services on two workers (bench/sky.sh).  Stopped: held at
# a stop by the sampler, from the stop to the release (the wait of a
# thread that must be given a CPU to reach its stop is in the per-sample
# times, not here).
# Target: <= 1% stopped at 100 Hz oversubscribed.
#   bench/contention.sh [BUILDDIR] [BUILD]      (BUILD default deb-5.4)
set -uo pipefail
. "$(dirname "$0")/lib.sh"
svc=$here/fixtures/scenarios/sky/service.lua
SECONDS_EACH=${SECONDS_EACH:-8}
tmp=$(mktemp -d)
hogs=()
stop_hogs() { for p in "${hogs[@]}"; do kill "$p" 2>/dev/null; done; hogs=(); }
trap 'stop_hogs; rm -rf "$tmp"' EXIT
[ -x "$sky" ] || { echo "no $sky: run make check (or fixtures/build-lua.sh) first" >&2; exit 1; }
services="$svc:spin,0.030,0.020 $svc:burst10,0.010,0.090 $svc:burst1,0.001,0.009 $svc:burst100,0.0001,0.0019 $svc:idle1,0,1"

# run RATE: the stop line of one run, "SHARE MAX MEDIAN P99"
run() {
	"$sample" -q -r "$1" -o "$tmp/p.folded" -- "$sky" 2 "$SECONDS_EACH" $services \
		>/dev/null 2>"$tmp/err"
	sed -n 's/.*per sample median \([0-9.]*\) us, p99 \([0-9.]*\) us, longest hold [0-9.]* us ([^)]*); its threads held stopped \([0-9.]*\)% of the time (at most \([0-9.]*\)%).*/\3 \4 \1 \2/p' "$tmp/err"
}
hog() {
	for i in $(seq $((2 * $(nproc)))); do
		timeout $((SECONDS_EACH + 30)) sh -c 'while :; do :; done' &
		hogs+=($!)
	done
}

echo "== the target's threads stopped, share of the run's wall time ($(nproc) CPUs; oversubscribed: $((2 * $(nproc))) busy loops beside)"
printf '  %-8s %-14s %10s %10s %12s %10s\n' rate machine "stopped %" "max %" "median us" "p99 us"
for rate in 100 1000; do
	read -r a amax amed ap99 <<<"$(run "$rate")"
	hog
	read -r b bmax bmed bp99 <<<"$(run "$rate")"
	stop_hogs
	printf '  %-8s %-14s %10s %10s %12s %10s\n' "$rate Hz" idle "$a" "$amax" "$amed" "$ap99"
	printf '  %-8s %-14s %10s %10s %12s %10s\n' "$rate Hz" oversubscribed "$b" "$bmax" "$bmed" "$bp99"
	awk -v a="$a" -v b="$b" -v r="$rate" 'BEGIN {
		v = "(no target)"
		if (r == 100) { v = "FAIL"; if (b <= 1) v = "ok" }
		q = 0
		if (a > 0) q = b / a
		printf "  %d Hz: oversubscribed / idle = %.2f; target <= 1%% at 100 Hz: %s\n", r, q, v }'
done
