#!/usr/bin/env bash
# Lua built without debug info, read with the built-in layouts
# (libcore/vm/puc/builtin-layouts.c), validated against memory:
#  - every release 5.1.1-5.5.0 built at -O2 without -g, its host too
#    (fixtures/build-lua.sh nodebug-VERSION: no DWARF, symbols kept): a
#    core of each of SCENARIOS (coroutines3, two_threads: two VMs running
#    on two OS threads), inspected; its Lua frames and coroutines
#    equal the script's truth (tests/matrix/compare.py), and the report
#    names the built-in layout of its release and what validated it;
#  - the same hosts stripped (no .symtab: no name for any of their
#    frames, lua_ident found in their read-only data), the same
#    scenarios: the core gives the truth; the same process read live
#    (-p) while parked, the same truth; gdb's lua-bt -a on the core of
#    two_threads, the Lua frames of luacore-inspect's text report after
#    the same native frames (tests/gdb/compare_bt.py); and every Lua
#    frame is spliced
#    after the same native frame as in the unstripped host's report
#    (the interpreter's function recognised by what it holds, C
#    functions by their .eh_frame entries), none unplaced;
#  - the built-in layout against DWARF: each release built with -g
#    (src-VERSION-O2), a core of coroutines3 read with --layout VERSION
#    gives the very report its DWARF gives (frames, coroutines and their
#    statuses, the VMs' GC state and counts), the lua layout line aside;
#  - Debian's liblua5.4 with its debug info removed (no DWARF, no
#    build-id, no debuglink): the built-in layout of 5.4.4, the truth;
#  - a modified Lua (5.4.7 with a field added at the start of lua_State
#    and of global_State), built without -g: the built-in layout is
#    refused, exit 1, and the message names the check that failed; with
#    --types lstate.o (its lstate.c compiled with -g alone): the truth,
#    the report naming the file and what validated it; gdb's lua-layout
#    FILE then lua-bt -a: the same Lua frames; --layout 5.4.0 on a stock
#    5.4.7: refused.
# The sampler on these builds, whose shares are measured on an idle
# machine, is tests/run-nodebug-sample.sh.
. "$(dirname "$0")/lib.sh"
releases=${LC_NODEBUG_RELEASES:-$("$src/fixtures/build-lua.sh" --releases)}
scenarios=${LC_NODEBUG_SCENARIOS:-"coroutines3 two_threads"}
ids=$(for v in $releases; do echo "nodebug-$v src-$v-O2"; done)
# shellcheck disable=SC2086
fixtures $ids src-5.4.7-O2 deb-5.4
export LC_TRUTH_LUA=$src/fixtures/lua/truth.lua
lib_so=$(cd "$top_builddir/libcore/.libs" && pwd)/libluacore.so

# splice_shape REPORT: the threads' native frame numbers and Lua lines of
# a text report, without addresses, native names or the C symbol after a
# C function's Lua line.
splice_shape() {
	awk '/^Thread /,/^VMs:/' "$1" | grep -E '^(#[0-9]+ |     lua: )' |
		sed -E 's/^(#[0-9]+) .*/\1/; s/ \[[A-Za-z_0-9.]+\]$//'
}

