#!/usr/bin/env bash
# The built-in layouts (libcore/vm/puc/builtin-layouts.c) against the
# sources they are generated from:
#  - regenerated (fixtures/layouts/generate.sh: every release built with
#    -g -O0 by fixtures/build-lua.sh, each one's DWARF read), the table
#    equals the committed one byte for byte;
#  - the comparison sees one changed offset: the committed table with one
#    offset altered differs from the regenerated one, at that line;
#  - every release's -O2 build, and Debian's liblua5.1/5.3/5.4 (their DWARF
#    from the -dbg packages), has the DWARF layout the built-in table
#    gives for its release, member by member (fixtures/layouts/dump
#    check, which also checks that its member list covers struct
#    lc_layout).
set -uo pipefail
top_srcdir=${top_srcdir:-.}
top_builddir=${top_builddir:-.}
out=${LUACORE_MATRIX_DIR:-$top_builddir/fixtures/out}
dump=$top_builddir/fixtures/layouts/dump
table=$top_srcdir/libcore/vm/puc/builtin-layouts.c
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
status=0
[ -x "$dump" ] || { echo "FAIL: no $dump (make check builds it)"; exit 1; }

if ! "$top_srcdir/fixtures/layouts/generate.sh" "$top_builddir" "$out" "$tmp/table.c" 2>"$tmp/gen.err"; then
	echo "FAIL regenerating the table: $(tail -3 "$tmp/gen.err")"
	exit 1
fi
if cmp -s "$tmp/table.c" "$table"; then
	echo "PASS the committed table equals the one regenerated from the sources ($(grep -c 'releases =' "$table") layouts for $("$top_srcdir/fixtures/build-lua.sh" --releases | wc -l) releases)"
else
	echo "FAIL the committed table differs from the one regenerated from the sources:"
	diff "$table" "$tmp/table.c" | head -20 | sed 's/^/    /'
	status=1
fi

# One offset changed: 5.4.8's L.ci (the entry of 5.4.5-5.4.8).
awk 'done == 0 && /5\.4\.8/ { mark = 1 }
     mark && !done && /\.L\.ci = \{ [0-9]+,/ { sub(/\.L\.ci = \{ [0-9]+,/, ".L.ci = { 4000,"); done = 1 }
     { print }' "$table" >"$tmp/altered.c"
changed=$(diff "$tmp/altered.c" "$tmp/table.c" | grep -c '^<.*L\.ci = { 4000,')
if [ "$changed" = 1 ]; then
	echo "PASS one altered offset (5.4.8's L.ci) makes the comparison fail, at its line"
else
	echo "FAIL the altered table was not told apart ($changed lines)"
	status=1
fi

args=()
for v in $("$top_srcdir/fixtures/build-lua.sh" --releases); do
	args+=("$v=$out/src-$v-O2/lchost")
done
lib=/usr/lib/x86_64-linux-gnu
for v in 5.1.5:5.1 5.3.6:5.3 5.4.4:5.4; do
	args+=("${v%%:*}=$lib/liblua${v#*:}.so.0")
done
if "$dump" check "${args[@]}" >"$tmp/check.out" 2>&1; then
	echo "PASS $(grep -c '^ok' "$tmp/check.out") builds (every release at -O2, Debian's 5.1, 5.3, 5.4): the DWARF layout equals the built-in one"
else
	echo "FAIL the built-in layouts disagree with a build's DWARF:"
	grep -v '^ok' "$tmp/check.out" | head -20 | sed 's/^/    /'
	status=1
fi
exit $status
