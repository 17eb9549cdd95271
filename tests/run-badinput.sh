#!/usr/bin/env bash
# Wrong files and wrong usage get a clear message and the documented exit
# status (0 all shown, 1 partial, 2 nothing shown / fatal, 64 usage).
set -uo pipefail
top_builddir=${top_builddir:-.}
inspect=$top_builddir/src/luacore-inspect
out=${LUACORE_MATRIX_DIR:-$top_builddir/fixtures/out}
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
fail=0 pass=0

# expect STATUS PATTERN -- ARGS...: exit status and a line of stderr/stdout.
expect() {
	local want=$1 pattern=$2; shift 3
	local rc=0
	"$inspect" "$@" >"$tmp/out" 2>&1 || rc=$?
	if [ "$rc" = "$want" ] && grep -qE -- "$pattern" "$tmp/out"; then
		pass=$((pass + 1))
		echo "PASS exit $rc: $*"
	else
		fail=$((fail + 1))
		echo "FAIL (exit $rc, wanted $want and /$pattern/): $*"
		sed 's/^/    /' "$tmp/out" | head -20
	fi
}

: > "$tmp/empty"
mkdir "$tmp/dir"
expect 64 "Usage" --
expect 64 "Usage" -- --no-such-option x
expect 64 "max-frames" -- --max-frames 0 x
expect 64 "--nonblocking reads a running process: give -p PID" -- --nonblocking x
expect 2 "cannot open core" -- "$tmp/missing"
expect 2 "is empty" -- "$tmp/empty"
expect 2 "not a regular file" -- "$tmp/dir"
expect 2 "not an ELF file" -- "$0"
expect 2 "not a core" -- "$(type -P true)"
if [ -f "$out/deb-5.4/crash/core" ] && [ -f "$out/src-5.4.7-O2/lchost" ]; then
	expect 1 "is not the program in this core" -- "$out/deb-5.4/crash/core" "$out/src-5.4.7-O2/lchost"
	expect 0 "crashed: SIGSEGV" -- "$out/deb-5.4/crash/core" "$out/deb-5.4/crash/exe"
	# Truncated cores: the kernel writes notes first, gdb last.
	c=$out/deb-5.4/crash/core
	head -c $(($(stat -c %s "$c") * 60 / 100)) "$c" > "$tmp/cut-kernel"
	if grep -q '^core_by=kernel' "$out/deb-5.4/crash/info"; then
		expect 1 "is truncated .*memory past its end is missing" -- "$tmp/cut-kernel" "$out/deb-5.4/crash/exe"
	else	# made by gdb here (core_pattern): its notes are at the end
		expect 2 "so are its notes" -- "$tmp/cut-kernel" "$out/deb-5.4/crash/exe"
	fi
	c=$out/deb-5.4/deep_recursion/core
	head -c $(($(stat -c %s "$c") * 99 / 100)) "$c" > "$tmp/cut-gcore"
	expect 2 "so are its notes" -- "$tmp/cut-gcore" "$out/deb-5.4/deep_recursion/exe"
	# Cut anywhere, from inside the ELF header to the last page: a clear
	# word on what is missing, exit 1 or 2, within 30 s, never a crash.
	# Both cores: the kernel's (notes first: what precedes the cut is
	# shown, exit 1) if core_pattern let the kernel write one, gdb's.
	for d in crash deep_recursion; do
	c=$out/deb-5.4/$d/core
	for cut in 10 100 1000 3000 10% 25% 50% 75% 90% 99%; do
		case $cut in
		*%) n=$(($(stat -c %s "$c") * ${cut%\%} / 100)) ;;
		*) n=$cut ;;
		esac
		head -c "$n" "$c" > "$tmp/cut"
		rc=0
		timeout 30 "$inspect" "$tmp/cut" "$out/deb-5.4/$d/exe" >"$tmp/out" 2>&1 || rc=$?
		if { [ "$rc" = 1 ] || [ "$rc" = 2 ]; } && grep -qE "truncated|not an ELF file|program headers" "$tmp/out"; then
			pass=$((pass + 1))
			echo "PASS exit $rc: $d cut at $cut ($n bytes): $(grep -m1 -oE "[^:]*(truncated|not an ELF file|program headers)[^;]*" "$tmp/out" | head -c 100)"
		else
			fail=$((fail + 1))
			echo "FAIL (exit $rc, wanted 1 or 2 naming the cut): $d cut at $cut ($n bytes)"
			sed 's/^/    /' "$tmp/out" | head -5
		fi
	done
	done
	# A core of another architecture (its e_machine says aarch64).
	cp "$out/deb-5.4/crash/core" "$tmp/arm"
	printf '\267\000' | dd of="$tmp/arm" bs=1 seek=18 conv=notrunc 2>/dev/null
	expect 2 "core of machine 183; luacore reads x86_64" -- "$tmp/arm"
else
	echo "FAIL: no fixture cores in $out (tests/run-matrix.sh makes them)"
	fail=$((fail + 1))
fi
echo "$pass passed, $fail failed"
[ "$fail" = 0 ]
