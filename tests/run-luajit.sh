#!/usr/bin/env bash
# The LuaJIT family (vm/luajit/), on upstream LuaJIT v2.1 (1ee778a4, 2026)
# and OpenResty's luajit2 (v2.1-20240314), built with -g
# (fixtures/build-luajit.sh):
#  - the layout read from each one's DWARF, in the executable with the VM
#    linked in and in libluajit.so, holds every field, type size and
#    enumerator as gdb reads them from the same file (102 of them,
#    tests/luajit/gdb_layout.py); the check itself fails on a dump with
#    two values changed;
#  - what tells the builds apart, as the sources have it: OpenResty's
#    lua_State has exdata (112 bytes, GG_State.g at 112, the dispatch
#    table 4008 bytes after it), upstream's global_State has vmthref
#    (2025-11: cur_L at 376, GCROOT_MAX 39); both GC64;
#  - a core of each one's interpreter parked in io.read (vmstate C)
#    below a vararg main chunk, a vararg function, a pcall and an __index
#    metamethod: the frames read from g->cur_L (tests/luajit/lj-frames,
#    the decoder alone) equal the script's debug.getinfo, frame by frame,
#    current lines and names (from the caller's bytecode:
#    vm/luajit/names.c) included; the comparison fails on a truth with
#    one line or one namewhat changed;
#  - its interpreter busy in an endless loop with the JIT compiler off
#    (the frame base and line from the interpreter's registers) and on
#    (a compiled trace: the frames from jit_base, the line from the
#    snapshot whose machine code covers the trace's pc, machine frames
#    unwound through the trace to main), read live and from a core, and
#    by gdb: the frames below the loop equal the script's, the line is
#    in the loop's body (tests/luajit/compare_busy.py); and a compiled
#    loop that calls usleep through the FFI: usleep's machine frames,
#    the trace's, and the Lua frames below (fixtures/scenarios/luajit/
#    ffi.lua); and a compiled loop whose trace inlined a call: the
#    inlined function's frame, which only the trace's snapshot holds,
#    above the loop's (fixtures/scenarios/luajit/inline.lua);
#  - nvim (Debian's neovim, with Debian's LuaJIT rebuilt with -g) running
#    the busy loop: live, sampled, and from its core;
#  - the matrix's scenarios (16 of them: deep recursion, tail calls,
#    nested coroutines, re-entry, errors in pcall, metamethods, varargs,
#    finalizers, blocking I/O, several VMs on one thread and on two,
#    an allocation in a table constructor, yields from C, a resume from
#    a C function, ...) under lchost linked with each fork: luacore-inspect
#    -p on the running program, luacore-inspect and lj-frames on its core,
#    and gdb's lua-bt, each equal to the truth;
#  - post-mortem detail of 5 scenarios (upstream, OpenResty's, Debian's):
#    locals and upvalues, coroutine statuses, the resume chain,
#    yieldability, the collector's state, 100 VMs;
#  - 48 damaged cores per fork ($LC_LJ_DAMAGED per scenario: 16; run-fuzz
#    adds structure-aware mutants under ASan) (words near the threads and VMs
#    replaced, tests/luajit/mutate.py): read by lj-frames and by
#    luacore-inspect with exit 0 or 1, never killed by a signal or past a
#    timeout;
#  - PUC Lua 5.4.7 and LuaJIT in one process (fixtures/host/mixhost.c),
#    live, from its core and by gdb: both VMs, each thread's frames;
#    and sampled, each thread under its own interpreter's frames;
#  - Debian's libluajit-5.1.so.2, shipped without debug info: refused
#    with a message that says so and what to do.
. "$(dirname "$0")/lib.sh"
lj=$(cd "$top_builddir/tests/luajit" && pwd)/lj-layout
# The forks from their tarballs, and Debian's luajit and luajit2 from
# their source packages (rebuilt with -g: Debian ships no debug info).
LJ_IDS="lj-upstream lj-openresty lj-deb lj-deb2"
"$src/fixtures/build-luajit.sh" "$out" $LJ_IDS >"$tmp/build.log" 2>&1 ||
	{ cat "$tmp/build.log"; echo "FAIL: fixtures/build-luajit.sh"; exit 1; }

# value DUMP NAME: the offset (or value) of NAME in a dump.
value() { awk -v n="$2" '$1 == n { print $2 }' "$1"; }

