#!/usr/bin/env bash
# luacore-inspect and debuginfod: a host whose debug info is on a local
# debuginfod server only (lchost of a source build, its DWARF split off
# with objcopy, no debuglink), the core of it parked in a scenario.
#  - no DEBUGINFOD_URLS: the report's layout is the built-in one, not the
#    DWARF's (sanity: the debug info is really not found locally);
#  - a server that accepts and never answers, DEBUGINFOD_TIMEOUT=5: the
#    run ends within 5 + 5 s, asks once per build-id and kind, says
#    what it fetches after a second and when it gives up;
#  - a server that answers: the full report, its Lua frames equal to the
#    script's truth, one request per build-id and kind;
#  - luacore-sample with the same never-answering server: within the
#    same bound, and says so too.
set -uo pipefail
. "$(cd "$(dirname "$0")" && pwd)/lib.sh"
build=src-5.4.7-O0
fixtures "$build"

# The host without its DWARF; the DWARF on its own.
exe=$tmp/bin/lchost
mkdir -p "$tmp/bin" "$tmp/served"
cp "$out/$build/lchost" "$exe"
objcopy --only-keep-debug "$exe" "$tmp/lchost.debug"
objcopy --strip-debug "$exe"
id=$(readelf -n "$exe" | sed -n 's/.*Build ID: \([0-9a-f]*\).*/\1/p')
[ -n "$id" ] || { echo "FAIL: no build-id in $exe"; exit 1; }
mkdir -p "$tmp/served/$id"
cp "$tmp/lchost.debug" "$tmp/served/$id/debuginfo"

# The core: the script parked, its truth written.
d=$tmp/run
mkdir -p "$d"
(cd "$d" && LC_TRUTH_LUA=$src/fixtures/lua/truth.lua LC_TRUTH=$d/truth.tsv \
	LC_READY=$d/ready exec "$exe" "$src/fixtures/scenarios/tail_calls.lua") \
	>"$d/log" 2>&1 &
pid=$!
pids+=("$pid")
disown "$pid"
for i in $(seq 100); do [ -e "$d/ready" ] && break; sleep 0.1; done
[ -e "$d/ready" ] || { echo "FAIL: the host did not park: $(tail -2 "$d/log")"; exit 1; }
gcore -o "$d/core" "$pid" >/dev/null 2>&1 && mv "$d/core.$pid" "$d/core"
[ -s "$d/core" ] || { echo "FAIL: gcore"; exit 1; }

