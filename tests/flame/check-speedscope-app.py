#!/usr/bin/env python3
"""Open profiles in speedscope itself (npm's speedscope package, its
release build) in a headless Chromium, as its own command line does:
the file handed over base64-encoded through #localProfilePath.  Each file
must import: speedscope offers its views (Time Order...) under the
profile's name (ours begins "pid N, ..." and lists the thread; folded
stacks are named after the file); an import that fails leaves
speedscope's start page or raises an alert.

    check-speedscope-app.py RELEASE_DIR CHROMIUM CHROMEDRIVER FILE...

Exit 0 when every file imports."""
import base64
import json
import os
import sys
import tempfile
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import webdriver as wd  # noqa: E402


def main():
    release, chromium, chromedriver = sys.argv[1:4]
    files = sys.argv[4:]
    ok = True
    tmp = tempfile.mkdtemp()
    with wd.Browser(chromium, chromedriver) as b:
        for i, f in enumerate(files):
            data = open(f, 'rb').read()
            js = os.path.join(tmp, 'load-%d.js' % i)
            with open(js, 'w') as out:
                out.write('speedscope.loadFileFromBase64(%s, %s)' % (
                    json.dumps(os.path.basename(f)),
                    json.dumps(base64.b64encode(data).decode())))
            b.get('about:blank')
            b.get(wd.file_url(os.path.join(release, 'index.html')) +
                  '#localProfilePath=' + js)
            title = text = ''
            for _ in range(50):
                time.sleep(0.2)
                try:
                    title = b.js('return document.title') or ''
                    text = b.js('return document.body.innerText') or ''
                except wd.WebDriverError as e:
                    title, text = '', 'alert or error: %s' % e
                    break
                if 'Time Order' in text:
                    break
            # Imported: the views are offered, under the profile's name
            # (ours, "pid N, ..."; folded stacks have none: the file's).
            json_file = f.endswith('.json')
            good = ('Time Order' in text and 'Drag and drop' not in text and
                    (title.startswith('pid ') and 'Thread ' in text
                     if json_file else
                     title.startswith(os.path.basename(f))))
            print('%s speedscope imports %s: title %r' % (
                'PASS' if good else 'FAIL', os.path.basename(f), title[:80]))
            if not good:
                print('    page: %r' % text[:200])
            ok &= good
    return 0 if ok else 1


sys.exit(main())
