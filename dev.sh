#!/usr/bin/env bash
# One entry point for a fresh Debian bookworm machine.
#   ./dev.sh demo    install what is needed, build, crash a bundled Lua host,
#                    inspect its core
#   ./dev.sh check   install what is needed, build, run the whole test suite
#   ./dev.sh deps    only install the packages
# Run as root or as a user with sudo.  Set LUACORE_NO_APT=1 to skip apt-get.
set -euo pipefail
cd "$(dirname "$0")"

sudo_cmd() {
	if [ "$(id -u)" = 0 ]; then "$@"; else sudo "$@"; fi
}

# Packages: the build (autotools, elfutils' libdw/libelf, zlib, Check), the
# fixtures (Debian's Lua builds with full debug info, Lua sources) and the
# tests (gdb for gcore and the gdb commands, gdbserver for their remote
# test, python3 to compare reports with ground truth, protoc to read the
# sampler's pprof files, Chromium to test its SVG flame graphs, clang and
# its runtime for the libFuzzer harnesses with ASan and UBSan, valgrind
# for memcheck on the inspect path, Debian's LuaJIT for the message that
# a build without debug info is refused, the real hosts that embed
# Debian's Lua: nmap, haproxy, lighttpd with mod_magnet, and neovim with
# Debian's LuaJIT (rebuilt with -g from its source package); g++ for
# libstdc++'s demangler, which the library links, and for the C++
# fixture host lchost++; golang-go for go tool pprof, which reads the
# sampler's profiles as its users do; tmux for a terminal of a given
# size, where --top is checked; procps's pgrep, to find the processes
# a test's sampler starts).
PACKAGES="autoconf automake libtool pkg-config gcc g++ make
 libelf-dev libdw-dev zlib1g-dev check elfutils
 gdb gdbserver python3 python3-jsonschema dpkg-dev xz-utils
 protobuf-compiler chromium chromium-driver clang libclang-rt-14-dev valgrind
 lua5.1 lua5.3 lua5.4 liblua5.1-0-dev liblua5.3-dev liblua5.4-dev
 liblua5.1-0-dbg liblua5.3-0-dbg liblua5.4-0-dbg libluajit-5.1-dev
 nmap haproxy lighttpd lighttpd-modules-lua golang-go tmux neovim procps"

# The demo's: the build, gdb (gcore where the kernel writes no core),
# Debian's Lua 5.4 with its debug info (the bundled host links it).
DEMO_PACKAGES="autoconf automake libtool pkg-config gcc g++ make
 libelf-dev libdw-dev zlib1g-dev check elfutils gdb
 lua5.4 liblua5.4-dev liblua5.4-0-dbg"

# missing PACKAGE...: into $missing, those not installed.
missing_of() {
	missing=
	for p in "$@"; do
		dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "ok installed" || missing="$missing $p"
	done
}

# demo_deps: only what the demo needs, no deb-src entries.
demo_deps() {
	[ "${LUACORE_NO_APT:-0}" = 1 ] && return 0
	# shellcheck disable=SC2086
	missing_of $DEMO_PACKAGES
	[ -z "$missing" ] && return 0
	sudo_cmd env DEBIAN_FRONTEND=noninteractive apt-get update -q
	# shellcheck disable=SC2086
	sudo_cmd env DEBIAN_FRONTEND=noninteractive apt-get install -y -q $missing
}

deps() {
	[ "${LUACORE_NO_APT:-0}" = 1 ] && return 0
	# shellcheck disable=SC2086
	missing_of $PACKAGES
	# Source packages (Lua 5.2.4, 5.4.7) come through deb-src entries
	# derived from the system's own Debian sources.
	if [ -n "$missing" ] || ! fixtures/apt-src.sh --check; then
		sudo_cmd fixtures/apt-src.sh --install
		sudo_cmd env DEBIAN_FRONTEND=noninteractive apt-get update -q
		# shellcheck disable=SC2086
		[ -z "$missing" ] || sudo_cmd env DEBIAN_FRONTEND=noninteractive apt-get install -y -q $missing
	fi
}

# speedscope's own importer reads the sampler's files in the tests
# (tests/run-flame.sh), from npm's registry into fixtures/cache/npm.
SPEEDSCOPE=speedscope@1.25.0
npm_deps() {
	[ -f fixtures/cache/npm/node_modules/speedscope/dist/release/index.html ] && return 0
	if ! command -v npm >/dev/null; then
		[ "${LUACORE_NO_APT:-0}" = 1 ] && { echo "dev.sh: npm is missing" >&2; return 1; }
		sudo_cmd env DEBIAN_FRONTEND=noninteractive apt-get install -y -q npm
	fi
	mkdir -p fixtures/cache/npm
	npm install --prefix fixtures/cache/npm --no-audit --no-fund "$SPEEDSCOPE"
}

build() {
	[ -x configure ] || autoreconf -fi
	[ -f Makefile ] || ./configure ${LUACORE_CONFIGURE_FLAGS:-}
	make -j"$(nproc)"
}

# After a failed suite: each failing test's failing lines and the end of
# its log, last, so that a CI page that shows only the end of the output
# still says what failed.
show_failures() {
	local log
	for log in tests/*.log; do
		grep -q '^:test-result: FAIL' "${log%.log}.trs" 2>/dev/null || continue
		echo "==== $log: last lines"
		tail -12 "$log"
		echo "==== $log: failing lines"
		grep -E '^(FAIL|not ok)' "$log" | head -20
	done
}

# After the suite: each test's start (seconds after the first test's) and
# length, from the line tests/timed.sh ends its log with.
show_times() {
	echo "==== test times (start after the first test, length)"
	{ grep -h '^timed: ' tests/*.log 2>/dev/null || true; } | sort -k4n |
		awk 'NR == 1 { t0 = $4 } { printf "%6ds %6s  %s\n", $4 - t0, $6, $2 }'
}

case "${1:-}" in
deps) deps ;;
demo) demo_deps; build; make demo ;;
check)
	t0=$SECONDS
	deps; npm_deps
	echo "==== set-up took $((SECONDS - t0))s"
	build
	echo "==== set-up and build took $((SECONDS - t0))s"
	rc=0
	make -j"$(nproc)" check || rc=1
	show_times
	echo "==== set-up, build and tests took $((SECONDS - t0))s"
	[ "$rc" = 0 ] || { show_failures; exit 1; } ;;
*) echo "usage: $0 demo|check|deps" >&2; exit 64 ;;
esac
