#!/usr/bin/env bash
# libcore's include rule (doc/architecture.md): the layers are, bottom up,
#   base  mem  prog  native  vm  report  heap  sample
# one folder each under libcore/, and a file may include only its own
# layer and those below it, plus luacore.h.  Inside vm/, a family's folder
# (vm/puc/, ...) may include vm/*.h and its own files, never another
# family's.  Outside vm/<family>/, no file names the family's internals:
# the report, the sampler, the unwinder and gdb/luaprof.py go through the
# seam (vm/vm.h) for PUC Lua's function names.
# The dependency graph of the sources (tests/include-graph.py) has no
# cycle that spans two layers.
# A negative control runs the same check on a small tree with one upward
# include, one include across families and one PUC name in the report
# layer, which must give three violations.
set -uo pipefail
top_srcdir=${top_srcdir:-.}
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT

LAYERS="base mem prog native vm report heap sample"

# Names that belong to PUC Lua's decoder only (its C functions, which the
# native frames are matched against).
PUC_NAMES='luaV_execute|lua_resume|luaD_precall|precallC|luaD_call|luaC_step|luaC_fullgc|lua_pcall|luaD_rawrunprotected'

rank() {
	local i=0 l
	for l in $LAYERS; do
		[ "$l" = "$1" ] && { echo "$i"; return; }
		i=$((i + 1))
	done
	echo -1
}

# check ROOT GDBSCRIPT: print one line per violation under ROOT (a libcore
# tree) and in GDBSCRIPT; the count of them on the last line.
check() {
	local root=$1 gdbscript=$2 n=0 f rel layer inc il mine fam ifam
	while IFS= read -r f; do
		rel=${f#"$root"/}
		layer=${rel%%/*}
		[ "$layer" = "$rel" ] && continue	# luacore.h and friends
		mine=$(rank "$layer")
		if [ "$mine" -lt 0 ]; then
			echo "$rel: in no layer (folders: $LAYERS)"; n=$((n + 1)); continue
		fi
		fam=
		case $rel in vm/*/*) fam=${rel#vm/}; fam=${fam%%/*} ;; esac
		while IFS= read -r inc; do
			[ "$inc" = luacore.h ] && continue
			il=$(rank "${inc%%/*}")
			if [ "$il" -lt 0 ] || [ "${inc%%/*}" = "$inc" ]; then
				echo "$rel: includes \"$inc\", which is in no layer"; n=$((n + 1))
			elif [ "$il" -gt "$mine" ]; then
				echo "$rel: includes \"$inc\", a layer above its own ($layer)"; n=$((n + 1))
			fi
			case $inc in vm/*/*)
				ifam=${inc#vm/}; ifam=${ifam%%/*}
				if [ "$ifam" != "$fam" ]; then
					echo "$rel: includes \"$inc\", the internals of VM family $ifam"; n=$((n + 1))
				fi ;;
			esac
		done < <(sed -n 's/^[[:space:]]*#[[:space:]]*include[[:space:]]*"\([^"]*\)".*/\1/p' "$f")
		if [ -z "$fam" ] && grep -qwE "$PUC_NAMES" "$f"; then
			echo "$rel: names PUC Lua's functions ($(grep -owE "$PUC_NAMES" "$f" | sort -u | tr '\n' ' '))outside vm/puc/"
			n=$((n + 1))
		fi
	done < <(find "$root" -name '*.[ch]' | sort)
	if [ -n "$gdbscript" ] && grep -qwE "$PUC_NAMES" "$gdbscript"; then
		echo "$(basename "$gdbscript"): names PUC Lua's functions ($(grep -owE "$PUC_NAMES" "$gdbscript" | sort -u | tr '\n' ' '))"
		n=$((n + 1))
	fi
	echo "$n"
}

status=0
check "$top_srcdir/libcore" "$top_srcdir/gdb/luaprof.py" >"$tmp/out"
count=$(tail -1 "$tmp/out")
if [ "$count" -eq 0 ]; then
	echo "PASS every file of libcore includes only its own layer and those below; no PUC name outside vm/puc/"
else
	sed '$d' "$tmp/out" | sed 's/^/  /'
	echo "FAIL $count violations of the include rule"
	status=1
fi

# No cycle between layers in the dependency graph of the sources (a .c
# file depends on the files implementing the headers it includes).
if out=$(python3 "$top_srcdir/tests/include-graph.py" "$top_srcdir/libcore"); then
	echo "PASS no dependency cycle across layers: $(echo "$out" | tail -1)"
else
	echo "$out" | sed 's/^/  /'
	echo "FAIL a dependency cycle spans layers"
	status=1
fi

# The include graph, for doc/architecture.md and the curious: which
# layer includes which.
echo "include graph (layer -> layers it includes):"
for l in $LAYERS; do
	uses=$(find "$top_srcdir/libcore/$l" -name '*.[ch]' -exec sed -n 's/^[[:space:]]*#[[:space:]]*include[[:space:]]*"\([a-z]*\)\/.*/\1/p' {} + 2>/dev/null |
		grep -vx "$l" | sort -u | tr '\n' ' ')
	echo "  $l -> ${uses:-(nothing)}"
done

# Negative control.
ctl=$tmp/ctl
mkdir -p "$ctl/base" "$ctl/mem" "$ctl/vm/puc" "$ctl/vm/other" "$ctl/report"
printf '#include "report/report.h"\n' >"$ctl/mem/memory.c"
printf '#include "vm/puc/puc.h"\n#include "vm/vm.h"\n' >"$ctl/vm/other/o.c"
printf '#include "vm/vm.h"\nstatic const char *n = "luaV_execute";\n' >"$ctl/report/r.c"
printf '#include "base/base.h"\n#include "mem/memory.h"\n' >"$ctl/vm/puc/ok.c"
check "$ctl" "" >"$tmp/ctl.out"
if [ "$(tail -1 "$tmp/ctl.out")" -eq 3 ]; then
	echo "PASS the check finds the three planted violations (upward, across families, a PUC name in report/)"
else
	echo "FAIL the check found $(tail -1 "$tmp/ctl.out") of the three planted violations:"
	sed 's/^/  /' "$tmp/ctl.out"
	status=1
fi
exit "$status"
