#!/usr/bin/env bash
# luacore-inspect's selection options on real cores of the matrix:
# --thread, --vm, --state, --no-native, --no-scan, --max-frames.
set -uo pipefail
top_builddir=${top_builddir:-.}
inspect=$top_builddir/src/luacore-inspect
out=${LUACORE_MATRIX_DIR:-$top_builddir/fixtures/out}
py=/usr/bin/python3; [ -x "$py" ] || py=python3
pass=0 fail=0

# check NAME PYTHON-EXPR -- ARGS: run with --json, evaluate EXPR on the
# parsed report r (and exit status rc).
check() {
	local name=$1 expr=$2; shift 3
	local rc=0
	"$inspect" --json "$@" > "$tmp/r.json" 2>"$tmp/err" || rc=$?
	if "$py" - "$tmp/r.json" "$rc" "$expr" <<'PY'
import json, sys
r = json.load(open(sys.argv[1])); rc = int(sys.argv[2])
sys.exit(0 if eval(sys.argv[3]) else 1)
PY
	then
		pass=$((pass + 1)); echo "PASS $name"
	else
		fail=$((fail + 1)); echo "FAIL $name (exit $rc): $expr"; head -5 "$tmp/err"
	fi
}
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT

two=$out/deb-5.4/two_threads
many=$out/deb-5.4/post_many_vms
coro=$out/src-5.4.7-O2/post_coroutines
for d in "$two" "$many" "$coro"; do
	[ -f "$d/core" ] || { echo "FAIL: no core in $d (tests/run-matrix.sh and tests/run-post.sh make them)"; exit 1; }
done

tid=$("$inspect" --json "$two/core" "$two/exe" | "$py" -c 'import json,sys; print(json.load(sys.stdin)["threads"][1]["tid"])')
check "--thread keeps one thread" "rc == 0 and [t['tid'] for t in r['threads']] == [$tid]" -- --thread "$tid" "$two/core" "$two/exe"
check "--thread with an unknown tid is an error" "rc == 2" -- --thread 1 "$two/core" "$two/exe"
check "--no-native keeps Lua frames only" "all(f['kind'] == 'lua' for t in r['threads'] for f in t['frames']) and any(t['frames'] for t in r['threads'])" -- --no-native "$two/core" "$two/exe"
check "--max-frames bounds every thread" "all(len(t['frames']) <= 5 for t in r['threads'])" -- --max-frames 5 "$two/core" "$two/exe"
check "200 VMs, 198 by scanning" "len(r['vms']) == 200 and r['process']['vms_scanned'] == 198" -- "$many/core" "$many/exe"
check "--no-scan finds the 2 on threads" "len(r['vms']) == 2 and all(v['found_by'] == 'thread' for v in r['vms'])" -- --no-scan "$many/core" "$many/exe"
vm=$("$inspect" --json "$many/core" "$many/exe" | "$py" -c 'import json,sys; print([v for v in json.load(sys.stdin)["vms"] if v["found_by"] == "scan"][7]["address"])')
check "--vm keeps that VM" "[v['address'] for v in r['vms']] == ['$vm']" -- --vm "$vm" "$many/core" "$many/exe"
check "--vm with no such VM is partial" "rc == 1 and r['vms'] == []" -- --vm 0x10 "$many/core" "$many/exe"
co=$("$inspect" --json --no-scan "$coro/core" "$coro/exe" | "$py" -c '
import json,sys
r = json.load(sys.stdin)
print([t for v in r["vms"] for t in v["threads"] if t["status"] == "suspended"][0]["address"])')
check "--state decodes a suspended coroutine" "any(t['address'] == '$co' and t['status'] == 'suspended' for v in r['vms'] for t in v['threads'])" -- --no-scan --state "$co" "$coro/core" "$coro/exe"
check "--state with a bad address is partial" "rc == 1 and any('not a valid lua_State' in w for w in r['process']['warnings'])" -- --state 0x1000 "$coro/core" "$coro/exe"
echo "$pass passed, $fail failed"
[ "$fail" = 0 ]
