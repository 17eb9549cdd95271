#!/usr/bin/env python3
"""Checks DIR/{cpu,wall}.svg against the truth in DIR/{cpu,wall}.expect.

First as a file: well-formed XML, nothing external, the flame graph's
nodes (stacks merged by prefix, siblings in label order, narrow frames
left out) with their weights, titles and geometry.  Then in a real
browser, headless Chromium through chromedriver: the names are drawn,
hovering fills the details line, clicking zooms, "Reset zoom" restores
the file's layout, and searching (the Search control and Ctrl-F)
highlights the matching frames and reports their share.

    check-svg.py DIR CHROMIUM CHROMEDRIVER
"""

import os
import re
import signal
import sys
import xml.etree.ElementTree as ET

from expect import Expect, prefix_tree, svg_text
import webdriver

SVG = '{http://www.w3.org/2000/svg}'
LC = '{urn:luacore:flame}'
XPAD, FW = 10, 1180             # the frame area, as the writer lays it out
CHAR_W = 7.08                   # the writer's estimate of a character
MAGENTA = 'rgb(230, 0, 230)'

failures = 0


def check(ok, what, detail=''):
    global failures
    print('%s %s%s' % ('PASS' if ok else 'FAIL', what,
                       '' if ok or not detail else ': ' + detail))
    if not ok:
        failures += 1
    return ok


