#!/usr/bin/env python3
"""The sampler's overhead on the program, measured side by side in one
run of the program (bench/sample.sh runs it).

    overhead.py LCHOST CALLS_LUA LUACORE_SAMPLE STOPFLOOR [CYCLES] [WINDOW] [KINDS]

One long run of calls.lua repeats fib(27) and times every repetition on
the monotonic clock.  Meanwhile, CYCLES times over: WINDOW seconds
alone, WINDOW seconds under luacore-sample -p at 100 Hz, alone again,
under 1000 Hz.  The median repetition of each kind of stretch is
compared with the alone ones; the machine's own drift, which between two
separate runs can be larger than the effect, touches all kinds alike.
Repetitions that straddle a stretch's edges, and the sampler's start-up
(reading modules and debug info before its first sample), are left out;
the start-up is reported on its own.  KINDS, a comma-separated list of
"100 Hz", "1000 Hz", "floor 100", "floor 1000", "100 Hz nonblocking" and
"1000 Hz nonblocking" (luacore-sample --nonblocking), sets the sampled
stretches of a cycle, each after a stretch alone (default: the first
four)."""
import os
import statistics
import subprocess
import sys
import time


def main():
    host, script, sampler, floor = sys.argv[1:5]
    cycles = int(sys.argv[5]) if len(sys.argv) > 5 else 4
    window = float(sys.argv[6]) if len(sys.argv) > 6 else 2.0
    kinds = (sys.argv[7].split(",") if len(sys.argv) > 7 else
             ["100 Hz", "floor 100", "1000 Hz", "floor 1000"])
    order = tuple(x for k in kinds for x in ("alone", k))
    total = cycles * len(order) * (window + 0.6) + 3
    env = dict(os.environ, LC_FIB=os.environ.get("LC_FIB_REP", "27"),
               LC_LOOP_SECONDS=str(total))
    prog = subprocess.Popen([host, script], env=env, stdout=subprocess.PIPE,
                            stderr=subprocess.DEVNULL, text=True)
    time.sleep(1.0)
    spans = {k: [] for k in order}
    startup = []
    for _ in range(cycles):
        for kind in order:
            if kind == "alone":
                t0 = time.monotonic()
                time.sleep(window)
                spans[kind].append((t0, time.monotonic()))
                continue
            if kind.startswith("floor"):
                t0 = time.monotonic()
                r = subprocess.run([floor, str(prog.pid), kind.split()[1],
                                    str(window)], stdout=subprocess.DEVNULL)
                spans[kind].append((t0, time.monotonic()))
                continue
            rate = kind.split()[0]
            t0 = time.monotonic()
            r = subprocess.run([sampler, "-q", "-r", rate, "-d", str(window),
                                "-p", str(prog.pid), "-o", "/dev/null",
                                "-f", "folded"] +
                               (["--nonblocking"] if "nonblocking" in kind
                                else []),
                               stderr=subprocess.PIPE, text=True)
            t1 = time.monotonic()
            if r.returncode != 0:
                sys.exit("luacore-sample failed: " + r.stderr)
            # It sampled for the last WINDOW seconds of its run.
            spans[kind].append((t1 - window, t1))
            startup.append(t1 - t0 - window)
    out, _ = prog.communicate()
    reps = []
    for line in out.splitlines():
        f = line.split("\t")
        if f[0] == "rep":
            reps.append((float(f[1]), float(f[2])))
    med = {}
    for kind, ss in spans.items():
        d = [dur for t0, dur in reps
             if any(a + 0.05 <= t0 and t0 + dur <= b - 0.05 for a, b in ss)]
        med[kind] = (statistics.median(d), len(d)) if d else (float("nan"), 0)
    base = med["alone"][0]
    for kind in ["alone"] + kinds:
        m, n = med[kind]
        label = "alone" if kind == "alone" else (
            "bare ptrace stop %s Hz" % kind.split()[1]
            if kind.startswith("floor") else "luacore-sample " +
            kind.replace(" nonblocking", " --nonblocking"))
        print("  %-34s fib(27) median %7.3f ms  x%.3f (%+5.1f%%)  %d repetitions"
              % (label, m * 1e3, m / base, (m / base - 1) * 100, n))
    print("  (luacore-sample's start-up before its first sample: median %.2f s,"
          " not counted above)" % statistics.median(startup))


if __name__ == "__main__":
    main()