b=$tmp/builds
# cells VERSION: the cells of one release, then its -g build read with
# --layout; PASS and FAIL lines on stdout.  The unstripped hosts' cells
# are read from their cores (and give the stripped ones their splice);
# the stripped ones, the configuration of the issue, also live and by
# gdb.
cells() {
	local v=$1 cell kind sc builds d rc layout cmp u res live
	mkdir -p "$b/strip-$v"
	strip -o "$b/strip-$v/lchost" "$out/nodebug-$v/lchost"
	for cell in $(for sc in $scenarios; do echo "nodebug:$sc"; done) \
		$(for sc in $scenarios; do echo "strip:$sc"; done); do
		kind=${cell%%:*} sc=${cell#*:}
		builds=$out live=
		[ "$kind" = strip ] && builds=$b live=$inspect
		d=$tmp/$kind-$v-$sc
		if ! LC_BUILDS=$builds LC_LIVE_INSPECT=$live "$src/fixtures/make-core.sh" \
			"$kind-$v" "$sc" "$d" >"$d.log" 2>&1; then
			echo "FAIL $kind $v $sc: make-core.sh: $(tail -2 "$d.log")"
			continue
		fi
		rc=0
		"$inspect" --json "$d/core" "$d/exe" >"$d/report.json" 2>"$d/report.err" || rc=$?
		layout=$("$py" -c 'import json,sys; print(json.load(open(sys.argv[1]))["process"]["lua_layout"] or "")' \
			"$d/report.json" 2>/dev/null)
		if [ "$rc" = 0 ] && cmp=$("$py" "$src/tests/matrix/compare.py" -q "$d/truth.tsv" "$d/report.json" 2>&1) &&
			[[ "$layout" == "built-in layout of Lua $v (the module has no DWARF), validated against memory: the scan found "* ]]; then
			echo "PASS $kind $v $sc core: the truth; ${layout#*validated against memory: }"
		else
			echo "FAIL $kind $v $sc core: exit $rc, layout '$layout': $(echo "$cmp" | tail -3) $(head -2 "$d/report.err")"
		fi
		"$inspect" "$d/core" "$d/exe" >"$d/inspect.txt" 2>&1
		[ "$kind" = strip ] || continue
		# Spliced as with the symbols: the threads' native frame
		# numbers and Lua lines in the same order as the unstripped
		# host's report (its C functions' symbols left out), none
		# unplaced.
		u=$tmp/nodebug-$v-$sc/inspect.txt
		if [ -s "$u" ] && ! grep -q '(unplaced)$' "$d/inspect.txt" &&
			[ "$(splice_shape "$d/inspect.txt" | grep -c lua:)" -gt 0 ] &&
			diff <(splice_shape "$d/inspect.txt") <(splice_shape "$u") >"$d/shape.diff"; then
			echo "PASS $kind $v $sc: spliced as the unstripped host's ($(splice_shape "$u" | grep -c lua:) Lua frames), none unplaced"
		else
			echo "FAIL $kind $v $sc: not spliced as the unstripped host's: $(grep -c '(unplaced)$' "$d/inspect.txt") unplaced; $(head -4 "$d/shape.diff" 2>/dev/null | tr '\n' ' ')"
		fi
		# gdb reads through the same decoder: one scenario (two
		# threads, two VMs) per release.
		if [ "$sc" = "${LC_NODEBUG_GDB:-two_threads}" ]; then
			LUACORE_LIB=$lib_so timeout 300 gdb -q -batch -nx -x "$src/gdb/luaprof.py" \
				-ex "lua-bt -a" "$d/exe" "$d/core" >"$d/gdb.txt" 2>&1
			if res=$("$py" "$src/tests/gdb/compare_bt.py" "$d/gdb.txt" "$d/inspect.txt" 2>&1); then
				echo "PASS $kind $v $sc gdb: $res"
			else
				echo "FAIL $kind $v $sc gdb: $res"
			fi
		fi
		if [ "$(cat "$d/live.rc" 2>/dev/null)" = 0 ] &&
			"$py" "$src/tests/matrix/compare.py" -q "$d/truth.tsv" "$d/live.json" >"$d/live.cmp" 2>&1; then
			echo "PASS $kind $v $sc live: the truth"
		else
			echo "FAIL $kind $v $sc live: exit $(cat "$d/live.rc" 2>/dev/null): $(tail -3 "$d/live.cmp" 2>/dev/null) $(head -2 "$d/live.err" 2>/dev/null)"
		fi
	done

	# The built-in layout reads a -g build's core as its DWARF does.
	d=$tmp/dwarf-$v
	if ! LC_BUILDS=$out "$src/fixtures/make-core.sh" "src-$v-O2" coroutines3 "$d" >"$d.log" 2>&1; then
		echo "FAIL dwarf $v: make-core.sh: $(tail -2 "$d.log")"
		return
	fi
	"$inspect" "$d/core" "$d/exe" >"$d/dwarf-full.txt" 2>&1
	"$inspect" --layout "$v" "$d/core" "$d/exe" 2>&1 | grep -v '^lua layout: ' >"$d/builtin.txt"
	grep -v '^lua layout: ' "$d/dwarf-full.txt" >"$d/dwarf.txt"
	if grep -q '^lua layout: DWARF of ' "$d/dwarf-full.txt" &&
		grep -q '^VM 0x.*, gc [a-z]' "$d/dwarf.txt" && grep -q '^  lua_State 0x' "$d/dwarf.txt" &&
		diff "$d/dwarf.txt" "$d/builtin.txt" >"$d/diff"; then
		echo "PASS dwarf $v: --layout $v gives the DWARF's report ($(grep -c '^     lua: ' "$d/dwarf.txt") Lua frames, $(grep -c '^  lua_State ' "$d/dwarf.txt") lua_States, $(grep -o 'gc [a-z]*' "$d/dwarf.txt" | head -1))"
	else
		echo "FAIL dwarf $v: --layout $v differs from the DWARF's report: $(head -4 "$d/diff" | tr '\n' ' ')"
	fi
}
# The releases two at a time.
for v in $releases; do
	while [ "$(jobs -pr | wc -l)" -ge "${LC_JOBS:-$(nproc)}" ]; do wait -n || true; done
	cells "$v" >"$tmp/cells-$v.out" 2>&1 &
done
wait
for v in $releases; do
	cat "$tmp/cells-$v.out"
	if grep -q '^FAIL' "$tmp/cells-$v.out" || ! grep -q "^PASS dwarf $v:" "$tmp/cells-$v.out"; then
		status=1
	fi
done

# A host that sets _VERSION to its own text: the layout still validates
# (the lookup found the global), and the note says what it reads.
if echo "$releases" | tr ' ' '\n' | grep -qx 5.4.7; then
	d=$tmp/version
	mkdir -p "$d"
	printf '_VERSION = "MyEngine 2.0"\ndofile("%s")\n' "$src/fixtures/scenarios/coroutines3.lua" >"$d/ver.lua"
	(cd "$d" && LC_TRUTH=$d/truth.tsv LC_READY=$d/ready exec "$out/nodebug-5.4.7/lchost" "$d/ver.lua") >"$d/log" 2>&1 &
	vp=$!
	pids+=("$vp")
	for _ in $(seq 100); do [ -e "$d/ready" ] && break; sleep 0.1; done
	rc=0
	"$inspect" --json -p "$vp" >"$d/report.json" 2>"$d/report.err" || rc=$?
	layout=$("$py" -c 'import json,sys; print(json.load(open(sys.argv[1]))["process"]["lua_layout"] or "")' \
		"$d/report.json" 2>/dev/null)
	# The truth's luaversion is the _VERSION the script set: left out.
	grep -v '^luaversion' "$d/truth.tsv" >"$d/truth-frames.tsv"
	if [ "$rc" = 0 ] && "$py" "$src/tests/matrix/compare.py" -q "$d/truth-frames.tsv" "$d/report.json" >"$d/cmp" 2>&1 &&
		[[ "$layout" == "built-in layout of Lua 5.4.7 "*'; _VERSION is "MyEngine 2.0"' ]]; then
		echo "PASS a host's own _VERSION: the built-in layout still validates, the truth; $layout"
	else
		echo "FAIL a host's own _VERSION: exit $rc, layout '$layout': $(tail -2 "$d/cmp") $(head -2 "$d/report.err")"
		status=1
	fi
	kill "$vp" 2>/dev/null
fi

# Debian's liblua5.4 without its debug info.
mkdir -p "$b/deblib" "$tmp/lib"
cp "$out/deb-5.4/lchost" "$b/deblib/lchost"
lib=$(ldd "$out/deb-5.4/lchost" | awk '/liblua5\.4/ { print $3 }')
objcopy --strip-debug --remove-section .note.gnu.build-id \
	--remove-section .gnu_debuglink "$lib" "$tmp/lib/liblua5.4.so.0"
d=$tmp/deblib
if LD_LIBRARY_PATH=$tmp/lib LC_BUILDS=$b "$src/fixtures/make-core.sh" deblib coroutines3 "$d" >"$d.log" 2>&1; then
	rc=0
	"$inspect" --json "$d/core" "$d/exe" >"$d/report.json" 2>"$d/report.err" || rc=$?
	layout=$("$py" -c 'import json,sys; print(json.load(open(sys.argv[1]))["process"]["lua_layout"] or "")' \
		"$d/report.json" 2>/dev/null)
	if [ "$rc" = 0 ] && "$py" "$src/tests/matrix/compare.py" -q "$d/truth.tsv" "$d/report.json" >"$d/cmp" 2>&1 &&
		[[ "$layout" == "built-in layout of Lua 5.4.4 "* ]]; then
		echo "PASS Debian's liblua5.4 without debug info: the truth, with the built-in layout of 5.4.4"
	else
		echo "FAIL Debian's liblua5.4 without debug info: exit $rc, layout '$layout': $(tail -3 "$d/cmp") $(head -2 "$d/report.err")"
		status=1
	fi
else
	echo "FAIL make-core.sh deblib: $(tail -2 "$d.log")"
	status=1
fi

# Build options the built-in layout of 5.4.7 meets: LUA_32BITS (4-byte
# numbers, the values' 8 bytes kept for pointers), seen in math.pi and
# math.maxinteger and read so (post_locals' numbers equal the truth);
# a LUA_EXTRASPACE of 40 bytes, which moves no field the decoder reads.
variant lua32 luaconf.h 's/^#define LUA_32BITS\t*0$/#define LUA_32BITS 1/' 1
variant extraspace luaconf.h 's/^#define LUA_EXTRASPACE\t.*/#define LUA_EXTRASPACE 40/' 1
for cell in lua32:post_locals extraspace:coroutines3; do
	name=${cell%%:*} sc=${cell#*:} d=$tmp/$name-core
	if ! LC_BUILDS=$b "$src/fixtures/make-core.sh" "$name" "$sc" "$d" >"$d.log" 2>&1; then
		echo "FAIL make-core.sh $name $sc: $(tail -2 "$d.log")"
		status=1
		continue
	fi
	rc=0
	"$inspect" --json --locals --stack "$d/core" "$d/exe" >"$d/report.json" 2>"$d/report.err" || rc=$?
	layout=$("$py" -c 'import json,sys; print(json.load(open(sys.argv[1]))["process"]["lua_layout"] or "")' \
		"$d/report.json" 2>/dev/null)
	case $name in
	lua32) want="math.pi a float of 4 bytes, math.maxinteger an integer of 4 bytes (not the release's default: LUA_32BITS)"
		cmp=$("$py" "$src/tests/matrix/compare_post.py" -q "$d/truth.tsv" "$d/report.json" 2>&1) || rc=x ;;
	*) want="math.pi a float of 8 bytes, math.maxinteger an integer of 8 bytes"
		cmp=$("$py" "$src/tests/matrix/compare.py" -q "$d/truth.tsv" "$d/report.json" 2>&1) || rc=x ;;
	esac
	if [ "$rc" = 0 ] && [[ "$layout" == "built-in layout of Lua 5.4.7 "*"; numbers: $want; "* ]]; then
		echo "PASS $name ($sc): the built-in layout of 5.4.7, the truth; ${layout#*; numbers: }"
	else
		echo "FAIL $name ($sc): exit $rc, layout '$layout': $(echo "$cmp" | tail -3) $(head -2 "$d/report.err")"
		status=1
	fi
