"""Drive headless Chromium through the DevTools protocol on a pipe
(--remote-debugging-pipe: JSON messages ended by NUL, read from fd 3 and
written to fd 4), so that a test can scroll, hover and click on a page
and read what its script did.

    with Page("file:///tmp/r.html") as p:
        p.wheel(600, 400, -300)
        p.eval("document.getElementById('x').dataset.view")
"""
import json
import os
import subprocess
import time


class Page:
    def __init__(self, url, width=1280, height=1600):
        self.url, self.width, self.height = url, width, height

    def __enter__(self):
        to_chrome_r, self.w = os.pipe()
        self.r, from_chrome_w = os.pipe()

        def fds():
            # copies first: a pipe may already be fd 3 or 4, and close
            # on exec (dup2 onto itself would keep that flag)
            r, w = os.dup(to_chrome_r), os.dup(from_chrome_w)
            os.dup2(r, 3)
            os.dup2(w, 4)

        self.proc = subprocess.Popen(
            ["chromium", "--headless", "--no-sandbox", "--disable-gpu",
             "--remote-debugging-pipe", "--hide-scrollbars",
             "--window-size=%d,%d" % (self.width, self.height),
             "about:blank"],
            # fds 3 and 4 are made after close_fds would run: kept open
            close_fds=False, preexec_fn=fds,
            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        os.close(to_chrome_r)
        os.close(from_chrome_w)
        self.buf, self.id, self.session = b"", 0, None
        targets = self.call("Target.getTargets")["targetInfos"]
        page = next(t for t in targets if t["type"] == "page")
        self.session = self.call("Target.attachToTarget",
                                 targetId=page["targetId"],
                                 flatten=True)["sessionId"]
        self.call("Page.enable")
        self.call("Page.navigate", url=self.url)
        # loaded, and its script run
        for _ in range(200):
            if self.eval("document.readyState") == "complete":
                break
            time.sleep(0.05)
        return self

    def __exit__(self, *a):
        self.proc.kill()
        self.proc.wait()
        os.close(self.w)
        os.close(self.r)

    def call(self, method, **params):
        self.id += 1
        msg = {"id": self.id, "method": method, "params": params}
        if self.session and not method.startswith("Target."):
            msg["sessionId"] = self.session
        os.write(self.w, json.dumps(msg).encode() + b"\0")
        while True:
            while b"\0" not in self.buf:
                chunk = os.read(self.r, 1 << 16)
                if not chunk:
                    raise RuntimeError("chromium closed the pipe")
                self.buf += chunk
            line, self.buf = self.buf.split(b"\0", 1)
            reply = json.loads(line)
            if reply.get("id") == self.id:
                if "error" in reply:
                    raise RuntimeError("%s: %s" % (method, reply["error"]))
                return reply["result"]

    def eval(self, expr):
        r = self.call("Runtime.evaluate", expression=expr,
                      returnByValue=True)
        if "exceptionDetails" in r:
            raise RuntimeError("%s: %s" % (expr, r["exceptionDetails"]))
        return r["result"].get("value")

    def mouse(self, kind, x, y, **kw):
        self.call("Input.dispatchMouseEvent", type=kind, x=x, y=y, **kw)

    def wheel(self, x, y, dy):
        self.mouse("mouseWheel", x, y, deltaX=0, deltaY=dy)

    def box(self, elem_id):
        """The element's box in the viewport, after scrolling it there."""
        return self.eval(
            "(function(){var e=document.getElementById(%s);"
            "e.scrollIntoView();var r=e.getBoundingClientRect();"
            "return [r.left,r.top,r.width,r.height];})()"
            % json.dumps(elem_id))
