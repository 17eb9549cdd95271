#!/usr/bin/env python3
"""The samples of a speedscope file luacore-sample wrote follow time: for
fixtures/scenarios/sample/alternate.lua, which runs phase_a and phase_b
in turns ("phase N NAME" lines in its output), the main thread's samples
that hold one of the two must come in the same turns: as many runs of
one name as the script had phases, in its order.  A run of fewer than 3
samples (a phase boundary caught twice) is not counted as a turn.

    check-order.py PROFILE.json SCRIPT_OUTPUT"""
import json
import sys


def main():
    prof = json.load(open(sys.argv[1]))
    want = [l.split('\t')[2].strip() for l in open(sys.argv[2])
            if l.startswith('phase\t')]
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
    ok = turns == want
    print('%s speedscope order follows time: %d phases in the script, %d turns in the samples (%s)'
          % ('PASS' if ok else 'FAIL', len(want), len(turns),
             ' '.join(t[-1] for t in turns)))
    return 0 if ok else 1


sys.exit(main())
