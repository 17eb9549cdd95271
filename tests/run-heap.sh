#!/usr/bin/env bash
# The heap from outside (luacore-inspect --heap), on real cores and live
# processes of every release family (with DWARF, and stripped: the
# built-in layouts), against what the scripts say:
#  - census (heap_census.lua): per-type counts equal a walk the script
#    makes with the debug library; bytes within 5% of the VM's own count,
#    the remainder reported; the JSON matches doc/luacore-heap.schema.json;
#  - paths (heap_paths.lua): six planted objects each get exactly their
#    shortest path and labels; the weak one is unreachable with --strong;
#  - diff (heap_diff.lua): snapshots after iterations 10 and 110, live
#    (--heap-save, --diff) and a core against the live snapshot: exactly
#    100*K new tables of class Leak at _G.leaks[*], no growth of the
#    churned class; the stop time said; the process left running;
#  - pprof: go tool pprof -top reads the profiles without flags;
#  - LuaJIT (upstream, OpenResty's, Debian's): the census (counts of
#    what Lua reaches exact; of tables, C functions and threads at least
#    the script's: LuaJIT keeps its own; classes exact), the planted
#    paths, a live diff.
set -u
. "${top_srcdir:-.}/tests/lib.sh"

BUILDS="src-5.1.1-O2 src-5.1.5-O2 src-5.2.4-O2 src-5.3.6-O2 src-5.4.0-O2 src-5.4.7-O2 src-5.5.0-O2 deb-5.1 deb-5.3 deb-5.4 nodebug-5.2.4 nodebug-5.4.7"
# shellcheck disable=SC2086
fixtures $BUILDS
schema=$src/doc/luacore-heap.schema.json
check_py=$src/tests/heap/check.py
# LuaJIT: the census, on the three builds of
# fixtures/build-luajit.sh's trees the other tests use.
LJ_BUILDS="lj-upstream lj-openresty lj-deb"
# shellcheck disable=SC2086
"$src/fixtures/build-luajit.sh" "$out" $LJ_BUILDS >"$tmp/lj-build.log" 2>&1 ||
	{ echo "FAIL fixtures/build-luajit.sh: $(tail -3 "$tmp/lj-build.log")"; status=1; }
for b in $LJ_BUILDS; do
	d=$tmp/$b-census
	if ! LC_BUILDS=$out "$src/fixtures/make-core.sh" "$b" heap_census "$d" >"$tmp/mk.log" 2>&1 &&
	   [ ! -e "$d/core" ]; then
		echo "FAIL $b: no heap_census core: $(tail -3 "$tmp/mk.log")"; status=1; continue
	fi
	"$inspect" --heap --json "$d/core" >"$d/heap.json" 2>"$d/heap.err"
	check "$b census exit status 0" [ $? = 0 ]
	"$py" "$check_py" census "$d/log" "$d/heap.json" "$schema" | sed "s/^\(PASS\|FAIL\) /\1 $b /" |
		tee "$d/check.out"
	grep -q "^FAIL" "$d/check.out" && status=1
done

for b in $BUILDS; do
	d=$tmp/$b-census
	if ! "$src/fixtures/make-core.sh" "$b" heap_census "$d" >"$tmp/mk.log" 2>&1 &&
	   [ ! -e "$d/core" ]; then
		echo "FAIL $b: no heap_census core: $(tail -3 "$tmp/mk.log")"; status=1; continue
	fi
	"$inspect" --heap --json "$d/core" >"$d/heap.json" 2>"$d/heap.err"
	check "$b census exit status 0" [ $? = 0 ]
	"$py" "$check_py" census "$d/log" "$d/heap.json" "$schema" | sed "s/^\(PASS\|FAIL\) /\1 $b /" |
		tee "$d/check.out"
	grep -q "^FAIL" "$d/check.out" && status=1
	"$inspect" --heap "$d/core" >"$d/heap.txt" 2>&1
	check "$b census text" grep -q "^  by type:" "$d/heap.txt"

	d=$tmp/$b-paths
	if ! "$src/fixtures/make-core.sh" "$b" heap_paths "$d" >"$tmp/mk.log" 2>&1 &&
	   [ ! -e "$d/core" ]; then
		echo "FAIL $b: no heap_paths core: $(tail -3 "$tmp/mk.log")"; status=1; continue
	fi
	args=()
	while IFS=$'\t' read -r kind _ addr _; do
		case $kind in expect | retain) args+=(--path "$addr") ;; esac
	done <"$d/log"
	"$inspect" --heap --json "${args[@]}" "$d/core" >"$d/paths.json" 2>"$d/paths.err"
	"$inspect" --heap --json --strong "${args[@]}" "$d/core" >"$d/strong.json" 2>>"$d/paths.err"
	{ "$py" "$check_py" paths "$d/log" "$d/paths.json"
	  "$py" "$check_py" paths "$d/log" "$d/strong.json" strong; } |
		sed "s/^\(PASS\|FAIL\) /\1 $b /" | tee "$d/check.out"
	grep -q "^FAIL" "$d/check.out" && status=1
