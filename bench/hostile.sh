#!/usr/bin/env bash
# Hostile input, side by side in one run: what each case costs this
# build's luacore-inspect, and with LC_BASELINE=OTHER_BUILDDIR (a build
# of another commit) that build's on the same input, with the ratio.
#  - 10,000 coroutines whose CallInfos link to themselves (a core):
#    seconds to the whole report;
#  - a live Lua program with 64k mappings: seconds to the first line;
#  - a live Lua program with 2001 threads: the stop it prints, in ms;
#  - 2000 idle threads and one spinning, sampled at -r 100 for 3 s: the
#    samples taken a second, and the sampler's CPU per tick (its start
#    included);
#  - 10^6 NT_PRSTATUS notes, and a fake GC list of 1.2e7 thread-tagged
#    objects (--no-scan): peak RSS against the core's size.
# Targets (issue 14): bounded time for the loops; <= 2 s to the first
# line; the stop printed; peak RSS <= the core's size.  Each time is the
# fastest of REPS runs (3), each RSS the largest; a run killed at
# LC_BENCH_TIMEOUT seconds (60) shows as ">60".
#   [LC_BASELINE=DIR] bench/hostile.sh [BUILDDIR]
# Needs the fixtures and programs of make check (fixtures/out,
# tests/corrupt/corrupt, tests/live/lthost).
set -uo pipefail
builddir=$(cd "${1:-.}" && pwd)
src=$(cd "$(dirname "$0")/.." && pwd)
out=$builddir/fixtures/out
REPS=${REPS:-3}
T=${LC_BENCH_TIMEOUT:-60}	# seconds a run may take; one that takes longer shows as >T
tmp=$(mktemp -d /var/tmp/luacore-hostile.XXXXXX)
pid=
cleanup() {
	[ -n "$pid" ] && kill -KILL "$pid" 2>/dev/null
	rm -rf "$tmp"
}
trap cleanup EXIT
for f in "$out/deb-5.4/coroutines3/core" "$builddir/tests/corrupt/corrupt" \
	"$builddir/tests/live/lthost"; do
	[ -e "$f" ] || { echo "no $f: run make check first" >&2; exit 1; }
done
builds=("$builddir")
[ -n "${LC_BASELINE:-}" ] && builds+=("$(cd "$LC_BASELINE" && pwd)")
edit="python3 $src/tests/hostile/core-edit.py"
export LC_TRUTH_LUA=$src/fixtures/lua/truth.lua	# lchost's truth writer

# row NAME UNIT VALUE...: one line, with the baseline's ratio to this
# build's when there is one.
row() {
	local name=$1 unit=$2 a=$3 b=${4:-}
	if [ -n "$b" ]; then
		awk -v n="$name" -v u="$unit" -v a="$a" -v b="$b" 'BEGIN {
			lo = (substr(b, 1, 1) == ">") ? "at least " : ""
		bb = (lo != "") ? substr(b, 2) : b
		printf "%-44s %10s %s   baseline %10s %s   baseline/this %s%.1fx\n", n, a, u, b, u,
				lo, (a > 0 ? bb / a : 0) }'
	else
		printf "%-44s %10s %s\n" "$name" "$a" "$unit"
	fi
}
# fastest CMD...: the fastest wall time of REPS runs, in seconds.
fastest() {
	local best= t0 t
	for _ in $(seq "$REPS"); do
		t0=$(date +%s.%N)
		timeout "$T" "$@" >/dev/null 2>&1
		[ $? = 124 ] && { echo ">$T"; return; }
		t=$(awk -v a="$t0" -v b="$(date +%s.%N)" 'BEGIN { printf "%.3f", b - a }')
		best=$(awk -v a="${best:-$t}" -v b="$t" 'BEGIN { print (b < a ? b : a) }')
	done
	echo "$best"
}

echo "luacore-inspect on hostile input; this build: $builddir${LC_BASELINE:+; baseline: $LC_BASELINE}"

