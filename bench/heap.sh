#!/usr/bin/env bash
# The heap census (luacore-inspect --heap) on a big heap: lchost of Lua
# 5.4.7 holding ROWS small tables, each with a short string and a
# distinct long string (bench/heap.lua; default 2,000,000 rows: 6M
# objects, about 1.1 GiB of Lua heap).  Measured in one run:
#  - on a gcore of it: the core's size, the object count the census
#    finds (vms[0].objects), the wall time of `--heap --json CORE`
#    (median of 5), and the peak RSS of that run against the core's
#    size;
#  - the census's throughput: objects per second of the walk that
#    visits and sizes every object (vms[0].walk_seconds, timed by the
#    library; the scan for VMs, loading the program and the output
#    are in the wall time, not in it), median of 5 runs, on the core
#    and on the live process (its bulk copy), with the best and worst
#    of the five on the core; beside it the machine's pace in the same
#    run (the core read once by 64 KiB reads, as the walk's blocks are);
#    and, for comparison, objects per second of the whole command's
#    wall time;
#  - on the running process: the time `-p PID --heap` stopped it for
#    (median of 5), beside the bound heap / 2 GB/s + 50 ms (heap: the
#    process's RSS before, what the copy copies).
# Targets: core >= 1 GiB and >= 5M objects; census <= 2 s; walk of the
# core >= 20M objects/s; peak RSS <= 10% of the core; stop <= the
# bound.  Reports,
# never fails: exit 0 whatever was measured.
#   bench/heap.sh [BUILDDIR] [BUILD] [ROWS] [PAD]   (BUILD default src-5.4.7-O2)
set -u
set -- "${1:-.}" "${2:-src-5.4.7-O2}" "${3:-2000000}" "${4:-420}"
. "$(dirname "$0")/lib.sh"
rows=$3
pad=$4
inspect=$builddir/src/luacore-inspect
tmp=$(mktemp -d /var/tmp/luacore-heap.XXXXXX)
pid=
gc=
cleanup() {
	[ -n "$pid" ] && kill -KILL "$pid" 2>/dev/null
	[ -n "$gc" ] && kill "$gc" 2>/dev/null
	rm -rf "$tmp"
}
trap cleanup EXIT
trap 'exit 130' INT
trap 'exit 143' TERM HUP
# A child that handles SIGINT itself (luacore-inspect, gdb) exits 130 and
# bash then runs no INT trap: stop here as well.
interrupted() {
	[ "$1" = 130 ] && exit 130
}
[ -x "$host" ] || { echo "no $host: run fixtures/build-lua.sh fixtures/out $build first" >&2; exit 0; }
[ -x /usr/bin/time ] || { echo "no /usr/bin/time (apt-get install time)" >&2; exit 0; }
command -v gcore >/dev/null || { echo "no gcore (apt-get install gdb)" >&2; exit 0; }

# median of the numbers in FILE, one a line
median() {
	sort -n "$1" | awk '{ v[NR] = $1 } END { print v[int((NR + 1) / 2)] }'
}
# a field of vms[0] in the --json document FILE
field() {
	python3 -c 'import json, sys; print(json.load(open(sys.argv[1]))["vms"][0][sys.argv[2]])' "$1" "$2" 2>/dev/null
}

(cd "$tmp" && LC_READY=$tmp/ready exec "$host" "$here/bench/heap.lua" "$rows" "$pad" "$tmp/gcbytes") \
	>"$tmp/host.log" 2>&1 &
pid=$!
for _ in $(seq 1200); do [ -s "$tmp/ready" ] && break; sleep 0.1; done
[ -s "$tmp/ready" ] || { echo "lchost did not get ready: $(tail -2 "$tmp/host.log")" >&2; exit 0; }
gcbytes=$(cat "$tmp/gcbytes")
rss=$(awk '/^VmRSS:/ { print $2 * 1024 }' "/proc/$pid/status")
echo "== luacore-inspect --heap on lchost ($build) holding $rows tables of a short and a ${pad}-byte string"
echo "  Lua heap $gcbytes bytes (collectgarbage), process RSS $rss bytes"

# Live first, while the process runs: the stop of -p --heap.
: >"$tmp/stops"
: >"$tmp/lwalks"
for i in 1 2 3 4 5; do
	"$inspect" -p "$pid" --heap --json >"$tmp/live.json" 2>"$tmp/live.err"
	rc=$?
	interrupted $rc
	w=$(field "$tmp/live.json" walk_seconds)
	echo "  live run $i: exit $rc; walk ${w:-?} s; $(grep 'was stopped' "$tmp/live.err" | sed 's/^luacore-inspect: //')"
	sed -n 's/.*was stopped for \([0-9.]*\) ms.*/\1/p' "$tmp/live.err" >>"$tmp/stops"
	[ -n "$w" ] && echo "$w" >>"$tmp/lwalks"
done
stop=$(median "$tmp/stops")
lwalk=$(median "$tmp/lwalks")
lobjects=$(field "$tmp/live.json" objects)
bound=$(awk -v r="$rss" 'BEGIN { printf "%.1f", r / 2e9 * 1e3 + 50 }')

# gdb takes SIGINT for itself: waited for in the background, where a
# SIGINT interrupts the wait and runs the trap.
gcore -o "$tmp/core" "$pid" >/dev/null 2>&1 &
gc=$!
wait "$gc"
gc=
kill -KILL "$pid" 2>/dev/null
wait "$pid" 2>/dev/null
pid=
core=$tmp/core.$(cat "$tmp/ready")
[ -s "$core" ] || { echo "gcore wrote no core" >&2; exit 0; }
core_bytes=$(stat -c %s "$core")
cat "$core" >/dev/null	# in the page cache, as after gcore anyway