done

# A modified Lua: a field added to lua_State and to global_State.
modified_variant
m=$tmp/modified
d=$tmp/modified-core
if LC_BUILDS=$b "$src/fixtures/make-core.sh" modified coroutines3 "$d" >"$d.log" 2>&1; then
	rc=0
	"$inspect" "$d/core" "$d/exe" >"$d/report.txt" 2>&1 || rc=$?
	if [ "$rc" = 1 ] && grep -q "the built-in layout of Lua 5\.4\.7 does not fit this program's memory: the scan of its writable memory found no global_State whose main thread points back to it" "$d/report.txt" &&
		! grep -q '^lua layout:' "$d/report.txt"; then
		echo "PASS a modified Lua without debug info: the built-in layout refused (exit 1), the failed check named"
	else
		echo "FAIL a modified Lua without debug info: exit $rc: $(grep -m2 -i 'layout\|warning' "$d/report.txt")"
		status=1
	fi
	rc=0
	"$inspect" --types "$m/lstate.o" --json "$d/core" "$d/exe" >"$d/types.json" 2>"$d/types.err" || rc=$?
	layout=$("$py" -c 'import json,sys; print(json.load(open(sys.argv[1]))["process"]["lua_layout"] or "")' \
		"$d/types.json" 2>/dev/null)
	if [ "$rc" = 0 ] && "$py" "$src/tests/matrix/compare.py" -q "$d/truth.tsv" "$d/types.json" >"$d/types.cmp" 2>&1 &&
		[[ "$layout" == "layout from the DWARF of $m/lstate.o (--types), validated against memory: the scan found 1 VM;"* ]]; then
		echo "PASS a modified Lua, --types lstate.o: the truth; $layout"
	else
		echo "FAIL a modified Lua, --types lstate.o: exit $rc, layout '$layout': $(tail -3 "$d/types.cmp") $(head -2 "$d/types.err")"
		status=1
	fi
	"$inspect" --types "$m/lstate.o" "$d/core" "$d/exe" >"$d/types.txt" 2>&1
	LUACORE_LIB=$lib_so timeout 300 gdb -q -batch -nx -x "$src/gdb/luaprof.py" \
		-ex "lua-layout $m/lstate.o" -ex "lua-bt -a" "$d/exe" "$d/core" >"$d/types-gdb.txt" 2>&1
	if res=$("$py" "$src/tests/gdb/compare_bt.py" "$d/types-gdb.txt" "$d/types.txt" 2>&1); then
		echo "PASS a modified Lua, gdb lua-layout lstate.o: $res"
	else
		echo "FAIL a modified Lua, gdb lua-layout lstate.o: $res"
		status=1
	fi