for id in $LJ_IDS; do
	for f in luajit libluajit.so; do
		d=$tmp/$id-$f.txt
		if ! "$lj" "$out/$id/$f" >"$d" 2>"$tmp/err"; then
			echo "FAIL $id $f: lj-layout: $(cat "$tmp/err")"
			status=1
			continue
		fi
		res=$(gdb -batch -nx -ex "py DUMP='$d'" -x "$src/tests/luajit/gdb_layout.py" \
			"$out/$id/$f" 2>&1 | tail -1)
		check "$id $f: the layout as gdb reads the DWARF ($res)" \
			[ "$res" = "layout: 102 checked, 0 differ" ]
		check "$id $f: $(sed -n 's/^desc //p' "$d")" grep -q '^gc64 1$' "$d"
	done
done

u=$tmp/lj-upstream-luajit.txt o=$tmp/lj-openresty-luajit.txt
if [ -s "$u" ] && [ -s "$o" ]; then
	check "upstream: no exdata, vmthref at 280, cur_L at 376, GCROOT_MAX 39" \
		[ "$(value "$u" lua_State.exdata)" = -1 -a "$(value "$u" global_State.vmthref)" = 280 \
		-a "$(value "$u" global_State.cur_L)" = 376 -a "$(value "$u" enum.gcroot_max)" = 39 \
		-a "$(value "$u" fork)" = upstream ]
	check "OpenResty: exdata at 96, lua_State 112 bytes, g at 112, dispatch 4008 after g, no vmthref" \
		[ "$(value "$o" lua_State.exdata)" = 96 -a "$(value "$o" sizeof.lua_State)" = 112 \
		-a "$(value "$o" GG_State.g)" = 112 \
		-a $(($(value "$o" GG_State.dispatch) - $(value "$o" GG_State.g))) = 4008 \
		-a "$(value "$o" global_State.vmthref)" = -1 -a "$(value "$o" fork)" = openresty ]
	# The check fails when the dump is wrong: two values changed.
	sed 's/^global_State.cur_L 376 8$/global_State.cur_L 368 8/; s/^lua_State.exdata -1 0$/lua_State.exdata 96 8/' \
		"$u" >"$tmp/bad.txt"
	res=$(gdb -batch -nx -ex "py DUMP='$tmp/bad.txt'" -x "$src/tests/luajit/gdb_layout.py" \
		"$out/lj-upstream/luajit" 2>&1 | tail -1)
	check "negative control: a dump with two values changed ($res)" \
		[ "$res" = "layout: 102 checked, 2 differ" ]
fi

