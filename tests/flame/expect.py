"""The truth that make-flame writes next to its files (DIR/MODE.expect).

Format (see tests/flame/make-flame.c): "mode", "total", then "thread TID
HEX-NAME" and "stack TID WEIGHT HEX;HEX;..." lines, labels root first,
hex-encoded so that any byte survives.
"""

import re


class Expect:
    def __init__(self, path):
        self.mode = None
        self.total = None
        self.threads = {}       # tid -> name (bytes)
        self.stacks = []        # (tid, weight, [label bytes, root first])
        with open(path) as f:
            for line in f:
                w = line.split()
                if w[0] == 'mode':
                    self.mode = w[1]
                elif w[0] == 'total':
                    self.total = int(w[1])
                elif w[0] == 'thread':
                    self.threads[int(w[1])] = bytes.fromhex(w[2])
                elif w[0] == 'stack':
                    self.stacks.append((int(w[1]), int(w[2]),
                                        [bytes.fromhex(h)
                                         for h in w[3].split(';')]))
                else:
                    raise ValueError('%s: bad line %r' % (path, line))
        assert self.mode in ('cpu', 'wall') and self.total is not None
        assert sum(s[1] for s in self.stacks) == self.total

    @property
    def wall(self):
        return self.mode == 'wall'


def json_text(b):
    """A label as JSON readers see it: ill-formed UTF-8 as U+FFFD."""
    return b.decode('utf-8', 'replace')


_NOT_XML = re.compile('[\x00-\x08\x0b\x0c\x0e-\x1f\ufffe\uffff]')


def svg_text(b):
    """A label as the SVG carries it: what XML 1.0 cannot hold as U+FFFD,
    tabs and line ends as spaces."""
    s = _NOT_XML.sub('\ufffd', json_text(b))
    return re.sub('[\t\n\r]', ' ', s)


def inclusive(exp, text=json_text):
    """label -> weight of the samples with that label anywhere on their
    stack (a recursive function counted once per sample)."""
    out = {}
    for _, w, labels in exp.stacks:
        for lab in set(text(b) for b in labels):
            out[lab] = out.get(lab, 0) + w
    return out


def prefix_tree(exp):
    """The flame graph's nodes: {(label, ...): weight}, root () included,
    stacks merged by their SVG labels."""
    tree = {(): 0}
    for _, w, labels in exp.stacks:
        path = ()
        tree[path] += w
        for b in labels:
            path += (svg_text(b),)
            tree[path] = tree.get(path, 0) + w
    return tree
