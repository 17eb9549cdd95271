#!/usr/bin/env bash
# luacore-sample --nonblocking, measured side by side in one run:
#  - progress: fib(27) repeated in one run of lchost, timing itself;
#    stretches alone, under --nonblocking at 1000 Hz and under the
#    stopping sampler at 1000 Hz, interleaved (bench/overhead.py);
#  - consistency and shares: the 60/30/10 split (fixtures/scenarios/
#    sample/split.lua) sampled SECONDS at 1000 Hz with --nonblocking and
#    without, one after the other: each function's share against the
#    script's own os.clock measurement, and the share of samples whose
#    reads agreed.
# Targets: progress within 1% of the alone stretches at 1000 Hz; >= 95%
# of samples consistent; shares within 2 points of the script's.
#   bench/nonblocking.sh [BUILDDIR] [BUILD]      (BUILD default deb-5.4)
set -uo pipefail
. "$(dirname "$0")/lib.sh"
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
[ -x "$host" ] || { echo "no $host: run make check (or fixtures/build-lua.sh) first" >&2; exit 1; }

stopfloor=$tmp/stopfloor
cc -O2 -o "$stopfloor" "$here/bench/stopfloor.c" || exit 1

echo "== progress: fib(27) repeated in one run of $build's lchost, stretches alone and sampled at 1000 Hz, interleaved (${CYCLES:-4} cycles)"
python3 "$here/bench/overhead.py" "$host" "$scen/calls.lua" "$sample" "$stopfloor" \
	"${CYCLES:-4}" 2 "1000 Hz nonblocking,1000 Hz" || exit 1

secs=${SECONDS_SPLIT:-10}
echo "== the 60/30/10 split, ${secs} s at 1000 Hz each way"
for mode in nonblocking stopped; do
	flag=; [ $mode = nonblocking ] && flag=--nonblocking
	LC_SAMPLE_SECONDS=$secs "$sample" -q $flag -r 1000 -o "$tmp/$mode.pb.gz" -- \
		"$host" "$scen/split.lua" >"$tmp/$mode.out" 2>"$tmp/$mode.err" || {
		echo "luacore-sample $flag failed:"; cat "$tmp/$mode.err"; exit 1; }
	echo "  -- $mode"
	python3 "$here/tests/sample/shares.py" split "$tmp/$mode.pb.gz" "$tmp/$mode.out" \
		"$here/tests/pprof/profile.proto" | sed 's/^/  /'
	grep -o 'not stopped (--nonblocking): [^;]*;[^;]*;' "$tmp/$mode.err" | sed 's/^/  /'
	grep -o 'sampler CPU [0-9.]* s ([^)]*)' "$tmp/$mode.err" | sed 's/^/  /'
done
