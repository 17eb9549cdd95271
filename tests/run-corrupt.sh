#!/usr/bin/env bash
# Corrupted cores: a real core of every Lua build, damaged the way a wild
# write or a use-after-free leaves memory (tests/corrupt/corrupt.c: a
# CallInfo cycle, previous/next links that disagree, a function slot
# outside the stack, a lua_State's stack pointer moved 1 MiB down, a Proto with absurd sizes, a string of 2^40 bytes, a
# GC list that loops, a global_State whose mainthread is not its own, an
# errorJmp chain into unmapped memory, a machine stack overwritten with
# 0x41 bytes).  luacore-inspect must finish within 30 s with exit status
# 1 (a partial result), mark what is wrong (a note, or a frame marked
# "(partial)"), and still print valid JSON.
set -uo pipefail
top_builddir=${top_builddir:-.}
inspect=$top_builddir/src/luacore-inspect
corrupt=$top_builddir/tests/corrupt/corrupt
out=${LUACORE_MATRIX_DIR:-$top_builddir/fixtures/out}
builds=${LC_CORRUPT_BUILDS:-"deb-5.1 deb-5.3 deb-5.4 src-5.2.4-O0 src-5.2.4-O2 src-5.4.7-O0 src-5.4.7-O2
 src-5.4.8-O0 src-5.4.8-O2 src-5.5.0-O0 src-5.5.0-O2"}
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
pass=0 fail=0 na=0

for b in $builds; do
	d=$out/$b/coroutines3
	for sc in ci-cycle ci-next stack-outside stack-moved proto-sizes string-len gc-cycle \
		mainthread longjmp smashed-stack; do
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
		# The GC lists are walked when memory is not scanned.
		opt=
		[ "$sc" = gc-cycle ] && opt=--no-scan
		t0=$(date +%s.%N)
		rc=0
		timeout 30 "$inspect" $opt "$tmp/core" "$d/exe" >"$tmp/txt" 2>&1 || rc=$?
		secs=$(awk -v a="$t0" -v b="$(date +%s.%N)" 'BEGIN { printf "%.2f", b - a }')
		jrc=0
		timeout 30 "$inspect" $opt --json --locals --stack "$tmp/core" "$d/exe" \
			>"$tmp/json" 2>/dev/null || jrc=$?
		if [ "$rc" = 1 ] && [ "$jrc" = 1 ] && grep -qE "note: |\(partial\)" "$tmp/txt" &&
			python3 -c 'import json, sys; json.load(open(sys.argv[1]))' "$tmp/json"; then
			pass=$((pass + 1))
			echo "PASS $b $sc: exit 1 in $secs s; $(grep -m1 -oE 'note: .*|.*\(partial\)' "$tmp/txt" | sed 's/^ *//' | cut -c1-120)"
		else
			fail=$((fail + 1))
			echo "FAIL $b $sc: exit $rc (json $jrc) in $secs s, wanted 1, marked, and valid JSON"
			sed 's/^/    /' "$tmp/what" | head -5
			grep -m3 -E "note:|error" "$tmp/txt" | sed 's/^/    /'
		fi
	done
done
echo "$pass passed, $fail failed, $na not applicable"
[ "$fail" = 0 ] && [ "$pass" -gt 0 ]
