#!/usr/bin/env bash
# Hostile cores and targets: copies of real fixture cores edited the way
# an attacker (or a damaged disk) would (tests/hostile/core-edit.py), and a
# live Lua program with 64k mappings.  Each must end in bounded time, with
# bounded memory, and say what is wrong:
#  - NT_FILE names the executable as a FIFO (no executable given): not
#    opened, noted, exit 1, within 10 s; the dynamic linker's list (in the
#    process's memory) names libc as one, a debug link leads to one: the
#    same;
#  - an absurd note size, a damaged NT_FILE count, a PT_NOTE past the end
#    of an intact core: each said for what it is (not "truncated"), and
#    the executable no file stands for asked for; exit 1;
#  - 64k mappings in a live process: luacore-inspect -p prints its first
#    line within 2 s, and the report matches the script's truth; its core
#    (64k PT_LOADs) is read within 5 s;
#  - 10^6 NT_PRSTATUS notes (copies of the real thread's): peak RSS at
#    most the core's size, the copies noted, the real thread unwound;
#  - a fake GC list of 1.2e7 thread-tagged objects, --no-scan: peak RSS at
#    most the core's size, noted;
# The truth of every frame comes from the fixture's own truth.tsv.
set -uo pipefail
top_srcdir=${top_srcdir:-.}
top_builddir=${top_builddir:-.}
src=$(cd "$top_srcdir" && pwd)
inspect=$(cd "$top_builddir/src" && pwd)/luacore-inspect
out=$(cd "${LUACORE_MATRIX_DIR:-$top_builddir/fixtures/out}" && pwd)
edit="python3 $src/tests/hostile/core-edit.py"
export LC_TRUTH_LUA=$src/fixtures/lua/truth.lua
tmp=$(mktemp -d)
pids=
cleanup() {
	for p in $pids; do kill -KILL "$p" 2>/dev/null; wait "$p" 2>/dev/null; done
	rm -rf "$tmp" ${lmdir:+"$lmdir"}
}
trap cleanup EXIT
fail=0 pass=0
ok() { pass=$((pass + 1)); echo "PASS $*"; }
bad() { fail=$((fail + 1)); echo "FAIL $*"; }
now() { date +%s.%N; }
since() { awk -v a="$1" -v b="$(now)" 'BEGIN { printf "%.2f", b - a }'; }

# run NAME TIMEOUT ARGS...: luacore-inspect into $tmp/NAME.out (stdout)
# and $tmp/NAME.err, its status in $rc, its time in $secs.
run() {
	local name=$1 limit=$2 t0; shift 2
	t0=$(now)
	rc=0
	timeout "$limit" "$inspect" "$@" >"$tmp/$name.out" 2>"$tmp/$name.err" || rc=$?
	secs=$(since "$t0")
}
# said NAME PATTERN: a line of NAME's output or errors matches.
said() { grep -q -- "$2" "$tmp/$1.out" "$tmp/$1.err"; }

# ---- 1. files the core names that are not regular files ----

c54=$out/deb-5.4/coroutines3
exe54=$(readlink -f "$c54/exe")
mkfifo "$tmp/fifo"
$edit file-path "$c54/core" "$tmp/fifo.core" "$exe54" "$tmp/fifo"
run fifo 10 "$tmp/fifo.core"
if [ "$rc" = 1 ] && said fifo "warning: the executable $tmp/fifo named in the core cannot be used (it is a FIFO, not a regular file: not opened).*give the executable the core ran as the second argument"; then
	ok "NT_FILE names the executable as a FIFO: exit 1 in $secs s, noted"
else
	bad "NT_FILE names the executable as a FIFO: exit $rc in $secs s (124: it hung), wanted 1 and the note"
	head -5 "$tmp/fifo.err"
fi
# The same core with the executable given: read in full.
run fifo-exe 10 --json "$tmp/fifo.core" "$exe54"
if [ "$rc" = 0 ] && python3 "$src/tests/matrix/compare.py" "$c54/truth.tsv" "$tmp/fifo-exe.out" >"$tmp/cmp" 2>&1; then
	ok "the FIFO core with its executable given: the frames equal the truth"
else
	bad "the FIFO core with its executable given: exit $rc; $(tail -2 "$tmp/cmp")"
fi

