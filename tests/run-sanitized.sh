#!/usr/bin/env bash
# The inspect path under AddressSanitizer and UndefinedBehaviorSanitizer
# (any error aborts), and under valgrind memcheck:
#  - luacore-inspect and tests/corrupt built with -fsanitize=address,
#    undefined into $top_builddir/_san, then: the fixture cores of the
#    matrix and post-mortem sets of Debian's builds and of one build per
#    layout family, each optimization level among them ($LC_SAN_BUILDS:
#    Debian's 5.1 and 5.4 at -O2, and 5.2.4 and 5.5.0 at -O0; about 100
#    cores; 5.3 is in the sanitized run-corrupt below), and 8 of
#    LuaJIT's (upstream and OpenResty's, 4 scenarios each) with --json
#    --locals --stack, ten scenarios of each also as text, with the exit
#    status of the normal build; run-corrupt.sh (about 95 damaged cores of one build per
#    major version, and 10,000 damaged coroutines), run-badinput.sh and run-options.sh with those
#    binaries;
#  - luacore-sample built the same way, through run-soak.sh for
#    $LC_SAN_SOAK_SECONDS (default 30): sampled, killed and inspected
#    programs, threads coming and going; and with --alloc (Debian's 5.4):
#    coroutines resumed in turn, an allocation-heavy workload, threads
#    that copy themselves at their parks;
#  - the Check programs (check_names, check_values, check_target,
#    check_vm) built the same way: the decoder's corner cases on
#    synthetic images, through the callback target the gdb front end
#    uses;
#  - valgrind --leak-check=full on the normal build for one core of each
#    Lua version and the 200-VM core: no error, no definite leak;
#  - the gdb front end under valgrind (gdb hangs in its start-up with an
#    ASan runtime preloaded): gdb/luaprof.py's commands on cores of 5.1,
#    5.4 at -O0 (lua-value too) and the 200-VM one, through the normal
#    libluacore.so; an error whose
#    stack passes through libluacore is a failure (gdb's and Python's
#    own reports are not ours to judge, and leaks are not checked there).
# The fuzzers run with ASan (run-fuzz.sh).
# valgrind and Check are required (Debian: valgrind check); without them
# this fails.
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
libs="$(pkg-config --libs libdw libelf zlib) -lstdc++ -lm"
objs=()
# Every source of the library, in every layer's folder; objects named
# after the path, since two layers may hold files of the same name.
while IFS= read -r c; do
	rel=${c#"$src"/libcore/}
	o=$san/obj/${rel//\//_}
	o=${o%.c}.o
	${CC:-gcc} $flags -c -o "$o" "$c" || { echo "FAIL: cannot build $c sanitized"; exit 1; }
	objs+=("$o")
done < <(find "$src/libcore" -name '*.c' | sort)
${CC:-gcc} $flags -o "$san/src/luacore-inspect" "$src/src/inspect.c" "${objs[@]}" $libs &&
${CC:-gcc} $flags -I"$src/shim" -DLC_PKGLIBDIR='"/nonexistent"' -o "$san/src/luacore-sample" "$src/src/sample.c" "${objs[@]}" $libs &&
${CC:-gcc} $flags -o "$san/tests/corrupt/corrupt" "$src/tests/corrupt/corrupt.c" "${objs[@]}" $libs ||
	{ echo "FAIL: cannot link the sanitized programs"; exit 1; }
checkflags=$(pkg-config --cflags --libs check) ||
	{ echo "FAIL: Check is missing (apt-get install check)"; exit 1; }
for t in check_names check_values check_target check_vm; do
	${CC:-gcc} $flags -o "$san/tests/$t" "$src/tests/$t.c" "${objs[@]}" $libs $checkflags ||
		{ echo "FAIL: cannot build tests/$t sanitized"; exit 1; }
done

n=0 bad=0
san_builds=${LC_SAN_BUILDS:-"deb-5.1 deb-5.4 src-5.2.4-O0 src-5.5.0-O0"}
cores=()
for b in $san_builds; do
	[ -d "$out/$b" ] || { echo "FAIL: no fixture build $out/$b (run tests/run-matrix.sh first)"; exit 1; }
	cores+=("$out/$b"/*/core)
done
# LuaJIT's (upstream and OpenResty's, fixtures/build-luajit.sh): cores
# of the scenarios of each frame kind, made here.
if "$src/fixtures/build-luajit.sh" "$out" lj-upstream lj-openresty >"$tmp/lj-build.log" 2>&1; then
	for b in lj-upstream lj-openresty; do
		for sc in ${LC_SAN_LJ_SCENARIOS:-coroutines3 error_in_pcall crash post_locals}; do
			d=$tmp/lj/$b/$sc
			if LC_BUILDS=$out "$src/fixtures/make-core.sh" "$b" "$sc" "$d" >"$tmp/lj.log" 2>&1; then
				cores+=("$d/core")
			else
				echo "FAIL make-core.sh $b $sc: $(tail -2 "$tmp/lj.log")"
				bad=$((bad + 1))
			fi
		done
	done
else
	echo "FAIL fixtures/build-luajit.sh: $(tail -3 "$tmp/lj-build.log")"
	bad=$((bad + 1))
fi
for c in "${cores[@]}"; do
	d=$(dirname "$c")
	want=0
	"$build/src/luacore-inspect" "$c" "$d/exe" >/dev/null 2>&1 || want=$?
	# Every core as JSON with locals and the data stack; the text report
	# (the same decoding, another renderer) of some scenarios of each.
	modes=("--json --locals --stack")
	case ${d##*/} in
	coroutines3|crash|two_threads|multi_vm|yield_c|cxx_names|interp_*|post_locals|post_many_vms|post_residue)
		modes+=("") ;;
	esac
	for opts in "${modes[@]}"; do
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

# sanitized NAME PATTERN COMMAND...: run COMMAND; it passes when it
# succeeds and no sanitizer spoke, summed up by its last line matching
# PATTERN.
sanitized() {
	local name=$1 pat=$2 log=$tmp/$1.log

	shift 2
	if "$@" >"$log" 2>&1 && ! grep -qE "Sanitizer|runtime error" "$log"; then
		echo "PASS sanitized $name: $(grep -E "$pat" "$log" | tail -1)"
	else
		echo "FAIL sanitized $name"
		grep -E "FAIL|ERROR|runtime error|SUMMARY|:[EF]:" "$log" | head -10 | sed 's/^/    /'
		status=1
	fi
}

# run-corrupt on one build of each major version (and the 10,000
# coroutines on one), to keep CI within its time: the normal build runs
# it on all eleven.
for t in run-corrupt run-badinput run-options; do
	sanitized "$t" . env top_srcdir="$src" top_builddir="$san" \
		LC_CORRUPT_BUILDS="${LC_SAN_CORRUPT_BUILDS:-deb-5.1 src-5.2.4-O2 deb-5.3 src-5.4.7-O2 src-5.5.0-O0}" \
		LC_CORRUPT_MANY_BUILDS=deb-5.4 bash "$src/tests/$t.sh"
done
# The Check programs look for the fixtures under top_builddir.
for t in check_names check_values check_target check_vm; do
	sanitized "$t" '^[0-9]+%' env top_builddir="$build" CK_FORK=no "$san/tests/$t"
done
sanitized run-soak . env LC_SOAK_SECONDS="${LC_SAN_SOAK_SECONDS:-30}" \
	top_srcdir="$src" top_builddir="$san" bash "$src/tests/run-soak.sh"

# luacore-sample --alloc with its copied and waiting parks (the shim
# beside it, as in the build tree): coroutines resumed in turn, and the
# allocation-heavy workload at the default rate; the thread must have
# copied itself.
mkdir -p "$san/shim/.libs"
ln -sf "$build/shim/.libs/libluacore-alloc.so" "$san/shim/.libs/libluacore-alloc.so"
# alloc_san NAME ARGS...: luacore-sample --alloc ARGS sanitized; its
# report, and a failure unless some parks were copied
alloc_san() {
	local name=$1

	shift
	sanitized "alloc-$name" 'parks were copied' bash -c \
		'set -o pipefail; "$@" 2>&1 >/dev/null | tee /dev/stderr | grep " [1-9][0-9]* parks were copied by their thread" >/dev/null' \
		bash env LC_TRUTH_LUA="$src/fixtures/lua/truth.lua" \
		"$san/src/luacore-sample" --alloc -o "$tmp/alloc.folded" "$@"
}
alloc_san coro_sites --alloc-mean 65536 --alloc-max-parks 0 -- \
	"$out/deb-5.4/lchost" "$src/fixtures/scenarios/alloc/coro_sites.lua" 1000
alloc_san heavy -- "$out/deb-5.4/lchost" "$src/shim/test-alloc-heavy.lua" 2000

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

# valgrind's error blocks ("==PID== Invalid read..." up to an empty
# "==PID==" line) whose stack passes through libluacore: a frame of its
# object, or of a source file under libcore/ (valgrind names the source
# instead of the object where there is debug info; --fullpath-after=
# makes it the whole path).
ours() {
	awk '/^==[0-9]+== [A-Z]/ { blk = $0; inb = 1; next }
		inb && /^==[0-9]+== *$/ { if (blk ~ /libluacore|\/libcore\//) { print blk; n++ } inb = 0; next }
		inb { blk = blk "\n" $0 }
		END { exit n > 0 }' "$1"
}
for c in deb-5.1/coroutines3 src-5.4.7-O0/coroutines3 deb-5.4/post_many_vms; do
	d=$out/$c
	[ -f "$d/core" ] || { echo "FAIL valgrind gdb $c: no core"; status=1; continue; }
	extra=()
	case $c in
	src-5.4.7-O0/*) extra=(-ex 'thread 1' -ex 'frame function luaV_execute'
		-ex 'lua-value L' -ex 'lua-value -n 5 &L->l_G->l_registry') ;;
	esac
	PYTHONMALLOC=malloc LUACORE_LIB=$build/libcore/.libs/libluacore.so \
		timeout 600 valgrind -q --leak-check=no --fullpath-after= --log-file="$tmp/vgg" \
		gdb -nx -batch -x "$src/gdb/luaprof.py" -ex 'lua-bt -a -full' \
		-ex 'lua-states' -ex 'lua-vm' -ex 'lua-stack' "${extra[@]}" \
		"$d/exe" "$d/core" >"$tmp/vgg.out" 2>&1
	rc=$?
	if [ "$rc" = 124 ] || ! grep -q "lua: " "$tmp/vgg.out"; then
		echo "FAIL valgrind gdb $c: exit $rc, no Lua frame shown"
		tail -5 "$tmp/vgg.out" | sed 's/^/    /'
		status=1
	elif ! ours "$tmp/vgg" >"$tmp/vgg.ours"; then
		echo "FAIL valgrind gdb $c: memcheck errors in libluacore"
		head -30 "$tmp/vgg.ours" | sed 's/^/    /'
		status=1
	else
		echo "PASS valgrind gdb $c: lua-bt -a -full, lua-states, lua-vm, lua-stack${extra:+, lua-value}: no memcheck error through libluacore ($(grep -c '^==[0-9]*== [A-Z]' "$tmp/vgg") of gdb's and Python's own)"
	fi
done
exit $status
