#!/usr/bin/env python3
"""The samples of a speedscope file luacore-sample wrote follow time: for
fixtures/scenarios/sample/alternate.lua, which runs phase_a and phase_b
in turns ("phase N NAME" lines in its output), the main thread's samples
that hold one of the two must come in the same turns: as many runs of
one name as the script had phases, in its order.  A run of fewer than 3
samples (a phase boundary caught twice) is not counted as a turn.

A launched command runs while the sampler starts: with the sampler's
stderr, which says how much CPU time the command used before sampling
began, the phases that ran (almost) wholly before it are not expected
(the script prints each phase's start on its CPU clock): one left with
less than 0.02 s to sample is dropped, and one with less than 0.1 s may
be missing.

    check-order.py PROFILE.json SCRIPT_OUTPUT [SAMPLER_STDERR]"""
import json
import re
import sys


def expected(script_out, sampler_err):
    """-> the phase names a profile must show in turn, strict and loose
    (the second dropping also the phases sampled too briefly to be
    sure of)."""
    phases, end = [], None
    for l in open(script_out):
        cols = l.rstrip('\n').split('\t')
        if cols[0] == 'phase':
            phases.append((cols[2], float(cols[3]) if len(cols) > 3 else 0.0))
        elif cols[0] == 'alternate done' and len(cols) > 1:
            end = float(cols[1])
    before = 0.0
    if sampler_err:
        m = re.search(r'the command used ([0-9.]+) s of CPU before sampling began',
                      open(sampler_err).read())
        if m:
            before = float(m.group(1))
    strict, loose = [], []
    for k, (name, start) in enumerate(phases):
        stop = phases[k + 1][1] if k + 1 < len(phases) else end
        left = (stop - max(start, before)) if stop is not None else 1.0
        if left >= 0.02:
            strict.append(name)
        if left >= 0.1:
            loose.append(name)
    return strict, loose


def main():
    prof = json.load(open(sys.argv[1]))
    want, loose = expected(sys.argv[2], sys.argv[3] if len(sys.argv) > 3 else None)
    frames = [f['name'] for f in prof['shared']['frames']]
    best = []
    for p in prof['profiles']:
        seq = []
        for st in p['samples']:
            names = [frames[i].split(' ')[0] for i in st]
            for n in ('phase_a', 'phase_b'):
                if n in names:
                    seq.append(n)
                    break
        if len(seq) > len(best):
            best = seq
    runs = []
    for n in best:
        if runs and runs[-1][0] == n:
            runs[-1][1] += 1
        else:
            runs.append([n, 1])
    turns = []
    for n, c in runs:
        if c < 3:
            continue
        if turns and turns[-1] == n:
            continue
        turns.append(n)
    ok = turns in (want, loose)
    print('%s speedscope order follows time: %d phases in the script after sampling began, %d turns in the samples (%s)'
          % ('PASS' if ok else 'FAIL', len(want), len(turns),
             ' '.join(t[-1] for t in turns)))
    return 0 if ok else 1


sys.exit(main())
