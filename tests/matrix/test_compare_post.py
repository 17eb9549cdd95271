#!/usr/bin/env python3
"""Self-test of compare_post.py on a hand-written truth and report.

    tests/matrix/test_compare_post.py      exit 0 if every case behaves

The report below matches the truth (exit 0); each mutation breaks one check,
which must then fail (exit 1) in the section it names.
"""
import copy
import json
import os
import subprocess
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))

TRUTH = """luaversion\tLua 5.4
frame\t100\t0\tC\t=[C]\t-1\tpark\tglobal\t0
coroutine\t0x10\tnormal\t\tmain
coroutine\t0x20\trunning\t\tco
coroutine\t0x30\tdead\terror\tfailed
coroutines\t0x10\t3
chain\t0x10,0x20
varframe\t0x20\t1\tLua\t@x.lua\t7\t5
var\t0x20\t1\tlocal\t1\ts\tstring\ttab\\there\\\\
var\t0x20\t1\tlocal\t2\tn\tnumber\t0.33333333333333331
var\t0x20\t1\tvararg\t1\t(vararg)\tboolean\tfalse
var\t0x20\t1\tupvalue\t1\tt\ttable\t0xa0
var\t0x20\t1\tupvalue\t2\tu\tuserdata\t0xb28
nny\t0x20\t1\tisyieldable\tco
nny\t0x10\t0\tconstruction\tmain
errorjmp\t0x20\tset\trunning
errorjmp\t0x30\tnull\tdead
residue\t0x20\tstring\tresidue-1
residue\t0x20\tnumber\t123456.5
gc\t0x20\t1.5\t3
gcbytes\t0x20\t2000
vm\t0x10\tthread\tmain
vm\t0x90\tscan\tidle 1
vmcount\t2
"""


def val(t, **kw):
    return dict({"type": t, "text": None, "address": None}, **kw)


REPORT = {
    "format": "luacore-inspect/1",
    "threads": [{"tid": 100, "frames": [
        {"kind": "lua", "what": "C", "source": "=[C]", "currentline": -1,
         "name": "park", "namewhat": "global", "istailcall": False}]}],
    "vms": [
        {"address": "0x1", "found_by": "thread", "mainthread": "0x10", "memory": 2000,
         "gc": {"state": "propagate", "kind": "incremental"}, "chain": ["0x10", "0x20"],
         "threads": [
             {"address": "0x10", "status": "normal", "nny": 1, "errorjmp": "0x7ff0", "frames": []},
             {"address": "0x20", "status": "running", "nny": 0, "errorjmp": "0x7fe0",
              "frames": [
                  {"kind": "lua", "what": "C", "source": "=[C]", "currentline": -1, "vars": []},
                  {"kind": "lua", "what": "Lua", "source": "@x.lua", "currentline": 7, "vars": [
                      {"kind": "local", "name": "s", "index": 0,
                       "value": val("string", text='"tab\\there\\\\"', string="tab\there\\")},
                      {"kind": "local", "name": "(temporary)", "index": 2, "value": val("nil")},
                      {"kind": "local", "name": "n", "index": 1,
                       "value": val("number", text="0.33333333333333")},
                      {"kind": "vararg", "name": "?", "index": 1,
                       "value": val("boolean", text="false")},
                      {"kind": "upvalue", "name": "t", "index": 1,
                       "value": val("table", text="table: 0xa0", address="0xa0")},
                      {"kind": "upvalue", "name": "u", "index": 2,
                       "value": val("userdata", text="userdata: 0xb00", address="0xb00")}]}],
              "slots": [
                  {"index": 0, "residue": False, "value": val("string", string="residue-1")},
                  {"index": 5, "residue": True, "value": val("number", text="123456.5")},
                  {"index": 6, "residue": True, "value": val("string", string="residue-1")}]},
             {"address": "0x30", "status": "error", "nny": 0, "errorjmp": None, "frames": []}]},
        {"address": "0x2", "found_by": "scan", "mainthread": "0x90", "memory": 100,
         "gc": {}, "chain": [], "threads": [{"address": "0x90", "status": "idle"}]}],
}


