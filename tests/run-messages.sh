#!/usr/bin/env bash
# What luacore-inspect and luacore-sample say when they cannot read Lua,
# on real processes and their cores: every message names what was found,
# what is missing and what to do, with the documented exit status.
#  - LuaJIT without debug info (Debian's libluajit-5.1, lchost linked
#    against it): "LuaJIT in ...: no DWARF describes its lua_State ...
#    install its debug package or rebuild it with -g", core and live,
#    inspect and sample;
#  - Lua built into the executable, its debug info stripped: the release
#    from lua_ident, where it is, and how to keep debug info; Debian's
#    liblua5.4 without its debug info: the -dbg package to install;
#  - a core whose executable is gone, or replaced by another build: the
#    file named, the second argument suggested, and that argument works;
#  - the executable's debug info split off (.gnu_debuglink), the core
#    given alone: followed, and the frames match the script's own truth;
#  - luacore-sample: no Lua -> warning, exit 1 (2 when nothing was
#    sampled); more than half lost -> warning, exit 1; --vm counts only
#    its VM's samples as attempted; a --vm that is no VM says so, exit 2.
set -uo pipefail
top_srcdir=${top_srcdir:-.}
top_builddir=${top_builddir:-.}
src=$(cd "$top_srcdir" && pwd)
inspect=$(cd "$top_builddir/src" && pwd)/luacore-inspect
sample=$(cd "$top_builddir/src" && pwd)/luacore-sample
out=$(cd "${LUACORE_MATRIX_DIR:-$top_builddir/fixtures/out}" && pwd)
scen=$src/fixtures/scenarios/sample
export LC_TRUTH_LUA=$src/fixtures/lua/truth.lua
tmp=$(mktemp -d)
pids=
cleanup() {
	for p in $pids; do kill -KILL "$p" 2>/dev/null; wait "$p" 2>/dev/null; done
	rm -rf "$tmp"
}
trap cleanup EXIT
fail=0 pass=0
ok() { pass=$((pass + 1)); echo "PASS $*"; }
bad() { fail=$((fail + 1)); echo "FAIL $*"; }

# expect STATUS PATTERN -- ARGS...: luacore-inspect's exit status, and a
# line of its output (stdout and stderr) matching PATTERN.
expect() {
	local want=$1 pattern=$2; shift 3
	local rc=0
	"$inspect" "$@" >"$tmp/out" 2>&1 || rc=$?
	if [ "$rc" = "$want" ] && grep -qE -- "$pattern" "$tmp/out"; then
		ok "exit $rc /$pattern/: ${*##*/}"
	else
		bad "(exit $rc, wanted $want and /$pattern/): $*"
		sed 's/^/    /' "$tmp/out" | head -12
	fi
}

for f in src-5.4.7-O2/lchost src-5.4.7-O0/lchost deb-5.4/lchost; do
	[ -x "$out/$f" ] || { echo "FAIL: no $out/$f (tests/run-matrix.sh makes it)"; exit 1; }
done
for c in gcc objcopy gcore python3; do
	command -v "$c" >/dev/null || { echo "FAIL: $c is missing (see PACKAGES in dev.sh)"; exit 1; }
done
[ -f /usr/include/luajit-2.1/lua.h ] ||
	{ echo "FAIL: no LuaJIT headers (apt-get install libluajit-5.1-dev)"; exit 1; }

# The hosts, as make-core.sh finds them: LC_BUILDS/NAME/lchost.
b=$tmp/builds
mkdir -p "$b/luajit" "$b/stripped" "$b/debuglink" "$b/gone"
gcc -g -O0 -pthread -I/usr/include/luajit-2.1 -o "$b/luajit/lchost" \
	"$src/fixtures/host/lchost.c" -lluajit-5.1 || { echo "FAIL: cannot build lchost with LuaJIT"; exit 1; }
objcopy --strip-debug "$out/src-5.4.7-O2/lchost" "$b/stripped/lchost"
objcopy --only-keep-debug "$out/src-5.4.7-O2/lchost" "$b/debuglink/lchost.debug"
(cd "$b/debuglink" && objcopy --strip-debug --add-gnu-debuglink=lchost.debug \
	"$out/src-5.4.7-O2/lchost" lchost)