# The dynamic linker's list names libc as a FIFO (its l_name, in the
# process's memory): libdwfl follows that list and opens each name.
lmdir=$(mktemp -d /tmp/lm.XXXXXX)
libc=/lib/x86_64-linux-gnu/libc.so.6
lmfifo=$lmdir/$(printf "%$((${#libc} - ${#lmdir} - 1))s" | tr ' ' f)
mkfifo "$lmfifo"
$edit mem-string "$c54/core" "$tmp/lm.core" "$libc" "$lmfifo"
run lm 10 "$tmp/lm.core"
if [ "$rc" = 1 ] && said lm "warning: the file $lmfifo named in the core cannot be used (it is a FIFO, not a regular file: not opened)" &&
	said lm "in pause () .*\[libc.so.6\]"; then
	ok "the link map names libc as a FIFO: exit 1 in $secs s, noted, libc's frames still named"
else
	bad "the link map names libc as a FIFO: exit $rc in $secs s (124: it hung), wanted 1 and the note"
	head -5 "$tmp/lm.err"
fi
rm -rf "$lmdir"

# A debug link that leads to a FIFO: the executable stripped of its
# DWARF, with a .gnu_debuglink whose file (in .debug/ beside it) is one.
c548=$out/src-5.4.8-O2/coroutines3
exe548=$(readlink -f "$c548/exe")
mkdir -p "$tmp/dl/.debug"
echo x >"$tmp/dl/.debug/lchost.debug"
objcopy --strip-debug --add-gnu-debuglink="$tmp/dl/.debug/lchost.debug" "$exe548" "$tmp/dl/lchost"
rm "$tmp/dl/.debug/lchost.debug"
mkfifo "$tmp/dl/.debug/lchost.debug"
$edit file-path "$c548/core" "$tmp/dl.core" "$exe548" "$tmp/dl/lchost"
run dl 10 "$tmp/dl.core"
if [ "$rc" = 1 ] && said dl "its debug file $tmp/dl/.debug/lchost.debug is a FIFO, not a regular file: not opened"; then
	ok "a debug link to a FIFO: exit 1 in $secs s, noted"
else
	bad "a debug link to a FIFO: exit $rc in $secs s (124: it hung), wanted 1 and the note"
	head -5 "$tmp/dl.err"
fi
# A core given as a FIFO, an executable given as one.
run core-fifo 10 "$tmp/fifo"
if [ "$rc" = 2 ] && said core-fifo "'$tmp/fifo' is a FIFO, not a regular file: not opened"; then
	ok "a FIFO given as the core: exit 2 in $secs s, said"
else
	bad "a FIFO given as the core: exit $rc in $secs s"; head -3 "$tmp/core-fifo.err"
fi
run exe-fifo 10 "$c54/core" "$tmp/fifo"
if [ "$rc" = 2 ] && said exe-fifo "the executable '$tmp/fifo' is a FIFO, not a regular file: not opened"; then
	ok "a FIFO given as the executable: exit 2 in $secs s, said"
else
	bad "a FIFO given as the executable: exit $rc in $secs s"; head -3 "$tmp/exe-fifo.err"
fi

# ---- messages: what is damaged, what is missing ----

# An intact core whose NT_FILE note claims 2 GiB: not "truncated".
$edit note-size "$c54/core" "$tmp/ns.core"
run ns 10 "$tmp/ns.core"
if [ "$rc" = 1 ] && ! said ns truncated &&
	said ns "note 6 of the core (type 0x46494c45) claims 5 bytes of name and 2147483648 of data, more than the [0-9]* left in its PT_NOTE: it and the notes after it are not read" &&
	said ns "warning: the executable lchost named in the core cannot be used (the core names no file for it.*give the executable the core ran as the second argument"; then
	ok "an absurd note size: exit 1, the note named, not called truncated, the executable asked for"
else
	bad "an absurd note size: exit $rc"; cat "$tmp/ns.err"
fi
# The same with the executable given: read in full, the damage still said.
run ns-exe 10 --json "$tmp/ns.core" "$exe54"
if [ "$rc" = 1 ] && said ns-exe "claims 5 bytes of name and 2147483648 of data" &&
	python3 "$src/tests/matrix/compare.py" "$c54/truth.tsv" "$tmp/ns-exe.out" >"$tmp/cmp" 2>&1; then
	ok "an absurd note size, the executable given: the frames equal the truth, exit 1"
