#!/usr/bin/env bash
# Run the libFuzzer harnesses (tests/fuzz/build.sh) for a while.
#
#   tests/fuzz/campaign.sh BUILDDIR SECONDS CORPUSDIR [HARNESS...]
#
# Each harness (default: fuzz_decode fuzz_core fuzz_sample) runs for
# SECONDS on its own fixture core, one per CPU at a time (LC_FUZZ_JOBS
# at a time if set), with ASan, UBSan and leak checks; an input taking
# over 30 s counts as a hang (the largest bounded work, a data stack of
# a million slots decoded and printed, takes under a second in a normal
# build and up to 10 s under ASan on a busy machine).  Its corpus is
# CORPUSDIR/HARNESS (grown in place), a crash is written to
# CORPUSDIR/HARNESS-crashes/.  Prints each harness's executions and
# exits 1 if any found anything.  The fixture cores come from make check
# (fixtures/out).
set -uo pipefail
here=$(cd "$(dirname "$0")" && pwd)
build=$(cd "$1" && pwd)
secs=$2
corpus=$3
shift 3
harnesses=${*:-fuzz_decode fuzz_core fuzz_sample}
out=${LUACORE_MATRIX_DIR:-$build/fixtures/out}
bin=$build/tests/fuzz/lf
"$here/build.sh" "$build" "$bin" || { echo "FAIL: tests/fuzz/build.sh (clang and libclang-rt-14-dev needed)"; exit 1; }
export LSAN_OPTIONS=suppressions=$here/lsan.supp
export UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1
core_of() {	# the fixture each harness works on
	case $1 in
	fuzz_decode) echo src-5.4.7-O0/coroutines3 ;;
	fuzz_core) echo src-5.4.7-O0/crash ;;
	fuzz_sample) echo src-5.4.7-O0/two_threads ;;
	esac
}
pids=() status=0
for h in $harnesses; do
	c=$out/$(core_of "$h")
	[ -f "$c/core" ] || { echo "FAIL $h: no fixture core $c/core (run make check first)"; exit 1; }
	mkdir -p "$corpus/$h" "$corpus/$h-crashes"
	( LC_FUZZ_CORE=$c/core LC_FUZZ_EXE=$c/exe "$bin/$h" -max_total_time="$secs" \
		-timeout=30 -rss_limit_mb=4096 -max_len=1024 -print_final_stats=1 \
		-artifact_prefix="$corpus/$h-crashes/" "$corpus/$h" >"$corpus/$h.log" 2>&1 ) &
	pids+=($!)
	# One harness per CPU.
	while [ "$(jobs -rp | wc -l)" -ge "${LC_FUZZ_JOBS:-$(nproc)}" ]; do sleep 1; done
done
for p in "${pids[@]}"; do wait "$p" || status=1; done
for h in $harnesses; do
	runs=$(sed -n 's/^stat::number_of_executed_units: *//p' "$corpus/$h.log")
	# libFuzzer also keeps inputs slower than 10 s (slow-unit-*): below
	# the 30 s that make a hang they are shown, not counted.
	found=$(ls "$corpus/$h-crashes" | grep -vc '^slow-unit-')
	slow=$(ls "$corpus/$h-crashes" | grep -c '^slow-unit-')
	[ "$slow" = 0 ] || echo "note $h: $slow input(s) took over 10 s (under 30 s, not a hang), kept in $corpus/$h-crashes"
	if [ "$found" = 0 ] && grep -q "^Done [0-9]* runs" "$corpus/$h.log"; then
		echo "PASS $h: ${runs:-?} executions in $secs s, nothing found ($(ls "$corpus/$h" | wc -l) corpus inputs)"
	else
		echo "FAIL $h: ${runs:-?} executions; $found found, in $corpus/$h-crashes"
		grep -E "ERROR|runtime error|SUMMARY|Test unit written" "$corpus/$h.log" | head -10 | sed 's/^/    /'
		status=1
	fi
done
exit $status
