#!/usr/bin/env bash
# luacore-sample on LuaJIT (upstream and OpenResty's luajit2, as
# tests/run-luajit.sh builds them), on an otherwise idle machine (after
# run-sample-nonblocking.sh): the interpreter running the 60/30/10 split
# (fixtures/scenarios/sample/split.lua, which measures its own shares)
# with the JIT compiler on and off (-joff), sampled at 1 kHz for 4 s
# (about 4,900 samples: a binomial share's standard deviation under 0.8
# points): each function's share within 3 points of what the script
# measured (tests/sample/shares.py), every sample of them
# labelled with what the VM was doing (pprof label vmstate: trace#N, or
# lua) and the roll-up in jit.p's letters matching the labels
# (tests/luajit/vmstate.py); the check fails on the other mode's profile.
. "$(dirname "$0")/lib.sh"
"$src/fixtures/build-luajit.sh" "$out" lj-upstream lj-openresty >"$tmp/build.log" 2>&1 ||
	{ cat "$tmp/build.log"; echo "FAIL: fixtures/build-luajit.sh"; exit 1; }
# luacore-sample on LuaJIT's interpreter running the 60/30/10 split
# (fixtures/scenarios/sample/split.lua, which measures its own shares),
# with the JIT compiler on and off (-joff): each function's share as the
# script measured it (tests/sample/shares.py), and every sample of them
# labelled with what the VM was doing (vmstate trace#N, or lua), the
# roll-up in jit.p's letters matching the labels (tests/luajit/
# vmstate.py); the check fails on the other mode's profile.
sample=$(cd "$top_builddir/src" && pwd)/luacore-sample
proto=$src/tests/pprof/profile.proto
for id in lj-upstream lj-openresty; do
	for mode in jit interp; do
		f=$tmp/split-$id-$mode
		rc=0
		LC_SAMPLE_SECONDS=4 "$sample" -q -r 1000 -o "$f.pb.gz" -- "$out/$id/luajit" \
			$([ "$mode" = interp ] && echo -joff) "$src/fixtures/scenarios/sample/split.lua" \
			>"$f.out" 2>"$f.err" || rc=$?
		if [ "$rc" != 0 ] || ! grep -q '^split done' "$f.out"; then
			check "$id split, JIT $mode: luacore-sample exit $rc: $(tail -2 "$f.err")" false
			grep 'samples:' "$f.err" | sed 's/^/    /'
			continue
		fi
		on=$([ $mode = jit ] && echo on || echo off)
		rc=0
		res=$("$py" "$src/tests/sample/shares.py" split "$f.pb.gz" "$f.out" "$proto" 3 2>&1) || rc=$?
		check "$id split, JIT $on: shares within 3 points of the script's" [ "$rc" = 0 ]
		echo "$res" | sed 's/^/    /'
		rc=0
		res=$("$py" "$src/tests/luajit/vmstate.py" "$f.pb.gz" "$f.err" "$proto" "$mode" 2>&1) || rc=$?
		check "$id split, JIT $on: vmstate labels ($(head -1 <<<"$res"))" [ "$rc" = 0 ]
		tail -n +2 <<<"$res" | sed 's/^/    /'
	done
	other=$tmp/split-$id-interp
	if [ -f "$other.pb.gz" ]; then
		if "$py" "$src/tests/luajit/vmstate.py" "$other.pb.gz" "$other.err" "$proto" jit >/dev/null 2>&1; then
			check "$id negative control: the JIT-off profile passes as JIT on" false
		else
			check "$id negative control: the JIT-off profile fails as JIT on" true
		fi
	fi
done

exit "$status"