else
	bad "an absurd note size, the executable given: exit $rc; $(tail -1 "$tmp/cmp")"
fi
# A damaged NT_FILE count: no "??" frames with exit 0.
$edit file-count "$c54/core" "$tmp/fc.core" 99999
run fc 10 "$tmp/fc.core"
if [ "$rc" = 1 ] && said fc "the core's NT_FILE note counts 99999 files, and its [0-9]* bytes hold at most [0-9]*: it is damaged" &&
	said fc "warning: the executable lchost named in the core cannot be used (the core names no file for it (its NT_FILE note is damaged or missing), and no file has its build-id; the core's build-id for it is [0-9a-f]*).*second argument"; then
	ok "a damaged NT_FILE count: exit 1, the damage and the missing executable said"
else
	bad "a damaged NT_FILE count: exit $rc"; cat "$tmp/fc.err"
fi
# A PT_NOTE that claims to reach past the end of an intact core, a whole
# segment after it (a kernel's core has its notes first): damaged, not
# truncated.
$edit note-past-end "$c54/core" "$tmp/pn.core"
run pn 10 "$tmp/pn.core" "$exe54"
if [ "$rc" = 1 ] && ! said pn truncated &&
	said pn "program header [0-9]* (PT_NOTE) claims 1099511627776 bytes at offset [0-9]*, past the end of the core ([0-9]* bytes), though the segments after it in the file are whole: its size is damaged, not the file cut short"; then
	ok "a PT_NOTE size past the end of an intact core: exit 1, called damaged, not truncated"
else
	bad "a PT_NOTE size past the end of an intact core: exit $rc"; cat "$tmp/pn.err"
fi

# ---- 2. 64k mappings in a live process ----

cc=${CC:-cc}
$cc -O2 -shared -fPIC -o "$tmp/manymaps.so" "$src/tests/hostile/manymaps.c"
maps=${LC_HOSTILE_MAPS:-64000}
mmc=$(cat /proc/sys/vm/max_map_count)
[ "$mmc" -gt $((maps + 500)) ] ||
	bad "vm.max_map_count is $mmc: a process cannot have $maps mappings here (the default is 65530)"
rm -f "$tmp/ready"
LD_PRELOAD=$tmp/manymaps.so LC_MAPS=$maps LC_TRUTH=$tmp/maps-truth.tsv LC_READY=$tmp/ready \
	"$out/src-5.4.8-O2/lchost" "$src/fixtures/scenarios/coroutines3.lua" >"$tmp/maps.log" 2>&1 &
pid=$!
pids="$pids $pid"
for i in $(seq 100); do [ -e "$tmp/ready" ] && break; sleep 0.1; done
nmaps=$(wc -l <"/proc/$pid/maps" 2>/dev/null || echo 0)
if [ "$nmaps" -lt "$maps" ]; then
	bad "the program with $maps mappings has only $nmaps"
else
	python3 "$src/tests/hostile/first-line.py" 60 "$inspect" -p "$pid" >"$tmp/maps.out"
	read -r first end rc <"$tmp/maps.out"
	if [ "$rc" = 0 ] && awk -v s="$first" 'BEGIN { exit !(s <= 2) }'; then
		ok "$nmaps mappings: inspect -p's first line after $first s, done in $end s"
	else
		bad "$nmaps mappings: inspect -p's first line after $first s (wanted <= 2), done in $end s, exit $rc"
	fi
	timeout 60 "$inspect" -p "$pid" --json >"$tmp/maps.json" 2>"$tmp/maps.err"
	if python3 "$src/tests/matrix/compare.py" "$tmp/maps-truth.tsv" "$tmp/maps.json" >"$tmp/cmp" 2>&1; then
		ok "$nmaps mappings: the live report equals the truth"
	else
		bad "$nmaps mappings: the live report differs from the truth: $(tail -2 "$tmp/cmp")"
	fi
	# Its core: as many PT_LOADs as readable mappings (gcore).
	if gcore -o "$tmp/maps.core" "$pid" >/dev/null 2>&1; then
		run maps-core 60 --json "$tmp/maps.core.$pid" "$out/src-5.4.8-O2/lchost"
		if [ "$rc" = 0 ] && awk -v s="$secs" 'BEGIN { exit !(s <= 5) }' &&
			python3 "$src/tests/matrix/compare.py" "$tmp/maps-truth.tsv" "$tmp/maps-core.out" >"$tmp/cmp" 2>&1; then
			ok "its core, $(readelf -lW "$tmp/maps.core.$pid" | grep -c LOAD) PT_LOADs: read in $secs s, equals the truth"
		else
			bad "its core: exit $rc in $secs s (wanted 0 within 5 s); $(tail -2 "$tmp/cmp")"
		fi
		rm -f "$tmp/maps.core.$pid"
	else
		bad "gcore of the program with $nmaps mappings failed"
	fi
