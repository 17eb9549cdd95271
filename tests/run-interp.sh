#!/usr/bin/env bash
# Debian's own interpreter, no options: luacore-inspect on a gcore of
# `lua5.X script.lua` shows the script's frames.  Ground truth is the
# script's debug.traceback written just before it blocks in io.read; the
# Lua frames luacore prints must be exactly those lines, in order.
set -euo pipefail
top_builddir=${top_builddir:-.}
inspect=$top_builddir/src/luacore-inspect
tmp=$(mktemp -d)
pids=()
cleanup() {
	for p in "${pids[@]}"; do kill -9 "$p" 2>/dev/null || true; done
	rm -rf "$tmp"
}
trap cleanup EXIT

cat > "$tmp/script.lua" <<'LUA'
local out = assert(io.open(arg[1], "w"))
local function inner(n)
  if n == 0 then
    out:write(debug.traceback("", 1), "\n") out:close() local l = io.read()
    return 1
  end
  return inner(n - 1) + 1
end
function outer()
  return (inner(3))
end
outer()
LUA

status=0
for v in 5.1 5.3 5.4; do
	exe=$(command -v lua$v) || { echo "FAIL lua$v: not installed (run ./dev.sh deps)"; status=1; continue; }
	mkfifo "$tmp/fifo$v"
	lua$v "$tmp/script.lua" "$tmp/tb$v" < "$tmp/fifo$v" &
	pid=$!
	pids+=("$pid")
	exec {fd}>"$tmp/fifo$v"		# hold the FIFO open: read blocks
	for _ in $(seq 100); do [ -s "$tmp/tb$v" ] && break; sleep 0.1; done
	sleep 0.2
	gcore -o "$tmp/core$v" "$pid" >/dev/null 2>&1
	kill -9 "$pid"; wait "$pid" 2>/dev/null || true; exec {fd}>&-
	rc=0
	"$inspect" "$tmp/core$v.$pid" "$exe" > "$tmp/out$v" || rc=$?
	# Traceback lines "\tscript.lua:7: in ..." -> "script.lua:7"; the first
	# line names debug.traceback's caller level (level 1 = inner).
	grep -o "script.lua:[0-9]*:" "$tmp/tb$v" | sed 's/:$//' > "$tmp/want$v"
	grep "^ *lua: " "$tmp/out$v" | grep -o "script.lua:[0-9]*:" | sed 's/:$//' > "$tmp/got$v"
	if [ "$rc" = 0 ] && diff -u "$tmp/want$v" "$tmp/got$v" > "$tmp/diff$v"; then
		echo "PASS lua$v: $(wc -l < "$tmp/want$v") script frames"
	else
		echo "FAIL lua$v (exit $rc)"; cat "$tmp/diff$v"; cat "$tmp/out$v"
		status=1
	fi
done
exit $status
