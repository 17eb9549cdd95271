#!/usr/bin/env bash
# Releases newer than the newest one luacore knows: read with the nearest
# known rules, and a warning that names them, in every front end.
#
# The matrix's -O0 builds of 5.4.8 and 5.5.0 (tests/run-matrix.sh, run
# first), each copied with its lua_ident saying 5.4.9 and 5.6.0; nothing
# else differs.  For each: a core (fixtures/make-core.sh metamethods, as a
# build of its own), then
#  - luacore-inspect on the core: the frames equal the script's truth, the
#    text has "warning: Lua 5.X.Y is newer ...", JSON process.warnings[]
#    the same sentence, process.lua_version the patched release;
#  - luacore-inspect -p on the running program: frames and warning;
#  - gdb lua-bt -a on the core: the same warning, and the same frames as
#    the CLI (tests/gdb/check-core.sh).
# And the releases it knows (5.4.8, 5.5.0 themselves) get no such warning.
set -uo pipefail
top_srcdir=${top_srcdir:-.}
top_builddir=${top_builddir:-.}
out=$(cd "${LUACORE_MATRIX_DIR:-$top_builddir/fixtures/out}" && pwd)
inspect=$(cd "$top_builddir/src" && pwd)/luacore-inspect
py=/usr/bin/python3; [ -x "$py" ] || py=python3
export LUACORE_INSPECT=$inspect
export LUAPROF=$top_srcdir/gdb/luaprof.py
export LUACORE_LIB=$top_builddir/libcore/.libs/libluacore.so
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
status=0

check() {	# NAME COND...
	local name=$1; shift
	if "$@"; then echo "PASS $name"; else echo "FAIL $name"; status=1; fi
}

# patch BUILD FROM TO: $tmp/builds/fake-TO/lchost, BUILD's with its ident
# "Lua FROM" turned into "Lua TO" (same length).
patch_exe() {
	local src=$out/$1/lchost d=$tmp/builds/fake-$3
	[ -x "$src" ] || { echo "FAIL: no $src (run tests/run-matrix.sh first)"; exit 1; }
	mkdir -p "$d"
	"$py" - "$src" "$d/lchost" "Lua $2" "Lua $3" <<'EOF' || exit 1
import sys
src, dst, old, new = sys.argv[1:]
b = open(src, "rb").read()
n = b.count(old.encode())
if n != 1:
    sys.exit("%s holds %r %d times, not once" % (src, old, n))
open(dst, "wb").write(b.replace(old.encode(), new.encode()))
EOF
	chmod +x "$d/lchost"
}

for pair in src-5.4.8-O0:5.4.8:5.4.9 src-5.5.0-O0:5.5.0:5.6.0; do
	IFS=: read -r build known newer <<<"$pair"
	patch_exe "$build" "$known" "$newer"
	cell=$tmp/cells/$newer
	if ! LC_BUILDS=$tmp/builds "$top_srcdir/fixtures/make-core.sh" \
		"fake-$newer" metamethods "$cell" >"$tmp/make.log" 2>&1; then
		echo "FAIL $newer: no core: $(tail -2 "$tmp/make.log")"
		status=1
		continue
	fi
	# The script ran on the real release: its truth names that.
	sed -i "s/^luaversion\t.*/luaversion\tLua ${newer%.*}/" "$cell/truth.tsv"
	warn="Lua $newer is newer than the newest release luacore knows"

	# Core, text.
	"$inspect" "$cell/core" "$cell/exe" >"$cell/text" 2>"$cell/text.err"
	check "$newer core: exit status 0" [ $? = 0 ]
	check "$newer core: text warns" grep -q "^warning: $warn" "$cell/text"
	check "$newer core: text names the release" grep -q "^lua: $newer in" "$cell/text"
	# Core, JSON.
	"$inspect" --json "$cell/core" "$cell/exe" >"$cell/report.json" 2>/dev/null
	check "$newer core: JSON warnings[] and lua_version" "$py" -c '
import json, sys
p = json.load(open(sys.argv[1]))["process"]
sys.exit(not (p["lua_version"] == sys.argv[2] and
              any(w.startswith(sys.argv[3]) for w in p["warnings"])))' \
		"$cell/report.json" "$newer" "$warn"
	check "$newer core: frames equal the truth" \
		"$py" "$top_srcdir/tests/matrix/compare.py" -q "$cell/truth.tsv" "$cell/report.json"

	# gdb on the same core.
	check "$newer gdb: lua-bt -a equals the CLI" "$top_srcdir/tests/gdb/check-core.sh" "$cell"
	check "$newer gdb: lua-bt warns" grep -q "^warning: $warn" "$cell/gdb-bt.txt"

	# Live.
	live=$tmp/live/$newer
	if LC_BUILDS=$tmp/builds LC_LIVE_INSPECT=$inspect "$top_srcdir/fixtures/make-core.sh" \
		"fake-$newer" metamethods "$live" >"$tmp/make.log" 2>&1; then
		sed -i "s/^luaversion\t.*/luaversion\tLua ${newer%.*}/" "$live/truth.tsv"
		check "$newer live: exit status 0" [ "$(cat "$live/live.rc")" = 0 ]
		check "$newer live: warns" grep -q "\"$warn" "$live/live.json"
		check "$newer live: frames equal the truth" \
			"$py" "$top_srcdir/tests/matrix/compare.py" -q "$live/truth.tsv" "$live/live.json"
	else
		echo "FAIL $newer live: $(tail -2 "$tmp/make.log")"
		status=1
	fi

	# The release itself is known: no warning.
	"$inspect" "$out/$build/metamethods/core" "$out/$build/metamethods/exe" >"$tmp/known" 2>&1
	check "$known: no unknown-release warning" bash -c '! grep -q "is newer than the newest" "$1"' _ "$tmp/known"
done
exit "$status"