cp "$out/src-5.4.7-O2/lchost" "$b/gone/lchost"
cp "$out/src-5.4.7-O2/lchost" "$tmp/lchost.moved"
# Debian's liblua5.4 without its debug info: no DWARF, no build-id to
# find the -dbg package's by, no debuglink; the host loads this copy.
mkdir -p "$b/deblib" "$tmp/lib"
cp "$out/deb-5.4/lchost" "$b/deblib/lchost"
lib=$(ldd "$out/deb-5.4/lchost" | awk '/liblua5\.4/ { print $3 }')
objcopy --strip-debug --remove-section .note.gnu.build-id \
	--remove-section .gnu_debuglink "$lib" "$tmp/lib/liblua5.4.so.0"
for h in luajit stripped debuglink gone deblib; do
	lp=; [ "$h" = deblib ] && lp=$tmp/lib
	LD_LIBRARY_PATH=$lp LC_BUILDS=$b "$src/fixtures/make-core.sh" "$h" deep_recursion "$tmp/$h" >"$tmp/$h.log" 2>&1 ||
		{ echo "FAIL: make-core.sh $h: $(tail -3 "$tmp/$h.log")"; exit 1; }
done
rm "$b/gone/lchost"

# ---- luacore-inspect on the cores ----
expect 1 "LuaJIT in .*libluajit-5\.1\.so[.0-9]*: no DWARF describes its lua_State.*install its debug package or rebuild it with -g" -- "$tmp/luajit/core" "$tmp/luajit/exe"
expect 1 "^lua: none read" -- "$tmp/luajit/core" "$tmp/luajit/exe"
# No DWARF: the built-in layout of the release, which the report names
# (tests/run-nodebug.sh checks the frames, and a layout refused).
expect 0 "^lua layout: built-in layout of Lua 5\.4\.7 \(the module has no DWARF\), validated against memory: " -- "$tmp/stripped/core"
expect 0 "^lua layout: built-in layout of Lua 5\.4\.4 \(the module has no DWARF\), validated against memory: " -- "$tmp/deblib/core"
expect 1 "the executable .*/gone/lchost named in the core cannot be used \(No such file or directory; the core's build-id for it is [0-9a-f]+\).*give the executable the core ran as the second argument" -- "$tmp/gone/core"
expect 1 "no Lua VM found: .* and .*/gone/lchost, which the core names, cannot be read" -- "$tmp/gone/core"
expect 0 "^lua: 5\.4\.7 in " -- "$tmp/gone/core" "$tmp/lchost.moved"
expect 2 "cannot open the executable '.*/no-such-exe': No such file or directory" -- "$tmp/gone/core" "$tmp/no-such-exe"
# Another build at the path the core names.
cp "$out/src-5.4.7-O0/lchost" "$b/gone/lchost"
expect 1 "the executable .*/gone/lchost named in the core cannot be used \(the file there is not the one the core ran" -- "$tmp/gone/core"
rm "$b/gone/lchost"
# The debug info behind .gnu_debuglink, from the core alone and with the
# executable given: Lua read, frames as the script's own getinfo says.
for args in "$tmp/debuglink/core" "$tmp/debuglink/core $b/debuglink/lchost"; do
	rc=0
	# shellcheck disable=SC2086
	"$inspect" --json $args >"$tmp/dl.json" 2>"$tmp/dl.err" || rc=$?
	if [ "$rc" = 0 ] && python3 "$src/tests/matrix/compare.py" "$tmp/debuglink/truth.tsv" "$tmp/dl.json" >"$tmp/dl.cmp" 2>&1; then
		ok "debuglink followed: ${args//$tmp\//}"
	else
		bad "debuglink (exit $rc): ${args//$tmp\//}"
		tail -3 "$tmp/dl.err" "$tmp/dl.cmp" | sed 's/^/    /'
	fi
done

