#!/usr/bin/env bash
# The cells of a cell file, one "BUILD SCENARIO" line each.
#
#   tests/matrix/cells.sh [-b REGEX] [FILE]     (default FILE: cells.txt)
#
# A cell file has one "BUILDS SCENARIO" line per scenario (# comments):
# BUILDS is "*" (every build of fixtures/build-lua.sh --list but the
# nodebug-* ones, which only a regex naming them selects), "5.N+" (every
# such build of Lua 5.N or later), or an extended regex that must match
# the whole build id (a plain build id selects itself).  Scenario "interp"
# stands for the build's stand-alone interpreter, cell interp_lua5N.  The
# cells come out build by build in the --list order, each build's in the
# file's order, without duplicates.  -b keeps only the builds whose id
# matches REGEX (whole id).
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
repo=$(cd "$here/../.." && pwd)
only='.*'
if [ "${1:-}" = -b ]; then only=$2; shift 2; fi
file=${1:-$here/cells.txt}
[ -f "$file" ] || { echo "cells: no cell file $file" >&2; exit 64; }
"$repo/fixtures/build-lua.sh" --list | awk -v only="$only" '
BEGIN { n = 0; m = 0 }
FNR == NR { if ($1 ~ ("^(" only ")$")) ids[n++] = $1; next }
/^[ \t]*(#|$)/ { next }
NF != 2 { printf "cells: %s:%d: not \"BUILDS SCENARIO\": %s\n", FILENAME, FNR, $0 > "/dev/stderr"; bad = 1; next }
{ sel[m] = $1; scen[m] = $2; m++ }
END {
	if (bad) exit 1
	for (i = 0; i < n; i++) {
		id = ids[i]
		# deb-5.X, src-5.X.Y-On: the minor version.
		v = id; sub(/^[a-z]+-5\./, "", v); sub(/[^0-9].*/, "", v)
		for (j = 0; j < m; j++) {
			s = sel[j]
			plain = id !~ /^nodebug-/
			if (s == "*") ok = plain
			else if (s ~ /^5\.[0-9]+\+$/) { w = s; sub(/^5\./, "", w); ok = plain && (v + 0 >= w + 0) }
			else ok = (id ~ ("^(" s ")$"))
			if (!ok) continue
			c = (scen[j] == "interp") ? "interp_lua5" v : scen[j]
			if ((id, c) in seen) continue
			seen[id, c] = 1
			print id, c
		}
	}
}' - "$file"
