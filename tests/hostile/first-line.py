#!/usr/bin/env python3
"""first-line.py TIMEOUT CMD...: run CMD, print the seconds to its first
line of output and to its end, then its exit status; its output goes to
stdout after that line ("SECS_FIRST SECS_END STATUS")."""
import subprocess
import sys
import time

limit = float(sys.argv[1])
t0 = time.monotonic()
p = subprocess.Popen(sys.argv[2:], stdout=subprocess.PIPE, stderr=subprocess.DEVNULL)
first = p.stdout.readline()
t1 = time.monotonic() - t0
rest = p.stdout.read()
try:
    rc = p.wait(timeout=max(limit - (time.monotonic() - t0), 0.1))
except subprocess.TimeoutExpired:
    p.kill()
    rc = 124
print("%.2f %.2f %d" % (t1, time.monotonic() - t0, rc))
sys.stdout.flush()
sys.stdout.buffer.write(first + rest)