# ---- luacore-inspect -p ----
# make-core.sh's live mode: the program must be left running, untraced.
for h in luajit debuglink; do
	rm -rf "$tmp/live-$h"
	if ! LC_BUILDS=$b LC_LIVE_INSPECT=$inspect "$src/fixtures/make-core.sh" "$h" deep_recursion "$tmp/live-$h" >"$tmp/live.log" 2>&1; then
		bad "live $h: $(tail -3 "$tmp/live.log")"
		continue
	fi
	rc=$(cat "$tmp/live-$h/live.rc")
	case $h in
	luajit) want=1 pattern="LuaJIT in .*libluajit-5\.1\.so[.0-9]*: no DWARF describes its lua_State" ;;
	debuglink) want=0 pattern='"lua_version":"5\.4\.7"' ;;
	esac
	if [ "$rc" = "$want" ] && grep -qE "$pattern" "$tmp/live-$h/live.json" &&
		{ [ "$h" != debuglink ] || python3 "$src/tests/matrix/compare.py" "$tmp/live-$h/truth.tsv" "$tmp/live-$h/live.json" >/dev/null; }; then
		ok "live $h: exit $rc /$pattern/"
	else
		bad "live $h (exit $rc, wanted $want and /$pattern/)"
		head -c 600 "$tmp/live-$h/live.err"
	fi
done

# ---- luacore-sample ----
# start NAME HOST SCRIPT: run the host in the background, $! in $pid.
start() {
	(cd "$tmp" && LC_TRUTH=$tmp/$1.truth LC_READY=$tmp/$1.ready LC_SAMPLE_SECONDS=60 \
		exec "$2" "$3") >"$tmp/$1.prog" 2>&1 &
	pid=$!
	pids="$pids $pid"
}
stop() { kill -KILL "$1" 2>/dev/null; wait "$1" 2>/dev/null; }

# run_sample NAME ARGS...: luacore-sample into $tmp/NAME.{folded,err},
# exit status in $rc; then the status must follow from what it says:
# 2 when nothing was sampled of what was asked (no Lua, or --vm), else 1
# when more than half were lost (and it warns) or there is no Lua.
run_sample() {
	local name=$1; shift
	rc=0
	"$sample" -q -o "$tmp/$name.folded" "$@" >"$tmp/$name.out" 2>"$tmp/$name.err" || rc=$?
	if python3 - "$tmp/$name.err" "$rc" <<'PY'
import re, sys
err = open(sys.argv[1]).read(); rc = int(sys.argv[2])
m = re.search(r"samples: (\d+) attempted, (\d+) taken, (\d+) lost \(stack read failed (\d+), thread gone (\d+), inconsistent (\d+), released at the stop budget (\d+)\)", err)
if not m:
    print("    no quality line"); sys.exit(1)
att, taken, lost, rd, gone, inc, held = map(int, m.groups())
no_lua = "warning: native stacks only, no Lua frames" in err
vm = "--vm 0x" in err and "no sample was of that VM" in err
poor = att > 0 and lost * 2 > att
want = 2 if (no_lua or vm) and taken == 0 else 1 if poor or no_lua else 0
warned = re.search(r"warning: %d of %d samples lost" % (lost, att), err) is not None
# Every attempt is taken or lost to a read or a gone thread.
counted = att == taken + rd + gone + held
if rc != want or warned != poor or not counted:
    print("    exit %d, wanted %d; %d attempted, %d taken, %d lost; poor %s, warned %s, counted %s"
          % (rc, want, att, taken, lost, poor, warned, counted))
    sys.exit(1)
PY
	then return 0; else return 1; fi
}

# sample_expect NAME STATUS PATTERN -- ARGS...
sample_expect() {
	local name=$1 want=$2 pattern=$3; shift 4
	if run_sample "$name" "$@" && [ "$rc" = "$want" ] && grep -qE -- "$pattern" "$tmp/$name.err"; then
		ok "sample $name: exit $rc /$pattern/"
	else
		bad "sample $name (exit $rc, wanted $want and /$pattern/)"
		sed 's/^/    /' "$tmp/$name.err" | head -10
	fi
}