# park ID DIR: LuaJIT's interpreter of ID runs fixtures/scenarios/luajit/
# park.lua until it blocks in io.read on a FIFO; a core of it into
# DIR/core, its truth in DIR/truth.tsv; then the read is released and the
# script must end.
park() {
	local id=$1 d=$2 pid fd
	mkdir -p "$d"
	mkfifo "$d/in"
	exec {fd}<>"$d/in"
	(cd "$d" && LC_TRUTH_LUA=$src/fixtures/lua/truth.lua LC_READY=$d/ready \
		LC_TRUTH=$d/truth.tsv exec "$out/$id/luajit" \
		"$src/fixtures/scenarios/luajit/park.lua" "arg") <"$d/in" >"$d/log" 2>&1 &
	pid=$!
	pids+=("$pid")
	for _ in $(seq 200); do [ -e "$d/ready" ] && break; sleep 0.05; done
	if [ ! -e "$d/ready" ]; then
		echo "FAIL $id: park.lua not ready: $(tail -2 "$d/log")"
		status=1
		exec {fd}>&-
		return 1
	fi
	gcore -o "$d/core" "$pid" >"$d/gcore.log" 2>&1 && mv "$d/core.$pid" "$d/core"
	echo go >&"$fd"
	wait "$pid"
	exec {fd}>&-
	[ -f "$d/core" ] || { echo "FAIL $id: gcore: $(tail -2 "$d/gcore.log")"; status=1; return 1; }
}
# must_differ WHAT AWK: the truth $d/truth.tsv changed by AWK must not
# compare equal to $d/frames.txt (a negative control).
must_differ() {
	awk -F '\t' -v OFS='\t' "$2" "$d/truth.tsv" >"$d/bad.tsv"
	if "$py" "$src/tests/luajit/compare_frames.py" "$d/bad.tsv" "$d/frames.txt" >/dev/null; then
		echo "FAIL negative control: a truth with the __index frame's $1 changed compares equal"
		status=1
	else
		echo "PASS negative control: a truth with the __index frame's $1 changed differs"
	fi
}
frames=$(cd "$top_builddir/tests/luajit" && pwd)/lj-frames
for id in lj-upstream lj-openresty; do
	d=$tmp/park-$id
	park "$id" "$d" || continue
	rc=0
	"$frames" "$d/core" "$out/$id/luajit" >"$d/frames.txt" 2>&1 || rc=$?
	res=$("$py" "$src/tests/luajit/compare_frames.py" "$d/truth.tsv" "$d/frames.txt" 2>&1)
	check "$id core, parked in io.read under a vararg chunk, pcall and __index: the truth ($res), exit $rc" \
		[ "$rc" = 0 -a "${res#equal: }" != "$res" -a "$(awk '/^vm / { print $4 }' "$d/frames.txt")" = -2 ]
	sed 's/^/    /' "$d/frames.txt"
	# The comparison fails on a truth with one line changed, and on one
	# whose __index frame is called a field, not a metamethod.
	# The VM line: vmstate C (io.read), the compiler and its traces as
	# the script counted them, cur_L the main thread, checked.
	rc=0
	"$inspect" --json "$d/core" "$out/$id/luajit" >"$d/report.json" 2>/dev/null || rc=$?
	want=$(awk -F '\t' '$1 == "jit" { print "C function", ($2 == "on" ? "True" : "False"), $3, "None True" }' "$d/truth.tsv.jit")
	got=$("$py" -c 'import json, sys
v = json.load(open(sys.argv[1]))["vms"][0]; j = v.get("luajit") or {}
print(j.get("vmstate"), j.get("compiler_on"), j.get("traces"), j.get("cur_L_note"), j.get("cur_L") == v.get("mainthread"))' "$d/report.json" 2>&1)
	check "$id core: the VM's vmstate, compiler, traces, cur_L ($got; the script: $want)" \
		[ "$rc" = 0 -a -n "$want" -a "$got" = "$want" ]
	# gdb's lua-value on the script's table and closure.
	read -r tab fn < <(awk -F '\t' '$1 == "probe" { print $2, $3 }' "$d/truth.tsv.jit")
	gdb -batch -nx -x "$src/gdb/luaprof.py" -ex "lua-value -gc $tab" -ex "lua-value -gc $fn" \
		"$out/$id/luajit" "$d/core" 2>&1 | grep -E '^(table|function|  )' >"$d/value.txt"
	want='table: T (array N, hash N)|  [1] = 10|  [2] = 20|  [3] = "x"|  ["k"] = "v"|function: @SRC:L|  upvalue up = 42'
	got=$(sed -E "s/0x[0-9a-f]+/T/; s/array [0-9]+, hash [0-9]+/array N, hash N/; s|@[^:]*park.lua:[0-9]+|@SRC:L|" \
		"$d/value.txt" | paste -sd '|')
	check "$id core: gdb's lua-value of a table and a closure ($got)" [ "$got" = "$want" ]
	must_differ "line" '$1 == "frame" && $3 == 1 { $6 = $6 + 1 } 1'
	must_differ "namewhat" '$1 == "frame" && $3 == 1 { $8 = "field" } 1'
done

# busy ID MODE DIR: LuaJIT's interpreter of ID runs fixtures/scenarios/
# luajit/busy.lua, an endless loop, with the JIT compiler off (MODE
# interp) or on (jit); once it spins, luacore-inspect -p reads it
# (DIR/live.json), then gcore takes its core (DIR/core, DIR/exe).
busy() {
	local id=$1 mode=$2 d=$3 pid
	mkdir -p "$d"
	(cd "$d" && LC_TRUTH_LUA=$src/fixtures/lua/truth.lua LC_READY=$d/ready \
		LC_TRUTH=$d/truth.tsv exec "$out/$id/luajit" \
		"$src/fixtures/scenarios/luajit/${4:-busy}.lua" "$mode") </dev/null >"$d/log" 2>&1 &
	pid=$!
	pids+=("$pid")
	for _ in $(seq 200); do [ -e "$d/ready" ] && break; sleep 0.05; done
	if [ ! -e "$d/ready" ]; then
		echo "FAIL $id busy $mode: not ready: $(tail -2 "$d/log")"
		status=1
		return 1
	fi
	sleep 0.3	# into the loop (and, JIT on, its trace)
	echo 0 >"$d/live.rc"
	"$inspect" -p "$pid" --json >"$d/live.json" 2>"$d/live.err" || echo $? >"$d/live.rc"
	running "$pid" || { echo "FAIL $id busy $mode: not left running after luacore-inspect -p"; status=1; }
	gcore -o "$d/core" "$pid" >"$d/gcore.log" 2>&1 && mv "$d/core.$pid" "$d/core"
	kill -KILL "$pid"
	wait "$pid" 2>/dev/null
	ln -sf "$out/$id/luajit" "$d/exe"
	[ -f "$d/core" ] || { echo "FAIL $id busy $mode: gcore: $(tail -2 "$d/gcore.log")"; status=1; return 1; }
}
inspect=$(cd "$top_builddir/src" && pwd)/luacore-inspect
sample=$(cd "$top_builddir/src" && pwd)/luacore-sample
# gdb_cells WHAT CELL...: gdb's lua-bt on each cell's core
# (tests/gdb/check-core.sh, one gdb session) equals luacore-inspect's.
gdb_cells() {
	local what=$1 g
	shift
	[ $# -gt 0 ] || return 0
	LUACORE_INSPECT=$inspect LUAPROF=$src/gdb/luaprof.py \
		LUACORE_LIB=$(cd "$top_builddir/libcore/.libs" && pwd)/libluacore.so \
		"$src/tests/gdb/check-core.sh" "$@" >"$tmp/gdb.txt" 2>&1
	g=$(grep -c '^PASS' "$tmp/gdb.txt")
	grep '^FAIL' "$tmp/gdb.txt" | head -5
	check "$what: gdb's lua-bt on the cores: $g of $# equal luacore-inspect's" [ "$g" = "$#" ]
}
busy_cells=()
for id in $LJ_IDS; do
	for run in interp jit ffi; do
		d=$tmp/busy-$id-$run
		mode=$run script=busy what="JIT $([ $run = interp ] && echo off || echo on)"
		[ "$run" = ffi ] && mode=jit script=ffi what="a trace calling usleep through the FFI"
		busy "$id" "$mode" "$d" "$script" || continue
		busy_cells+=("$d")
		res=$("$py" "$src/tests/luajit/compare_busy.py" "$d/truth.tsv" "$d/live.json" "$mode" 2>&1)
		check "$id busy loop, $what, live: exit $(cat "$d/live.rc"), $(tail -1 <<<"$res")" \
			[ "$(cat "$d/live.rc")" = 0 -a "${res##*$'\n'equal: }" != "$res" ]
		rc=0
		"$inspect" --json "$d/core" "$d/exe" >"$d/report.json" 2>"$d/report.err" || rc=$?
		res=$("$py" "$src/tests/luajit/compare_busy.py" "$d/truth.tsv" "$d/report.json" "$mode" 2>&1)
		check "$id busy loop, $what, core: exit $rc, $(tail -1 <<<"$res")" \
			[ "$rc" = 0 -a "${res##*$'\n'equal: }" != "$res" ]
		[ "$run" != ffi ] || grep -q '"usleep"' "$d/report.json" ||
			check "$id, the FFI call: usleep's machine frame above the trace" false
		[ "${res##*$'\n'equal: }" != "$res" ] || echo "$res" | sed 's/^/    /' | head -20
	done
done

# A compiled loop calling a function the trace inlines (fixtures/
# scenarios/luajit/inline.lua): 40 live reads and a core per build; each
# the truth, the innermost frame either the loop's or step's (a frame
# that exists only in the trace's snapshot: its function and link are
# the snapshot's constants) with the loop's frame at the call below it;
# step's frame seen in some of them.
inl_total=0 inl_reads=0
for id in $LJ_IDS; do
	d=$tmp/inline-$id
	mkdir -p "$d"
	(cd "$d" && LC_TRUTH_LUA=$src/fixtures/lua/truth.lua LC_READY=$d/ready \
		LC_TRUTH=$d/truth.tsv exec "$out/$id/luajit" \
		"$src/fixtures/scenarios/luajit/inline.lua") </dev/null >"$d/log" 2>&1 &
	pid=$!
	pids+=("$pid")
	for _ in $(seq 200); do [ -e "$d/ready" ] && break; sleep 0.05; done
	sleep 0.3	# into the loop's trace
	ok=0 inl=0 bad=
	for _ in $(seq 40); do
		rc=0
		"$inspect" -p "$pid" --json >"$d/live.json" 2>/dev/null || rc=$?
		res=$("$py" "$src/tests/luajit/compare_busy.py" "$d/truth.tsv" "$d/live.json" inline 2>&1)
		case $rc:${res##*$'\n'} in
		0:equal*inlined*) ok=$((ok + 1)) inl=$((inl + 1)) ;;
		0:equal*) ok=$((ok + 1)) ;;
		*) bad="exit $rc: $(echo "$res" | grep -v '^  ' | head -3 | tr '\n' ' ')" ;;
		esac
	done
	# Locals of the frames the trace runs: what it keeps (spin's acc and
	# i, step's all) said so, not the stack's older values; spin's here,
	# which the trace does not change, from the stack.
	"$inspect" -p "$pid" --json --locals >"$d/locals.json" 2>/dev/null
	res=$("$py" -c 'import json, sys
fr = [f for f in json.load(open(sys.argv[1]))["threads"][0]["frames"] if f["kind"] == "lua"]
spin = next(f for f in fr if f.get("name") == "spin")
v = {x["name"]: x["value"]["text"] for x in spin["vars"]}
held = lambda t: t.startswith("(held by trace ")
ok = held(v["acc"]) and held(v["i"]) and v["here"].isdigit()
if fr[0].get("name") == "step":
    ok = ok and all(held(x["value"]["text"]) for x in fr[0]["vars"])
print("acc %s, i %s, here %s%s" % (v["acc"], v["i"], v["here"], ", in step" if fr[0].get("name") == "step" else ""))
sys.exit(0 if ok else 1)' "$d/locals.json" 2>&1)
	check "$id, the locals of the frames a trace runs: $res" [ $? = 0 ]
	gcore -o "$d/core" "$pid" >"$d/gcore.log" 2>&1 && mv "$d/core.$pid" "$d/core"
	kill -KILL "$pid"
	wait "$pid" 2>/dev/null
	ln -sf "$out/$id/luajit" "$d/exe"
	check "$id, a loop whose trace inlined a call, live: $ok of 40 reads the truth, $inl of them inside the inlined function${bad:+ ($bad)}" \
		[ "$ok" = 40 ]
	rc=0
	"$inspect" --json "$d/core" "$d/exe" >"$d/report.json" 2>/dev/null || rc=$?
	res=$("$py" "$src/tests/luajit/compare_busy.py" "$d/truth.tsv" "$d/report.json" inline 2>&1)
	check "$id, a loop whose trace inlined a call, core: exit $rc, $(tail -1 <<<"$res")" \
		[ "$rc" = 0 -a "${res##*$'\n'equal: }" != "$res" ]
	[ -f "$d/core" ] && busy_cells+=("$d")
	inl_total=$((inl_total + inl)) inl_reads=$((inl_reads + 40))
done
check "frames a trace inlined shown from its snapshot: $inl_total of $inl_reads live reads" [ "$inl_total" -gt 0 ]

# The matrix's scenarios under lchost linked with each fork, against the
# truth TRUTH_WRITE wrote from park(): each program inspected live first
# (luacore-inspect -p, LC_LIVE_INSPECT of make-core.sh), then its core
# read three ways: by lj-frames (the decoder alone: every VM the scan
# finds, from each one's cur_L the chain of threads that resumed it), by
# luacore-inspect --json (compare.py: every frame's source, line, name,
# namewhat and traceback line, the coroutines' frames), and by gdb's
# lua-bt (tests/gdb/check-core.sh: the same frames as luacore-inspect's,
# each after the same native frame).  With upstream's VM thread (2025), a
# finalizer runs on a lua_State of its own: its debug.getinfo does not
# see the main thread's frames below it, which the report shows.
# Left out of lj-frames' check: hook_resume (a C function resumed the
# coroutine: no frame says which thread).  Not here: the count and yield
# hooks (not ready under LuaJIT), cxx_names (the C++ host).
LJ_SCENARIOS=${LC_LJ_SCENARIOS:-"deep_recursion tail_calls coroutines3 reentry error_in_pcall
 metamethods varargs gc_finalizer blocked_io multi_vm two_threads table_ctor yield_c
 names_loaded yield_resume hook_resume"}
# Debian's builds: the scenarios of frame kinds (coroutines, errors,
# metamethods, varargs, several VMs, yields from C, finalizers).
LJ_DEB_SCENARIOS=${LC_LJ_DEB_SCENARIOS:-"coroutines3 error_in_pcall metamethods varargs yield_c"}
for id in $LJ_IDS; do
	n=0 ok=0 okc=0 okl=0 cells=()
	scenarios=$LJ_SCENARIOS
	case $id in lj-deb*) scenarios=$LJ_DEB_SCENARIOS ;; esac
	for sc in $scenarios; do
		d=$tmp/cell-$id-$sc
		n=$((n + 1))
		if ! LC_LIVE_INSPECT=$inspect LC_BUILDS=$out "$src/fixtures/make-core.sh" "$id" "$sc" "$d" >"$d.log" 2>&1; then
			echo "FAIL $id $sc: make-core.sh: $(tail -2 "$d.log")"
			status=1
			continue
		fi
		cells+=("$d")
		if [ "$sc" != hook_resume ]; then
			rc=0
			"$frames" "$d/core" "$d/exe" >"$d/frames.txt" 2>&1 || rc=$?
			if res=$("$py" "$src/tests/luajit/compare_frames.py" "$d/truth.tsv" "$d/frames.txt" 0 2>&1) &&
				[ "$rc" = 0 ]; then
				ok=$((ok + 1))
			else
				echo "FAIL $id $sc: lj-frames exit $rc: $res"
				sed 's/^/    /' "$d/frames.txt" | head -20
				status=1
			fi
		else
			ok=$((ok + 1))
		fi
		below=()
		[ "$sc" = gc_finalizer ] && [ "$id" = lj-upstream ] && below=(--other-states-below)
		rc=0
		timeout 120 "$inspect" --json "$d/core" "$d/exe" >"$d/report.json" 2>"$d/report.err" || rc=$?
		if [ "$rc" = 0 ] && res=$("$py" "$src/tests/matrix/compare.py" -q "${below[@]}" "$d/truth.tsv" "$d/report.json" 2>&1); then
			okc=$((okc + 1))
		else
			echo "FAIL $id $sc: luacore-inspect on the core, exit $rc: $(tail -1 "$d/report.err")"
			echo "$res" | sed 's/^/    /' | head -20
			status=1
		fi
		lrc=$(cat "$d/live.rc" 2>/dev/null)
		if [ "$(cat "$d/live.state" 2>/dev/null)" = running ] && [ "$lrc" = 0 ] &&
			res=$("$py" "$src/tests/matrix/compare.py" -q "${below[@]}" "$d/truth.tsv" "$d/live.json" 2>&1); then
			okl=$((okl + 1))
		else
			echo "FAIL $id $sc: luacore-inspect -p, exit ${lrc:-?}, $(cat "$d/live.state" 2>/dev/null): $(tail -1 "$d/live.err" 2>/dev/null)"
			echo "${res:-}" | sed 's/^/    /' | head -20
			status=1
		fi
	done
	check "$id: lj-frames on the cores: $ok of $n scenarios give the truth, frame by frame" [ "$ok" = "$n" ]
	check "$id: luacore-inspect on the cores: $okc of $n scenarios give the truth" [ "$okc" = "$n" ]
	check "$id: luacore-inspect -p on the running programs: $okl of $n scenarios give the truth, each left running" [ "$okl" = "$n" ]
	# gdb's lua-bt on the same cores: one gdb session for the fork.
	gdb_cells "$id" "${cells[@]}"
done

# A Debian program that embeds LuaJIT: nvim (neovim), its
# libluajit-5.1.so.2 Debian's rebuilt with -g (first in its library
# path), running busy.lua from :luafile with the JIT on: luacore-inspect
# -p, luacore-sample -p and its core give the script's frames below the
# loop, the loop's line from the trace, and nvim's own frames below
# (nlua_exec_file, do_cmdline, main).
if ! command -v nvim >/dev/null; then
	check "nvim is installed (apt-get install neovim)" false
else
	d=$tmp/nvim
	mkdir -p "$d"
	(cd "$d" && LD_LIBRARY_PATH=$out/lj-deb LC_BUSY_MODE=jit \
		LC_TRUTH_LUA=$src/fixtures/lua/truth.lua LC_READY=$d/ready \
		LC_TRUTH=$d/truth.tsv exec nvim --headless -u NONE -i NONE -n \
		-c "luafile $src/fixtures/scenarios/luajit/busy.lua") </dev/null >"$d/log" 2>&1 &
	pid=$!
	pids+=("$pid")
	for _ in $(seq 200); do [ -e "$d/ready" ] && break; sleep 0.05; done
	if [ ! -e "$d/ready" ]; then
		check "nvim running busy.lua: ready ($(tail -2 "$d/log"))" false
	else
		sleep 0.3
		rc=0
		"$inspect" -p "$pid" --json >"$d/live.json" 2>"$d/live.err" || rc=$?
		res=$("$py" "$src/tests/luajit/compare_busy.py" "$d/truth.tsv" "$d/live.json" jit 2>&1)
		check "nvim, busy loop in a trace, live: exit $rc, $(tail -1 <<<"$res")" \
			[ "$rc" = 0 -a "${res##*$'\n'equal: }" != "$res" ]
		grep -q '"nlua_exec_file"' "$d/live.json" ||
			check "nvim, live: its frames below the Lua ones (nlua_exec_file)" false
		rc=0
		"$sample" -q -p "$pid" -d 2 -o "$d/prof.folded" 2>"$d/sample.err" || rc=$?
		ok=0
		[ "$rc" = 0 ] && grep -q 'nlua_exec_file;.*spin (…/[^;]*busy\.lua:[0-9]*);LuaJIT trace [0-9]* ' "$d/prof.folded" && ok=1
		check "nvim, luacore-sample -p: exit $rc, spin under nlua_exec_file in a trace" [ "$ok" = 1 ]
		[ "$ok" = 1 ] || { tail -3 "$d/sample.err"; head -5 "$d/prof.folded"; }
		running "$pid" || check "nvim left running after luacore-inspect -p and luacore-sample" false
		gcore -o "$d/core" "$pid" >"$d/gcore.log" 2>&1 && mv "$d/core.$pid" "$d/core"
		rc=0
		"$inspect" --json "$d/core" "$(command -v nvim)" >"$d/report.json" 2>"$d/report.err" || rc=$?
		res=$("$py" "$src/tests/luajit/compare_busy.py" "$d/truth.tsv" "$d/report.json" jit 2>&1)
		check "nvim, busy loop in a trace, core: exit $rc, $(tail -1 <<<"$res")" \
			[ "$rc" = 0 -a "${res##*$'\n'equal: }" != "$res" ]
	fi
	kill -KILL "$pid" 2>/dev/null
	wait "$pid" 2>/dev/null
fi

# gdb's lua-bt on the busy loops' cores (through a trace, with the JIT
# on): the same frames as luacore-inspect's.
gdb_cells "busy loops" "${busy_cells[@]}"

# Post-mortem detail (tests/matrix/compare_post.py): locals and upvalues
# of every frame as the script's debug.getlocal and debug.getupvalue give
# them, coroutine statuses, the resume chain, yieldability, the C frame an
# error unwinds to, the collector's state, 100 VMs on one thread.
LJ_POST=${LC_LJ_POST:-"post_locals post_coroutines post_nny post_gc post_many_vms"}
for id in lj-upstream lj-openresty lj-deb; do
	n=0 ok=0
	for sc in $LJ_POST; do
		d=$tmp/post-$id-$sc
		n=$((n + 1))
		if ! LC_BUILDS=$out "$src/fixtures/make-core.sh" "$id" "$sc" "$d" >"$d.log" 2>&1; then
			echo "FAIL $id $sc: make-core.sh: $(tail -2 "$d.log")"
			continue
		fi
		rc=0
		"$inspect" --json --locals "$d/core" "$d/exe" >"$d/report.json" 2>"$d/report.err" || rc=$?
		if [ "$rc" = 0 ] && res=$("$py" "$src/tests/matrix/compare_post.py" -q "$d/truth.tsv" "$d/report.json" 2>&1); then
			ok=$((ok + 1))
		else
			echo "FAIL $id $sc: exit $rc: $(tail -1 "$d/report.err")"
			echo "${res:-}" | sed 's/^/    /' | head -20
		fi
	done
	check "$id: post-mortem detail, locals and upvalues: $ok of $n scenarios equal the truth" [ "$ok" = "$n" ]
done

# The JSON reports of the LuaJIT cores and processes, as the schema
# (doc/luacore-inspect.schema.json) has them.
reports=$(ls "$tmp"/cell-*/report.json "$tmp"/cell-*/live.json "$tmp"/post-*/report.json \
	"$tmp"/busy-*/report.json 2>/dev/null)
# shellcheck disable=SC2086
check "the LuaJIT reports ($(echo "$reports" | wc -w)) valid against the JSON schema" \
	"$py" "$src/tests/matrix/validate_schema.py" "$src/doc/luacore-inspect.schema.json" $reports

# Damaged cores: words near the threads and VMs replaced (mutate.py).
# The decoder reads the target as untrusted: exit 0 or 1, never killed
# by a signal, never past the timeout.
for id in lj-upstream lj-openresty; do
	bad=0 n=0
	for sc in coroutines3 error_in_pcall multi_vm; do
		d=$tmp/cell-$id-$sc
		[ -f "$d/core" ] || continue
		# shellcheck disable=SC2046
		set -- $(grep -o '0x[0-9a-f]*' "$d/frames.txt" | sort -u)
		for seed in $(seq 1 "${LC_LJ_DAMAGED:-16}"); do
			"$py" "$src/tests/luajit/mutate.py" "$d/core" "$tmp/mut.core" "$seed" "$@" || continue
			n=$((n + 1))
			rc=0
			timeout 20 "$frames" "$tmp/mut.core" "$d/exe" >"$tmp/mut.out" 2>&1 || rc=$?
			if [ "$rc" -gt 1 ]; then
				bad=$((bad + 1))
				echo "    $id $sc seed $seed: lj-frames exit $rc: $(tail -1 "$tmp/mut.out")"
			fi
			rc=0
			timeout 20 "$inspect" --json "$tmp/mut.core" "$d/exe" >"$tmp/mut.out" 2>&1 || rc=$?
			if [ "$rc" -gt 1 ]; then
				bad=$((bad + 1))
				echo "    $id $sc seed $seed: luacore-inspect exit $rc: $(tail -1 "$tmp/mut.out")"
			fi
		done
	done
	check "$id: $n damaged cores read by lj-frames and luacore-inspect, each with exit 0 or 1 ($bad otherwise)" [ "$n" -ge 40 -a "$bad" = 0 ]
done

# Both interpreters in one process (fixtures/host/mixhost.c): PUC Lua
# 5.4.7 linked in, upstream LuaJIT's libluajit.so opened RTLD_LOCAL, each
# parked on an OS thread of its own.  Live, from its core and by gdb:
# each thread's Lua frames equal its script's truth, each VM is listed
# with its interpreter's version, and the header names both.
fixtures src-5.4.7-O2
m=$tmp/mix
mkdir -p "$m"
if ! gcc -g -O0 -Wall -Wextra -o "$m/mixhost" "$src/fixtures/host/mixhost.c" \
	"$out/src-5.4.7-O2/liblua.a" -ldl -lm -lpthread 2>"$m/build.log"; then
	check "mixhost (PUC Lua and LuaJIT in one process): built: $(head -3 "$m/build.log")" false
else
	# mix PUC_SCRIPT LJ_SCRIPT: mixhost running them, in $pid once
	# both threads are ready.
	mix() {
		rm -f "$m/ready"
		(cd "$m" && LC_TRUTH_LUA=$src/fixtures/lua/truth.lua LC_READY=$m/ready \
			LC_TRUTH=$m/truth.tsv exec ./mixhost "$out/lj-upstream/libluajit.so" \
			"$src/fixtures/scenarios/luajit/$1.lua" \
			"$src/fixtures/scenarios/luajit/$2.lua") </dev/null >"$m/log" 2>&1 &
		pid=$!
		pids+=("$pid")
		for _ in $(seq 200); do [ -e "$m/ready" ] && break; sleep 0.05; done
	}
	mix mix_puc mix_lj
	rc=0
	"$inspect" -p "$pid" --json >"$m/live.json" 2>"$m/live.err" || rc=$?
	gcore -o "$m/core" "$pid" >"$m/gcore.log" 2>&1 && mv "$m/core.$pid" "$m/core"
	kill -KILL "$pid"
	wait "$pid" 2>/dev/null
	ln -sf "$m/mixhost" "$m/exe"
	rc2=0
	"$inspect" --json "$m/core" "$m/exe" >"$m/core.json" 2>"$m/core.err" || rc2=$?
	for k in live core; do
		[ $k = live ] && r=$rc || r=$rc2
		res=$("$py" "$src/tests/matrix/compare.py" -q "$m/truth.tsv" "$m/$k.json" 2>&1 | tail -1)
		vms=$("$py" -c 'import json, sys
r = json.load(open(sys.argv[1]))
print(" ".join(sorted(l["version"].split(".")[0] + "/" + v for l in r["process"]["luas"]
                      for v in [str(sum(1 for x in r["vms"] if x["version"] == l["version"]))])))' "$m/$k.json" 2>&1)
		check "PUC Lua 5.4.7 and LuaJIT in one process, $k: exit $r, $res, interpreters/VMs: $vms" \
			[ "$r" = 0 -a "$res" = "compare: match" -a "$vms" = "5/1 LuaJIT 2/1" ]
	done
	if [ -f "$m/core" ]; then
		gdb_cells "PUC Lua and LuaJIT in one process" "$m"
	fi
	# Sampled, each thread spinning in a function of its own: each
	# thread's samples under its own interpreter's Lua frames.
	mix mix_spin_puc mix_spin_lj
	rc=0
	"$top_builddir/src/luacore-sample" -q -p "$pid" -d 3 -r 250 -f folded -o "$m/spin.folded" \
		2>"$m/sample.err" || rc=$?
	kill -KILL "$pid"
	wait "$pid" 2>/dev/null
	res=$(awk '{ n = $NF; all += n } /;run_puc;main chunk .*;spin_puc \(/ { puc += n }
		/;run_luajit;main chunk .*;spin_lj \(/ { lj += n }
		END { printf "%d samples: %d under spin_puc, %d under spin_lj", all, puc, lj
		      exit !(all >= 20 && puc >= all / 5 && lj >= all / 5) }' "$m/spin.folded" 2>&1)
	check "PUC Lua 5.4.7 and LuaJIT in one process, sampled: exit $rc, $res" [ $? = 0 -a "$rc" = 0 ]
fi

# Debian's LuaJIT, as shipped: no DWARF.
deb=$(ls /usr/lib/*/libluajit-5.1.so.2 2>/dev/null | head -1)
if [ -z "$deb" ]; then
	echo "FAIL: no Debian libluajit-5.1.so.2 (apt-get install libluajit-5.1-dev)"
	status=1
else
	rc=0
	"$lj" "$deb" >/dev/null 2>"$tmp/err" || rc=$?
	check "Debian's libluajit-5.1.so.2 without debug info: refused, exit $rc: $(cat "$tmp/err")" \
		grep -q 'no DWARF describes its lua_State.*install its debug package or rebuild it with -g' "$tmp/err"
	[ "$rc" = 1 ] || { echo "FAIL: exit $rc, not 1"; status=1; }
fi
exit $status
