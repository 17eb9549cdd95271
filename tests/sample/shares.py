#!/usr/bin/env python3
"""Read a pprof file luacore-sample wrote and compare its shares with
what the sampled Lua script measured of itself.

    shares.py MODE PROFILE.pb.gz SCRIPT_OUTPUT PROTO

MODE is the workload (fixtures/scenarios/sample/MODE.lua):
  split    hot_a, hot_b, hot_c: each function's share of CPU time (the
           samples whose stack holds it) within a tolerance of 4 standard
           deviations of a binomial share at the sample count, plus 3
           points for what sampling cannot see (os.clock's own cost);
  cfunc    "string.rep [C]" the same way; its samples labelled leaf=c
           (or leaf=gc, the collection its allocations run);
  gc       the samples labelled leaf=gc against the time the script spent
           in collectgarbage("collect");
  two_vms  two distinct vm labels, vm1_work only under one and vm2_work
           only under the other;
  sky      fixtures/host/skyhost.c's services (fixtures/scenarios/sky/
           service.lua): each service's share of the process's CPU time
           (the samples whose stack holds the function named as the
           service), against its own thread-clock measurement over the
           process's CPU time ("truth total").  With BOUND (points), each
           share must be within BOUND of the script's; without, the
           tolerance above.  And the profile's CPU time must add up to
           the process's, within 5%;
  sky_names  the same run sampled with --vm-name SERVICE_NAME: every
           sample of a VM is labelled vm=NAME, the service whose
           function its stack holds, and each service is seen; with BOUND
           given as a service's name instead (a run with --vm NAME), every
           sample is that service's.
Prints the measured and expected shares; exit 0 if within tolerance.

    shares.py MODE PROFILE.pb.gz SCRIPT_OUTPUT PROTO [BOUND]"""
import gzip
import importlib.util
import math
import os
import re
import subprocess
import sys
from collections import defaultdict

here = os.path.dirname(os.path.abspath(__file__))
spec = importlib.util.spec_from_file_location(
    "check_pprof", os.path.join(here, "..", "pprof", "check-pprof.py"))
cp = importlib.util.module_from_spec(spec)
sys.argv, argv = sys.argv[:1], sys.argv
spec.loader.exec_module(cp)
sys.argv = argv


def decode(path, proto):
    raw = gzip.open(path).read()
    out = subprocess.run(
        ["protoc", "--decode=perftools.profiles.Profile",
         "-I", os.path.dirname(proto), os.path.basename(proto)],
        input=raw, capture_output=True, check=True).stdout.decode()
    return cp.parse_text(out)


def samples(prof):
    strings = prof["string_table"]
    funcs = {cp.one(f, "id"): strings[cp.one(f, "name")]
             for f in prof["function"]}
    locs = {cp.one(l, "id"): [funcs[cp.one(ln, "function_id")]
                              for ln in l["line"]]
            for l in prof["location"]}
    out = []
    for s in prof["sample"]:
        names = []
        for lid in s["location_id"]:
            names += locs[lid]
        labels = {}
        for lb in s.get("label", []):
            key = strings[cp.one(lb, "key")]
            if lb.get("str"):
                labels[key] = strings[cp.one(lb, "str")]
            else:
                labels[key] = cp.one(lb, "num")
        v = s["value"]
        out.append({"names": names, "labels": labels, "count": v[0],
                    "cpu": v[1] if len(v) > 1 else 0})
    return out


def cpu_before(prof):
    """The process's CPU time before sampling began (a comment), or 0."""
    strings = prof["string_table"]
    for c in prof.get("comment", []):
        m = re.match(r"process CPU time before sampling began: ([\d.]+) s",
                     strings[c])
        if m:
            return float(m.group(1))
    return 0.0


def truth(path):
    t = {}
    with open(path) as f:
        for line in f:
            p = line.rstrip("\n").split("\t")
            if p[0] == "truth":
                t[p[1]] = float(p[2])
    return t


def check_share(name, got, want, n, bound=None):
    sd = math.sqrt(max(want * (1 - want), 0.01) / max(n, 1))
    tol = 4 * sd + 0.03 if bound is None else bound
    ok = abs(got - want) <= tol
    print("%s %-16s profile %5.1f%%  script %5.1f%%  diff %+5.2f  (tolerance %.1f points, %d samples)"
          % ("ok  " if ok else "FAIL", name, 100 * got, 100 * want,
             100 * (got - want), 100 * tol, n))
    return ok


