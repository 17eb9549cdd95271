#!/usr/bin/env python3
"""Compare a profile that protoc decoded with the truth make-profile wrote.

    check-pprof.py TRUTH.tsv DECODED.txt [--go-raw RAW.txt]

DECODED.txt is `protoc --decode=perftools.profiles.Profile` output.  The
truth lists every sample as make-profile added it, before the profile
merged equal ones; both sides are reduced to the same aggregates (samples
by stack and labels, per-function flat and cumulative sums, per-label
sums) and compared.  RAW.txt, if given, is `go tool pprof -raw` output
for the same file, checked for the totals and names.

Exit 0 when everything matches, 1 with the differences otherwise.
"""
import re
import sys
from collections import defaultdict

LEAF_LABEL = {"lua": "lua", "lua_c": "c", "gc": "gc", "native": "host",
              "idle": "idle"}

errors = []


def fail(msg):
    errors.append(msg)


def unescape(s):
    """A protoc text-format string literal body -> str.  protoc writes
    bytes outside printable ASCII as octal escapes."""
    out = bytearray()
    i = 0
    simple = {"n": 10, "r": 13, "t": 9, '"': 34, "'": 39, "\\": 92,
              "a": 7, "b": 8, "f": 12, "v": 11, "?": 63}
    while i < len(s):
        c = s[i]
        if c != "\\":
            out += c.encode()
            i += 1
            continue
        i += 1
        c = s[i]
        if c in simple:
            out.append(simple[c])
            i += 1
        elif c in "01234567":
            j = i
            while j < len(s) and j < i + 3 and s[j] in "01234567":
                j += 1
            out.append(int(s[i:j], 8))
            i = j
        elif c == "x":
            j = i + 1
            while j < len(s) and j < i + 3 and s[j] in "0123456789abcdefABCDEF":
                j += 1
            out.append(int(s[i + 1:j], 16))
            i = j
        else:
            raise ValueError("unknown escape \\%s" % c)
    return out.decode("utf-8")


def parse_text(text):
    """protoc's text format -> nested dicts of lists.  Anything else
    (unknown fields show up as bare numbers) is an error."""
    root = defaultdict(list)
    stack = [root]
    for n, line in enumerate(text.splitlines(), 1):
        line = line.strip()
        if not line:
            continue
        m = re.fullmatch(r"([a-z_]+) \{", line)
        if m:
            child = defaultdict(list)
            stack[-1][m.group(1)].append(child)
            stack.append(child)
            continue
        if line == "}":
            stack.pop()
            continue
        m = re.fullmatch(r"([a-z_]+): (.*)", line)
        if not m:
            raise ValueError("line %d: cannot read %r" % (n, line))
        v = m.group(2)
        if v.startswith('"'):
            v = unescape(v[1:-1])
        elif v in ("true", "false"):
            v = v == "true"
        else:
            v = int(v)
        stack[-1][m.group(1)].append(v)
    if len(stack) != 1:
        raise ValueError("unbalanced braces")
    return root


def one(msg, field, default=0):
    v = msg.get(field, [])
    if len(v) > 1:
        fail("%s given %d times" % (field, len(v)))
    return v[0] if v else default


def read_truth(path):
    t = {"funcs": {}, "adds": [], "comments": []}
    with open(path, encoding="utf-8") as f:
        for line in f:
            r = line.rstrip("\n").split("\t")
            if r[0] in ("mode",):
                t[r[0]] = r[1]
            elif r[0] in ("period", "time_nanos", "duration_nanos"):
                t[r[0]] = int(r[1])
            elif r[0] == "comment":
                t["comments"].append(r[1])
            elif r[0] == "func":
                t["funcs"][int(r[1])] = {
                    "shown": r[2], "name": r[3], "file": r[4],
                    "start_line": int(r[5]), "kind": r[6]}
            elif r[0] == "add":
                frames = tuple(tuple(int(x) for x in fr.split(":"))
                               for fr in r[7].split()) if r[7] else ()
                t["adds"].append({
                    "cpu_ns": int(r[1]), "tid": int(r[2]), "tname": r[3],
                    "vm": int(r[4]), "co": int(r[5]), "leaf": r[6],
                    "frames": frames})
            else:
                raise ValueError("truth: cannot read %r" % line)
    return t


