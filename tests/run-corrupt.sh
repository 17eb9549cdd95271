#!/usr/bin/env bash
# Corrupted cores: a real core of each layout family's Lua (4 builds here, 5 more in run-sanitized.sh), damaged the way a wild
# write or a use-after-free leaves memory (tests/corrupt/corrupt.c: a
# CallInfo cycle, previous/next links that disagree, a function slot
# outside the stack, a lua_State's stack pointer moved 1 MiB down, a Proto with absurd sizes, a string of 2^40 bytes, a
# GC list that loops, one whose link steps over a coroutine, a global_State whose mainthread is not its own, an
# errorJmp chain into unmapped memory, a machine stack overwritten with
# 0x41 bytes; a saved pc NULL, below the code or between instructions;
# absurd line info; a linedefined of INT32_MAX; status bits that say C
# for a Lua frame; the running state's status saying yielded; a
# suspended coroutine that no longer validates; self-looping CallInfos
# in every suspended coroutine, and in 10,000 of them).  luacore-inspect
# must finish within 30 s with exit status 1 (a partial result), mark
# what is wrong (a note, or a frame marked "(partial)"), and print valid
# JSON in which (tests/corrupt/check.py) partial marks propagate to the
# thread, VM and report, no thread's Lua frames differ from the
# unmodified core's unmarked, and the damaged frame, state or coroutine
# itself is marked.
# The heap walk (--heap --paths) runs on every damaged core as well, and on
# two more kinds of damage (finobj starting inside allgc, so that the two
# lists share a tail; a table claiming 2^63 nodes and 2^31 - 1 slots): within
# 30 s, valid JSON, and exit 1 with a note where the lists, the objects'
# sizes or a reference to no listed object show the damage.
set -uo pipefail
top_builddir=${top_builddir:-.}
top_srcdir=${top_srcdir:-.}
inspect=$top_builddir/src/luacore-inspect
corrupt=$top_builddir/tests/corrupt/corrupt
out=${LUACORE_MATRIX_DIR:-$top_builddir/fixtures/out}
# One build per layout family, both optimization levels among them:
# here those that run-sanitized.sh does not run this script on (it takes
# deb-5.1, src-5.2.4-O2, deb-5.3, src-5.4.7-O2 and src-5.5.0-O0 with the
# sanitized binaries, the same checks and more); LC_CORRUPT_BUILDS=all
# for every one here.
builds=${LC_CORRUPT_BUILDS:-"deb-5.4 src-5.2.4-O0 src-5.4.8-O0 src-5.5.0-O2"}
[ "$builds" = all ] && builds="deb-5.1 deb-5.3 deb-5.4 src-5.2.4-O0 src-5.4.7-O2 src-5.4.8-O0 src-5.5.0-O2"
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
pass=0 fail=0 na=0

for b in $builds; do
	for sc in ci-cycle ci-next stack-outside stack-moved proto-sizes string-len gc-cycle gc-skip \
		gc-shared table-sizes \
		mainthread mainthread-other loaded-table longjmp smashed-stack savedpc-null savedpc-below \
		savedpc-odd lineinfo line-later linedefined kind-bits k-self upval-desc \
		startpc-order hook-bit ci-lost status-flip co-header ci-loops; do
		# The coroutine scenarios need suspended coroutines; ci-lost a C
		# function called from Lua, startpc-order a function with two
		# locals (crash.lua's visit).
		case $sc in
		co-header|ci-loops) cell=yield_c ;;
		ci-lost|startpc-order) cell=crash ;;
		*) cell=coroutines3 ;;
		esac
		d=$out/$b/$cell
		[ -f "$tmp/orig-$b-$cell.json" ] ||
			"$inspect" --json --locals --stack "$d/core" "$d/exe" \
				>"$tmp/orig-$b-$cell.json" 2>/dev/null
		rc=0
		"$corrupt" "$sc" "$d/core" "$d/exe" "$tmp/core" >"$tmp/what" 2>&1 || rc=$?
		if [ "$rc" = 1 ]; then
			na=$((na + 1))
			echo "n/a  $b $sc: $(tail -1 "$tmp/what")"
			continue
		elif [ "$rc" != 0 ]; then
			fail=$((fail + 1))
			echo "FAIL $b $sc: corrupt: $(tail -1 "$tmp/what")"
			continue
		fi
		# The heap walk (--heap --paths) on every damaged core: within
		# 30 s, exit 0 or 1, valid JSON; the damage to the GC lists and
		# to objects' sizes marked partial (exit 1), with a note.
		hrc=0
		t0=$(date +%s.%N)
		timeout 30 "$inspect" --heap --paths --json "$tmp/core" "$d/exe" \
			>"$tmp/heap.json" 2>"$tmp/heap.err" || hrc=$?
		secs=$(awk -v a="$t0" -v b="$(date +%s.%N)" 'BEGIN { printf "%.2f", b - a }')
		hwant="0 1"
		case $sc in
		gc-cycle|gc-skip|gc-shared|table-sizes|proto-sizes|string-len) hwant=1 ;;
		# No global_State validates: no heap to show (exit 2, said).
		mainthread|mainthread-other) hwant=2 ;;
		esac
		if [ "$hwant" = 2 ] && [ "$hrc" = 2 ] && grep -q "no Lua VM found" "$tmp/heap.err"; then
			pass=$((pass + 1))
			echo "PASS $b $sc --heap: exit 2 in $secs s: $(head -1 "$tmp/heap.err" | cut -c1-100)"
		elif [[ " $hwant " == *" $hrc "* ]] && python3 -c '