def main():
    mode, path, out, proto = sys.argv[1:5]
    only = sys.argv[5] if mode == "sky_names" and len(sys.argv) > 5 else None
    bound = (float(sys.argv[5]) / 100 if len(sys.argv) > 5 and not only
             else None)
    prof = decode(path, proto)
    ss = samples(prof)
    t = truth(out)
    total = sum(s["cpu"] for s in ss)
    n = sum(s["count"] for s in ss)
    if not ss or total <= 0:
        print("FAIL no samples")
        return 1
    ok = True

    def share(pred):
        return sum(s["cpu"] for s in ss if pred(s)) / total

    if mode == "split":
        for fn in ("hot_a", "hot_b", "hot_c"):
            got = share(lambda s, fn=fn: any(x.startswith(fn + " (")
                                             for x in s["names"]))
            ok &= check_share(fn, got, t[fn] / t["total"], n, bound)
    elif mode == "cfunc":
        got = share(lambda s: "string.rep [C]" in s["names"])
        ok &= check_share("string.rep [C]", got,
                          t["string.rep"] / t["total"], n)
        # Time in string.rep is the C function's own (leaf=c) or the
        # collector's it runs into while allocating (leaf=gc).
        leaf = share(lambda s: s["labels"].get("leaf") in ("c", "gc") and
                     "string.rep [C]" in s["names"])
        ok &= check_share("leaf=c or gc", leaf,
                          t["string.rep"] / t["total"], n)
        c_only = share(lambda s: s["labels"].get("leaf") == "c")
        good = c_only >= 0.5 * t["string.rep"] / t["total"]
        print("%s leaf=c alone    profile %5.1f%%  (at least half the C function's share)"
              % ("ok  " if good else "FAIL", 100 * c_only))
        ok &= good
    elif mode == "gc":
        got = share(lambda s: s["labels"].get("leaf") == "gc")
        ok &= check_share("leaf=gc", got, t["gc"] / t["total"], n)
        named = share(lambda s: "[GC]" in s["names"])
        ok &= check_share("[GC] frames", named, t["gc"] / t["total"], n)
    elif mode == "two_vms":
        by_vm = defaultdict(set)
        for s in ss:
            for fn in ("vm1_work", "vm2_work"):
                if any(x.startswith(fn + " (") for x in s["names"]):
                    by_vm[s["labels"].get("vm")].add(fn)
        print("vms:", {k: sorted(v) for k, v in by_vm.items()})
        vms = [k for k in by_vm if k]
        good = (len(vms) == 2 and all(len(by_vm[k]) == 1 for k in vms)
                and {next(iter(by_vm[k])) for k in vms} ==
                {"vm1_work", "vm2_work"} and None not in by_vm)
        print("%s two VMs, each function under its own" %
              ("ok  " if good else "FAIL"))
        ok &= good
    elif mode == "sky":
        services = [k for k in t if k not in ("total", "start")]
        for fn in services:
            got = share(lambda s, fn=fn: any(x.startswith(fn + " (")
                                             for x in s["names"]))
            want = t[fn] / t["total"]
            if want > 0.001 or got > 0.001:
                ok &= check_share(fn, got, want, n, bound)
        # Each thread's samples scaled to its CPU time: the profile adds
        # up to the process's over the sampled time.  The host's "truth
        # total" starts at its first message, and sampling a launched
        # host began when the process had used what the profile's
        # comment says: the part of that after the first message is
        # not the profile's to count.
        before = cpu_before(prof)
        want = t["total"] - max(0.0, before - t.get("start", before))
        good = abs(total / 1e9 - want) <= 0.03 * want
        print("%s total            profile %.3f s  script %.3f s, %.3f s of it before sampling began  (within 3%%)"
              % ("ok  " if good else "FAIL", total / 1e9, want,
                 t["total"] - want))
        ok &= good
    elif mode == "sky_names":
        services = [k for k in t if k not in ("total", "start") and t[k] > 0.01]
        seen, wrong, unnamed = defaultdict(int), 0, 0
        for s in ss:
            fns = [fn for fn in services
                   if any(x.startswith(fn + " (") for x in s["names"])]
            vm = s["labels"].get("vm")
            if not fns:
                continue
            if vm is None or vm.startswith("0x"):
                unnamed += 1
            elif vm != fns[0] or (only and vm != only):
                wrong += 1
            else:
                seen[vm] += s["count"]
        want = [only] if only else services
        good = (wrong == 0 and unnamed == 0 and
                all(seen[fn] > 0 for fn in want) and
                (not only or set(seen) == {only}))
        print("%s vm labels: %s; %d samples under another VM's name, %d unnamed"
              % ("ok  " if good else "FAIL",
                 ", ".join("%s %d" % kv for kv in sorted(seen.items())),
                 wrong, unnamed))
        ok &= good
    else:
        print("unknown mode", mode)
        return 2
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
