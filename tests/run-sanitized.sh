#!/usr/bin/env bash
# The inspect path under AddressSanitizer and UndefinedBehaviorSanitizer
# (any error aborts), and under valgrind memcheck:
#  - luacore-inspect and tests/corrupt built with -fsanitize=address,
#    undefined into $top_builddir/_san, then: every fixture core of the
#    matrix and post-mortem sets (140) with --json --locals --stack and as
#    text, with the exit status of the normal build; run-corrupt.sh (62
#    damaged cores), run-badinput.sh and run-options.sh with those
#    binaries;
#  - luacore-sample built the same way, through run-soak.sh for
#    $LC_SAN_SOAK_SECONDS (default 30): sampled, killed and inspected
#    programs, threads coming and going;
#  - valgrind --leak-check=full on the normal build for one core of each
#    Lua version and the 200-VM core: no error, no definite leak.
# The gdb front end is not in it (gdb would load an ASan library); the
# fuzzers run with ASan (run-fuzz.sh).
# valgrind is required (Debian: valgrind); without it this fails.
set -uo pipefail
top_srcdir=${top_srcdir:-.}
top_builddir=${top_builddir:-.}
src=$(cd "$top_srcdir" && pwd)
build=$(cd "$top_builddir" && pwd)
export LUACORE_MATRIX_DIR=${LUACORE_MATRIX_DIR:-$build/fixtures/out}
out=$LUACORE_MATRIX_DIR
san=$build/_san
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
status=0
export ASAN_OPTIONS=abort_on_error=1:detect_leaks=1
export UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1
export LSAN_OPTIONS=suppressions=$src/tests/fuzz/lsan.supp

command -v valgrind >/dev/null || { echo "FAIL: valgrind is missing (apt-get install valgrind)"; exit 1; }

mkdir -p "$san/src" "$san/tests/corrupt" "$san/obj"
flags="-g -O1 -fsanitize=address,undefined -fno-sanitize-recover=undefined -fno-omit-frame-pointer -I$build -I$src/libcore $(pkg-config --cflags libdw libelf zlib)"
libs="$(pkg-config --libs libdw libelf zlib) -lm"
objs=()
for c in "$src"/libcore/*.c; do
	o=$san/obj/$(basename "$c" .c).o
	${CC:-gcc} $flags -c -o "$o" "$c" || { echo "FAIL: cannot build $c sanitized"; exit 1; }
	objs+=("$o")
done
${CC:-gcc} $flags -o "$san/src/luacore-inspect" "$src/src/inspect.c" "${objs[@]}" $libs &&
${CC:-gcc} $flags -o "$san/src/luacore-sample" "$src/src/sample.c" "${objs[@]}" $libs &&
${CC:-gcc} $flags -o "$san/tests/corrupt/corrupt" "$src/tests/corrupt/corrupt.c" "${objs[@]}" $libs ||
	{ echo "FAIL: cannot link the sanitized programs"; exit 1; }

n=0 bad=0
for c in "$out"/*/*/core; do
	d=$(dirname "$c")
	want=0
	"$build/src/luacore-inspect" "$c" "$d/exe" >/dev/null 2>&1 || want=$?
	for opts in "" "--json --locals --stack"; do
		rc=0
		"$san/src/luacore-inspect" $opts "$c" "$d/exe" >/dev/null 2>"$tmp/err" || rc=$?
		n=$((n + 1))
		if [ "$rc" != "$want" ] || grep -qE "Sanitizer|runtime error" "$tmp/err"; then
			bad=$((bad + 1))
			echo "FAIL sanitized ${opts:-text} $c: exit $rc (normal build $want)"
			grep -m5 -E "ERROR|runtime error|SUMMARY" "$tmp/err" | sed 's/^/    /'
		fi
	done
done
echo "sanitized: $((n - bad)) of $n reports clean"
[ "$bad" = 0 ] || status=1

for t in run-corrupt run-badinput run-options; do
	if top_srcdir=$src top_builddir=$san bash "$src/tests/$t.sh" >"$tmp/$t.log" 2>&1 &&
		! grep -qE "Sanitizer|runtime error" "$tmp/$t.log"; then
		echo "PASS sanitized $t: $(tail -1 "$tmp/$t.log")"
	else
		echo "FAIL sanitized $t"
		grep -E "FAIL|ERROR|runtime error|SUMMARY" "$tmp/$t.log" | head -10 | sed 's/^/    /'
		status=1
	fi
done

if LC_SOAK_SECONDS=${LC_SAN_SOAK_SECONDS:-30} top_srcdir=$src top_builddir=$san \
	bash "$src/tests/run-soak.sh" >"$tmp/soak.log" 2>&1 &&
	! grep -qE "Sanitizer|runtime error" "$tmp/soak.log"; then
	echo "PASS sanitized run-soak: $(tail -1 "$tmp/soak.log")"
else
	echo "FAIL sanitized run-soak"
	grep -E "FAIL|ERROR|runtime error|SUMMARY" "$tmp/soak.log" | head -10 | sed 's/^/    /'
	status=1
fi

for c in deb-5.1/coroutines3 src-5.2.4-O2/crash deb-5.3/post_locals src-5.4.7-O2/coroutines3 \
	deb-5.4/post_many_vms; do
	d=$out/$c
	[ -f "$d/core" ] || continue
	rc=0
	"$build/libtool" --mode=execute valgrind -q --error-exitcode=99 \
		--leak-check=full --errors-for-leak-kinds=definite \
		--suppressions="$src/tests/valgrind.supp" \
		"$build/src/luacore-inspect" --json --locals --stack \
		"$d/core" "$d/exe" >/dev/null 2>"$tmp/vg" || rc=$?
	if [ "$rc" = 99 ] || grep -q "^==[0-9]*== [A-Z]" "$tmp/vg"; then
		echo "FAIL valgrind $c"
		head -20 "$tmp/vg" | sed 's/^/    /'
		status=1
	else
		echo "PASS valgrind $c: no memcheck error, no definite leak (exit $rc)"
	fi
done
exit $status
