#!/usr/bin/env bash
# luacore-inspect -p (its default, the copy): the writable memory is
# copied while the process is stopped, the process let go, the copy
# decoded.
#  - on parked programs of several scenarios and Lua builds: the report's
#    Lua frames equal the script's truth, as with --no-copy, and the
#    program runs on, untraced;
#  - the stop is shorter than the report's making (the copy is all it
#    waits for), said in the report;
#  - --copy-limit 1 on a 2 MB heap: the copy is cut, stderr says how much
#    was copied and how many reads of the rest were made while the
#    process ran, exit status 1.
set -uo pipefail
. "$(cd "$(dirname "$0")" && pwd)/lib.sh"
# The Lua builds and the parked scenarios (tests/lib.sh park) of the
# live tests.
builds=$LIVE_BUILDS
scenarios=$LIVE_SCENARIOS
# shellcheck disable=SC2086
fixtures $builds

export LC_TRUTH_LUA=$src/fixtures/lua/truth.lua
for b in $builds; do
	for sc in $scenarios; do
		d=$tmp/$b-$sc
		park "$b" "$sc" "$d" || continue
		"$inspect" --json --no-copy -p "$pid" >"$d/plain.json" 2>"$d/plain.err"
		rc_plain=$?
		"$inspect" --json -p "$pid" >"$d/copy.json" 2>"$d/copy.err"
		rc_copy=$?
		"$inspect" -p "$pid" >"$d/copy.txt" 2>/dev/null
		check "$b $sc: --copy runs on, untraced" running "$pid"
		check "$b $sc: --copy's Lua frames equal the truth (exit $rc_copy; with --no-copy $rc_plain)" \
			eval "[ $rc_copy = $rc_plain ] && $py '$src/tests/matrix/compare.py' -q '$d/truth.tsv' '$d/copy.json' >/dev/null"
		check "$b $sc: ... and the report's stop is said" grep -q '(live; stopped for [0-9.]* ms)' "$d/copy.txt"
		kill -KILL "$pid" 2>/dev/null
	done
done

# A cut copy: --copy-limit 1 (MB) on a heap of some MB.
cat >"$tmp/heap.lua" <<'EOF'
local t = {}
for i = 1, 40000 do t[i] = { i, tostring(i) } end
local f = io.open(arg[1], "w") f:write("ready\n") f:close()
while true do os.execute("sleep 60") end
EOF
lua5.4 "$tmp/heap.lua" "$tmp/heap.ready" >/dev/null 2>&1 &
pid=$!
pids+=("$pid")
disown "$pid"
for i in $(seq 100); do [ -s "$tmp/heap.ready" ] && break; sleep 0.1; done
rc=0
"$inspect" --copy-limit 1 -p "$pid" >"$tmp/cut.txt" 2>"$tmp/cut.err" || rc=$?
sed 's/^/    /' "$tmp/cut.err"
check "--copy-limit 1: the cut said, with the reads made while it ran; exit 1" \
	eval "[ $rc = 1 ] && grep -q 'the copy holds [0-9.]* MB of the [0-9.]* MB of writable memory.*[0-9]* reads of the rest were made while the process ran on' '$tmp/cut.err'"
check "--copy-limit 1: the Lua frames are still shown" grep -q 'main chunk' "$tmp/cut.txt"
check "--copy-limit 1: the program runs on, untraced" running "$pid"
exit $status