def expected_labels(a):
    labels = {("thread", "%d (%s)" % (a["tid"], a["tname"])
               if a["tname"] else str(a["tid"])),
              ("tid", a["tid"]),
              ("leaf", LEAF_LABEL[a["leaf"]])}
    if a["vm"]:
        labels.add(("vm", "0x%x" % a["vm"]))
    if a["co"]:
        labels.add(("coroutine", "0x%x" % a["co"]))
    return frozenset(labels)


def aggregate(samples, names):
    """samples: (frames, labels, count, value) with frames as
    (func index, line, addr), leaf first.  Per function (by its shown
    name): [flat count, flat value, cum count, cum value]; per label:
    [count, value]."""
    funcs = defaultdict(lambda: [0, 0, 0, 0])
    labels = defaultdict(lambda: [0, 0])
    for frames, labs, count, value in samples:
        if frames:
            f = funcs[names[frames[0][0]]]
            f[0] += count
            f[1] += value
        for name in {names[fr[0]] for fr in frames}:
            f = funcs[name]
            f[2] += count
            f[3] += value
        for lab in labs:
            labels[lab][0] += count
            labels[lab][1] += value
    return dict(funcs), dict(labels)


def check(truth, prof):
    mode = truth["mode"]
    st = prof.get("string_table", [])
    if not st or st[0] != "":
        fail("string_table[0] is not \"\"")

    def s(i):
        if not 0 <= i < len(st):
            fail("string index %d out of range (%d strings)" % (i, len(st)))
            return "?"
        return st[i]

    # What the values mean, and the run.
    types = [(s(one(v, "type")), s(one(v, "unit")))
             for v in prof.get("sample_type", [])]
    if types != [("samples", "count"), (mode, "nanoseconds")]:
        fail("sample_type %r" % types)
    pt = prof.get("period_type", [])
    if len(pt) != 1 or (s(one(pt[0], "type")),
                        s(one(pt[0], "unit"))) != (mode, "nanoseconds"):
        fail("period_type is not (%s, nanoseconds)" % mode)
    for k in ("period", "time_nanos", "duration_nanos"):
        if one(prof, k) != truth[k]:
            fail("%s %d, expected %d" % (k, one(prof, k), truth[k]))
    if s(one(prof, "default_sample_type")) != mode:
        fail("default_sample_type is not %s" % mode)

    comments = [s(i) for i in prof.get("comment", [])]
    if len(comments) < 3:
        fail("only %d comments" % len(comments))
    for sub in truth["comments"]:
        if not any(sub in c for c in comments):
            fail("no comment says %r; comments: %r" % (sub, comments))

    # Functions: id = index + 1, the frame label as the name.
    funcs = {}
    for f in prof.get("function", []):
        fid = one(f, "id")
        if fid == 0 or fid in funcs:
            fail("function id %d zero or repeated" % fid)
        funcs[fid] = {"shown": s(one(f, "name")),
                      "name": s(one(f, "system_name")),
                      "file": s(one(f, "filename")),
                      "start_line": one(f, "start_line")}
    want = {i + 1: {k: v for k, v in f.items() if k != "kind"}
            for i, f in truth["funcs"].items()}
    if funcs != want:
        for fid in sorted(set(funcs) | set(want)):
            if funcs.get(fid) != want.get(fid):
                fail("function %d: %r, expected %r"
                     % (fid, funcs.get(fid), want.get(fid)))

    mappings = {one(m, "id"): m for m in prof.get("mapping", [])}
    if 0 in mappings:
        fail("mapping id 0")

    locs = {}
    for loc in prof.get("location", []):
        lid = one(loc, "id")
        if lid == 0 or lid in locs:
            fail("location id %d zero or repeated" % lid)
        mid = one(loc, "mapping_id")
        if mid and mid not in mappings:
            fail("location %d: no mapping %d" % (lid, mid))
        lines = loc.get("line", [])
        if len(lines) != 1:
            fail("location %d has %d lines" % (lid, len(lines)))
            continue
        fn = one(lines[0], "function_id")
        if fn not in funcs:
            fail("location %d: no function %d" % (lid, fn))
        locs[lid] = (fn - 1, one(lines[0], "line"), one(loc, "address"))

    # Samples, keyed by stack and labels: each key once (merged), with
    # the sums of what was added under it.
    got = {}
    for smp in prof.get("sample", []):
        frames = []
        for lid in smp.get("location_id", []):
            if lid not in locs:
                fail("sample refers to location %d" % lid)
                continue
            frames.append(locs[lid])
        labs = set()
        for lab in smp.get("label", []):
            key = s(one(lab, "key"))
            if lab.get("str"):
                labs.add((key, s(one(lab, "str"))))
            else:
                labs.add((key, one(lab, "num")))
        values = smp.get("value", [])
        if len(values) != 2:
            fail("sample with %d values" % len(values))
            continue
        key = (tuple(frames), frozenset(labs))
        if key in got:
            fail("two samples with the same stack and labels: %r" % (key,))
        got[key] = (values[0], values[1])

    want = defaultdict(lambda: [0, 0])
    for a in truth["adds"]:
        w = want[(a["frames"], expected_labels(a))]
        w[0] += 1
        w[1] += a["cpu_ns"]
    want = {k: tuple(v) for k, v in want.items()}
    if len(got) != len(want):
        fail("%d samples, expected %d" % (len(got), len(want)))
    for k in set(got) | set(want):
        if got.get(k) != want.get(k):
            fail("sample %r: %r, expected %r" % (k, got.get(k), want.get(k)))

    names = {i: f["shown"] for i, f in truth["funcs"].items()}
    gf, gl = aggregate([(k[0], k[1]) + v for k, v in got.items()
                        if all(fr[0] in names for fr in k[0])], names)
    wf, wl = aggregate([(k[0], k[1]) + v for k, v in want.items()], names)
    if gf != wf:
        fail("per-function sums differ:\n  got  %r\n  want %r" % (gf, wf))
    if gl != wl:
        fail("per-label sums differ:\n  got  %r\n  want %r" % (gl, wl))
    return got, wf


