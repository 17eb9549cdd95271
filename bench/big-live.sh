#!/usr/bin/env bash
# luacore-inspect -p on a big heap: Debian's lua5.4 holding N tables
# (default 2,000,000: about 370 MB), parked in os.execute.  Side by side
# in one run: the stop with the report made while stopped (--no-copy,
# with and without the memory scan) and with the copy (the default),
# luacore-inspect's peak RSS, the target (heap / 2 GB/s + 50 ms), and
# whether the copy's report's
# frames equal those of the report of a gcore taken right after.
#   bench/big-live.sh [BUILDDIR] [N]
set -uo pipefail
builddir=$(cd "${1:-.}" && pwd)
n=${2:-2000000}
inspect=$builddir/src/luacore-inspect
tmp=$(mktemp -d)
pid=
trap '[ -n "$pid" ] && kill -KILL $pid 2>/dev/null; pkill -f "sleep 600" 2>/dev/null; rm -rf "$tmp"' EXIT
command -v lua5.4 >/dev/null || { echo "lua5.4 is missing (apt-get install lua5.4)" >&2; exit 1; }
cat >"$tmp/big.lua" <<'EOF'
local t = {}
for i = 1, tonumber(arg[1]) do t[i] = { i, tostring(i) } end
local f = io.open(arg[2], "w") f:write("ready\n") f:close()
os.execute("sleep 600")
EOF
lua5.4 "$tmp/big.lua" "$n" "$tmp/ready" &
pid=$!
for i in $(seq 1200); do [ -s "$tmp/ready" ] && break; sleep 0.1; done
rss=$(awk '/^VmRSS:/ { print $2 }' "/proc/$pid/status")
echo "== luacore-inspect -p on lua5.4 holding $n tables: RSS $((rss / 1024)) MB"
printf '  %-22s %12s %14s\n' mode "stopped ms" "peak RSS MB"
for mode in "--no-copy" "--no-copy --no-scan" "" "--no-scan"; do
	# shellcheck disable=SC2086
	/usr/bin/time -f '%M' -o "$tmp/rss" "$inspect" $mode -p "$pid" >"$tmp/out" 2>/dev/null
	ms=$(sed -n 's/.*(live; stopped for \([0-9.]*\) ms).*/\1/p' "$tmp/out")
	printf '  %-22s %12s %14s\n' "${mode:-(default)}" "$ms" "$(( $(cat "$tmp/rss") / 1024 ))"
	[ "$mode" = "" ] && cp "$tmp/out" "$tmp/copy.txt"
done
awk -v r="$rss" 'BEGIN { printf "  target: %.0f ms (heap / 2 GB/s + 50 ms)\n", r * 1024 / 2e9 * 1e3 + 50 }'
gcore -o "$tmp/core" "$pid" >/dev/null 2>&1
"$inspect" "$tmp/core.$pid" "$(command -v lua5.4)" >"$tmp/core.txt" 2>/dev/null
if diff <(grep '^#' "$tmp/copy.txt") <(grep '^#' "$tmp/core.txt") >/dev/null; then
	echo "  the copy's frames equal those of the gcore taken after: yes"
else
	echo "  the copy's frames equal those of the gcore taken after: NO"
	diff <(grep '^#' "$tmp/copy.txt") <(grep '^#' "$tmp/core.txt") | head -10
fi