done

# LuaJIT's paths: the same six planted objects.
for b in $LJ_BUILDS; do
	d=$tmp/$b-paths
	if ! LC_BUILDS=$out "$src/fixtures/make-core.sh" "$b" heap_paths "$d" >"$tmp/mk.log" 2>&1 &&
	   [ ! -e "$d/core" ]; then
		echo "FAIL $b: no heap_paths core: $(tail -3 "$tmp/mk.log")"; status=1; continue
	fi
	args=()
	while IFS=$'\t' read -r kind _ addr _; do
		case $kind in expect | retain) args+=(--path "$addr") ;; esac
	done <"$d/log"
	"$inspect" --heap --json "${args[@]}" "$d/core" >"$d/paths.json" 2>"$d/paths.err"
	"$inspect" --heap --json --strong "${args[@]}" "$d/core" >"$d/strong.json" 2>>"$d/paths.err"
	{ "$py" "$check_py" paths "$d/log" "$d/paths.json"
	  "$py" "$check_py" paths "$d/log" "$d/strong.json" strong; } |
		sed "s/^\(PASS\|FAIL\) /\1 $b /" | tee "$d/check.out"
	grep -q "^FAIL" "$d/check.out" && status=1
done

# Diffs: live snapshots and a core of the same process.
K=3
for b in deb-5.1 src-5.3.6-O2 src-5.4.7-O2 src-5.5.0-O2 lj-upstream; do
	d=$tmp/$b-diff
	mkdir -p "$d"
	(cd "$d" && LC_TRUTH_LUA=$src/fixtures/lua/truth.lua LC_TRUTH=$d/truth.tsv \
		exec "$out/$b/lchost" "$src/fixtures/scenarios/heap_diff.lua" \
		"$d/phase" "$d/go" "$K" 10 110) >"$d/log" 2>&1 &
	pid=$!
	pids+=("$pid")
	wait_phase() {
		for _ in $(seq 300); do
			grep -q "^$1 " "$d/phase" 2>/dev/null && return 0
			sleep 0.1
		done
		return 1
	}
	if ! wait_phase 1; then
		echo "FAIL $b diff: phase 1 never came: $(tail -2 "$d/log")"; status=1; continue
	fi
	"$inspect" -p "$pid" --heap --heap-save "$d/A.snap" >"$d/A.txt" 2>"$d/A.err"
	check "$b diff: live snapshot A, exit status 0" [ $? = 0 ]
	check "$b diff: the stop time said" grep -q "was stopped for [0-9.]* ms" "$d/A.err"
	check "$b diff: left running after snapshot A" running "$pid"
	rm -f "$d/phase"
	touch "$d/go"
	if ! wait_phase 2; then
		echo "FAIL $b diff: phase 2 never came: $(tail -2 "$d/log")"; status=1; continue
	fi
	"$inspect" -p "$pid" --heap --json --diff "$d/A.snap" --pprof "$d/B.pb" \
		>"$d/B.json" 2>"$d/B.err"
	check "$b diff: live diff, exit status 0" [ $? = 0 ]
	check "$b diff: left running after the diff" running "$pid"
	gcore -o "$d/core" "$pid" >/dev/null 2>&1
	kill -KILL "$pid" 2>/dev/null
	{ "$py" "$check_py" diff "$d/B.json" "$K" 100
	  if [ -e "$d/core.$pid" ]; then
		"$inspect" --heap --json --diff "$d/A.snap" "$d/core.$pid" "$out/$b/lchost" >"$d/C.json" 2>"$d/C.err"
		"$py" "$check_py" diff "$d/C.json" "$K" 100 | sed 's/diff/core diff/'
	  else
		echo "FAIL no core of the diff scenario"
	  fi; } | sed "s/^\(PASS\|FAIL\) /\1 $b /" | tee "$d/check.out"
	grep -q "^FAIL" "$d/check.out" && status=1
	if command -v go >/dev/null; then
		go tool pprof -top "$d/B.pb" >"$d/pprof.txt" 2>&1
		check "$b pprof: go tool pprof -top reads it, Leak tables on top" \
			grep -q "table Leak" "$d/pprof.txt"
		"$inspect" --heap --pprof "$d/class.pb" --pprof-by class "$d/core.$pid" \
			"$out/$b/lchost" >/dev/null 2>&1
		go tool pprof -top -sample_index=inuse_objects "$d/class.pb" >"$d/class.txt" 2>&1
		check "$b pprof by class: inuse_objects" grep -q "table Leak" "$d/class.txt"
	else
		echo "FAIL go tool pprof: no go (golang-go)"; status=1
	fi
done
exit $status
