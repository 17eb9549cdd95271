#!/usr/bin/env bash
# gdb on live processes: under every Lua build, gdb starts lchost on
# fixtures/scenarios/live_probe.lua and stops at a breakpoint in a C
# function called from Lua three coroutines deep.  There:
#  - lua-bt's Lua frames must equal the truth the script wrote just
#    before (source and current line of every frame, innermost first);
#  - in the innermost luaV_execute frame, and in the next one out (whose
#    L is <optimized out> at -O2), lua-vm must name the lua_State that
#    frame runs, as the script printed it with tostring; lua-bt run in
#    that outer frame must still equal the truth;
#  - lua-states must list the running VM's four states with their
#    statuses, and the three idle VMs the script made (found by scanning
#    the process's mappings);
#  - lua-value, given the slots lua-stack lists, must show the script's
#    table {10, 20, x = "y"} and string, and "lua-value L" decode L
#    where gdb can read it;
#  - "continue" must let the program finish with its normal output.
# Then once more under gdbserver, as a remote target.
set -uo pipefail
top_srcdir=${top_srcdir:-.}
top_builddir=${top_builddir:-.}
out=${LUACORE_MATRIX_DIR:-$top_builddir/fixtures/out}
luaprof=$top_srcdir/gdb/luaprof.py
export LUACORE_LIB=$top_builddir/libcore/.libs/libluacore.so
export LC_TRUTH_LUA=$top_srcdir/fixtures/lua/truth.lua
script=$(cd "$top_srcdir/fixtures/scenarios" && pwd)/live_probe.lua
builds=${LC_GDB_LIVE_BUILDS:-"deb-5.1 deb-5.3 deb-5.4 src-5.2.4-O0 src-5.2.4-O2 src-5.4.7-O0 src-5.4.7-O2
 src-5.4.8-O0 src-5.4.8-O2 src-5.5.0-O0 src-5.5.0-O2"}
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT

"$top_srcdir/fixtures/build-lua.sh" "$out" $builds >/dev/null || {
	echo "FAIL: fixtures/build-lua.sh"; exit 1; }

status=0
optimized=0
typed=0
for b in $builds; do
	d=$tmp/$b
	mkdir -p "$d"
	cat >"$d/cmds.gdb" <<EOG
set pagination off
set confirm off
break lchost_probe_point
run
python open("$d/bt.txt", "w").write(gdb.execute("lua-bt", to_string=True))
python open("$d/states.txt", "w").write(gdb.execute("lua-states", to_string=True))
python
import re
st = gdb.execute("lua-stack", to_string=True)
open("$d/stack.txt", "w").write(st)
out = ""
for line in st.splitlines():
    m = re.match(r"\s*\[\s*\d+\] (0x[0-9a-f]+) .*(table: (0x[0-9a-f]+)|\"tab\\\\there\")$", line)
    if m and "residue" not in line:
        out += gdb.execute("lua-value -tvalue " + m.group(1), to_string=True)
        if m.group(3):
            out += gdb.execute("lua-value -gc " + m.group(3), to_string=True)
open("$d/value.txt", "w").write(out)
end
frame function luaV_execute
python
try:
    v = gdb.execute("lua-value L", to_string=True)
except gdb.error as e:
    v = "error: %s\n" % e
open("$d/valueL.txt", "w").write(v)
end
python open("$d/args3.txt", "w").write(gdb.execute("info args", to_string=True))
python open("$d/vm3.txt", "w").write(gdb.execute("lua-vm", to_string=True))
python
f, n = gdb.newest_frame(), 0
while f is not None:
    if f.name() == "luaV_execute":
        n += 1
        if n == 2:
            f.select()
            break
    f = f.older()
end
python open("$d/args2.txt", "w").write(gdb.execute("info args", to_string=True))
python open("$d/bt2.txt", "w").write(gdb.execute("lua-bt", to_string=True))
python open("$d/vm2.txt", "w").write(gdb.execute("lua-vm", to_string=True))
continue
EOG
	LC_TRUTH=$d/truth.tsv timeout 120 gdb -nx -batch -x "$luaprof" \
		-x "$d/cmds.gdb" --args "$out/$b/lchost" "$script" \
		>"$d/gdb.out" 2>&1 </dev/null
	fail=
	if ! res=$(python3 "$top_srcdir/tests/gdb/compare_truth.py" "$d/bt.txt" "$d/truth.tsv" 2>&1); then
		fail="lua-bt: $res"
	fi
	# The same with an outer luaV_execute frame selected (its L is
	# <optimized out> at -O2): lua-bt does not depend on the frame.
	if ! res2=$(python3 "$top_srcdir/tests/gdb/compare_truth.py" "$d/bt2.txt" "$d/truth.tsv" 2>&1); then
		fail="$fail; lua-bt in co2's luaV_execute: $res2"
	fi
	read -r _ main co1 co2 co3 < <(grep -a '^states' "$d/gdb.out" | tr '\t' ' ' | sed 's/thread: //g')
	if [ -z "${co3:-}" ]; then
		fail="$fail; the script printed no states"
	else
		grep -q "lua_State $co3 " "$d/vm3.txt" ||
			fail="$fail; lua-vm in co3's luaV_execute does not name $co3: $(grep -o 'lua_State 0x[0-9a-f]*' "$d/vm3.txt")"
		grep -q "lua_State $co2 " "$d/vm2.txt" ||
			fail="$fail; lua-vm in co2's luaV_execute does not name $co2: $(grep -o 'lua_State 0x[0-9a-f]*' "$d/vm2.txt")"
	fi
	# lua-states: the four states of the running VM, and the three idle
	# VMs found by scanning the process's mappings.
	read -r _ i1 i2 i3 < <(grep -a '^idle' "$d/gdb.out" | tr '\t' ' ')
	for want in "VMs: 4 (3 found only by scanning memory)" \
		"  lua_State ${main:-?} main normal on thread" \
		"  lua_State ${co1:-?} coroutine normal on thread" \
		"  lua_State ${co2:-?} coroutine normal on thread" \
		"  lua_State ${co3:-?} coroutine running on thread" \
		"  lua_State ${i1:-?} main idle" "  lua_State ${i2:-?} main idle" \
		"  lua_State ${i3:-?} main idle"; do
		grep -qF -- "$want" "$d/states.txt" ||
			fail="$fail; lua-states: no '$want'"
	done
	tab=$(grep -a '^table' "$d/gdb.out" | sed 's/.*table: //')
	for want in "table: $tab (array 2, hash 1)" '  [1] = 10' '  [2] = 20' \
		'  ["x"] = "y"' '"tab\there" (length 8)'; do
		n=$(grep -cxF "$want" "$d/value.txt")
		case $want in '"tab'*) need=1 ;; *) need=2 ;; esac
		[ "$n" -eq "$need" ] ||
			fail="$fail; lua-value: '$want' $n times, not $need"
	done
	# Where gdb can read L, lua-value L decodes that lua_State.
	if ! grep -q '^error: .*optimized out' "$d/valueL.txt"; then
		grep -q "^thread: ${co3:-?} (status 0)" "$d/valueL.txt" &&
			grep -q "lua_State ${co3:-?} coroutine running" "$d/valueL.txt" ||
			fail="$fail; lua-value L: $(head -1 "$d/valueL.txt")"
		typed=$((typed + 1))
	fi
	grep -q '^live_probe done: 10$' "$d/gdb.out" ||
		fail="$fail; no normal output after continue"
	grep -q 'exited normally' "$d/gdb.out" ||
		fail="$fail; the program did not exit normally"
	if grep -q '^luacore: \|Python Exception' "$d/gdb.out"; then
		fail="$fail; $(grep -m1 '^luacore: \|Python Exception' "$d/gdb.out")"
	fi
	opt=""
	if grep -q '^L = <optimized out>' "$d/args3.txt" "$d/args2.txt"; then
		opt=", L <optimized out> in a luaV_execute frame"
		optimized=$((optimized + 1))
	fi
	if [ -n "$fail" ]; then
		echo "FAIL $b: ${fail#; }"
		sed 's/^/    /' "$d/gdb.out" | tail -40
		status=1
	else
		echo "PASS $b: $res (also from the outer luaV_execute frame); lua-states right (4 states, 3 idle VMs); lua-vm right in both frames$opt; lua-value right; finished normally"
	fi