def vm0(r):
    return r["vms"][0]


def th(r, i):
    return vm0(r)["threads"][i]


def var(r, i):
    return th(r, 1)["frames"][1]["vars"][i]


# (what breaks, section that must say MISMATCH, mutation)
MUTATIONS = [
    ("errored coroutine shown as dead", "coroutine statuses", lambda r: th(r, 2).update(status="dead")),
    ("coroutine missing", "coroutine statuses", lambda r: vm0(r)["threads"].pop(2)),
    ("extra coroutine", "coroutine statuses", lambda r: vm0(r)["threads"].append({"address": "0x40"})),
    ("chain reversed", "resume chain", lambda r: vm0(r)["chain"].reverse()),
    ("string differs", "locals and upvalues", lambda r: var(r, 0)["value"].update(string="tab")),
    ("number differs", "locals and upvalues", lambda r: var(r, 2)["value"].update(text="0.3333")),
    ("local renamed", "locals and upvalues", lambda r: var(r, 0).update(name="x")),
    ("vararg missing", "locals and upvalues", lambda r: th(r, 1)["frames"][1]["vars"].pop(3)),
    ("table address", "locals and upvalues", lambda r: var(r, 4)["value"].update(address="0xa8")),
    ("frame moved", "locals and upvalues", lambda r: th(r, 1)["frames"].reverse()),
    ("no --locals", "locals and upvalues", lambda r: th(r, 1)["frames"][1].pop("vars")),
    ("nny of a yieldable thread", "nny (yieldable)", lambda r: th(r, 1).update(nny=1)),
    ("nny of main", "nny (yieldable)", lambda r: th(r, 0).update(nny=0)),
    ("errorjmp lost", "errorJmp", lambda r: th(r, 1).update(errorjmp=None)),
    ("residue not marked", "stale slots", lambda r: th(r, 1)["slots"][2].update(residue=False)),
    ("gc in pause", "gc", lambda r: vm0(r)["gc"].update(state="pause")),
    ("gc generational", "gc", lambda r: vm0(r)["gc"].update(kind="generational")),
    ("memory off by 1", "gc", lambda r: vm0(r).update(memory=2001)),
    ("memory off by 20 KiB", "gc", lambda r: vm0(r).update(memory=22000)),
    ("idle VM found on a thread", "VMs", lambda r: r["vms"][1].update(found_by="thread")),
    ("a VM too many", "VMs", lambda r: r["vms"].append({"mainthread": "0x99", "threads": []})),
    ("frame name", "frames", lambda r: r["threads"][0]["frames"][0].update(name="pork")),
]


def run(tmp, report):
    path = os.path.join(tmp, "report.json")
    with open(path, "w") as f:
        json.dump(report, f)
    p = subprocess.run([sys.executable, os.path.join(HERE, "compare_post.py"), "-q",
                        os.path.join(tmp, "truth.tsv"), path], capture_output=True, text=True)
    return p.returncode, p.stdout + p.stderr


def main():
    bad = 0
    with tempfile.TemporaryDirectory() as tmp:
        with open(os.path.join(tmp, "truth.tsv"), "w") as f:
            f.write(TRUTH)
        rc, out = run(tmp, REPORT)
        if rc != 0:
            print("FAIL matching report: exit %d\n%s" % (rc, out))
            bad += 1
        for what, section, mutate in MUTATIONS:
            r = copy.deepcopy(REPORT)
            mutate(r)
            rc, out = run(tmp, r)
            if rc != 1 or ("%s: MISMATCH" % section) not in out:
                print("FAIL %s: exit %d, want 1 with %s: MISMATCH\n%s" % (what, rc, section, out))
                bad += 1
    print("test_compare_post: %d of %d cases %s" % (
        len(MUTATIONS) + 1 - bad, len(MUTATIONS) + 1, "pass" if not bad else "pass, %d FAIL" % bad))
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
