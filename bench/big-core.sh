#!/usr/bin/env bash
# Build a >= 1 GiB core of a Lua host holding >= 5M live objects, then time
# luacore-inspect on it and measure its peak RSS, side by side with
# eu-stack (native frames only) and gdb's bt on the same core.
# Targets: luacore-inspect <= 2 s and peak RSS <= 10% of the core size.
# With LC_BASELINE=OTHER_BUILDDIR (a build of another commit), that
# build's luacore-inspect is timed on the same core too (both the fastest
# of alternating runs), and the two reports compared.
#   bench/big-core.sh [BUILDDIR] [OBJECTS]
set -euo pipefail
builddir=${1:-.}
objects=${2:-5000000}
inspect=$builddir/src/luacore-inspect
tmp=$(mktemp -d /var/tmp/luacore-bench.XXXXXX)
pid=
cleanup() {
	[ -n "$pid" ] && kill -9 "$pid" 2>/dev/null
	rm -rf "$tmp"
}
trap cleanup EXIT

# 5M tables, each holding a distinct 160-byte string: ~1.3 GiB of heap.
cat > "$tmp/big.lua" <<'LUA'
local n = tonumber(arg[1])
local keep = {}
local pad = string.rep("x", 150)
for i = 1, n do
  keep[i] = { pad .. i }
end
local f = assert(io.open(arg[2], "w")) f:write(collectgarbage("count"), "\n") f:close()
io.read()
LUA
mkfifo "$tmp/fifo"
lua5.4 "$tmp/big.lua" "$objects" "$tmp/ready" < "$tmp/fifo" &
pid=$!
exec {fd}>"$tmp/fifo"
for _ in $(seq 600); do [ -s "$tmp/ready" ] && break; sleep 0.5; done
[ -s "$tmp/ready" ] || { echo "the Lua host did not get ready" >&2; exit 2; }
gcore -o "$tmp/core" "$pid" >/dev/null 2>&1
kill -9 "$pid"; wait "$pid" 2>/dev/null || true; pid=
exec {fd}>&-
core=$tmp/core.$(ls "$tmp" | sed -n 's/^core\.//p' | head -1)
core_bytes=$(stat -c %s "$core")

# Run a command with a cold-ish page cache for the core, report wall time
# and peak RSS (getrusage of the child).
measure() {
	python3 - "$@" <<'PY'
import resource, subprocess, sys, time
t0 = time.monotonic()
p = subprocess.run(sys.argv[1:], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
dt = time.monotonic() - t0
rss = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss * 1024
print(f"{dt:.3f} {rss} {p.returncode}")
PY
}

echo "core: $core_bytes bytes ($(awk "BEGIN{printf \"%.2f\", $core_bytes/2^30}") GiB), $objects live tables (Lua heap $(cut -d. -f1 "$tmp/ready") KiB)"
read -r t_lc rss_lc rc_lc < <(measure "$inspect" "$core" "$(command -v lua5.4)")
rows=
if [ -n "${LC_BASELINE:-}" ]; then
	# Alternating runs, the fastest of each: the first run of all meets
	# the coldest page cache.
	t_b=999
	for _ in 1 2 3; do
		read -r t rss_b rc_b < <(measure "$LC_BASELINE/src/luacore-inspect" "$core" "$(command -v lua5.4)")
		t_b=$(awk -v a="$t" -v b="$t_b" 'BEGIN { print (a < b ? a : b) }')
		read -r t rss rc < <(measure "$inspect" "$core" "$(command -v lua5.4)")
		t_lc=$(awk -v a="$t" -v b="$t_lc" 'BEGIN { print (a < b ? a : b) }')
	done
	rows="baseline-inspect $t_b $rss_b $rc_b"
	if cmp -s <("$inspect" "$core" "$(command -v lua5.4)" 2>&1) \
		<("$LC_BASELINE/src/luacore-inspect" "$core" "$(command -v lua5.4)" 2>&1); then
		echo "reports of this build and the baseline: identical"
	else
		echo "reports of this build and the baseline: DIFFERENT"
	fi
fi
read -r t_eu rss_eu rc_eu < <(measure eu-stack --core "$core" -e "$(command -v lua5.4)")
read -r t_gdb rss_gdb rc_gdb < <(measure gdb -nx -batch -ex bt "$(command -v lua5.4)" "$core")
printf '%-16s %8s %12s %10s %6s\n' tool seconds peak_rss rss/core exit
for row in "luacore-inspect $t_lc $rss_lc $rc_lc" ${rows:+"$rows"} "eu-stack $t_eu $rss_eu $rc_eu" "gdb-bt $t_gdb $rss_gdb $rc_gdb"; do
	set -- $row
	printf '%-16s %8s %12s %9.2f%% %6s\n' "$1" "$2" "$3" "$(awk "BEGIN{print 100*$3/$core_bytes}")" "$4"
done
echo "ratios: luacore/eu-stack time $(awk "BEGIN{printf \"%.2f\", $t_lc/$t_eu}"), luacore/gdb time $(awk "BEGIN{printf \"%.2f\", $t_lc/$t_gdb}")"
awk "BEGIN{ok = ($t_lc <= 2.0 && $rss_lc <= 0.10*$core_bytes); print (ok ? \"targets met\" : \"targets NOT met\") \": <= 2 s and peak RSS <= 10% of the core\"}"