# ---- 10,000 self-looping coroutines ----
mc=$tmp/mc
if LC_BUILDS=$out "$src/fixtures/make-core.sh" deb-5.4 many_coroutines "$mc" >"$tmp/mk.log" 2>&1 &&
	"$builddir/tests/corrupt/corrupt" ci-loops "$mc/core" "$mc/exe" "$tmp/loops.core" >/dev/null 2>&1; then
	v=()
	for b in "${builds[@]}"; do
		v+=("$(fastest "$b/src/luacore-inspect" "$tmp/loops.core" "$mc/exe")")
	done
	row "10,000 self-looping coroutines (core)" s "${v[@]}"
else
	echo "10,000 self-looping coroutines: no core ($(tail -1 "$tmp/mk.log"))"
fi
rm -f "$tmp/loops.core"

# ---- 64k mappings, live ----
${CC:-cc} -O2 -shared -fPIC -o "$tmp/manymaps.so" "$src/tests/hostile/manymaps.c"
rm -f "$tmp/ready"
LD_PRELOAD=$tmp/manymaps.so LC_MAPS=64000 LC_TRUTH=$tmp/maps-truth.tsv LC_READY=$tmp/ready \
	"$out/src-5.4.8-O2/lchost" "$src/fixtures/scenarios/coroutines3.lua" >"$tmp/maps.log" 2>&1 &
pid=$!
for _ in $(seq 200); do [ -e "$tmp/ready" ] && break; sleep 0.1; done
nmaps=$(wc -l <"/proc/$pid/maps" 2>/dev/null || echo 0)
[ "$nmaps" -gt 1000 ] || echo "the program with 64000 mappings did not start: $(tail -1 "$tmp/maps.log")"

v=()
for b in "${builds[@]}"; do
	best=
	for _ in $(seq "$REPS"); do
		read -r first _ _ < <(python3 "$src/tests/hostile/first-line.py" "$T" \
			"$b/src/luacore-inspect" -p "$pid")
		best=$(awk -v a="${best:-$first}" -v b="$first" 'BEGIN { print (b < a ? b : a) }')
	done
	v+=("$best")
done
row "$nmaps mappings, live: first line" s "${v[@]}"
kill -KILL "$pid" 2>/dev/null; wait "$pid" 2>/dev/null; pid=

# ---- 2001 threads, live ----
rm -f "$tmp/ready"
LC_READY=$tmp/ready LC_TRUTH=$tmp/truth "$builddir/tests/live/lthost" -n 2000 \
	"$src/tests/live/park.lua" >"$tmp/host.log" 2>&1 &
pid=$!
for _ in $(seq 300); do [ -e "$tmp/ready" ] && break; sleep 0.05; done
v=() w=()
for b in "${builds[@]}"; do
	best= bestt=
	for _ in $(seq "$REPS"); do
		t0=$(date +%s.%N)
		timeout "$T" "$b/src/luacore-inspect" -p "$pid" >"$tmp/th.out" 2>/dev/null
		t=$(awk -v a="$t0" -v b="$(date +%s.%N)" 'BEGIN { printf "%.3f", b - a }')
		# (the stop is printed on the first line, or, before, not)
		ms=$(sed -n 's/.*(live; stopped for \([0-9.]*\) ms).*/\1/p' "$tmp/th.out" | head -1)
		best=$(awk -v a="${best:-${ms:-0}}" -v b="${ms:-0}" 'BEGIN { print (b < a ? b : a) }')
		bestt=$(awk -v a="${bestt:-$t}" -v b="$t" 'BEGIN { print (b < a ? b : a) }')
	done
	v+=("${best:-?}") w+=("$bestt")
done
row "2001 threads, live: the stop printed" ms "${v[@]}"
row "2001 threads, live: the whole report" s "${w[@]}"
kill -KILL "$pid" 2>/dev/null; wait "$pid" 2>/dev/null; pid=