done
# A remote target: the same program under gdbserver (through a pipe),
# where gdb names the files it loaded "target:PATH".
d=$tmp/remote
mkdir -p "$d"
LC_TRUTH=$d/truth.tsv timeout 120 gdb -nx -batch -x "$luaprof" \
	-ex "target remote | exec gdbserver - $out/deb-5.4/lchost $script" \
	-ex 'break lchost_probe_point' -ex 'continue' \
	-ex "python open('$d/bt.txt', 'w').write(gdb.execute('lua-bt', to_string=True))" \
	-ex "python open('$d/states.txt', 'w').write(gdb.execute('lua-states', to_string=True))" \
	-ex 'continue' "$out/deb-5.4/lchost" >"$d/gdb.out" 2>&1 </dev/null
fail=
res=$(python3 "$top_srcdir/tests/gdb/compare_truth.py" "$d/bt.txt" "$d/truth.tsv" 2>&1) ||
	fail="lua-bt: $res"
grep -qF "VMs: 4 (3 found only by scanning memory)" "$d/states.txt" ||
	fail="$fail; lua-states: $(grep '^VMs' "$d/states.txt")"
grep -q '^live_probe done: 10$' "$d/gdb.out" || fail="$fail; no normal output"
if [ -n "$fail" ]; then
	echo "FAIL remote (gdbserver, deb-5.4): ${fail#; }"
	sed 's/^/    /' "$d/gdb.out" | tail -30
	status=1
else
	echo "PASS remote (gdbserver, deb-5.4): $res; lua-states found the 3 idle VMs; finished normally"
fi

# The optimized-out case must have been met, or the test did not test it.
if [ "$typed" -eq 0 ]; then
	echo "FAIL: no build could read L: lua-value L was not tested"
	status=1
fi
if [ "$optimized" -eq 0 ]; then
	echo "FAIL: no build had L <optimized out> in luaV_execute"
	status=1
fi
exit "$status"
