#!/usr/bin/env bash
# luacore-sample on Lua built without debug info (the builds of
# tests/run-nodebug.sh, whose frames that test checks), on an idle
# machine: shares measured while other tests run are skewed.
#  - every release 5.1.1-5.5.0 built at -O2 without -g and stripped
#    (fixtures/build-lua.sh nodebug-VERSION, then strip), and three of
#    them unstripped: the 60/30/10 split's shares within the sampler's
#    tolerance (tests/sample/shares.py); stripped, go tool pprof -top's
#    first row is spin;
#  - a stripped multi-VM host (fixtures/host/skyhost.c, 6 VMs on 2
#    worker threads, Lua 5.4.7 linked in, no -g): luacore-sample's shares
#    of the bursty services within 3 points of their own clocks, and
#    luacore-inspect -p --vm-name SERVICE_NAME names all 6 VMs;
#  - a modified Lua (5.4.7 with a field added at the start of lua_State
#    and of global_State, no -g) sampled with --types lstate.o (its
#    lstate.c compiled with -g alone): the split's shares.
. "$(dirname "$0")/lib.sh"
releases=${LC_NODEBUG_RELEASES:-$("$src/fixtures/build-lua.sh" --releases)}
# shellcheck disable=SC2046
fixtures $(for v in $releases; do echo "nodebug-$v"; done) nodebug-5.4.7
export LC_TRUTH_LUA=$src/fixtures/lua/truth.lua
b=$tmp/builds
for v in $releases; do
	mkdir -p "$b/strip-$v"
	strip -o "$b/strip-$v/lchost" "$out/nodebug-$v/lchost"
done

# split NAME OUT EXE [OPTION...]: luacore-sample (OPTIONs) of EXE running
# split.lua into OUT.pb.gz; its shares against the script's own.
split() {
	local name=$1 d=$2 exe=$3 rc=0 res
	shift 3
	LC_SAMPLE_SECONDS=1 "$sample" -q -r 500 "$@" -o "$d.pb.gz" -- "$exe" \
		"$src/fixtures/scenarios/sample/split.lua" >"$d.out" 2>"$d.err" || rc=$?
	if [ "$rc" = 0 ] && res=$("$py" "$src/tests/sample/shares.py" split "$d.pb.gz" "$d.out" \
		"$src/tests/pprof/profile.proto" 2>&1); then
		echo "PASS $name: split shares within tolerance"
	else
		echo "FAIL $name: exit $rc: $(tail -2 "$d.err")"
		status=1
	fi
	echo "${res:-}" | sed 's/^/    /'
}

# The sampler: split.lua's own shares.
export HOME=${HOME:-$tmp} GOCACHE=${GOCACHE:-$tmp/gocache}
for v in $releases; do
	kinds=strip
	echo "$v" | grep -qE '^(5\.1\.5|5\.3\.6|5\.5\.0)$' && kinds="nodebug strip"
	for kind in $kinds; do
		d=$tmp/sample-$kind-$v
		exe=$out/nodebug-$v/lchost
		[ "$kind" = strip ] && exe=$b/strip-$v/lchost
		split "$kind $v sampler" "$d" "$exe"
		[ "$kind" = strip ] || continue
		top=$(go tool pprof -top "$d.pb.gz" 2>/dev/null | awk '/flat%/ { getline; print; exit }')
		if echo "$top" | grep -q ' spin ('; then
			echo "PASS strip $v sampler: go tool pprof -top's first row is spin"
		else
			echo "FAIL strip $v sampler: go tool pprof -top's first row: $top"
			status=1
		fi
	done
done

# A stripped multi-VM host.
if echo "$releases" | tr ' ' '\n' | grep -qx 5.4.7; then
	strip -o "$b/strip-5.4.7/skyhost" "$out/nodebug-5.4.7/skyhost"
	svc=$src/fixtures/scenarios/sky/service.lua
	sky_services="$svc:spin,0.030,0.020 $svc:burst10,0.010,0.090 $svc:burst1,0.001,0.009 $svc:burst100,0.0001,0.0019 $svc:idle1,0,1 $svc:idle2,0,1"
	d=$tmp/sky-strip
	# shellcheck disable=SC2086
	"$sample" -q -r 1000 -o "$d.pb.gz" -- "$b/strip-5.4.7/skyhost" 2 5 $sky_services >"$d.out" 2>"$d.err"
	if grep -q "^skyhost done" "$d.out" &&
		res=$("$py" "$src/tests/sample/shares.py" sky "$d.pb.gz" "$d.out" "$src/tests/pprof/profile.proto" 3 2>&1); then
		echo "PASS stripped skyhost, 1000 Hz, 2 workers: the services' shares within 3 points"
	else
		echo "FAIL stripped skyhost: $(tail -2 "$d.err")"
		status=1
	fi
	echo "${res:-}" | sed 's/^/    /'
	# shellcheck disable=SC2086
	"$b/strip-5.4.7/skyhost" 2 4 $sky_services >/dev/null &
	sky=$!
	pids+=("$sky")
	sleep 1
	"$inspect" --vm-name SERVICE_NAME -p "$sky" >"$d.txt" 2>&1
	names=$(grep -c '^VM 0x.*, name "\(spin\|burst10\|burst1\|burst100\|idle1\|idle2\)"$' "$d.txt")
	if [ "$names" = 6 ]; then
		echo "PASS stripped skyhost, luacore-inspect -p --vm-name: 6 VMs, each named"
	else
		echo "FAIL stripped skyhost, luacore-inspect -p --vm-name: $names of 6 VMs named"
		grep '^VM\|warning' "$d.txt" | head -8 | sed 's/^/    /'
		status=1
	fi
	wait "$sky"
fi

# A modified Lua, its types from one object file built with -g.
modified_variant
split "a modified Lua, luacore-sample --types lstate.o" "$tmp/modified-sample" \
	"$b/modified/lchost" --types "$tmp/modified/lstate.o"
exit $status