# The census on the core: wall time (s) and peak RSS (KiB) of each run.
: >"$tmp/times"
: >"$tmp/rsss"
: >"$tmp/walks"
for i in 1 2 3 4 5; do
	/usr/bin/time -f '%e %M' -o "$tmp/time" "$inspect" --heap --json "$core" >"$tmp/heap.json" 2>"$tmp/heap.err"
	rc=$?
	interrupted $rc
	t=$(tail -1 "$tmp/time" | cut -d' ' -f1)
	kib=$(tail -1 "$tmp/time" | cut -d' ' -f2)
	w=$(field "$tmp/heap.json" walk_seconds)
	echo "  census run $i: exit $rc, $t s, walk ${w:-?} s, peak RSS $kib KiB"
	[ "$rc" = 0 ] || sed 's/^/    /' "$tmp/heap.err" | head -5
	echo "$t" >>"$tmp/times"
	echo "$kib" >>"$tmp/rsss"
	[ -n "$w" ] && echo "$w" >>"$tmp/walks"
done
t=$(median "$tmp/times")
walk=$(median "$tmp/walks")
wbest=$(sort -n "$tmp/walks" | head -1)
wworst=$(sort -n "$tmp/walks" | tail -1)
# The machine's pace beside it, in this run: the core read once more by
# 64 KiB reads from the page cache, as the walk's blocks are (a shared
# machine's neighbours slow both alike).
pace=$(dd if="$core" of=/dev/null bs=64K 2>&1 | sed -n 's/.* copied, \([0-9.]*\) s,.*/\1/p')
kib=$(sort -n "$tmp/rsss" | tail -1)
objects=$(field "$tmp/heap.json" objects)
vm_memory=$(field "$tmp/heap.json" vm_memory)
unexplained=$(field "$tmp/heap.json" unexplained)
partial=$(field "$tmp/heap.json" partial)
objects=${objects:-0}
echo "  census: $objects objects ($((3 * rows)) made by bench/heap.lua, $((objects - 3 * rows)) others);" \
	"the VM counts ${vm_memory:-?} bytes, not in any object ${unexplained:-?}; partial: ${partial:-?}"

# row NAME MEASURED UNIT CMP TARGET: CMP is <= or >=; the ratio is
# measured / target.
row() {
	awk -v n="$1" -v m="$2" -v u="$3" -v c="$4" -v t="$5" 'BEGIN {
		if (m == "") {
			printf "  %-24s %12s %-7s %3s %9.3f %-7s %7s  %s\n", n, "n/a", u, c, t, u, "", "failed"
			exit
		}
		ok = (c == "<=") ? (m <= t) : (m >= t)
		printf "  %-24s %12.3f %-7s %3s %9.3f %-7s %7.2f  %s\n", n, m, u, c, t, u, (t ? m / t : 0),
			ok ? "ok" : (c == "<=" ? "over" : "under")
	}'
}
# rate OBJECTS SECONDS: millions a second ("" without a time)
rate() {
	[ -n "$2" ] && awk -v o="$1" -v t="$2" 'BEGIN { print o / (t > 0.001 ? t : 0.001) / 1e6 }'
}
echo "  the walk on the core: $(rate "$objects" "$walk") M objects/s median, $(rate "$objects" "$wbest") best, $(rate "$objects" "$wworst") worst of 5"
echo "  the machine's pace in this run: the core read by 64 KiB reads in ${pace:-?} s ($(awk -v b="$core_bytes" -v t="$pace" 'BEGIN { if (t > 0) printf "%.1f", b / t / 1e9; else printf "?" }') GB/s); the walk takes $(awk -v w="$walk" -v t="$pace" 'BEGIN { if (t > 0) printf "%.2f", w / t; else printf "?" }') times as long"
echo "  the whole command on the core: $(rate "$objects" "$t") M objects/s of its wall time (loading, the scan for VMs, the walk, the output)"
echo "  the walk on the live process's copy (no target: the copy is 1.2 GB of memory read once, where a core's blocks stay in cache): $(rate "${lobjects:-0}" "$lwalk") M objects/s, median ${lwalk:-?} s"
printf '  %-24s %12s %-7s %13s %-7s %7s\n' "" measured "" target "" ratio
{
	row "core size" "$(awk -v b="$core_bytes" 'BEGIN { print b / 2^30 }')" GiB ">=" 1
	row "Lua heap" "$(awk -v b="$gcbytes" 'BEGIN { print b / 2^30 }')" GiB ">=" 1
	row "objects" "$(awk -v o="$objects" 'BEGIN { print o / 1e6 }')" M ">=" 5
	row "census time (median 5)" "$t" s "<=" 2
	row "walk throughput, core" "$(rate "$objects" "$walk")" M/s ">=" 20
	row "census peak RSS / core" "$(awk -v k="$kib" -v b="$core_bytes" 'BEGIN { print 100 * k * 1024 / b }')" % "<=" 10
	row "live stop (median 5)" "$stop" ms "<=" "$bound"
} | tee "$tmp/table"
if grep -q -e ' over$' -e ' under$' -e ' failed$' "$tmp/table"; then
	echo "targets NOT met"
else
	echo "targets met"
fi
exit 0
