#!/usr/bin/env bash
# The fuzzing harnesses (tests/fuzz), briefly:
#  - the committed corpus and every reproducer of a past finding
#    (tests/fuzz/corpus/HARNESS), replayed through harnesses built with
#    the project's compiler and flags (sanitizers with --enable-asan/
#    --enable-ubsan), against fixture cores of 5.1, 5.2, 5.3, 5.4 and
#    LuaJIT;
#  - a short libFuzzer run of each harness with ASan, UBSan and leak
#    checks ($LC_FUZZ_SECONDS, default 12), starting from the named
#    reproducers and 64 inputs of the corpus picked at random: loading
#    the whole corpus under ASan would take the run's time before any
#    mutation (make fuzz starts from all of it);
#  - a short structure-aware mutation campaign (tests/fuzz/mutants.sh,
#    300 mutants of the cores of five releases, 60 of LuaJIT's) with
#    ASan and UBSan, each mutant's report compared with the unmutated
#    core's.
# clang and its runtime are required (Debian: clang libclang-rt-14-dev);
# without them this fails, it does not skip.  make fuzz runs longer.
set -uo pipefail
top_srcdir=${top_srcdir:-.}
top_builddir=${top_builddir:-.}
out=${LUACORE_MATRIX_DIR:-$top_builddir/fixtures/out}
fz=$top_builddir/tests/fuzz
corpus=$(cd "$top_srcdir/tests/fuzz/corpus" && pwd)
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
export LSAN_OPTIONS=suppressions=$(cd "$top_srcdir/tests/fuzz" && pwd)/lsan.supp
status=0

# LuaJIT (upstream, with -g: fixtures/build-luajit.sh) and its cores of
# two scenarios, beside the fixture builds.
lj=lj-upstream
if "$top_srcdir/fixtures/build-luajit.sh" "$out" "$lj" >"$tmp/lj-build.log" 2>&1; then
	for sc in coroutines3 crash; do
		[ -f "$out/$lj/$sc/core" ] ||
			LC_BUILDS=$out "$top_srcdir/fixtures/make-core.sh" "$lj" "$sc" "$out/$lj/$sc" \
				>"$tmp/lj-$sc.log" 2>&1 ||
			{ echo "FAIL make-core.sh $lj $sc: $(tail -2 "$tmp/lj-$sc.log")"; status=1; }
	done
else
	echo "FAIL fixtures/build-luajit.sh $lj: $(tail -3 "$tmp/lj-build.log")"
	status=1
fi
for h in fuzz_decode fuzz_core fuzz_sample; do
	for c in deb-5.1/coroutines3 deb-5.3/crash src-5.4.7-O0/coroutines3 \
		$lj/coroutines3; do
		rc=0
		LC_FUZZ_CORE=$out/$c/core LC_FUZZ_EXE=$out/$c/exe timeout 600 \
			"$fz/$h" "$corpus/$h" >"$tmp/replay.out" 2>&1 || rc=$?
		if [ "$rc" = 0 ]; then
			echo "PASS $h on $c: $(tail -1 "$tmp/replay.out")"
		else
			echo "FAIL $h on $c: exit $rc"
			grep -E "ERROR|runtime error|SUMMARY" "$tmp/replay.out" | head -5 | sed 's/^/    /'
			status=1
		fi
	done
done

# Structure-aware mutants of the fields the report reads, checked
# against the unmutated core's report (tests/fuzz/mutants.sh): no
# sanitizer report, no run over 30 s, no silent wrong answer, nothing
# partial inside an unpartial report.  $LC_MUTANTS (300) over the cores
# of five releases; make fuzz-mutants runs 6000.
LC_MUTANTS_MAX_SILENT=${LC_MUTANTS_MAX_SILENT:-3} \
	LC_MUTANTS_CORPUS= LC_MUTANTS_SPECS= LUACORE_MATRIX_DIR=$out "$top_srcdir/tests/fuzz/mutants.sh" \
	"$top_builddir" "${LC_MUTANTS:-300}" "$tmp/mutants" || status=1
# The same over LuaJIT's cores: $LC_LJ_MUTANTS (60).  No sanitizer
# report, no run over 30 s, nothing partial unmarked.  Silent wrong
# answers from absurd edits are printed by class and bounded by
# $LC_LJ_MAX_SILENT (5): what no check can tell from the truth remains
# (a byte of a name or a line table changed, a constant pointing to
# another string: 0-4 of 60, 2 on average over 16 campaigns with
# seeds 1-8); a name, line or function read from data that cannot be
# right is marked (vm/luajit/names.c, frames.c).
LC_MUTANTS_MAX_SILENT=${LC_LJ_MAX_SILENT:-5} \
	LC_MUTANTS_CORPUS= LC_MUTANTS_SPECS= LUACORE_MATRIX_DIR=$out "$top_srcdir/tests/fuzz/mutants.sh" \
	"$top_builddir" "${LC_LJ_MUTANTS:-60}" "$tmp/mutants-lj" "$lj" || status=1

# Each class of bad mutant a full campaign found, kept as a spec
# (tests/fuzz/specs/CELL-OUTCOME-FIELD-EDIT.spec: addresses, new and old
# bytes): through the same oracle, it must now be shown the same, marked
# partial or refused, within 60 s and without a sanitizer report.  A
# spec is of one core file: on cores made again (other addresses) it
# does not apply, and is counted so; the 300 mutants above learn any.
pass=0 fail=0 na=0
for s in "$top_srcdir"/tests/fuzz/specs/*.spec; do
	[ -e "$s" ] || continue
	n=$(basename "$s" .spec)
	cell=$(echo "$n" | sed -E 's/^(.*)-([a-z0-9_]+)-(silent|unmarked|hang|sanitizer)-.*/\1\/\2/')
	rc=0
	v=$(ASAN_OPTIONS=detect_leaks=0 timeout 60 "$fz/lf/mutants" --apply "$s" \
		"$out/$cell/core" "$out/$cell/exe" 2>"$tmp/spec.err" | tail -1) || rc=$?
	[ "$rc" = 3 ] && { na=$((na + 1)); continue; }
	case ${v%%$'\t'*} in
	same | marked | error) pass=$((pass + 1)) ;;
	*)	fail=$((fail + 1))
		[ "$rc" = 0 ] || v="exit $rc: $(grep -m1 -E 'ERROR|runtime error' "$tmp/spec.err")"
		echo "FAIL spec $n: $v" | cut -c1-240 ;;
	esac
done
echo "$([ "$fail" = 0 ] && echo PASS || echo FAIL) specs: $pass of $((pass + fail)) kept bad mutants now shown right ($na not of these cores)"
[ "$fail" = 0 ] || status=1

for h in fuzz_decode fuzz_core fuzz_sample; do
	mkdir -p "$tmp/corpus/$h"
	(cd "$corpus/$h" && { ls | grep -v '^[0-9a-f]\{40\}$'; ls | grep '^[0-9a-f]\{40\}$' | shuf -n 64; } |
		xargs cp -t "$tmp/corpus/$h")
done
"$top_srcdir/tests/fuzz/campaign.sh" "$top_builddir" "${LC_FUZZ_SECONDS:-12}" "$tmp/corpus" || status=1
exit $status
