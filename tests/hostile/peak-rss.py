#!/usr/bin/env python3
"""peak-rss.py TIMEOUT OUT CMD...: run CMD (stdout and stderr to OUT and
OUT.err), then print "PEAK_KB SECS STATUS": its peak resident set
(getrusage of the child), its time, its exit status (124 on timeout)."""
import resource
import subprocess
import sys
import time

limit, out = float(sys.argv[1]), sys.argv[2]
t0 = time.monotonic()
with open(out, "wb") as o, open(out + ".err", "wb") as e:
    p = subprocess.Popen(sys.argv[3:], stdout=o, stderr=e)
    try:
        rc = p.wait(timeout=limit)
    except subprocess.TimeoutExpired:
        p.kill()
        p.wait()
        rc = 124
print("%d %.2f %d" % (resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss,
                      time.monotonic() - t0, rc))