def check_go_raw(path, truth, got, names):
    """go tool pprof -raw: the same number of samples, the same totals,
    every function name, the comments."""
    with open(path, encoding="utf-8") as f:
        text = f.read()
    mode = truth["mode"]
    if "PeriodType: %s nanoseconds" % mode not in text:
        fail("go: no 'PeriodType: %s nanoseconds'" % mode)
    rows = re.findall(r"^\s+(\d+)\s+(\d+):(?: \d+)* ?$", text, re.M)
    if len(rows) != len(got):
        fail("go: %d samples, expected %d" % (len(rows), len(got)))
    tot = (sum(int(r[0]) for r in rows), sum(int(r[1]) for r in rows))
    want = (sum(v[0] for v in got.values()), sum(v[1] for v in got.values()))
    if tot != want:
        fail("go: totals %r, expected %r" % (tot, want))
    # Location lines: "ID: ADDR M=MAPPING NAME FILE:LINE s=START(...)".
    shown = set(re.findall(r"^\s+\d+: 0x[0-9a-f]+ M=\d+ (.*?) \S*:-?\d+ s=",
                           text, re.M))
    for name in names:
        if name not in shown:
            fail("go: no function %r" % name)
    for sub in truth["comments"]:
        if not re.search(r"^Comment: .*" + re.escape(sub), text, re.M):
            fail("go: no comment says %r" % sub)


def main():
    args = sys.argv[1:]
    go_raw = None
    if len(args) == 4 and args[2] == "--go-raw":
        go_raw = args[3]
        args = args[:2]
    if len(args) != 2:
        print(__doc__, file=sys.stderr)
        return 64
    truth = read_truth(args[0])
    with open(args[1], encoding="utf-8") as f:
        prof = parse_text(f.read())
    got, wf = check(truth, prof)
    if go_raw:
        check_go_raw(go_raw, truth, got,
                     [f["shown"] for f in truth["funcs"].values()])
    for e in errors:
        print("FAIL: " + e)
    if errors:
        return 1
    n = sum(v[0] for v in got.values())
    print("ok: %s, %d samples from %d adds, %d functions, %d comments%s"
          % (truth["mode"], len(got), n, len(truth["funcs"]),
             len(prof.get("comment", [])), ", go pprof agrees" if go_raw
             else ""))
    for name, (fc, fv, cc, cv) in sorted(wf.items(), key=lambda x: -x[1][3])[:12]:
        print("   flat %4d %12d  cum %4d %12d  %s" % (fc, fv, cc, cv,
                                                      name[:60]))
    return 0


if __name__ == "__main__":
    sys.exit(main())