fi
kill -KILL "$pid" 2>/dev/null; wait "$pid" 2>/dev/null

# ---- 3. memory bounded by the core's size ----

# peak NAME TIMEOUT CORE ARGS...: luacore-inspect's peak RSS (KB) in
# $kb, its time in $secs, its status in $rc, the core's size (KB) in
# $corekb; output in $tmp/NAME.out and .out.err.
peak() {
	local name=$1 limit=$2 core=$3; shift 3
	read -r kb secs rc < <(python3 "$src/tests/hostile/peak-rss.py" "$limit" \
		"$tmp/$name.out" "$inspect" "$@")
	corekb=$(( $(stat -c %s "$core") / 1024 ))
}

# 10^6 thread notes, copies of the real thread's with other tids: the
# real thread is unwound (its native frames have names) and read.
$edit threads "$c54/core" "$tmp/threads.core" 1000000
peak threads 60 "$tmp/threads.core" --json "$tmp/threads.core" "$exe54"
if [ "$rc" = 1 ] && [ "$kb" -le "$corekb" ] &&
	grep -q "1000000 thread notes (NT_PRSTATUS) of the core repeat the tid or the stack pointer of another" "$tmp/threads.out.err" &&
	python3 "$src/tests/matrix/compare.py" "$c54/truth.tsv" "$tmp/threads.out" >"$tmp/cmp" 2>&1 &&
	python3 -c '
import json, sys
t = json.load(open(sys.argv[1]))["threads"]
assert len(t) == 1 and not t[0]["partial"], t[0]["note"]
assert any(f.get("function") == "lua_resume" for f in t[0]["frames"])
' "$tmp/threads.out"; then
	ok "10^6 thread notes: peak RSS $kb KB of a $corekb KB core, $secs s; the real thread unwound and equal to the truth"
else
	bad "10^6 thread notes: exit $rc, peak RSS $kb KB (core $corekb KB), $secs s; $(tail -1 "$tmp/cmp")"
	head -3 "$tmp/threads.out.err"
fi
rm -f "$tmp/threads.core"

# A fake GC list: thread-tagged objects, none a lua_State, in front of
# allgc (--no-scan walks the lists).  The issue's case is 6e7 objects in a
# 0.96 GB core (1.64 GB peak before); here 1.2e7 in 0.19 GB, the same
# ratio of list to core.
vm=$(python3 -c 'import json, sys; print(json.load(open(sys.argv[1]))["vms"][0]["address"])' "$c548/report.json")
allgc=$(gdb -nx -batch -ex 'print/x (long)&((global_State *)0)->allgc' "$exe548" 2>/dev/null | sed -n 's/^\$1 = //p')
nobj=${LC_HOSTILE_GC_OBJECTS:-12000000}
$edit gc-list "$c548/core" "$tmp/gc.core" "$vm" "$allgc" "$nobj"
peak gc 60 "$tmp/gc.core" --no-scan --json "$tmp/gc.core" "$exe548"
if [ "$rc" = 1 ] && [ "$kb" -le "$corekb" ] &&
	grep -q "$nobj thread objects on the GC lists do not validate" "$tmp/gc.out" &&
	python3 "$src/tests/matrix/compare.py" "$c548/truth.tsv" "$tmp/gc.out" >"$tmp/cmp" 2>&1; then
	ok "a fake GC list of $nobj thread objects: peak RSS $kb KB of a $corekb KB core, $secs s; noted, the real threads equal the truth"
else
	bad "a fake GC list of $nobj thread objects: exit $rc, peak RSS $kb KB (core $corekb KB), $secs s; $(tail -1 "$tmp/cmp")"
	grep -o "\"note\":\"[^\"]*\"" "$tmp/gc.out" | head -2
fi
rm -f "$tmp/gc.core"

echo "$pass passed, $fail failed"
[ "$fail" = 0 ] && [ "$pass" -gt 0 ]
