"""Headless Chromium (Debian's `chromium`) driven over the DevTools protocol on a pipe
(--remote-debugging-pipe: commands on fd 3, replies on fd 4, each a JSON text ended by
NUL), so no websocket client is needed. One page, its credentials set as an extra
header on every request it makes (fetch and EventSource alike).

    with Browser(scratch) as br:
        page = br.page(authorization="Basic ...")
        page.goto("http://127.0.0.1:8080/")
        page.wait("document.body.dataset.rendered === '1'", 10)
        n = page.eval("document.querySelectorAll('[data-guid]').length")
        page.screenshot("page.png")
"""
import base64
import json
import os
import select
import shutil
import signal
import subprocess
import time


class CdpError(Exception):
    pass


def chromium():
    for name in ("chromium", "chromium-browser"):
        path = shutil.which(name)
        if path:
            return path
    raise CdpError("no chromium on PATH (Debian's package is `chromium`)")


class Browser:
    def __init__(self, scratch, width=1400, height=900):
        self.scratch, self.width, self.height = scratch, width, height
        self.proc = None
        self.next_id = 0
        self.buf = b""
        self.events = []

    def __enter__(self):
        profile = os.path.join(self.scratch, "chromium-profile")
        shutil.rmtree(profile, ignore_errors=True)
        os.makedirs(profile)
        to_r, to_w = os.pipe()      # our commands: chromium reads fd 3
        from_r, from_w = os.pipe()  # its answers: chromium writes fd 4

        # In the child, before exec: the pipe's ends at 3 and 4 (dup2 makes them
        # inheritable; every other descriptor of ours is not, so close_fds is moot).
        def child_fds():
            os.dup2(to_r, 3)
            os.dup2(from_w, 4)

        cmd = [chromium(), "--headless=new", "--no-sandbox", "--disable-gpu", "--disable-dev-shm-usage",
               "--no-first-run", "--no-default-browser-check", "--disable-extensions",
               "--disable-background-networking", "--disable-component-update", "--disable-sync",
               "--remote-debugging-pipe", "--user-data-dir=" + profile,
               "--window-size=%d,%d" % (self.width, self.height), "about:blank"]
        self.log = open(os.path.join(self.scratch, "chromium.log"), "w")
        self.proc = subprocess.Popen(cmd, stdin=subprocess.DEVNULL, stdout=self.log, stderr=subprocess.STDOUT,
                                     preexec_fn=child_fds, close_fds=False, start_new_session=True)
        os.close(to_r)
        os.close(from_w)
        self.w, self.r = to_w, from_r
        return self

    def __exit__(self, *exc):
        try:
            if self.proc and self.proc.poll() is None:
                try:
                    self.call("Browser.close", timeout=5)
                except (CdpError, OSError):
                    pass
                try:
                    self.proc.wait(timeout=5)
                except subprocess.TimeoutExpired:
                    os.killpg(self.proc.pid, signal.SIGKILL)
                    self.proc.wait(timeout=5)
        finally:
            for fd in (getattr(self, "w", None), getattr(self, "r", None)):
                if fd is not None:
                    try:
                        os.close(fd)
                    except OSError:
                        pass
            self.log.close()
        return False

    def _read_message(self, deadline):
        while b"\0" not in self.buf:
            left = deadline - time.time()
            if left <= 0:
                raise CdpError("no answer from chromium in time")
            ready, _, _ = select.select([self.r], [], [], left)
            if not ready:
                continue
            chunk = os.read(self.r, 1 << 20)
            if not chunk:
                raise CdpError("chromium closed its pipe (exit %s)" % self.proc.poll())
            self.buf += chunk
        msg, self.buf = self.buf.split(b"\0", 1)
        return json.loads(msg)

    def call(self, method, params=None, session=None, timeout=30):
        self.next_id += 1
        mid = self.next_id
        msg = {"id": mid, "method": method, "params": params or {}}
        if session:
            msg["sessionId"] = session
        os.write(self.w, json.dumps(msg).encode() + b"\0")
        deadline = time.time() + timeout
        while True:
            m = self._read_message(deadline)
            if m.get("id") == mid:
                if "error" in m:
                    raise CdpError("%s: %s" % (method, m["error"]))
                return m.get("result", {})
            self.events.append(m)
            del self.events[:-2000]

    def page(self, authorization=None):
        targets = self.call("Target.getTargets")["targetInfos"]
        pages = [t for t in targets if t["type"] == "page"]
        tid = pages[0]["targetId"] if pages else self.call("Target.createTarget", {"url": "about:blank"})["targetId"]
        session = self.call("Target.attachToTarget", {"targetId": tid, "flatten": True})["sessionId"]
        p = Page(self, session)
        p.call("Page.enable")
        p.call("Runtime.enable")
        p.call("Network.enable")
        if authorization:
            p.call("Network.setExtraHTTPHeaders", {"headers": {"Authorization": authorization}})
        return p


class Page:
    def __init__(self, browser, session):
        self.b, self.session = browser, session

    def call(self, method, params=None, timeout=30):
        return self.b.call(method, params, self.session, timeout)

    def goto(self, url):
        r = self.call("Page.navigate", {"url": url})
        if r.get("errorText"):
            raise CdpError("navigate %s: %s" % (url, r["errorText"]))

    def eval(self, expr, timeout=30):
        r = self.call("Runtime.evaluate", {"expression": expr, "returnByValue": True, "awaitPromise": True},
                      timeout)
        if "exceptionDetails" in r:
            raise CdpError("%s: %s" % (expr, r["exceptionDetails"].get("exception", {}).get("description",
                                                                                        r["exceptionDetails"])))
        return r["result"].get("value")

    def wait(self, expr, timeout, step=0.05):
        """Until `expr` is truthy in the page; its value."""
        deadline = time.time() + timeout
        while True:
            v = self.eval(expr)
            if v:
                return v
            if time.time() >= deadline:
                raise CdpError("not true after %d s: %s" % (timeout, expr))
            time.sleep(step)

    def console_errors(self):
        out = []
        for m in self.b.events:
            if m.get("method") == "Runtime.exceptionThrown":
                out.append(m["params"]["exceptionDetails"].get("exception", {}).get("description", "?"))
            if m.get("method") == "Runtime.consoleAPICalled" and m["params"]["type"] == "error":
                out.append(" ".join(str(a.get("value", a.get("description", ""))) for a in m["params"]["args"]))
        return out

    def screenshot(self, path):
        data = self.call("Page.captureScreenshot", {"format": "png"})["data"]
        with open(path, "wb") as f:
            f.write(base64.b64decode(data))
