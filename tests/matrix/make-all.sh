#!/usr/bin/env bash
# Build the Lua matrix and make the core of every cell of cells.txt.
#
#   tests/matrix/make-all.sh [--cells FILE] OUTROOT [PATTERN]
#
# Lua builds go to OUTROOT/BUILD/ (lchost, liblua.a, and lua where a cell
# runs the interpreter), sources to OUTROOT/cache, each cell to
# OUTROOT/BUILD/SCENARIO/ (core, exe, truth.tsv, info, log: see
# fixtures/make-core.sh; with LC_LIVE_INSPECT also the live report of the
# same run).  The cells are those tests/matrix/cells.sh expands the cell
# file into; PATTERN (an extended regex) keeps only those whose "BUILD
# SCENARIO" line matches.  Cells run ${LC_JOBS:-2} at a time; one line is
# printed per cell, into OUTROOT/make-all.log too; the exit status is 1 if
# any cell failed.  --cells FILE takes the cells from FILE instead of
# cells.txt (cells-post.txt: the post_* scenarios, checked by check-post.sh);
# the per-cell lines then go to OUTROOT/make-all-NAME.log, NAME being FILE's
# name without .txt.
set -euo pipefail

here=$(cd "$(dirname "$0")" && pwd)
repo=$(cd "$here/../.." && pwd)

if [ "${1:-}" = --cell ]; then
	# One cell (run by xargs below): make it, print one line.
	root=$2 build=$3 scen=$4 dir=$2/$3/$4
	t0=$(date +%s%N)
	# The source builds' parked programs are dumped by the kernel (at
	# SIGQUIT), Debian's by gcore (tests/run-nodebug.sh gcores every
	# release's -O2 build too).
	by=gcore
	case $build in src-*) by=kernel ;; esac
	if LC_CORE_BY=$by LC_BUILDS=$root "$repo/fixtures/make-core.sh" "$build" "$scen" "$dir" >"$dir.make.log" 2>&1; then
		status=ok
	else
		status=FAIL
	fi
	ms=$((($(date +%s%N) - t0) / 1000000))
	t=$((ms / 1000)).$((ms % 1000 / 100))s
	if [ $status = ok ]; then
		rm -f "$dir.make.log"
		printf '%-4s %-13s %-15s %5s  core %5sK  frames %3s  %s%s\n' $status "$build" "$scen" "$t" \
			$(($(stat -c %s "$dir/core") >> 10)) "$(grep -c '^frame' "$dir/truth.tsv")" \
			"$(grep ^core_by= "$dir/info" | cut -d= -f2)" "$([ -f "$dir/live.rc" ] && echo " +live")"
	else
		printf '%-4s %-13s %-15s %5s  %s\n' $status "$build" "$scen" "$t" "$(tail -1 "$dir.make.log")"
		exit 1
	fi
	exit 0
fi

cellfile=$here/cells.txt log=make-all.log
if [ "${1:-}" = --cells ]; then
	[ $# -ge 2 ] && [ -f "$2" ] || { echo "make-all: no cell file ${2:-}" >&2; exit 64; }
	cellfile=$2 log=make-all-$(basename "$2" .txt).log
	shift 2
fi
[ $# -ge 1 ] || { echo "usage: $0 [--cells FILE] OUTROOT [PATTERN]" >&2; exit 64; }
mkdir -p "$1"
root=$(cd "$1" && pwd)
pattern=${2:-.}
all=$("$here/cells.sh" "$cellfile") || exit 1
cells=$(echo "$all" | grep -E -- "$pattern" || true)
[ -n "$cells" ] || { echo "make-all: no cell matches $pattern" >&2; exit 1; }

t0=$SECONDS
# Only the builds the chosen cells use, with the interpreter where a cell
# runs it.
# shellcheck disable=SC2046
"$repo/fixtures/build-lua.sh" "$root" $(echo "$cells" | awk '
	!($1 in b) { b[$1] = ""; order[n++] = $1 }
	$2 ~ /^interp_/ && $1 ~ /^src-/ { b[$1] = "/lua" }
	END { for (i = 0; i < n; i++) print order[i] b[order[i]] }')
echo "make-all: builds ready ($((SECONDS - t0))s)"

for b in $(echo "$cells" | awk '{print $1}' | sort -u); do mkdir -p "$root/$b"; done
n=$(echo "$cells" | wc -l)
rc=0
echo "$cells" | xargs -P "${LC_JOBS:-2}" -L 1 "$0" --cell "$root" | tee "$root/$log" || rc=1
failed=$(grep -c ^FAIL "$root/$log" || true)
echo "make-all: $((n - failed)) cells made, $failed failed ($((SECONDS - t0))s)"
exit $rc
