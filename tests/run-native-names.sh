#!/usr/bin/env bash
# Names of native frames, on the C++ host lchost++ (fixtures/host/) under a
# Debian liblua and a source build:
#  - C++ functions demangled with their parameters exactly as gdb's bt
#    names frames without debug info (scan++.cc is built -g0), in
#    luacore-inspect's text and JSON (linkage_name: the mangled symbol, which
#    c++filt turns into the function), gdb's lua-bt and luacore-sample's
#    output; the Lua frames equal the script's truth;
#  - no symbol version suffix (__libc_start_main@@GLIBC_2.34);
#  - one module name for a core, the live process it was taken from, and
#    gdb on either: the file the kernel mapped, symlinks resolved
#    (liblua5.4.so.0.0.0);
#  - a frame in anonymous executable memory (cxx_anon_exec: a trampoline
#    copied into an mmap'd page) is named [anon:exec], in a core and live,
#    and leaves the stack whole: exit status 0, no note, Lua frames placed.
set -uo pipefail
. "$(cd "$(dirname "$0")" && pwd)/lib.sh"
export LUACORE_LIB=${LUACORE_LIB:-$(cd "$top_builddir/libcore/.libs" && pwd)/libluacore.so}
luaprof=${LUAPROF:-$src/gdb/luaprof.py}
builds="deb-5.4 src-5.4.7-O0"

# The builds (cheap when made already, as by tests/run-matrix.sh).
# shellcheck disable=SC2086
"$src/fixtures/build-lua.sh" "$out" $builds >"$tmp/build.log" 2>&1 ||
	{ cat "$tmp/build.log"; echo "FAIL: fixtures/build-lua.sh"; exit 1; }

# frames_by_pc TEXT: "PC<TAB>FUNCTION<TAB>MODULE" of each machine frame
# of a luacore-inspect or lua-bt text report (from its first thread on:
# gdb prints the frame it stops in first).
frames_by_pc() {
	sed -n '/^Thread /,$ s/^#[0-9]* *0x0*\([0-9a-f]*\) in \(.*\) () *\(at [^ ]*\)\? *\(\[[^]]*\]\)\?$/\1\t\2\t\4/p' "$1"
}
# gdb_minsym_frames BT: "PC<TAB>NAME" of the frames gdb's bt shows by
# their symbol alone ("#3  0x... in NAME ()", no source).
gdb_minsym_frames() {
	sed -n 's/^#[0-9]* *0x0*\([0-9a-f]*\) in \(.*\) ()$/\1\t\2/p' "$1"
}
# same_names A B [COL]: every pc of A (PC<TAB>NAME<TAB>MODULE) that B has,
# B gives the same column COL (default 2: the name); at least one such pc.
same_names() {
	"$py" - "$1" "$2" "${3:-2}" <<'EOF'
import sys
col = int(sys.argv[3]) - 1
def rd(p):
    d = {}
    for l in open(p):
        f = l.rstrip("\n").split("\t")
        d.setdefault(f[0], f[col])
    return d
a, b = rd(sys.argv[1]), rd(sys.argv[2])
common = [pc for pc in a if pc in b]
bad = [(pc, a[pc], b[pc]) for pc in common if a[pc] != b[pc]]
for pc, x, y in bad:
    print("    0x%s: %r against %r" % (pc, x, y))
sys.exit(0 if common and not bad else 1)
EOF
}
# json_frames REPORT.json: "PC<TAB>FUNCTION<TAB>LINKAGE<TAB>MODULE" of the
# first thread's machine frames; then "partial<TAB>P<TAB>NOTE".
json_frames() {
	"$py" - "$1" <<'EOF'
import json, sys
r = json.load(open(sys.argv[1]))
t = r["threads"][0]
for f in t["frames"]:
    if f["kind"] == "native" and not f["inlined"]:
        print("%s\t%s\t%s\t%s" % (f["address"][2:].lstrip("0"), f["function"],
                                  f.get("linkage_name") or "", f["module"] or ""))
print("partial\t%s\t%s" % (t["partial"], t["note"] or ""))
EOF
}
demangles() {	# FRAMES: each linkage_name c++filt's to its function
	awk -F'\t' '$3 != "" { print $2 "\t" $3 }' "$1" >"$tmp/dm"
	[ -s "$tmp/dm" ] || return 1
	cut -f2 "$tmp/dm" | c++filt >"$tmp/dm.filt"
	cut -f1 "$tmp/dm" | diff - "$tmp/dm.filt"
}
start() {	# BUILD SCENARIO DIR -> $pid, parked
	mkdir -p "$3"
	(cd "$3" && LC_TRUTH_LUA=$src/fixtures/lua/truth.lua LC_TRUTH=$3/truth.tsv \
		LC_READY=$3/ready exec "$out/$1/lchost++" "$src/fixtures/scenarios/$2.lua") \
		>"$3/log" 2>&1 &
	pid=$!
	pids+=("$pid")
	for i in $(seq 100); do [ -e "$3/ready" ] && return 0; sleep 0.1; done
	echo "FAIL: $1 $2 not ready: $(tail -2 "$3/log")"; status=1
	return 1
}
stop() {	# PID
	kill -KILL "$1"
	wait "$1" 2>/dev/null
}

