# Helpers for the test scripts that source it (". DIR/lib.sh"):
#   src, out     the source tree, the directory of the fixture builds;
#   inspect, sample, py   the tools under test and python3;
#   tmp      a scratch directory, removed at exit;
#   pids     processes to kill at exit (pids+=("$pid"));
#   status   0, or 1 once a check failed: the script's exit status;
#   check NAME COND...   PASS or FAIL NAME as COND succeeds;
#   running PID          the process is alive, not stopped, untraced;
#   fixtures BUILD...    make the builds (fixtures/build-lua.sh), or exit;
#   LIVE_BUILDS, LIVE_SCENARIOS  what the live tests park and read;
#   variant NAME FILE SED-SCRIPT COUNT, modified_variant   Lua 5.4.7 changed
#                        and built without -g (see below);
#   park BUILD SCENARIO DIR   lchost of BUILD runs fixtures/scenarios/
#                        SCENARIO.lua until it parks, its truth in
#                        DIR/truth.tsv (LC_TRUTH_LUA set): pid is its pid;
#                        1 (a FAIL said) when it never gets ready.
top_srcdir=${top_srcdir:-.}
top_builddir=${top_builddir:-.}
out=${LUACORE_MATRIX_DIR:-$top_builddir/fixtures/out}
mkdir -p "$out"
out=$(cd "$out" && pwd)
src=$(cd "$top_srcdir" && pwd)
inspect=$(cd "$top_builddir/src" && pwd)/luacore-inspect
sample=$(cd "$top_builddir/src" && pwd)/luacore-sample
py=/usr/bin/python3; [ -x "$py" ] || py=python3
tmp=$(mktemp -d)
pids=()
status=0
cleanup() {
	for p in "${pids[@]}"; do kill -KILL "$p" 2>/dev/null; done
	rm -rf "$tmp"
}
trap cleanup EXIT
check() {
	local name=$1; shift
	if "$@"; then echo "PASS $name"; else echo "FAIL $name"; status=1; fi
}
running() {
	local st tr
	st=$(sed 's/.*) //' "/proc/$1/stat" 2>/dev/null | cut -c1)
	tr=$(awk '/^TracerPid:/ { print $2 }' "/proc/$1/status" 2>/dev/null)
	[ -n "$st" ] && [ "$st" != t ] && [ "$st" != T ] && [ "$st" != Z ] && [ "$tr" = 0 ]
}
park() {
	local b=$1 sc=$2 d=$3
	mkdir -p "$d"
	(cd "$d" && LC_TRUTH=$d/truth.tsv LC_READY=$d/ready \
		exec "$out/$b/lchost" "$src/fixtures/scenarios/$sc.lua") >"$d/log" 2>&1 &
	pid=$!
	pids+=("$pid")
	disown "$pid"
	for _ in $(seq 100); do [ -e "$d/ready" ] && return 0; sleep 0.1; done
	echo "FAIL $b $sc: not ready: $(tail -2 "$d/log")"
	status=1
	return 1
}
fixtures() {
	"$src/fixtures/build-lua.sh" "$out" "$@" >"$tmp/build.log" 2>&1 ||
		{ cat "$tmp/build.log"; echo "FAIL: fixtures/build-lua.sh"; exit 1; }
}
LIVE_BUILDS="deb-5.1 deb-5.4 src-5.2.4-O2 src-5.5.0-O0"
LIVE_SCENARIOS="coroutines3 two_threads multi_vm deep_recursion tail_calls"
# variant NAME FILE SED-SCRIPT COUNT: Lua 5.4.7's sources with SED-SCRIPT
# applied to FILE (which must then hold COUNT lines that changed), built
# -O2 without -g into $tmp/NAME/src, its lchost into $tmp/builds/NAME
# (LC_BUILDS=$tmp/builds for fixtures/make-core.sh).
variant() {
	local m=$tmp/$1 f
	mkdir -p "$m/src" "$tmp/builds/$1"
	cp "$out/cache/lua-5.4.7/"*.[ch] "$m/src/"
	sed -i -e "$3" "$m/src/$2"
	if [ "$(diff "$out/cache/lua-5.4.7/$2" "$m/src/$2" | grep -c '^>')" != "$4" ]; then
		echo "FAIL: $1: $2 was not changed as meant"
		status=1
	fi
	for f in "$m/src"/l*.c; do
		case ${f##*/} in lua.c|luac.c|ltests.c|onelua.c) continue ;; esac
		gcc -O2 -std=gnu99 -DLUA_COMPAT_5_3 -DLUA_USE_POSIX -DLUA_USE_DLOPEN -c -o "$f.o" "$f" || status=1
	done
	ar rcs "$m/liblua.a" "$m/src"/*.o
	gcc -O0 -pthread -I"$m/src" -o "$tmp/builds/$1/lchost" "$src/fixtures/host/lchost.c" "$m/liblua.a" -lm -ldl || status=1
}

# modified_variant: the variant "modified", a field added to lua_State and
# to global_State, and $tmp/modified/lstate.o, its lstate.c alone with -g
# (the types for --types and lua-layout).
modified_variant() {
	variant modified lstate.h '/^struct lua_State {/{n;s/$/\n  void *added_by_a_user;/};/^typedef struct global_State {/{n;s/$/\n  void *added_by_a_user;/}' 2
	gcc -g -O2 -std=gnu99 -DLUA_COMPAT_5_3 -DLUA_USE_POSIX -c -o "$tmp/modified/lstate.o" \
		"$tmp/modified/src/lstate.c" || status=1
}
