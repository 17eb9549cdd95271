#!/usr/bin/env bash
# The Check programs whose tests use the matrix's builds and cores (5.2
# layouts from the -O0 build of 5.2.4, VM scans of real cores): run after
# tests/run-matrix.sh has made them.
set -uo pipefail
top_builddir=${top_builddir:-.}
export top_builddir
status=0
for t in check_target check_vm; do
	"$top_builddir/tests/$t" || status=1
done
exit "$status"
