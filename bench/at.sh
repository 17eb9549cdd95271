#!/usr/bin/env bash
# What a stop at a call costs, beside the floor of the mechanism: lchost
# (default deb-5.4) running fixtures/scenarios/at/calls.lua, which calls
# the host's now_s 10 x ROUNDS times, RUNS times each way, interleaved:
#  - plain: no sampler;
#  - counted: --at l_now_s --count-only (the kernel counts, nothing stops);
#  - bare stops: a stop at every call that the holder lets go at once,
#    reading nothing (LUACORE_AT_BARE=1): the perf-sigtrap floor;
#  - stacks: --at l_now_s --at-period 1, a stop and a stack at every call.
# The program's wall time is from its main to its end (the sampler's go
# and wait; /usr/bin/time for plain).  Printed: the medians, what a call
# costs more than plain in each way ((wall - plain) / calls), and the
# holder's median hold of a stop.  Reports, never fails: exit 0.
#   bench/at.sh [BUILDDIR] [BUILD] [ROUNDS] [RUNS]
set -u
set -- "${1:-.}" "${2:-deb-5.4}" "${3:-2000}" "${4:-5}"
. "$(dirname "$0")/lib.sh"
rounds=$3
runs=$4
tmp=$(mktemp -d /var/tmp/luacore-at.XXXXXX)
trap 'rm -rf "$tmp"' EXIT
trap 'exit 130' INT
trap 'exit 143' TERM HUP
work=$here/fixtures/scenarios/at/calls.lua
[ -x "$host" ] || { echo "no $host: run fixtures/build-lua.sh fixtures/out $build first" >&2; exit 0; }
[ -x /usr/bin/time ] || { echo "no /usr/bin/time (apt-get install time)" >&2; exit 0; }

median() {
	sort -n "$1" | awk '{ v[NR] = $1 } END { if (NR) print v[int((NR + 1) / 2)] }'
}
modes="counted bare stacks"
: >"$tmp/plain.wall"
for m in $modes; do : >"$tmp/$m.wall"; : >"$tmp/$m.hold"; done
calls=$((rounds * 10))
echo "== luacore-sample --at l_now_s on lchost ($build) running at/calls.lua $rounds ($calls calls), $runs runs each, interleaved"
for i in $(seq "$runs"); do
	/usr/bin/time -f '%e' -o "$tmp/time" "$host" "$work" "$rounds" >"$tmp/plain.out" 2>&1
	tail -1 "$tmp/time" >>"$tmp/plain.wall"
	for m in $modes; do
		case $m in
		counted) env=; opt="--count-only" ;;
		bare) env=LUACORE_AT_BARE=1; opt="--at-period 1" ;;
		stacks) env=; opt="--at-period 1" ;;
		esac
		env $env "$sample" --at l_now_s $opt -o "$tmp/$m.folded" -- \
			"$host" "$work" "$rounds" >"$tmp/$m.out" 2>"$tmp/$m.err"
		rc=$?
		sed -n 's/.*the program ran \([0-9.]*\) s from its main.*/\1/p' "$tmp/$m.err" >"$tmp/w"
		sed -n 's/.*a stop held its thread \([0-9.]*\) us (median).*/\1/p' "$tmp/$m.err" >>"$tmp/$m.hold"
		[ "$rc" = 130 ] && exit 130
		if ! grep -q "^truth calls=$calls\$" "$tmp/$m.out"; then
			echo "  $m run $i: the program's output differs (exit $rc): $(tail -2 "$tmp/$m.err" | tr '\n' ' ')"
			continue
		fi
		cat "$tmp/w" >>"$tmp/$m.wall"
	done
	echo "  run $i: plain $(tail -1 "$tmp/plain.wall") s, counted $(tail -1 "$tmp/counted.wall") s, bare stops $(tail -1 "$tmp/bare.wall") s, stacks $(tail -1 "$tmp/stacks.wall") s"
done
pw=$(median "$tmp/plain.wall")
per() { awk -v w="$1" -v p="$pw" -v n="$calls" 'BEGIN { if (w != "") printf "%.1f", (w - p) / n * 1e6; else print "?" }'; }
printf '  %-42s %10s %14s %14s\n' "" "wall s" "us a call more" "hold (median)"
printf '  %-42s %10s %14s %14s\n' "plain" "$pw" "" ""
printf '  %-42s %10s %14s %14s\n' "counted: no stop" "$(median "$tmp/counted.wall")" "$(per "$(median "$tmp/counted.wall")")" ""
printf '  %-42s %10s %14s %14s\n' "bare stops: the perf-sigtrap floor" "$(median "$tmp/bare.wall")" "$(per "$(median "$tmp/bare.wall")")" "$(median "$tmp/bare.hold") us"
printf '  %-42s %10s %14s %14s\n' "stacks: a stop and a stack a call" "$(median "$tmp/stacks.wall")" "$(per "$(median "$tmp/stacks.wall")")" "$(median "$tmp/stacks.hold") us"
b=$(per "$(median "$tmp/bare.wall")"); s=$(per "$(median "$tmp/stacks.wall")")
echo "  a stopped call costs $s us against the floor's $b us ($(awk -v s="$s" -v b="$b" 'BEGIN { if (b > 0) printf "%.2fx", s / b; else print "?" }'))"
exit 0