# server MODE PORTFILE LOG: "hang" accepts, reads the request, never
# answers; "serve" answers /buildid/ID/KIND from $tmp/served, else 404.
# Each request's path goes to LOG.
server() {
	"$py" - "$1" "$2" "$3" "$tmp/served" <<'EOF' &
import http.server, os, socket, sys, threading, time
mode, portfile, log, root = sys.argv[1:5]
def note(path):
    with open(log, "a") as f:
        f.write(path + "\n")
if mode == "hang":
    s = socket.socket()
    s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    s.bind(("127.0.0.1", 0))
    s.listen(64)
    open(portfile, "w").write(str(s.getsockname()[1]))
    held = []
    def take(c):
        c.settimeout(60)
        data = b""
        try:
            while b"\r\n" not in data:
                b = c.recv(4096)
                if not b:
                    return
                data += b
        except OSError:
            return
        note(data.split(b"\r\n")[0].decode().split(" ")[1])
    while True:
        c, _ = s.accept()
        held.append(c)
        threading.Thread(target=take, args=(c,), daemon=True).start()
else:
    class H(http.server.BaseHTTPRequestHandler):
        def do_GET(self):
            note(self.path)
            p = self.path.split("/")
            f = os.path.join(root, p[2], p[3]) if len(p) == 4 and p[1] == "buildid" else ""
            if f and os.path.isfile(f):
                data = open(f, "rb").read()
                self.send_response(200)
                self.send_header("Content-Length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)
            else:
                self.send_error(404)
        def log_message(self, *a):
            pass
    srv = http.server.ThreadingHTTPServer(("127.0.0.1", 0), H)
    open(portfile, "w").write(str(srv.server_address[1]))
    srv.serve_forever()
EOF
	pids+=($!)
	disown $!
	for i in $(seq 50); do [ -s "$2" ] && return 0; sleep 0.1; done
	echo "FAIL: the $1 server did not start"; exit 1
}
# once LOG: every requested path at most once, and at least one.
once() {
	[ -s "$1" ] && [ -z "$(sort "$1" | uniq -d)" ]
}
now() { date +%s.%N; }
within() {	# T0 T1 SECONDS
	awk -v a="$1" -v b="$2" -v s="$3" 'BEGIN { exit !(b - a <= s) }'
}

# layout JSON: the report's lua_layout.
layout() {
	"$py" -c 'import json,sys; print(json.load(open(sys.argv[1]))["process"]["lua_layout"] or "")' "$1" 2>/dev/null
}
# No debuginfod: no DWARF, the built-in layout.
env -u DEBUGINFOD_URLS "$inspect" --json "$d/core" "$exe" >"$d/none.json" 2>"$d/none.err"
check "no debuginfod: no DWARF found, the built-in layout used (the test's premise)" \
	eval "layout '$d/none.json' | grep -q '^built-in layout of Lua '"

# A server that never answers.
server hang "$tmp/hang.port" "$tmp/hang.log"
t0=$(now)
DEBUGINFOD_URLS=http://127.0.0.1:$(cat "$tmp/hang.port") DEBUGINFOD_TIMEOUT=5 \
	DEBUGINFOD_CACHE_PATH=$tmp/cache1 \
	timeout 60 "$inspect" "$d/core" "$exe" >"$d/hang.txt" 2>"$d/hang.err"
rc=$?
t1=$(now)
echo "    never answering: exit $rc after $(awk -v a="$t0" -v b="$t1" 'BEGIN { printf "%.1f", b - a }') s; requests: $(sort "$tmp/hang.log" 2>/dev/null | uniq -c | tr '\n' ' ')"
grep debuginfod "$d/hang.err" | sed 's/^/    /'
check "never answering: done within DEBUGINFOD_TIMEOUT + 5 s" within "$t0" "$t1" 10
check "never answering: each build-id and kind asked once" once "$tmp/hang.log"
check "never answering: says what it fetches, and that it gave up" \
	eval "grep -q 'fetching [a-z ]* of [^ ]* (build-id [0-9a-f]*) from debuginfod' '$d/hang.err' &&
	      grep -q 'gave up on debuginfod after' '$d/hang.err'"
check "never answering: a report still (exit 0 or 1)" [ "$rc" -le 1 ]

# A server that answers.
server serve "$tmp/serve.port" "$tmp/serve.log"
DEBUGINFOD_URLS=http://127.0.0.1:$(cat "$tmp/serve.port") DEBUGINFOD_TIMEOUT=5 \
	DEBUGINFOD_CACHE_PATH=$tmp/cache2 \
	timeout 60 "$inspect" --json "$d/core" "$exe" >"$d/served.json" 2>"$d/served.err"
echo "    answering: requests: $(sort "$tmp/serve.log" | uniq -c | tr '\n' ' ')"
check "answering: the debug info was fetched" grep -q "^/buildid/$id/debuginfo\$" "$tmp/serve.log"
check "answering: the layout is the fetched DWARF's" eval "layout '$d/served.json' | grep -q '^DWARF of '"
check "answering: the Lua frames equal the script's truth" \
	"$py" "$src/tests/matrix/compare.py" -q "$d/truth.tsv" "$d/served.json"
check "answering: each build-id and kind asked once" once "$tmp/serve.log"

# The sampler, on the live process, with the server that never answers.
: >"$tmp/hang.log"
t0=$(now)
DEBUGINFOD_URLS=http://127.0.0.1:$(cat "$tmp/hang.port") DEBUGINFOD_TIMEOUT=5 \
	DEBUGINFOD_CACHE_PATH=$tmp/cache3 \
	timeout 60 "$sample" -q -d 1 -o "$d/p.folded" -p "$pid" >/dev/null 2>"$d/sample.err"
t1=$(now)
check "sampler, never answering: done within 1 + 5 + 5 s, asked once, said so" \
	eval "within $t0 $t1 11 && once '$tmp/hang.log' && grep -q 'gave up on debuginfod' '$d/sample.err'"
exit $status
