# Helpers for the test scripts that source it (after setting src):
#   tmp      a scratch directory, removed at exit;
#   pids     processes to kill at exit (pids+=("$pid"));
#   status   0, or 1 once a check failed: the script's exit status;
#   check NAME COND...   PASS or FAIL NAME as COND succeeds;
#   running PID          the process is alive, not stopped, untraced.
tmp=$(mktemp -d)
pids=()
status=0
cleanup() {
	for p in "${pids[@]}"; do kill -KILL "$p" 2>/dev/null; done
	rm -rf "$tmp"
}
trap cleanup EXIT
check() {
	local name=$1; shift
	if "$@"; then echo "PASS $name"; else echo "FAIL $name"; status=1; fi
}
running() {
	local st tr
	st=$(sed 's/.*) //' "/proc/$1/stat" 2>/dev/null | cut -c1)
	tr=$(awk '/^TracerPid:/ { print $2 }' "/proc/$1/status" 2>/dev/null)
	[ -n "$st" ] && [ "$st" != t ] && [ "$st" != T ] && [ "$st" != Z ] && [ "$tr" = 0 ]
}