else
	echo "FAIL make-core.sh modified: $(tail -2 "$d.log")"
	status=1
fi
# A release forced that is not the program's.
c=$tmp/nodebug-5.4.7-coroutines3
if [ -e "$c/core" ]; then
	rc=0
	"$inspect" --layout 5.4.0 "$c/core" "$c/exe" >"$tmp/forced.txt" 2>&1 || rc=$?
	if [ "$rc" = 1 ] && grep -q "the built-in layout of Lua 5\.4\.0 (--layout) does not fit this program's memory" "$tmp/forced.txt"; then
		echo "PASS --layout 5.4.0 on Lua 5.4.7: refused, the failed check named"
	else
		echo "FAIL --layout 5.4.0 on Lua 5.4.7: exit $rc: $(grep -m1 warning "$tmp/forced.txt")"
		status=1
	fi
	rc=0
	"$inspect" --layout 9.1 "$c/core" "$c/exe" >"$tmp/bad.txt" 2>&1 || rc=$?
	if [ "$rc" = 64 ] && grep -q "'9\.1' is not a Lua release" "$tmp/bad.txt"; then
		echo "PASS --layout 9.1: a usage error (64)"
	else
		echo "FAIL --layout 9.1: exit $rc: $(head -2 "$tmp/bad.txt")"
		status=1
	fi
fi
exit $status
