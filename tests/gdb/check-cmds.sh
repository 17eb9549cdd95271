#!/usr/bin/env bash
# One core: lua-states, lua-vm and lua-stack for every lua_State of the
# VMs running on a thread and of one idle VM, lua-bt -a -full, and
# lua-heap, against luacore-inspect's report and --heap text of the same
# core; for a heap_paths core (expect lines in CELL_DIR/log), lua-path
# and lua-path --strong of every planted object against the script's
# expected path and luacore-inspect --heap --path.
# usage: check-cmds.sh CELL_DIR  (needs LUACORE_INSPECT, LUAPROF,
# LUACORE_LIB in the environment)
set -uo pipefail
cell=$1
here=$(cd "$(dirname "$0")" && pwd)
d=$cell/gdb-cmds
rm -rf "$d"
mkdir -p "$d"
"$LUACORE_INSPECT" "$cell/core" "$cell/exe" >"$d/inspect.txt" 2>/dev/null
"$LUACORE_INSPECT" --stack --residue 8 "$cell/core" "$cell/exe" \
	>"$d/inspect-stack.txt" 2>/dev/null
"$LUACORE_INSPECT" --no-scan --locals "$cell/core" "$cell/exe" \
	>"$d/inspect-locals.txt" 2>/dev/null
"$LUACORE_INSPECT" --heap "$cell/core" "$cell/exe" >"$d/inspect-heap.txt" 2>/dev/null
# A heap_paths core's planted objects: "expect<TAB>NAME<TAB>ADDR<TAB>PATH"
# lines of the program's output.
grep -s $'^expect\t' "$cell/log" >"$d/expect.tsv"
paths=()
while IFS=$'\t' read -r _ _ addr _; do
	paths+=(--path "$addr")
done <"$d/expect.tsv"
if [ ${#paths[@]} -gt 0 ]; then
	"$LUACORE_INSPECT" --heap "${paths[@]}" "$cell/core" "$cell/exe" \
		>"$d/inspect-paths.txt" 2>/dev/null
	"$LUACORE_INSPECT" --heap --strong "${paths[@]}" "$cell/core" "$cell/exe" \
		>"$d/inspect-strong.txt" 2>/dev/null
fi
cat >"$d/cmds.gdb" <<EOG
python
import re
def run(cmd, path):
    try:
        text = gdb.execute(cmd, to_string=True)
    except gdb.error as e:
        text = "error: %s\n" % e
    open("$d/" + path, "w").write(text)
    return text
states = run("lua-states", "states.txt")
# lua-vm and lua-stack of the states of every VM found by a thread (the
# others, idle, are the same code: one each of the first idle VM).
idle = 0
for vm in states.split("\nVM ")[1:]:
    if "(found by thread)" not in vm.splitlines()[0]:
        idle += 1
        if idle > 1:
            continue
    for addr in re.findall(r"^  lua_State (0x[0-9a-f]+) ", vm, re.M):
        run("lua-vm " + addr, "vm-%s.txt" % addr)
        run("lua-stack " + addr + " -residue 8", "stack-%s.txt" % addr)
run("lua-bt -a -full", "bt-full.txt")
run("lua-heap", "heap.txt")
# heap_paths: the planted objects' paths, and an address where no object
# starts (inside the first one).
expect = [l.rstrip("\n").split("\t") for l in open("$d/expect.tsv")]
for f in expect:
    run("lua-path " + f[2], "path-%s.txt" % f[2])
    run("lua-path " + f[2] + " --strong", "strong-%s.txt" % f[2])
if expect:
    run("lua-path 0x%x" % (int(expect[0][2], 16) + 1), "path-none.txt")
end
EOG
timeout 300 gdb -nx -batch -x "$LUAPROF" -x "$d/cmds.gdb" "$cell/exe" "$cell/core" \
	>"$d/gdb.out" 2>&1 </dev/null
fail=
res1=$(python3 "$here/compare_cmds.py" "$d") || fail=1
res2=$(python3 "$here/compare_bt.py" --vars "$d/bt-full.txt" "$d/inspect-locals.txt") || fail=1
if [ -z "$fail" ]; then
	echo "PASS $cell: ${res1##*$'\n'}; lua-bt -full ${res2##*$'\n'}"
else
	echo "FAIL $cell:"
	printf '%s\n%s\n' "$res1" "$res2" | sed 's/^/    /'
	exit 1
fi
