#!/usr/bin/env bash
# luacore-sample benchmarks, measured side by side in one run:
#  - overhead: a call-heavy Lua workload (recursive fib, fixed work) run
#    alone, under luacore-sample at 100 Hz and 1000 Hz, and under a
#    debug.sethook call/return profiler; wall time ratios (median of
#    $REPS runs each);
#  - accuracy: the 60/30/10 split at ~10k samples (1000 Hz) against the
#    script's own os.clock measurement, and a periodic workload (busy 1 ms
#    every 10 ms) sampled with --wall: its busy share of wall time;
#  - stop time per sample for a ~40-frame mixed stack, and the sampler's
#    own CPU use.
# Targets: <= 1% slowdown at 100 Hz, <= 5% at 1000 Hz; shares within 1
# point at 10k samples; periodic within 1 point of 10%; stop median <=
# 20 us, p99 <= 100 us.
#   bench/sample.sh [BUILDDIR] [BUILD]      (BUILD default deb-5.4)
set -uo pipefail
builddir=$(cd "${1:-.}" && pwd)
build=${2:-deb-5.4}
here=$(cd "$(dirname "$0")/.." && pwd)
host=$builddir/fixtures/out/$build/lchost
sample=$builddir/src/luacore-sample
scen=$here/fixtures/scenarios/sample
REPS=${REPS:-5}
export LC_TRUTH_LUA=$here/fixtures/lua/truth.lua
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
[ -x "$host" ] || { echo "no $host: run make check (or fixtures/build-lua.sh) first" >&2; exit 1; }

now() { date +%s.%N; }
median() { sort -n | awk '{ v[NR] = $1 } END { print v[int((NR + 1) / 2)] }'; }
sub() { awk -v a="$1" -v b="$2" 'BEGIN { printf "%.6f\n", a - b }'; }
calc() { awk "BEGIN { printf \"%.6f\", $1 }"; }

run_alone() { local t0; t0=$(now); "$host" "$scen/calls.lua" >/dev/null; sub "$(now)" "$t0"; }
run_hook() { local t0; t0=$(now); LC_HOOK=1 "$host" "$scen/calls.lua" >/dev/null; sub "$(now)" "$t0"; }
run_sampled() {	# RATE
	local t0; t0=$(now)
	"$sample" -q -r "$1" -o "$tmp/o.folded" -- "$host" "$scen/calls.lua" >/dev/null 2>"$tmp/q.$1"
	sub "$(now)" "$t0"
}

echo "== overhead: fib(30) x3, $REPS runs each, interleaved, median wall time ($build)"
for i in $(seq "$REPS"); do
	run_alone >>"$tmp/alone"
	run_sampled 100 >>"$tmp/s100"
	run_sampled 1000 >>"$tmp/s1000"
	run_hook >>"$tmp/hook"
done
a=$(median <"$tmp/alone")
for k in alone s100 s1000 hook; do
	m=$(median <"$tmp/$k")
	printf "  %-28s %7.3f s  x%.3f  (%+.1f%%)\n" \
		"$(case $k in alone) echo alone ;; s100) echo 'luacore-sample 100 Hz' ;;
		   s1000) echo 'luacore-sample 1000 Hz' ;; hook) echo 'debug.sethook call/return' ;; esac)" \
		"$m" "$(calc "$m / $a")" "$(calc "($m / $a - 1) * 100")"
done
echo "  sampler at 1000 Hz on the last run:"
sed 's/^/    /' "$tmp/q.1000"

echo "== accuracy: the 60/30/10 split, 1000 Hz for 10 s"
LC_SAMPLE_SECONDS=10 "$sample" -q -r 1000 -o "$tmp/split.pb.gz" -- "$host" "$scen/split.lua" \
	>"$tmp/split.out" 2>"$tmp/split.err"
python3 "$here/tests/sample/shares.py" split "$tmp/split.pb.gz" "$tmp/split.out" \
	"$here/tests/pprof/profile.proto" | sed 's/^/  /'
sed 's/^/    /' "$tmp/split.err"

echo "== accuracy: busy 1 ms every 10 ms, --wall at 1000 Hz for 10 s"
LC_SAMPLE_SECONDS=10 "$sample" -q --wall -r 1000 -o "$tmp/per.folded" -- "$host" "$scen/periodic.lua" \
	>"$tmp/per.out" 2>"$tmp/per.err"
busy=$(awk -F'\t' '$1 == "truth" && $2 == "busy" { print $3 }' "$tmp/per.out")
awk -v busy="$busy" -v secs=10 '
	{ w = $NF; t += w; if ($0 !~ /\[idle\]/) b += w; if ($0 ~ /busy_1ms/) f += w }
	END { printf "  busy share: profile %.1f%% (busy_1ms %.1f%%), script %.1f%% of wall time, %d samples\n",
		100 * b / t, 100 * f / t, 100 * busy / secs, t }' "$tmp/per.folded"
sed 's/^/    /' "$tmp/per.err"

echo "== stop time per sample: a ~40-frame mixed stack, 1000 Hz for 5 s"
LC_SAMPLE_SECONDS=5 "$sample" -q -r 1000 -o "$tmp/deep.folded" -- "$host" "$scen/deep.lua" \
	>/dev/null 2>"$tmp/deep.err"
awk '{ n = gsub(/;/, ";"); if (n + 1 > m) m = n + 1 } END { printf "  deepest stack: %d frames\n", m }' "$tmp/deep.folded"
sed 's/^/    /' "$tmp/deep.err"
