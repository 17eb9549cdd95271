#!/usr/bin/env bash
# What decoding one sample costs, side by side in one run (bench/decode.c):
#  - "report": a report per sample, as luacore-sample decoded a stopped
#    thread before it kept one session; with LC_BASELINE=OTHER_BUILDDIR,
#    also built against that build's libluacore (the sampler before);
#  - "stack": a pass and the stack unit per sample on one session, as it
#    decodes now.
# On fixture cores of make check: a 79-frame recursion, coroutines, C->Lua
# re-entry.  Each figure is the fastest of REPS alternating runs of N
# samples (on a shared machine the spread between runs is larger than
# the difference measured; the fastest run is the least disturbed), with
# the median beside it.
#   [LC_BASELINE=DIR] bench/decode.sh [BUILDDIR] [BUILD]   (BUILD: deb-5.4)
set -uo pipefail
. "$(dirname "$0")/lib.sh"
N=${N:-2000}
REPS=${REPS:-9}
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
[ -d "$out" ] || { echo "no $out: run make check first" >&2; exit 1; }

libs="$(pkg-config --libs libdw libelf zlib) -lstdc++ -lm"
cc -O2 -I"$here/libcore" -o "$tmp/report" "$here/bench/decode.c" \
	-L"$builddir/libcore/.libs" -lluacore -Wl,-rpath,"$builddir/libcore/.libs" || exit 1
cc -O2 -DLC_BENCH_STACK -I"$here/libcore" -I"$builddir" $(pkg-config --cflags libdw) \
	-o "$tmp/stack" "$here/bench/decode.c" "$builddir/libcore/.libs/libluacore_impl.a" $libs || exit 1
modes="report stack"
if [ -n "${LC_BASELINE:-}" ]; then
	base=$(cd "$LC_BASELINE" && pwd)
	cc -O2 -I"$base/libcore" -o "$tmp/before" "$here/bench/decode.c" \
		-L"$base/libcore/.libs" -lluacore -Wl,-rpath,"$base/libcore/.libs" || exit 1
	modes="before report stack"
fi

median() { sort -n | awk '{ v[NR] = $1 } END { print v[int((NR + 1) / 2)] }'; }
fastest() { sort -n | head -1; }
# The thread to decode: the first of the core (the one that took the
# signal or was stopped).
first_tid() {	# CORE EXE
	"$builddir/src/luacore-inspect" --json --no-scan "$1" "$2" 2>/dev/null |
		python3 -c 'import json, sys; print(json.load(sys.stdin)["threads"][0]["tid"])'
}
# The decode program's mode for a column: "before" is a report per
# sample, on the baseline's library.
mode_of() { [ "$1" = before ] && echo report || echo "$1"; }

echo "== CPU per decoded sample, $N samples a run, fastest (median) of $REPS alternating runs ($build)"
printf '  %-16s %7s' core frames
for m in $modes; do printf ' %20s' "$m"; done
echo
for c in deep_recursion coroutines3 reentry; do
	core=$out/$c/core
	exe=$out/$c/exe
	[ -f "$core" ] || continue
	tid=$(first_tid "$core" "$exe")
	for r in $(seq "$REPS"); do
		for m in $modes; do
			"$tmp/$m" "$(mode_of "$m")" "$core" "$exe" "$tid" "$N" \
				>>"$tmp/$c.$m" || exit 1
		done
	done
	printf '  %-16s %7s' "$c" "$(awk '{ print $5 }' "$tmp/$c.stack" | head -1)"
	for m in $modes; do
		printf ' %8s (%6s) us' "$(awk '{ print $1 }' "$tmp/$c.$m" | fastest)" \
			"$(awk '{ print $1 }' "$tmp/$c.$m" | median)"
	done
	echo
done
echo "  (before: a report per sample on the baseline's library; report: the same on this build's; stack: this build's sampler path)"

# Instructions per sample under callgrind: exact where CPU time is noisy.
# The difference of a run of 300 samples and one of 100, over 200.
command -v valgrind >/dev/null || { echo "(no valgrind: no instruction counts)"; exit 0; }
[ "${LC_NO_CALLGRIND:-0}" = 1 ] && exit 0
ir() {	# BIN MODE CORE EXE TID N
	valgrind --tool=callgrind --callgrind-out-file="$tmp/cg.out" "$@" >/dev/null 2>&1 || return 1
	awk '/^summary:/ { print $2 }' "$tmp/cg.out"
}
echo "== instructions per decoded sample (callgrind: runs of 300 and 100 samples, difference / 200)"
printf '  %-16s' core
for m in $modes; do printf ' %12s' "$m"; done
echo
for c in deep_recursion coroutines3 reentry; do
	core=$out/$c/core
	exe=$out/$c/exe
	[ -f "$core" ] || continue
	tid=$(first_tid "$core" "$exe")
	printf '  %-16s' "$c"
	for m in $modes; do
		a=$(ir "$tmp/$m" "$(mode_of "$m")" "$core" "$exe" "$tid" 100)
		b=$(ir "$tmp/$m" "$(mode_of "$m")" "$core" "$exe" "$tid" 300)
		printf ' %12s' "$(awk -v a="$a" -v b="$b" 'BEGIN { printf "%.0f", (b - a) / 200 }')"
	done
	echo
done
