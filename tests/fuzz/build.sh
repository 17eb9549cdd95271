#!/usr/bin/env bash
# Build the libFuzzer harnesses with AddressSanitizer and
# UndefinedBehaviorSanitizer: libcore's sources are compiled with clang's
# coverage instrumentation, so that the fuzzer sees inside the decoder.
#
#   tests/fuzz/build.sh BUILDDIR OUTDIR
#
# BUILDDIR is a configured build tree (for config.h).  Writes
# OUTDIR/fuzz_decode, OUTDIR/fuzz_core and OUTDIR/fuzz_sample, and
# OUTDIR/mutants (tests/fuzz/mutants.c: its own main, no libFuzzer).
# Needs clang and its runtime (Debian: clang libclang-rt-14-dev); CC
# overrides clang.  mutants names the fields it edits from its own line
# table, through libdw: DWARF 4 with .debug_aranges, which libdw
# (elfutils 0.188) needs to find an address's unit in clang's output.
set -euo pipefail
src=$(cd "$(dirname "$0")/../.." && pwd)
build=$(cd "$1" && pwd)
mkdir -p "$2/obj"
out=$(cd "$2" && pwd)
cc=${CC:-clang}
san="-fsanitize=address,undefined -fno-sanitize-recover=undefined -fno-omit-frame-pointer"
cflags="-g -gdwarf-4 -gdwarf-aranges -O1 $san -I$build -I$src/libcore $(pkg-config --cflags libdw libelf zlib)"
libs="$(pkg-config --libs libdw libelf zlib) -lstdc++ -lm"
objs=()
# Every source of the library, in every layer's folder; objects named
# after the path, since two layers may hold files of the same name.
while IFS= read -r c; do
	rel=${c#"$src"/libcore/}
	o=$out/obj/${rel//\//_}
	o=${o%.c}.o
	# Built again when its source, config.h or any header of the
	# library is newer (a header's change may change a struct).
	if [ ! "$o" -nt "$c" ] || [ "$build/config.h" -nt "$o" ] ||
	   [ -n "$(find "$src/libcore" -name '*.h' -newer "$o" -print -quit)" ]; then
		"$cc" $cflags -fsanitize=fuzzer-no-link -c -o "$o" "$c"
	fi
	objs+=("$o")
done < <(find "$src/libcore" -name '*.c' | sort)
for h in fuzz_decode fuzz_core fuzz_sample; do
	"$cc" $cflags -fsanitize=fuzzer -o "$out/$h" "$src/tests/fuzz/$h.c" \
		"$src/tests/fuzz/image.c" "${objs[@]}" $libs
done
"$cc" $cflags -o "$out/mutants" "$src/tests/fuzz/mutants.c" "$src/tests/fuzz/image.c" \
	"${objs[@]}" $libs
