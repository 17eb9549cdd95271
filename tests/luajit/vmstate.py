#!/usr/bin/env python3
"""vmstate.py PROFILE.pb.gz SAMPLER_STDERR PROTO MODE

A luacore-sample profile of fixtures/scenarios/sample/split.lua run by
LuaJIT, with the JIT compiler on (MODE jit) or off (-joff, MODE interp):
every sample whose stack holds hot_a, hot_b or hot_c has a "vmstate"
label, and of their CPU time at least 80% is labelled "trace#N" (JIT on)
or "lua" (JIT off); the sampler's roll-up line in jit.p's letters
(SAMPLER_STDERR) agrees with the profile's labels within a point; and
at least 99% of their CPU time has its machine frames unwound to the
interpreter's main (through the trace, JIT on).
Prints what it found; exit 0 when it holds, 1 otherwise.
"""
import importlib.util
import os
import re
import sys

here = os.path.dirname(os.path.abspath(__file__))
spec = importlib.util.spec_from_file_location(
    "shares", os.path.join(here, "..", "sample", "shares.py"))
shares = importlib.util.module_from_spec(spec)
argv, sys.argv = sys.argv, sys.argv[:1]
spec.loader.exec_module(shares)
sys.argv = argv


def letter(v):
    if v.startswith("trace#"):
        return "N"
    return {"lua": "I", "c": "C", "gc": "G"}.get(v, "J")


def main(args):
    if len(args) != 4:
        print(__doc__.strip().splitlines()[0], file=sys.stderr)
        return 2
    path, err, proto, mode = args
    prof = shares.decode(path, proto)
    hot = {"hot_a", "hot_b", "hot_c"}
    by, unlabelled, total, to_main = {}, 0, 0, 0
    letters = {k: 0 for k in "NICGJ"}
    for s in shares.samples(prof):
        v = s["labels"].get("vmstate")
        if v is not None:
            letters[letter(v)] += s["cpu"]
        if not hot & {n.split(" ")[0] for n in s["names"]}:
            continue
        total += s["cpu"]
        if "main" in s["names"]:
            to_main += s["cpu"]
        if v is None:
            unlabelled += s["cpu"]
            continue
        key = "trace#N" if v.startswith("trace#") else v
        by[key] = by.get(key, 0) + s["cpu"]
    if not total:
        print("FAIL: no sample holds hot_a, hot_b or hot_c")
        return 1
    want = "trace#N" if mode == "jit" else "lua"
    share = 100.0 * by.get(want, 0) / total
    print("samples of hot_a/b/c by vmstate: %s; unlabelled %.1f%%" % (
        ", ".join("%s %.1f%%" % (k, 100.0 * v / total) for k, v in sorted(by.items())),
        100.0 * unlabelled / total))
    main_share = 100.0 * to_main / total
    print("of them unwound to main: %.1f%%" % main_share)
    ok = unlabelled == 0 and share >= 80 and main_share >= 99
    all_cpu = sum(letters.values())
    line = [l for l in open(err, errors="replace") if "LuaJIT VM states" in l]
    if not line:
        print("FAIL: the sampler printed no LuaJIT VM states line")
        return 1
    print(line[0].strip())
    for k, name in zip("NICGJ", ("compiled", "interpreted", "C code",
                                 "garbage collector", "JIT compiler")):
        m = re.search(r"\b%s ([0-9.]+)%% %s" % (k, name), line[0])
        got = 100.0 * letters[k] / all_cpu if all_cpu else 0
        if not m or abs(float(m.group(1)) - got) > 1:
            print("FAIL: the roll-up's %s is %s, the profile's labels say %.1f%%" % (
                k, m.group(1) if m else "missing", got))
            ok = False
    if share < 80:
        print("FAIL: %.1f%% of them labelled %s, not 80%% at least" % (share, want))
    if unlabelled:
        print("FAIL: samples without a vmstate label")
    if main_share < 99:
        print("FAIL: %.1f%% of them unwound to main, not 99%% at least" % main_share)
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
