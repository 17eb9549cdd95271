#!/usr/bin/env python3
"""Checks DIR/{cpu,wall}.json, speedscope's file format, against the truth
in DIR/{cpu,wall}.expect: the document's shape, the shared frames, one
sampled profile per thread with its name and unit, stacks root first,
and the weights of every stack and every function."""

import collections
import json
import os
import sys

from expect import Expect, inclusive, json_text

failures = 0


def check(ok, what):
    global failures
    print('%s %s' % ('PASS' if ok else 'FAIL', what))
    if not ok:
        failures += 1
    return ok


def check_file(d, mode):
    exp = Expect(os.path.join(d, mode + '.expect'))
    path = os.path.join(d, mode + '.json')
    with open(path, 'rb') as f:
        raw = f.read()
    try:
        # strict: raw control characters in strings are an error.
        doc = json.loads(raw.decode('utf-8'), strict=True)
    except (UnicodeDecodeError, ValueError) as e:
        check(False, '%s: parses as strict JSON in UTF-8: %s' % (mode, e))
        return
    check(True, '%s: parses as strict JSON in UTF-8' % mode)
    check(doc.get('$schema') ==
          'https://www.speedscope.app/file-format-schema.json',
          '%s: $schema' % mode)
    check(str(doc.get('exporter', '')).startswith('luacore'),
          '%s: exporter %r' % (mode, doc.get('exporter')))
    name = doc.get('name', '')
    check(all(s in name for s in ('pid 4242', 'samples taken', '10 lost',
                                  '99.5 Hz of 100 Hz')),
          '%s: name carries the run and its quality: %r' % (mode, name))
    check(doc.get('activeProfileIndex') == 0, '%s: activeProfileIndex'
          % mode)

    frames = doc['shared']['frames']
    check(all(isinstance(fr.get('name'), str) for fr in frames),
          '%s: every frame has a name' % mode)
    names = [fr['name'] for fr in frames]
    want = set(json_text(b) for _, _, st in exp.stacks for b in st)
    check(want <= set(names), '%s: all labels among the frames (missing %r)'
          % (mode, sorted(want - set(names))))
    byname = {fr['name']: fr for fr in frames}
    hot_a = byname.get('hot_a (bench.lua:10)', {})
    check(hot_a.get('file') == 'bench.lua' and hot_a.get('line') == 10,
          '%s: a Lua frame has file and line: %r' % (mode, hot_a))
    odd = [n for n in names if n.startswith('odd<&"\'>')]
    # The control character and the stray byte escaped by
    # lc_profile_label, quotes and markup kept for JSON to carry.
    check(odd == ['odd<&"\'>\\x01\\xff]]> (we"ird.lua:30)'],
          '%s: quotes, markup, a control character and a stray byte '
          'survive: %r' % (mode, odd))

    profiles = doc['profiles']
    tids = sorted(exp.threads)
    check(len(profiles) == len(tids), '%s: one profile per thread (%d)'
          % (mode, len(profiles)))
    unit = 'microseconds'
    seen = collections.Counter()
    for prof, tid in zip(profiles, tids):
        pname = 'Thread %d (%s)' % (tid, json_text(exp.threads[tid]))
        check(prof.get('type') == 'sampled' and prof.get('name') == pname
              and prof.get('unit') == unit,
              '%s: profile %r, sampled, unit %s' % (mode, pname, unit))
        samples, weights = prof['samples'], prof['weights']
        check(len(samples) == len(weights) and
              prof['startValue'] == 0 and
              prof['endValue'] == sum(weights),
              '%s: %s: samples and weights pair up, endValue is their sum'
              % (mode, pname))
        check(all(isinstance(i, int) and 0 <= i < len(frames)
                  for st in samples for i in st),
              '%s: %s: stacks index shared.frames' % (mode, pname))
        got = collections.Counter()
        for st, w in zip(samples, weights):
            got[tuple(names[i] for i in st)] += w
        want_st = collections.Counter()
        for t, w, st in exp.stacks:
            if t == tid:
                want_st[tuple(json_text(b) for b in st)] += w
        check(got == want_st,
              '%s: %s: stacks (root first) and weights as made%s'
              % (mode, pname, '' if got == want_st else
                 ': got %r, want %r' % (dict(got), dict(want_st))))
        for st, w in zip(samples, weights):
            for n in set(names[i] for i in st):
                seen[n] += w
    want_inc = inclusive(exp)
    check(dict(seen) == want_inc,
          '%s: weight per function%s' % (mode, '' if dict(seen) == want_inc
                                         else ': got %r, want %r'
                                         % (dict(seen), want_inc)))
    check(sum(sum(p['weights']) for p in profiles) == exp.total,
          '%s: total weight %d' % (mode, exp.total))


def main():
    for mode in ('cpu', 'wall'):
        check_file(sys.argv[1], mode)
    return 1 if failures else 0


if __name__ == '__main__':
    sys.exit(main())
