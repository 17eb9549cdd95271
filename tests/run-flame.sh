#!/usr/bin/env bash
# The speedscope JSON and the SVG flame graph of a synthetic profile with
# known functions and weights (tests/flame/make-flame.c):
#  - the JSON: speedscope's structure, one sampled profile per thread,
#    stacks root first, the weight of every stack and function;
#  - the SVG as a file: well-formed, self-contained, stacks merged by
#    prefix with the right widths, titles and texts;
#  - the SVG in a real browser, headless Chromium driven through
#    chromedriver (W3C WebDriver): names drawn, hover, zoom, reset,
#    search with the Search control and with Ctrl-F;
#  - the same profile gives the same bytes twice;
#  - a flame graph luacore-sample writes of a real program (split.lua
#    under deb-5.4): hot_a, hot_b and hot_c drawn in that order of width,
#    hover, click-zoom and search in the browser;
#  - speedscope itself (npm) imports the JSON and folded files of real
#    runs, and a time-ordered JSON follows an alternating workload.
# Chromium and chromedriver are required (Debian: chromium,
# chromium-driver); without them this fails, it does not skip.
set -uo pipefail
export PYTHONDONTWRITEBYTECODE=1	# nothing written into the sources
top_srcdir=${top_srcdir:-.}
top_builddir=${top_builddir:-.}
mk=$top_builddir/tests/flame/make-flame
here=$top_srcdir/tests/flame
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
status=0

need() {	# VARIABLE CANDIDATES...: the first found, or fail
	local var=$1 c tried=; shift
	for c in "$@"; do
		[ -n "$c" ] || continue
		if type -P "$c" >/dev/null; then
			printf -v "$var" '%s' "$(type -P "$c")"
			return 0
		fi
		tried="$tried $c"
	done
	echo "FAIL: not found:$tried (Debian packages: chromium chromium-driver python3)"
	exit 1
}
need python3 python3
need chromium "${CHROMIUM:-}" chromium chromium-browser google-chrome
need chromedriver "${CHROMEDRIVER:-}" chromedriver

mkdir "$tmp/a" "$tmp/b"
if ! "$mk" "$tmp/a" || ! "$mk" "$tmp/b"; then
	echo "FAIL: $mk"
	exit 1
fi
for f in cpu.json cpu.svg wall.json wall.svg; do
	if cmp -s "$tmp/a/$f" "$tmp/b/$f"; then
		echo "PASS $f: the same bytes twice"
	else
		echo "FAIL $f: differs between two runs"
		status=1
	fi
done
"$python3" "$here/check-speedscope.py" "$tmp/a" || status=1
out=${LUACORE_MATRIX_DIR:-$top_builddir/fixtures/out}
if ! LC_TRUTH_LUA=$top_srcdir/fixtures/lua/truth.lua LC_SAMPLE_SECONDS=2 \
	"$top_builddir/src/luacore-sample" -q -r 250 -o "$tmp/sampled.svg" -- \
	"$out/deb-5.4/lchost" "$top_srcdir/fixtures/scenarios/sample/split.lua" \
	>/dev/null 2>"$tmp/sampled.err"; then
	echo "FAIL luacore-sample: $(tail -3 "$tmp/sampled.err")"
	status=1
fi
timeout 90 "$python3" "$here/check-svg.py" "$tmp/a" "$chromium" \
	"$chromedriver" "$tmp/sampled.svg" || status=1

# Files luacore-sample writes of real programs, opened by speedscope
# itself (npm's package; dev.sh installs it): the speedscope JSON and the
# folded stacks of split.lua and of skyhost's worker threads, and the
# alternating workload whose JSON must list each thread's samples in
# time order: phase_a and phase_b in turns, as the script ran them.
release=${LC_SPEEDSCOPE:-$top_builddir/fixtures/cache/npm/node_modules/speedscope}/dist/release
sample() {	# OUT [ENV=V...] -- COMMAND...
	local o=$1; shift
	env LC_TRUTH_LUA="$top_srcdir/fixtures/lua/truth.lua" "$@" \
		>"$tmp/$(basename "$o").out" 2>"$tmp/$(basename "$o").err" ||
		{ echo "FAIL luacore-sample -o $o: $(tail -3 "$tmp/$(basename "$o").err")"; status=1; }
}
svc=$top_srcdir/fixtures/scenarios/sky/service.lua
for f in split.json split.folded sky.json sky.folded; do
	case $f in
	split.*) sample "$f" LC_SAMPLE_SECONDS=2 "$top_builddir/src/luacore-sample" -q -r 250 -o "$tmp/$f" -- \
		"$out/deb-5.4/lchost" "$top_srcdir/fixtures/scenarios/sample/split.lua" ;;
	sky.*) sample "$f" "$top_builddir/src/luacore-sample" -q -r 250 --folded-vm -o "$tmp/$f" -- \
		"$out/deb-5.4/skyhost" 2 2 "$svc:spin,0.030,0.020" "$svc:burst1,0.001,0.009" ;;
	esac
done
sample alternate.json LC_PHASES=8 LC_PHASE_S=0.25 "$top_builddir/src/luacore-sample" -q -r 200 \
	-o "$tmp/alternate.json" -- "$out/deb-5.4/lchost" "$top_srcdir/fixtures/scenarios/sample/alternate.lua"
if [ ! -f "$release/index.html" ]; then
	echo "FAIL: speedscope is not installed at $release (./dev.sh check installs it from npm)"
	status=1
else
	timeout 120 "$python3" "$here/check-speedscope-app.py" "$release" "$chromium" \
		"$chromedriver" "$tmp"/split.json "$tmp"/split.folded "$tmp"/sky.json \
		"$tmp"/sky.folded "$tmp"/alternate.json || status=1
fi
"$python3" "$here/check-order.py" "$tmp/alternate.json" "$tmp/alternate.json.out" \
	"$tmp/alternate.json.err" || status=1
[ "$status" = 0 ] && echo "all passed" || echo "some failed"
exit $status
