#!/usr/bin/env python3
"""Check luacore-inspect --heap --json against what a scenario wrote.

  check.py census LOG JSON SCHEMA   per-type counts equal the script's
                                    (heap_census.lua), bytes within 5% of
                                    the VM's own count, the JSON valid
  check.py paths LOG JSON [strong]  every planted object has exactly its
                                    expected path (heap_paths.lua); with
                                    strong the weak one is unreachable;
                                    what a planted table keeps alive lies
                                    in the script's bounds
  check.py diff JSON K N            N*K new tables of class Leak at
                                    _G.leaks[*], none of class Churn
Prints PASS/FAIL lines; exits 1 on any FAIL.
"""
import json
import sys

fails = 0


def check(name, ok, detail=""):
    global fails
    print(("PASS " if ok else "FAIL ") + name + ("" if ok else ": " + detail))
    if not ok:
        fails += 1


def one_vm(doc):
    vms = doc["vms"]
    if len(vms) != 1:
        raise SystemExit("FAIL: %d VMs, not 1" % len(vms))
    return vms[0]


def census(log, path, schema):
    doc = json.load(open(path))
    try:
        import jsonschema
        jsonschema.validate(doc, json.load(open(schema)))
        check("census JSON matches the schema", True)
    except ImportError:
        check("census JSON matches the schema", False, "no python3-jsonschema")
    except Exception as e:  # jsonschema.ValidationError
        check("census JSON matches the schema", False, str(e).split("\n")[0])
    v = one_vm(doc)
    truth = {}
    for line in open(log):
        f = line.rstrip("\n").split("\t")
        if f[0] == "heap" and f[1] != "infos":
            truth[f[1]] = int(f[2])
    luajit = truth.pop("luajit", 0)
    check("census truth written", len(truth) == 5, str(truth))
    for kind, n in sorted(truth.items()):
        got = v["types"][kind]["count"]
        if luajit and kind in ("table", "C function", "thread"):
            # LuaJIT's own objects that no debug function reaches
            check("census %s count (LuaJIT: at least the script's, at most 16 more)" % kind,
                  n <= got <= n + 16, "heap says %d, the script %d" % (got, n))
        else:
            check("census %s count" % kind, got == n, "heap says %d, the script %d" % (got, n))
    classes = {(c["type"], c["name"]): c["count"] for c in v["classes"]}
    check("census class Planted: 300 tables", classes.get(("table", "Planted")) == 300,
          str(classes.get(("table", "Planted"))))
    maker = [c["count"] for c in v["classes"] if c["type"] == "Lua function" and
             (c["name"] or "").endswith("heap_census.lua:15")]
    check("census class heap_census.lua:15: 120 closures", 120 in maker, str(maker))
    mem = v["vm_memory"]
    rest = v["unexplained"]
    check("census bytes within 5%% of the VM's count (%d of %d unexplained)" % (rest, mem),
          mem > 0 and abs(rest) <= 0.05 * mem and
          v["bytes"] + v["vm_own"] + rest == mem,
          "objects %d + own %d" % (v["bytes"], v["vm_own"]))
    check("census not partial", not doc["partial"] and not v["partial"], str(v["note"]))
    # duplicated long strings: the script's groups of lengths 241 and 301
    # exactly (the 301-byte strings alike at both ends: only the equal
    # ones together)
    want, none = [], False
    for line in open(log):
        f = line.rstrip("\n").split("\t")
        if f[0] == "dup" and f[1] == "none":
            none = True
        elif f[0] == "dup":
            want.append((int(f[1]), int(f[2])))
    got = sorted((d["length"], d["copies"]) for d in v["strings"]["duplicated"]
                 if d["length"] in (241, 301))
    check("census duplicated long strings: the script's groups (%s)" % ("none" if none else want),
          (none or want) and got == sorted(want), "heap says %s" % got)


def paths(log, path, strong):
    v = one_vm(json.load(open(path)))
    check("paths: not partial (every reference leads to an object)",
          not v["partial"], str(v["note"]))
    got = {p["address"]: p for p in v["paths"]}
    n = 0
    for line in open(log):
        f = line.rstrip("\n").split("\t")
        if f[0] == "retain":
            name, addr, lo, hi = f[1], f[2], int(f[3]), int(f[4])
            p = got.get(addr)
            check("paths: %s keeps %d to %d bytes alive" % (name, lo, hi),
                  p is not None and lo <= p["retained"] <= hi,
                  "heap says %s" % (p and p["retained"]))
            continue
        if f[0] != "expect":
            continue
        n += 1
        name, addr, want = f[1], f[2], f[3]
        p = got.get(addr)
        if strong and want.endswith("(weak)"):
            check("path %s unreachable with --strong" % name,
                  p is not None and not p["reachable"] and p["path"] is None, str(p))
            continue
        check("path %s" % name, p is not None and p["path"] == want and
              p["weak"] == want.endswith("(weak)"),
              "want %r, got %r" % (want, p and p["path"]))
    check("paths planted", n == 6, "%d expect lines" % n)


def diff(path, k, n):
    v = one_vm(json.load(open(path)))
    d = v.get("diff")
    check("diff present", d is not None)
    if d is None:
        return
    leak = [g for g in d["groups"] if g["class"] == "Leak"]
    check("diff: %d new Leak tables at _G.leaks[*]" % (k * n),
          len(leak) == 1 and leak[0]["count"] == k * n and
          leak[0]["pattern"] == "_G.leaks[*]" and leak[0]["type"] == "table",
          str(leak))
    churn = [g for g in d["groups"] if g["class"] == "Churn"]
    check("diff: no new Churn tables", not churn, str(churn))
    cls = {c["name"]: c for c in v["classes"] if c["type"] == "table"}
    c = cls.get("Leak")
    check("diff: Leak class grew by %d" % (k * n),
          c is not None and c["new_count"] == k * n and
          c["count"] - c["baseline_count"] == k * n, str(c))
    c = cls.get("Churn")
    check("diff: Churn class did not grow",
          c is None or (c["new_count"] == 0 and c["count"] == c["baseline_count"]),
          str(c))


def main():
    a = sys.argv[1:]
    if a and a[0] == "census" and len(a) == 4:
        census(a[1], a[2], a[3])
    elif a and a[0] == "paths" and len(a) in (3, 4):
        paths(a[1], a[2], len(a) == 4)
    elif a and a[0] == "diff" and len(a) == 4:
        diff(a[1], int(a[2]), int(a[3]))
    else:
        raise SystemExit(__doc__)
    sys.exit(1 if fails else 0)


main()