import json, sys
d = json.load(open(sys.argv[1]))
want = sys.argv[2] == "1"
bad = [v for v in d["vms"] if v["partial"] and not v["note"]]
sys.exit(1 if bad or (want and not d["partial"]) else 0)' "$tmp/heap.json" "$hwant"; then
			pass=$((pass + 1))
			echo "PASS $b $sc --heap: exit $hrc in $secs s$( [ "$hrc" = 1 ] && python3 -c '
import json, sys
d = json.load(open(sys.argv[1]))
print("; " + next((v["note"] for v in d["vms"] if v["note"]), "")[:110])' "$tmp/heap.json")"
		else
			fail=$((fail + 1))
			echo "FAIL $b $sc --heap: exit $hrc in $secs s, wanted $hwant, valid JSON, marked"
			head -3 "$tmp/heap.err" | sed 's/^/    /'
		fi
		# Damage the backtraces never read: the heap's alone.
		case $sc in gc-shared|table-sizes) continue ;; esac
		# The GC lists are walked when memory is not scanned.
		opt=
		case $sc in gc-cycle|gc-skip) opt=--no-scan ;; esac
		t0=$(date +%s.%N)
		rc=0
		timeout 30 "$inspect" $opt "$tmp/core" "$d/exe" >"$tmp/txt" 2>&1 || rc=$?
		secs=$(awk -v a="$t0" -v b="$(date +%s.%N)" 'BEGIN { printf "%.2f", b - a }')
		jrc=0
		timeout 30 "$inspect" $opt --json --locals --stack "$tmp/core" "$d/exe" \
			>"$tmp/json" 2>/dev/null || jrc=$?
		if [ "$rc" = 1 ] && [ "$jrc" = 1 ] && grep -qE "note: |\(partial\)" "$tmp/txt" &&
			python3 "$top_srcdir/tests/corrupt/check.py" "$sc" "$tmp/orig-$b-$cell.json" \
				"$tmp/json" "$tmp/what" >"$tmp/check" 2>&1; then
			pass=$((pass + 1))
			echo "PASS $b $sc: exit 1 in $secs s; $(grep -m1 -oE 'note: .*|.*\(partial\)' "$tmp/txt" | sed 's/^ *//' | cut -c1-120)"
		else
			fail=$((fail + 1))
			echo "FAIL $b $sc: exit $rc (json $jrc) in $secs s, wanted 1, marked, and valid JSON"
			sed 's/^/    /' "$tmp/what" | head -5
			grep -m3 -E "note:|error" "$tmp/txt" | sed 's/^/    /'
			sed 's/^/    /' "$tmp/check" 2>/dev/null | head -5
		fi
	done
done
# Ten thousand coroutines whose CallInfos all link to themselves: each
# loop is found in a step or two (it used to be walked to a cap of a
# million CallInfos, 0.16 s a state), and the whole report stays within
# 30 s (it takes about a second).
for b in ${LC_CORRUPT_MANY_BUILDS:-src-5.3.6-O2}; do	# deb-5.4: run-sanitized.sh
	mc=$tmp/mc-$b
	if ! LC_BUILDS=$out "$top_srcdir/fixtures/make-core.sh" "$b" many_coroutines "$mc" >"$tmp/what" 2>&1 ||
		! "$corrupt" ci-loops "$mc/core" "$mc/exe" "$tmp/core" >"$tmp/what" 2>&1; then
		fail=$((fail + 1))
		echo "FAIL $b many_coroutines ci-loops: no core: $(tail -1 "$tmp/what")"
		continue
	fi
	for opt in --json "--json --no-scan"; do
		t0=$(date +%s.%N)
		rc=0
		timeout 30 "$inspect" $opt "$tmp/core" "$mc/exe" >"$tmp/json" 2>/dev/null || rc=$?
		secs=$(awk -v a="$t0" -v b="$(date +%s.%N)" 'BEGIN { printf "%.2f", b - a }')
		"$inspect" --json "$mc/core" "$mc/exe" >"$tmp/orig.json" 2>/dev/null
		if [ "$rc" = 1 ] && python3 "$top_srcdir/tests/corrupt/check.py" ci-loops \
			"$tmp/orig.json" "$tmp/json" "$tmp/what" >"$tmp/check" 2>&1; then
			pass=$((pass + 1))
			echo "PASS $b 10000 self-looping coroutines ($opt): exit 1 in $secs s, every loop noted"
		else
			fail=$((fail + 1))
			echo "FAIL $b 10000 self-looping coroutines ($opt): exit $rc in $secs s"
			sed 's/^/    /' "$tmp/check" | head -5
		fi
	done
done
echo "$pass passed, $fail failed, $na not applicable"
[ "$fail" = 0 ] && [ "$pass" -gt 0 ]
