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

FIB=${FIB:-35}		# the sampled runs: long enough that start-up is noise
HOOK_FIB=${HOOK_FIB:-27}	# the hook profiler is ~100x slower: less work

run() {	# OUT [ENV=V...] -- CMD...: appends "WALL WORK" seconds to OUT;
	# WORK is the script's own timing of its work, WALL the whole command
	local out=$1 t0 t1; shift
	t0=$(now)
	env "$@" >"$tmp/run.out" 2>>"$tmp/stderr"
	t1=$(now)
	echo "$(sub "$t1" "$t0") $(awk -F'\t' '$1 == "work" { print $2 }' "$tmp/run.out")" >>"$out"
}

echo "== overhead: fib($FIB) x3 alone and sampled; fib($HOOK_FIB) x3 alone and hooked; $REPS runs each, interleaved, median ($build)"
for i in $(seq "$REPS"); do
	run "$tmp/alone" LC_FIB="$FIB" "$host" "$scen/calls.lua"
	run "$tmp/s100" LC_FIB="$FIB" "$sample" -q -r 100 -o "$tmp/o.folded" -- "$host" "$scen/calls.lua"
	run "$tmp/s1000" LC_FIB="$FIB" "$sample" -q -r 1000 -o "$tmp/o.folded" -- "$host" "$scen/calls.lua"
	run "$tmp/alone_small" LC_FIB="$HOOK_FIB" "$host" "$scen/calls.lua"
	run "$tmp/hook" LC_FIB="$HOOK_FIB" LC_HOOK=1 "$host" "$scen/calls.lua"
done
row() {	# NAME FILE BASEFILE: the work as the script timed it, and the wall
	# time of the whole command
	local m a mw aw
	m=$(awk '{ print $2 }' "$2" | median)
	a=$(awk '{ print $2 }' "$3" | median)
	mw=$(awk '{ print $1 }' "$2" | median)
	aw=$(awk '{ print $1 }' "$3" | median)
	printf "  %-28s work %7.3f s  x%.3f (%+5.1f%%)   command %7.3f s (%+5.1f%%)\n" "$1" \
		"$m" "$(calc "$m / $a")" "$(calc "($m / $a - 1) * 100")" \
		"$mw" "$(calc "($mw / $aw - 1) * 100")"
}
row "alone, fib($FIB)" "$tmp/alone" "$tmp/alone"
row "luacore-sample 100 Hz" "$tmp/s100" "$tmp/alone"
row "luacore-sample 1000 Hz" "$tmp/s1000" "$tmp/alone"
row "alone, fib($HOOK_FIB)" "$tmp/alone_small" "$tmp/alone_small"
row "debug.sethook call/return" "$tmp/hook" "$tmp/alone_small"
echo "  (work: the script's own timing of the fib calls, the slowdown the"
echo "  program sees; command: the whole run, including the sampler's"
echo "  start-up and writing the profile)"

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
secs=$(awk '/^luacore-sample: [0-9.]* s,/ { print $2 }' "$tmp/per.err")
awk -v busy="$busy" -v secs="$secs" '
	{ w = $NF; t += w; if ($0 !~ /\[idle\]/) b += w; if ($0 ~ /busy_1ms/ && $0 !~ /\[idle\]/) f += w }
	END { printf "  busy share: profile %.1f%% (busy_1ms %.1f%%), script %.1f%% of the run, %d samples\n",
		100 * b / t, 100 * f / t, 100 * busy / secs, t }' "$tmp/per.folded"
sed 's/^/    /' "$tmp/per.err"

echo "== stop time per sample: a ~40-frame mixed stack, 1000 Hz for 5 s"
LC_SAMPLE_SECONDS=5 "$sample" -q -r 1000 -o "$tmp/deep.folded" -- "$host" "$scen/deep.lua" \
	>/dev/null 2>"$tmp/deep.err"
awk '{ n = gsub(/;/, ";"); if (n + 1 > m) m = n + 1 } END { printf "  deepest stack: %d frames\n", m }' "$tmp/deep.folded"
sed 's/^/    /' "$tmp/deep.err"