for b in $builds; do
	# ---- cxx_names: one process, live and its core --------------------
	d=$tmp/$b/cxx_names
	start "$b" cxx_names "$d" || continue
	exe=$out/$b/lchost++
	rc=0; "$inspect" -p "$pid" --json >"$d/live.json" 2>"$d/live.err" || rc=$?
	"$inspect" -p "$pid" >"$d/live.txt" 2>/dev/null
	gdb -nx -batch -x "$luaprof" -ex 'lua-bt -a' -p "$pid" >"$d/gdb-live.txt" 2>&1 </dev/null
	"$sample" -q --wall -r 50 -d 1 -o "$d/profile.folded" -p "$pid" >/dev/null 2>&1
	"$sample" -q --native --wall -r 50 -d 1 -o "$d/native.folded" -p "$pid" >/dev/null 2>&1
	check "$b cxx_names: the program runs on, untraced" running "$pid"
	gcore -o "$d/core" "$pid" >/dev/null 2>&1 && mv "$d/core.$pid" "$d/core"
	stop "$pid"
	"$inspect" --json "$d/core" "$exe" >"$d/core.json" 2>/dev/null
	"$inspect" "$d/core" "$exe" >"$d/core.txt" 2>/dev/null
	gdb -nx -batch -ex bt "$exe" "$d/core" >"$d/bt.txt" 2>&1 </dev/null
	gdb -nx -batch -x "$luaprof" -ex 'lua-bt -a' "$exe" "$d/core" >"$d/gdb-core.txt" 2>&1 </dev/null
	for v in live core; do
		check "$b cxx_names $v: Lua frames equal the truth" \
			"$py" "$src/tests/matrix/compare.py" -q "$d/truth.tsv" "$d/$v.json"
	done
	frames_by_pc "$d/core.txt" >"$d/core.frames"
	frames_by_pc "$d/live.txt" >"$d/live.frames"
	frames_by_pc "$d/gdb-core.txt" >"$d/gdb-core.frames"
	frames_by_pc "$d/gdb-live.txt" >"$d/gdb-live.frames"
	gdb_minsym_frames "$d/bt.txt" >"$d/bt.frames"
	echo "    gdb bt, frames by symbol only: $(cut -f2 "$d/bt.frames" | paste -sd'|')"
	check "$b cxx_names: gdb's bt shows the C++ frames by symbol (4 or more)" \
		[ "$(grep -c '::\|(lua_State\*)' "$d/bt.frames")" -ge 4 ]
	check "$b cxx_names: ... among them nse::script_scan(std::vector<...>&, nse::stype)" \
		grep -q 'nse::script_scan(std::vector<nse::Target, std::allocator<nse::Target> >&, nse::stype)' "$d/bt.frames"
	check "$b cxx_names: luacore-inspect names them as gdb's bt does" \
		same_names "$d/bt.frames" "$d/core.frames"
	check "$b cxx_names: gdb's lua-bt names every frame as luacore-inspect does" \
		same_names "$d/core.frames" "$d/gdb-core.frames"
	check "$b cxx_names: Lua C frame named l_script_scan(lua_State*)" \
		grep -q "in field 'script_scan' \[l_script_scan(lua_State\*)\]" "$d/core.txt" "$d/gdb-core.txt"
	json_frames "$d/core.json" >"$d/core.jframes"
	json_frames "$d/live.json" >"$d/live.jframes"
	check "$b cxx_names: JSON linkage_name is the mangled symbol of function" \
		demangles "$d/core.jframes"
	check "$b cxx_names: JSON function is demangled" \
		grep -q $'\tnse::script_scan(std::vector<nse::Target, std::allocator<nse::Target> >&, nse::stype)\t_ZN3nse11script_scan' "$d/core.jframes"
	# Lua first: the C function stands as its Lua frame, the C++ it calls
	# below it; --native keeps the C function's own frame too.
	check "$b cxx_names: the sampler's stacks are demangled" \
		grep -q 'scan (.*cxx_names.lua:6);script_scan \[C\];nse::script_scan(std::vector<nse::Target, std::allocator<nse::Target> >&, nse::stype);nse::Engine::run_phase(' "$d/profile.folded"
	check "$b cxx_names: ... and with --native, the C function's own frame" \
		grep -q 'script_scan \[C\];l_script_scan(lua_State\*);nse::script_scan(std::vector<nse::Target, std::allocator<nse::Target> >&, nse::stype);nse::Engine::run_phase(' "$d/native.folded"
	# ---- symbol versions ----
	check "$b: __libc_start_main, no version suffix, in text, JSON and the sampler" \
		grep -q ' in __libc_start_main () ' "$d/core.txt" "$d/live.txt"
	check "$b: no '@' in any native function name" \
		eval "! cut -f2 '$d/core.frames' '$d/live.frames' '$d/gdb-core.frames' '$d/core.jframes' | grep -q @ &&
		! grep -q '@GLIBC' '$d/profile.folded' '$d/native.folded' '$d/core.json' '$d/live.json'"
	# ---- one module name: core, live, gdb on either ----
	check "$b: JSON module of every frame: the core's equals the live process's" \
		diff <(cut -f1,4 "$d/live.jframes" | grep -v ^partial) <(cut -f1,4 "$d/core.jframes" | grep -v ^partial)
	check "$b: ... and names the file mapped (liblua5.4.so.0.0.0, lchost++)" \
		eval "grep -q \$'\t/.*/liblua5.4.so.0.0.0\$' '$d/core.jframes' || [ $b != deb-5.4 ];
		grep -q \$'\t$out/$b/lchost++\$' '$d/core.jframes'"
	check "$b: JSON lua_module: the same in the core and live" \
		eval "[ \"\$(grep -o '\"lua_module\":\"[^\"]*\"' '$d/core.json')\" = \"\$(grep -o '\"lua_module\":\"[^\"]*\"' '$d/live.json')\" ]"
	for g in core gdb-core gdb-live; do
		check "$b: text module names: $g equals live" \
			same_names "$d/live.frames" "$d/$g.frames" 3
	done

	# ---- cxx_anon_exec: a frame in anonymous executable memory --------
	d=$tmp/$b/cxx_anon_exec
	start "$b" cxx_anon_exec "$d" || continue
	rc=0; "$inspect" -p "$pid" --json >"$d/live.json" 2>/dev/null || rc=$?
	echo "$rc" >"$d/live.rc"
	"$inspect" -p "$pid" >"$d/live.txt" 2>/dev/null
	check "$b cxx_anon_exec: the program runs on, untraced" running "$pid"
	gcore -o "$d/core" "$pid" >/dev/null 2>&1 && mv "$d/core.$pid" "$d/core"
	stop "$pid"
	rc=0; "$inspect" --json "$d/core" "$exe" >"$d/core.json" 2>/dev/null || rc=$?
	echo "$rc" >"$d/core.rc"
	"$inspect" "$d/core" "$exe" >"$d/core.txt" 2>/dev/null
	for v in core live; do
		json_frames "$d/$v.json" >"$d/$v.jframes"
		sed -n '/^Thread/,/^$/p' "$d/$v.txt" | head -6 | sed 's/^/    /'
		check "$b cxx_anon_exec $v: the trampoline's frame is [anon:exec]" \
			grep -q $'^[0-9a-f]*\t\tNone\t\[anon:exec\]$\|^[0-9a-f]*\tNone\t\t\[anon:exec\]$' "$d/$v.jframes"
		check "$b cxx_anon_exec $v: ... in the text too, between its callee and caller" \
			grep -A1 -B1 ' in ?? () \[anon:exec\]$' "$d/$v.txt" | grep -q 'lchost_anon_exec_target.*l_anon_exec_park'
		check "$b cxx_anon_exec $v: exit status 0, thread not partial" \
			eval "[ \"\$(cat '$d/$v.rc')\" = 0 ] && grep -q \$'^partial\tFalse\t\$' '$d/$v.jframes'"
		check "$b cxx_anon_exec $v: Lua frames equal the truth, none unplaced" \
			eval "'$py' '$src/tests/matrix/compare.py' -q '$d/truth.tsv' '$d/$v.json' && ! grep -q '\"unplaced\":true' '$d/$v.json'"
	done
done
exit "$status"