def fit(label, w):
    """The writer's rule for a frame's text."""
    n = int((w - 6) // CHAR_W) if w > 6 else 0
    if n < 3:
        return ''
    if len(label) <= n:
        return label
    return label[:n - 2] + '..'


def title_of(exp, label, w):
    amount = '%s us' % format(w, ',')
    return '%s (%s, %.2f%%)' % (label, amount, 100.0 * w / exp.total)


class Frame:
    def __init__(self, i, g):
        self.i = i
        self.x = int(g.get(LC + 'x'))
        self.w = int(g.get(LC + 'w'))
        self.d = int(g.get(LC + 'd'))
        self.title = g.find(SVG + 'title').text
        self.label = self.title[:self.title.rindex(' (')]
        r = g.find(SVG + 'rect')
        self.rx, self.rw = float(r.get('x')), float(r.get('width'))
        self.ry = float(r.get('y'))
        self.text = g.find(SVG + 'text').text or ''
        self.path = None


def parse(exp, path):
    """The file's frames, each with its path of labels from the root."""
    with open(path, 'rb') as f:
        raw = f.read()
    try:
        root = ET.fromstring(raw)
    except ET.ParseError as e:
        check(False, '%s: well-formed XML' % path, str(e))
        return None, None
    check(root.tag == SVG + 'svg', '%s: well-formed XML, an <svg>' % path)
    text = raw.decode('utf-8')
    outside = [m for m in re.findall(r'href|url\(|@import|src=|https?://[^"]*',
                                     text)
               if m != 'http://www.w3.org/2000/svg']
    check(not outside, '%s: no external resources' % path, repr(outside))
    gs = root.find(".//*[@id='frames']")
    frames = [Frame(i, g) for i, g in enumerate(gs.findall(SVG + 'g'))]
    # A frame's parent is the frame one level down that spans it.
    for f in sorted(frames, key=lambda f: f.d):
        if f.d == 0:
            f.path = ()
            continue
        ps = [p for p in frames if p.d == f.d - 1 and
              p.x <= f.x and f.x + f.w <= p.x + p.w]
        f.path = ps[0].path + (f.label,) if len(ps) == 1 else None
    return root, frames


def check_static(exp, path, title):
    root, frames = parse(exp, path)
    if root is None:
        return None
    ids = {e.get('id'): e for e in root.iter() if e.get('id')}
    check(root.find(SVG + 'title').text == title and
          ids['title'].text == title, '%s: title %r' % (path, title))
    sub, qual = ids['subtitle'].text, ids['quality'].text
    check('pid 4242 (lua bench.lua)' in sub and
          ('wall-clock time (us)' if exp.wall else 'CPU time (us)') in sub,
          '%s: subtitle says what was measured' % path, sub)
    check(all(s in qual for s in ('1,000 samples taken', '10 lost',
                                  '99.5 Hz of 100 Hz')),
          '%s: quality line: samples taken and lost, rate' % path, qual)
    check(len(ids['legend'].findall(SVG + 'text')) == 5,
          '%s: a legend of five kinds' % path)

    tree = prefix_tree(exp)
    want = {p: w for p, w in tree.items() if w * 1000 >= exp.total}
    got = {f.path: f.w for f in frames}
    check(None not in got and got == want,
          '%s: frames are the stacks merged by prefix, with their weights'
          % path, 'got %r, want %r' % (got, want))
    gone = len(tree) - len(want)
    note = '%d frame%s under 0.1%% not drawn' % (gone, '' if gone == 1
                                                  else 's')
    check((note in sub) == (gone > 0),
          '%s: subtitle tells of %d omitted frame(s)' % (path, gone), sub)
    byparent = {}
    for f in frames:
        if f.path:
            byparent.setdefault(f.path[:-1], []).append(f)
    order_ok = all(
        [f.label.encode() for f in sorted(kids, key=lambda f: f.x)] ==
        sorted(f.label.encode() for f in kids) and
        all(a.x + a.w <= b.x for a, b in
            zip(sorted(kids, key=lambda f: f.x),
                sorted(kids, key=lambda f: f.x)[1:]))
        for kids in byparent.values())
    check(order_ok, '%s: siblings side by side in label order' % path)
    geo = [f for f in frames
           if abs(f.rx - (XPAD + f.x * FW / exp.total)) > 0.006 or
           abs(f.rw - f.w * FW / exp.total) > 0.006]
    check(not geo, '%s: widths proportional to weight' % path,
          repr([f.title for f in geo]))
    maxd = max(f.d for f in frames)
    check(all(f.ry == frames[0].ry - 16 * f.d for f in frames) and
          frames[0].d == 0 and maxd > 0,
          '%s: the root at the bottom, one row per depth' % path)
    bad = [f.title for f in frames if f.title != title_of(exp, f.label, f.w)]
    check(not bad, '%s: titles say "label (weight, percent)"' % path,
          repr(bad))
    bad = [(f.text, f.label) for f in frames if f.text != fit(f.label, f.rw)]
    check(not bad, '%s: texts are the labels, cut to fit' % path, repr(bad))
    return frames


SNAPSHOT = '''
return Array.from(document.querySelectorAll('#frames > g')).map(function (g) {
    var r = g.querySelector('rect'), t = g.querySelector('text');
    var b = t.getBBox(), c = t.getBoundingClientRect();
    return { display: getComputedStyle(g).display,
             x: r.getAttribute('x'), width: r.getAttribute('width'),
             cls: g.getAttribute('class') || '',
             fill: getComputedStyle(r).fill,
             text: t.textContent, tx: t.getAttribute('x'),
             bboxw: b.width, clientw: c.width,
             rectw: r.getBoundingClientRect().width };
});'''

FRAME = "return document.querySelectorAll('#frames > g')[arguments[0]];"
TEXT = "return document.getElementById(arguments[0]).textContent;"
SHOWN = ("return getComputedStyle(document.getElementById(arguments[0]))"
         ".display !== 'none';")


def rgb(s):
    return tuple(int(v) for v in re.findall(r'\d+', s)[:3])


def by_path(frames, *labels):
    for f in frames:
        if f.path == tuple(labels):
            return f
    raise KeyError(labels)


def check_browser_cpu(b, exp, path, frames):
    b.get(webdriver.file_url(path))
    ok = b.js("return document.documentElement.localName === 'svg' && "
              "document.querySelectorAll('#frames > g').length")
    if not check(ok == len(frames), 'browser: %s loads, %d frames'
                 % (path, len(frames)), repr(ok)):
        return
    snap0 = b.js(SNAPSHOT)

    main = ('main',)
    vm = main + ('luaV_execute',)
    run = vm + ('run (bench.lua:1)',)
    named = [main, vm, run, run + ('hot_a (bench.lua:10)',),
             run + ('hot_b (bench.lua:20)',), run + ('string.rep [C]',),
             run + ('string.rep [C]', 'memcpy'), run + ('[GC]',)]
    for p in named:
        f = by_path(frames, *p)
        s = snap0[f.i]
        check(s['text'] == f.label and s['bboxw'] > 0 and
              s['clientw'] > 0 and s['bboxw'] <= s['rectw'] - 2,
              'browser: %r drawn, %.1f px of text in a %.1f px frame'
              % (f.label, s['bboxw'], s['rectw']), repr(s))
    fills = {p[-1]: rgb(snap0[by_path(frames, *p).i]['fill']) for p in named}
    lua, cfun = fills['hot_a (bench.lua:10)'], fills['string.rep [C]']
    nat, gc = fills['luaV_execute'], fills['[GC]']
    check(lua[1] > lua[0] and lua[1] > lua[2] and
          cfun[2] > cfun[0] and cfun[2] > cfun[1] and
          nat[0] > nat[1] and nat[0] > nat[2] and
          gc[2] > gc[1] and gc[0] > gc[1],
          'browser: colours by kind (Lua green, C blue, native red, '
          'GC purple)', repr(fills))

    # Hover: a real pointer move over a frame.
    hint = b.js(TEXT, 'details')
    hot_b = by_path(frames, *run, 'hot_b (bench.lua:20)')
    b.hover(b.js(FRAME, hot_b.i))
    got = b.js(TEXT, 'details')
    check(got == hot_b.title and got != hint,
          'browser: hovering hot_b shows %r' % got)
    b.hover(b.js(FRAME, by_path(frames, *main).i))
    got = b.js(TEXT, 'details')
    check(got == by_path(frames, *main).title,
          'browser: hovering main shows %r' % got)

    # Zoom into run.
    z = by_path(frames, *run)
    check(not b.js(SHOWN, 'unzoom'), 'browser: no "Reset zoom" unzoomed')
    b.click(b.js(FRAME, z.i))
    snap = b.js(SNAPSHOT)
    scale = FW / z.w
    bad = []
    for f in frames:
        s = snap[f.i]
        if f.path[:len(z.path)] == z.path:
            x, w, cls = XPAD + (f.x - z.x) * scale, f.w * scale, ''
        elif z.path[:len(f.path)] == f.path:
            x, w, cls = XPAD, FW, 'parent'
        else:
            if s['display'] != 'none':
                bad.append(('shown', f.title))
            continue
        if (s['display'] == 'none' or
                abs(float(s['x']) - x) > 0.006 or
                abs(float(s['width']) - w) > 0.006 or
                (cls == 'parent') != ('parent' in s['cls'].split()) or
                s['text'] != fit(f.label, float(s['width'])) or
                abs(float(s['tx']) - float(s['x']) - 3) > 0.006):
            bad.append((f.title, s, x, w))
    zs = snap[z.i]
    check(float(zs['x']) == XPAD and float(zs['width']) == FW and
          zs['rectw'] > 1000,
          'browser: clicked run: it spans the full width (%s px)'
          % zs['width'])
    check(not bad, 'browser: zoomed: subtree re-laid out %.2fx, ancestors '
          'full width, the rest hidden' % (exp.total / z.w), repr(bad))
    hot_a = by_path(frames, *run, 'hot_a (bench.lua:10)')
    check(float(snap[hot_a.i]['width']) > float(snap0[hot_a.i]['width']),
          'browser: hot_a grew from %s to %s px'
          % (snap0[hot_a.i]['width'], snap[hot_a.i]['width']))
    check(b.js(SHOWN, 'unzoom'), 'browser: "Reset zoom" shown when zoomed')

    # Reset.
    b.click(b.js("return document.getElementById('unzoom');"))
    snap = b.js(SNAPSHOT)
    check(snap == snap0, 'browser: Reset zoom restores the layout',
          repr([(a, c) for a, c in zip(snap, snap0) if a != c][:3]))
    check(not b.js(SHOWN, 'unzoom'), 'browser: "Reset zoom" hidden again')

    # Search with the Search control (a prompt) ...
    def searched(term, how):
        try:
            rx = re.compile(term)
            hit = lambda s: rx.search(s) is not None
        except re.error:
            hit = lambda s: term in s
        # Share: stacks with a match anywhere, each counted once.
        share = sum(w for _, w, st in exp.stacks
                    if any(hit(svg_text(l)) for l in st)) / exp.total
        want = {f.i for f in frames if f.d > 0 and hit(f.label)}
        snap = b.js(SNAPSHOT)
        got = {i for i, s in enumerate(snap) if 'match' in s['cls'].split()}
        check(got == want and want and
              all(snap[i]['fill'] == MAGENTA for i in want) and
              all(snap[i]['fill'] == snap0[i]['fill']
                  for i in range(len(snap)) if i not in want),
              'browser: %s %r highlights %d frames' % (how, term, len(want)),
              'got %r, want %r' % (sorted(got), sorted(want)))
        text = b.js(TEXT, 'matched')
        n = len(want)
        wtext = 'Matched: %.2f%% (%d %s)' % (100 * share, n,
                                             'frame' if n == 1 else 'frames')
        check(text == wtext, 'browser: %s %r reports %r' % (how, term, text),
              'want %r' % wtext)

    b.click(b.js("return document.getElementById('search');"))
    msg = b.prompt_text()
    check(msg is not None and 'Search' in msg,
          'browser: Search opens a prompt: %r' % msg)
    if msg is not None:
        b.answer_prompt('hot_')
        searched('hot_', 'Search')

    # ... and with Ctrl-F; not a regular expression: a substring.
    b.keys(webdriver.CONTROL, 'f')
    msg = b.prompt_text()
    check(msg is not None, 'browser: Ctrl-F opens the search prompt')
    if msg is not None:
        b.answer_prompt('[GC')
        searched('[GC', 'Ctrl-F')

    b.keys(webdriver.ESCAPE)
    snap = b.js(SNAPSHOT)
    check(snap == snap0 and b.js(TEXT, 'matched') == '',
          'browser: Escape clears the search')


def check_browser_wall(b, exp, path, frames):
    b.get(webdriver.file_url(path))
    snap = b.js(SNAPSHOT)
    check(len(snap) == len(frames), 'browser: %s loads, %d frames'
          % (path, len(frames)))
    idle = by_path(frames, 'main', '[idle]')
    s = snap[idle.i]
    c = rgb(s['fill'])
    check(s['text'] == '[idle]' and s['bboxw'] > 0 and c[0] == c[1] == c[2],
          'browser: [idle] drawn, grey', repr(s))
    check(idle.title == title_of(exp, '[idle]', 3000),
          'browser: wall-clock weights are microseconds: %r' % idle.title)


def check_browser_sampled(b, path):
    """A flame graph luacore-sample wrote of split.lua (60/30/10 over
    hot_a, hot_b, hot_c): the names drawn, hover, click-zoom, search."""
    b.get(webdriver.file_url(path))
    snap0 = b.js(SNAPSHOT)
    if not check(snap0, 'browser: sampled %s loads, %d frames'
                 % (path, len(snap0) if snap0 else 0)):
        return
    titles = b.js("return Array.from(document.querySelectorAll("
                  "'#frames > g')).map(function (g) { return "
                  "g.querySelector('title').textContent; });")
    widths = {}
    for name in ('hot_a', 'hot_b', 'hot_c'):
        idx = [i for i, t in enumerate(titles) if t.startswith(name + ' (')]
        drawn = [i for i in idx if snap0[i]['text'].startswith(name) and
                 snap0[i]['bboxw'] > 0]
        widths[name] = sum(float(snap0[i]['width']) for i in idx)
        check(drawn, 'browser: sampled: %s drawn with its name' % name,
              repr([snap0[i] for i in idx]))
    check(widths['hot_a'] > widths['hot_b'] > widths['hot_c'] > 0,
          'browser: sampled: widths hot_a > hot_b > hot_c (%.0f, %.0f, '
          '%.0f px)' % (widths['hot_a'], widths['hot_b'], widths['hot_c']))
    hot_a = max((i for i, t in enumerate(titles) if t.startswith('hot_a (')),
                key=lambda i: float(snap0[i]['width']))
    b.hover(b.js(FRAME, hot_a))
    got = b.js(TEXT, 'details')
    check(got == titles[hot_a] and ' us, ' in got,
          'browser: sampled: hovering hot_a shows %r' % got)
    b.click(b.js(FRAME, hot_a))
    snap = b.js(SNAPSHOT)
    check(float(snap[hot_a]['width']) == FW and b.js(SHOWN, 'unzoom'),
          'browser: sampled: clicking hot_a zooms it to the full width')
    b.click(b.js("return document.getElementById('unzoom');"))
    b.keys(webdriver.CONTROL, 'f')
    if check(b.prompt_text() is not None,
             'browser: sampled: Ctrl-F opens the search prompt'):
        b.answer_prompt('hot_c')
        text = b.js(TEXT, 'matched')
        m = re.match(r'Matched: ([0-9.]+)%', text or '')
        check(m and 2 < float(m.group(1)) < 25,
              'browser: sampled: searching hot_c reports %r' % text)


def main():
    # A timeout's SIGTERM still closes the browser (the with below).
    signal.signal(signal.SIGTERM, lambda *_: sys.exit('killed'))
    d, chromium, chromedriver = sys.argv[1:4]
    sampled = sys.argv[4] if len(sys.argv) > 4 else None
    cpu = Expect(os.path.join(d, 'cpu.expect'))
    wall = Expect(os.path.join(d, 'wall.expect'))
    cpu_svg, wall_svg = os.path.join(d, 'cpu.svg'), os.path.join(d, 'wall.svg')
    fc = check_static(cpu, cpu_svg, 'bench.lua <CPU> & "friends"')
    fw = check_static(wall, wall_svg, 'bench.lua, wall clock')
    if fc is None or fw is None:
        return 1
    try:
        with webdriver.Browser(chromium, chromedriver) as b:
            check_browser_cpu(b, cpu, cpu_svg, fc)
            check_browser_wall(b, wall, wall_svg, fw)
            if sampled:
                check_browser_sampled(b, sampled)
    except webdriver.WebDriverError as e:
        check(False, 'browser', str(e))
    return 1 if failures else 0


if __name__ == '__main__':
    sys.exit(main())
