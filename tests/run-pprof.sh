#!/usr/bin/env bash
# pprof output: tests/pprof/make-profile builds synthetic profiles (CPU,
# --wall, empty, large) through the profile API and writes them with
# lc_profile_write_pprof, plus the truth about what it added.  Each file
# must be valid gzip; protoc must decode it as perftools.profiles.Profile
# (tests/pprof/profile.proto); check-pprof.py compares the decoded
# profile with the truth.  go tool pprof -raw reads every file as a
# second reader.
#
# protoc (Debian: protobuf-compiler) and go (golang-go) are required:
# without them the test says so (exit 99, a hard error), never a skip.
set -uo pipefail
top_srcdir=${top_srcdir:-.}
top_builddir=${top_builddir:-.}
mk=$top_builddir/tests/pprof/make-profile
proto_dir=$top_srcdir/tests/pprof
py=/usr/bin/python3; [ -x "$py" ] || py=python3

if ! command -v protoc >/dev/null 2>&1; then
	echo "ERROR: protoc not found; install protobuf-compiler." >&2
	echo "ERROR: run-pprof.sh reads the pprof files with it and cannot check anything without it." >&2
	exit 99
fi
if [ ! -x "$mk" ]; then
	echo "ERROR: $mk not built (make check builds it)" >&2
	exit 99
fi
gotool=go
if ! command -v go >/dev/null 2>&1; then
	echo "ERROR: go not found; install golang-go: go tool pprof is the second reader of every file." >&2
	exit 99
fi

work=$(mktemp -d "${TMPDIR:-/tmp}/run-pprof.XXXXXX") || exit 99
status=0

# case NAME [make-profile options]
run_case() {
	local name=$1
	shift
	local f=$work/$name
	echo "== $name${*:+ ($*)}"
	"$mk" "$@" "$f.pb.gz" "$f.tsv" || { echo "FAIL: make-profile $*"; return 1; }
	gzip -t "$f.pb.gz" || { echo "FAIL: $name: not valid gzip"; return 1; }
	gzip -dc "$f.pb.gz" >"$f.pb" || return 1
	echo "   $(stat -c %s "$f.pb.gz") bytes gzipped, $(stat -c %s "$f.pb") bytes of protobuf"
	protoc --proto_path="$proto_dir" --decode=perftools.profiles.Profile \
		profile.proto <"$f.pb" >"$f.txt" 2>"$f.protoc-err" || {
		echo "FAIL: $name: protoc cannot decode the profile:"
		cat "$f.protoc-err"
		return 1
	}
	if [ -n "$gotool" ]; then
		# HOME and GOCACHE for a sandboxed build user: go wants both.
		HOME=${HOME:-$work} GOCACHE=${GOCACHE:-$work/gocache} \
			go tool pprof -raw "$f.pb.gz" >"$f.raw" 2>"$f.go-err" || {
			echo "FAIL: $name: go tool pprof cannot read the profile:"
			cat "$f.go-err"
			return 1
		}
		"$py" "$proto_dir/check-pprof.py" "$f.tsv" "$f.txt" --go-raw "$f.raw"
	else
		"$py" "$proto_dir/check-pprof.py" "$f.tsv" "$f.txt"
	fi
}

run_case cpu || status=1
run_case wall --wall || status=1
run_case empty --empty || status=1
# 5000 more samples and functions: about 600 KB of encoded fields, so
# the writer deflates many chunks, and ids and string indexes take
# several varint bytes.
run_case big --big 5000 || status=1

# A write that fails must be reported, not lost: /dev/full takes the
# bytes into stdio's buffer and fails them at the flush.
echo "== write error (/dev/full)"
if [ -w /dev/full ]; then
	"$mk" /dev/full "$work/full.tsv" 2>"$work/full.err"
	rc=$?
	if [ "$rc" = 1 ] && grep -q "lc_profile_write_pprof: No space left on device" "$work/full.err"; then
		echo "ok: $(cat "$work/full.err")"
	else
		echo "FAIL: make-profile to /dev/full exited $rc: $(cat "$work/full.err")"
		status=1
	fi
else
	echo "note: no writable /dev/full here, write errors not tested"
fi

if [ "$status" = 0 ]; then
	rm -rf "$work"
	echo "PASS"
else
	echo "FAIL: files kept in $work"
fi
exit "$status"
