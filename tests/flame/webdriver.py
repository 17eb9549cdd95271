"""A W3C WebDriver client in the standard library: chromedriver's HTTP API
through urllib, driving a headless Chromium.  Only what the flame graph
test needs: navigate, run scripts, click elements, move the pointer,
press keys, answer prompts."""

import json
import os
import socket
import subprocess
import tempfile
import time
import urllib.error
import urllib.request

ELEMENT = 'element-6066-11e4-a52e-4f735466cecf'   # W3C's element key
CONTROL = '\ue009'
ESCAPE = '\ue00c'


class WebDriverError(Exception):
    pass


def _free_port():
    with socket.socket() as s:
        s.bind(('127.0.0.1', 0))
        return s.getsockname()[1]


class Browser:
    def __init__(self, chromium, chromedriver, timeout=20):
        self.port = _free_port()
        self.base = 'http://127.0.0.1:%d' % self.port
        self.log = tempfile.TemporaryFile()
        self.proc = subprocess.Popen(
            [chromedriver, '--port=%d' % self.port],
            stdout=self.log, stderr=subprocess.STDOUT)
        self.session = None
        deadline = time.time() + timeout
        while True:
            try:
                if self._call('GET', '/status').get('ready'):
                    break
            except (OSError, WebDriverError):
                pass
            if self.proc.poll() is not None or time.time() > deadline:
                self.close()
                raise WebDriverError('chromedriver did not start:\n' +
                                     self.driver_log())
            time.sleep(0.1)
        caps = {'capabilities': {'alwaysMatch': {
            'browserName': 'chrome',
            'goog:chromeOptions': {
                'binary': chromium,
                'args': ['--headless=new', '--no-sandbox', '--disable-gpu',
                         '--disable-dev-shm-usage', '--window-size=1400,900',
                         '--force-device-scale-factor=1'],
            },
            'unhandledPromptBehavior': 'ignore',
        }}}
        try:
            v = self._call('POST', '/session', caps)
        except WebDriverError:
            self.close()
            raise
        self.session = v['sessionId']

    def driver_log(self):
        self.log.seek(0)
        return self.log.read().decode('utf-8', 'replace')[-4000:]

    def _call(self, method, path, body=None):
        data = json.dumps(body).encode() if body is not None else None
        req = urllib.request.Request(self.base + path, data=data,
                                     method=method)
        req.add_header('Content-Type', 'application/json')
        try:
            with urllib.request.urlopen(req, timeout=30) as r:
                reply = json.loads(r.read().decode())
        except urllib.error.HTTPError as e:
            try:
                v = json.loads(e.read().decode()).get('value', {})
                msg = '%s: %s' % (v.get('error'), v.get('message'))
            except ValueError:
                msg = str(e)
            raise WebDriverError('%s %s: %s' % (method, path, msg))
        return reply.get('value')

    def _s(self, method, path, body=None):
        return self._call(method, '/session/%s%s' % (self.session, path),
                          body)

    def get(self, url):
        self._s('POST', '/url', {'url': url})

    def js(self, script, *args):
        """Runs script as a function body; arguments[i] are args, element
        references as returned by earlier calls included."""
        return self._s('POST', '/execute/sync',
                       {'script': script, 'args': list(args)})

    def click(self, el):
        self._s('POST', '/element/%s/click' % el[ELEMENT], {})

    def hover(self, el):
        """A real pointer move to the element's centre."""
        self._s('POST', '/actions', {'actions': [{
            'type': 'pointer', 'id': 'mouse',
            'parameters': {'pointerType': 'mouse'},
            'actions': [{'type': 'pointerMove', 'duration': 0,
                         'origin': el, 'x': 0, 'y': 0}]}]})

    def keys(self, *chord):
        """Presses the keys in order, releases them in reverse.  No
        release-all afterwards: a key may have opened a prompt, and
        WebDriver refuses everything but the prompt while it is open."""
        acts = [{'type': 'keyDown', 'value': k} for k in chord]
        acts += [{'type': 'keyUp', 'value': k} for k in reversed(chord)]
        self._s('POST', '/actions', {'actions': [{
            'type': 'key', 'id': 'keyboard', 'actions': acts}]})

    def prompt_text(self):
        """The open dialog's message, or None if there is none."""
        try:
            return self._s('GET', '/alert/text')
        except WebDriverError as e:
            if 'no such alert' in str(e):
                return None
            raise

    def answer_prompt(self, text):
        self._s('POST', '/alert/text', {'text': text})
        self._s('POST', '/alert/accept', {})

    def dismiss_prompt(self):
        self._s('POST', '/alert/dismiss', {})

    def close(self):
        if self.session:
            try:
                self._s('DELETE', '')
            except (OSError, WebDriverError):
                pass
            self.session = None
        if self.proc.poll() is None:
            self.proc.terminate()
            try:
                self.proc.wait(5)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()


def file_url(path):
    return 'file://' + urllib.request.pathname2url(os.path.abspath(path))
