#!/usr/bin/env bash
# The installed library's interface is exactly luacore.h:
#  - the functions libluacore.so exports (nm -D) are those listed in
#    libcore/luacore.sym, and those are the functions luacore.h declares;
#  - no data symbol is exported (a writable hook once was);
#  - LC_VERSION_STRING is the package's version and lc_version() says so;
#  - luacore.pc names the libraries a static link needs.
# A negative control runs the same comparison on a list with one symbol
# added and one dropped, which must fail.
set -uo pipefail
top_srcdir=${top_srcdir:-.}
top_builddir=${top_builddir:-.}
so=$top_builddir/libcore/.libs/libluacore.so
hdr=$top_srcdir/libcore/luacore.h
sym=$top_srcdir/libcore/luacore.sym
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
status=0

[ -f "$so" ] || { echo "FAIL: no $so (build first)"; exit 1; }
command -v nm >/dev/null || { echo "FAIL: nm not found (binutils)"; exit 1; }

# Functions declared in the header: a name followed by "(" at the start of
# a declaration (after the return type), outside comments.
sed 's|/\*.*\*/||g; /\/\*/,/\*\//d; /^typedef/d' "$hdr" |
	grep -oE '\b(lc_[a-z0-9_]+)\(' | tr -d '(' | sort -u >"$tmp/header"
sort -u "$sym" >"$tmp/sym"
nm -D --defined-only "$so" | awk '{ print $2, $3 }' >"$tmp/nm"
awk '$1 == "T" { print $2 }' "$tmp/nm" | grep -v '^_' | sort -u >"$tmp/exported"
awk '$1 != "T" && $1 != "U" && $1 != "w" { print }' "$tmp/nm" |
	grep -vE ' _(init|fini|edata|end|bss_start)$|^[A-Z] _' >"$tmp/data" || true

# same LABEL WANT GOT: the two lists are equal, or print the difference.
same() {
	if cmp -s "$2" "$3"; then
		return 0
	fi
	echo "  $1: only in the first: $(comm -23 "$2" "$3" | tr '\n' ' ')"
	echo "  $1: only in the second: $(comm -13 "$2" "$3" | tr '\n' ' ')"
	return 1
}

if same "luacore.h vs luacore.sym" "$tmp/header" "$tmp/sym"; then
	echo "PASS luacore.sym lists the $(wc -l <"$tmp/sym") functions of luacore.h"
else
	echo "FAIL luacore.sym does not list luacore.h's functions"; status=1
fi
if same "luacore.sym vs nm -D" "$tmp/sym" "$tmp/exported"; then
	echo "PASS libluacore.so exports exactly luacore.sym ($(wc -l <"$tmp/exported") functions)"
else
	echo "FAIL libluacore.so exports other functions than luacore.sym"; status=1
fi
if [ -s "$tmp/data" ]; then
	echo "FAIL libluacore.so exports data symbols: $(tr '\n' ' ' <"$tmp/data")"; status=1
else
	echo "PASS no data symbol exported"
fi

# Negative control: the comparison notices an extra and a missing symbol.
{ sed 1d "$tmp/exported"; echo lc_not_in_the_header; } | sort >"$tmp/bad"
if same "control" "$tmp/sym" "$tmp/bad" >/dev/null; then
	echo "FAIL the comparison accepted a list with a symbol added and one dropped"; status=1
else
	echo "PASS the comparison rejects a list with a symbol added and one dropped"
fi

want=$(sed -n 's/^PACKAGE_VERSION = //p' "$top_builddir/Makefile")
hv=$(sed -n 's/^#define LC_VERSION_STRING[[:space:]]*"\(.*\)"/\1/p' "$hdr")
lv=$(python3 -c '
import ctypes, sys
lib = ctypes.CDLL(sys.argv[1])
lib.lc_version.restype = ctypes.c_char_p
print(lib.lc_version().decode())' "$so" 2>&1)
parts=$(sed -n 's/^#define LC_VERSION_\(MAJOR\|MINOR\|PATCH\)[[:space:]]*\([0-9]*\)$/\2/p' "$hdr" | paste -sd.)
if [ -n "$want" ] && [ "$hv" = "$want" ] && [ "$lv" = "$want" ] && [ "$parts" = "$want" ]; then
	echo "PASS version $want: LC_VERSION_STRING, LC_VERSION_MAJOR.MINOR.PATCH and lc_version() agree with the package"
else
	echo "FAIL version: package '$want', LC_VERSION_STRING '$hv', macros '$parts', lc_version() '$lv'"; status=1
fi

pc=$top_builddir/libcore/luacore.pc
if grep -q '^Requires.private:.*libdw.*libelf.*zlib' "$pc"; then
	echo "PASS luacore.pc: $(grep '^Requires.private' "$pc")"
else
	echo "FAIL luacore.pc has no Requires.private for libdw, libelf and zlib"; status=1
fi
exit "$status"