# LuaJIT busy: native stacks only, exit 1.
start lj_busy "$b/luajit/lchost" "$scen/split.lua"; lj=$pid
sleep 0.5
sample_expect lj_busy 1 "warning: LuaJIT in .*libluajit-5\.1\.so[.0-9]*: no DWARF describes its lua_State" -- -d 1 -p "$lj"
grep -q "warning: native stacks only, no Lua frames: LuaJIT in .*: no DWARF" "$tmp/lj_busy.err" &&
	ok "sample lj_busy: the end of the report says so again" || bad "sample lj_busy: no closing warning"
stop "$lj"
# LuaJIT idle (parked): nothing sampled, exit 2.
start lj_idle "$b/luajit/lchost" "$src/fixtures/scenarios/deep_recursion.lua"; lj=$pid
for _ in $(seq 100); do [ -e "$tmp/lj_idle.ready" ] && break; sleep 0.1; done
sample_expect lj_idle 2 "warning: LuaJIT in .*: no DWARF describes" -- -d 0.5 -p "$lj"
stop "$lj"
# Lua built in without debug info: sampled with the built-in layout.
start stripped "$b/stripped/lchost" "$scen/split.lua"; st=$pid
sleep 0.3
sample_expect stripped 0 "samples: [0-9]+ attempted, [1-9][0-9]* taken" -- -d 1 -p "$st"
if grep -q 'hot_a' "$tmp/stripped.folded"; then
	ok "sample stripped: the Lua functions, with the built-in layout"
else
	bad "sample stripped: no hot_a in the profile: $(head -3 "$tmp/stripped.folded")"
fi
stop "$st"
# Two VMs on two threads: --vm with one of them, then with no VM's.
start two "$out/deb-5.4/lchost" "$scen/two_vms.lua"; two=$pid
sleep 0.5
vms=$("$inspect" --json --no-scan -p "$two" | python3 -c 'import json,sys; print(" ".join(v["address"] for v in json.load(sys.stdin)["vms"]))')
set -- $vms
if [ $# = 2 ]; then
	sample_expect vm_one 0 "samples: [0-9]+ attempted" -- -d 1 --vm "$1" -p "$two"
	# The other VM's samples are not in the profile: vm2_work is VM 2's.
	if grep -q "vm1_work" "$tmp/vm_one.folded" && ! grep -q "vm2_work" "$tmp/vm_one.folded"; then
		ok "sample --vm $1: only that VM's functions"
	elif grep -q "vm2_work" "$tmp/vm_one.folded" && ! grep -q "vm1_work" "$tmp/vm_one.folded"; then
		ok "sample --vm $1: only that VM's functions"
	else
		bad "sample --vm $1: $(cut -c1-100 "$tmp/vm_one.folded" | head -3)"
	fi
	sample_expect vm_none 2 "--vm 0x10: no sample was of that VM; the samples were of the VMs ($1, $2|$2, $1)" -- -d 0.5 --vm 0x10 -p "$two"
else
	bad "two_vms: inspect -p found VMs '$vms', wanted 2"
fi
stop "$two"
# A stop budget of 1 us: every stop lasts longer before its copy is done,
# so every thread is let go unread and the sample lost to the budget;
# more than half lost: exit 1 with the warning.  The longest hold and the
# budget are said.
start budget "$out/deb-5.4/lchost" "$scen/split.lua"; bp=$pid
sleep 0.3
sample_expect budget 1 "released at the stop budget [1-9][0-9]*\)" -- -d 1 --stop-budget 0.001 -p "$bp"
if grep -qE "samples: [0-9]+ attempted, 0 taken" "$tmp/budget.err" &&
   grep -qE "longest hold [0-9.]+ us \(stop budget 1 us\)" "$tmp/budget.err"; then
	ok "sample budget: no sample taken; the longest hold and the budget said"
else
	bad "sample budget: $(grep 'samples:' "$tmp/budget.err")"
fi
# The default budget (1 ms) is said too.
sample_expect budget_default 0 "longest hold [0-9.]+ us \(stop budget 1000 us\)" -- -d 0.5 -p "$bp"
stop "$bp"

echo "$pass passed, $fail failed"
[ "$fail" = 0 ]