# ---- 2000 idle threads and one spinning, sampled ----
rm -f "$tmp/ready"
LC_READY=$tmp/ready LC_TRUTH=$tmp/truth "$builddir/tests/live/lthost" -n 2000 \
	"$src/tests/live/spin.lua" >"$tmp/host.log" 2>&1 &
pid=$!
for _ in $(seq 300); do [ -e "$tmp/ready" ] && break; sleep 0.05; done
v=() w=()
for b in "${builds[@]}"; do
	besthz= bestcpu=
	for _ in $(seq "$REPS"); do
		timeout "$T" "$b/src/luacore-sample" -p "$pid" -r 100 -d 3 \
			-o "$tmp/s.folded" >/dev/null 2>"$tmp/s.err"
		# samples taken a second, and the sampler's CPU per tick in ms
		hz=$(sed -n 's/.*samples: [0-9]* attempted, \([0-9]*\) taken.*/\1/p' "$tmp/s.err" |
			awk '{ printf "%.1f", $1 / 3 }')
		cpu=$(awk '/samples: [0-9]* attempted/ { n = $3 }
			/sampler CPU/ { sub(/.*sampler CPU /, ""); c = $1 }
			END { if (n > 0) printf "%.3f", c * 1000 / n }' "$tmp/s.err")
		besthz=$(awk -v a="${besthz:-${hz:-0}}" -v b="${hz:-0}" 'BEGIN { print (b > a ? b : a) }')
		bestcpu=$(awk -v a="${bestcpu:-${cpu:-0}}" -v b="${cpu:-0}" 'BEGIN { print (b < a ? b : a) }')
	done
	v+=("${besthz:-?}") w+=("${bestcpu:-?}")
done
row "2000 idle threads, sampled at -r 100: rate" Hz "${v[@]}"
row "2000 idle threads: sampler CPU per tick" ms "${w[@]}"
kill -KILL "$pid" 2>/dev/null; wait "$pid" 2>/dev/null; pid=

# ---- memory against the core's size ----
c54=$out/deb-5.4/coroutines3
c548=$out/src-5.4.8-O2/coroutines3
# rss NAME CORE ARGS...: peak RSS (KB) of each build's run, largest of REPS.
rss() {
	local name=$1 core=$2 kb best; shift 2
	local corekb=$(( $(stat -c %s "$core") / 1024 ))
	v=()
	for b in "${builds[@]}"; do
		best=0 cut=
		for _ in $(seq "$REPS"); do
			read -r kb _ rc < <(python3 "$src/tests/hostile/peak-rss.py" "$T" \
				"$tmp/$name.out" "$b/src/luacore-inspect" "$@")
			[ "${kb:-0}" -gt "$best" ] && best=$kb
			# (killed at the time limit: at least this much)
			[ "$rc" = 124 ] && cut=">"
		done
		v+=("$cut$(awk -v k="$best" -v c="$corekb" 'BEGIN { printf "%.3f", k / c }')")
	done
	row "$name: peak RSS / core size ($corekb KB)" "" "${v[@]}"
}
$edit threads "$c54/core" "$tmp/threads.core" 1000000
rss "10^6 thread notes" "$tmp/threads.core" --json "$tmp/threads.core" "$(readlink -f "$c54/exe")"
rm -f "$tmp/threads.core"
exe548=$(readlink -f "$c548/exe")
vm=$(python3 -c 'import json, sys; print(json.load(open(sys.argv[1]))["vms"][0]["address"])' "$c548/report.json")
allgc=$(gdb -nx -batch -ex 'print/x (long)&((global_State *)0)->allgc' "$exe548" 2>/dev/null | sed -n 's/^\$1 = //p')
$edit gc-list "$c548/core" "$tmp/gc.core" "$vm" "$allgc" 12000000
rss "fake GC list of 1.2e7 objects, --no-scan" "$tmp/gc.core" --no-scan --json "$tmp/gc.core" "$exe548"
rm -f "$tmp/gc.core"
