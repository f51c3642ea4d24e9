"""A headless Chromium driven over the DevTools protocol on a pipe (``--remote-debugging-pipe``: the
browser reads commands on fd 3 and writes replies on fd 4, NUL-separated JSON), so tests can load a page,
evaluate JavaScript in it while it lives, and collect its console errors, with no websocket library.

Imported directly by the tests (like agentkit.py). ``BROWSER`` is None where no Chromium is installed."""

from __future__ import annotations

import json
import os
import select
import shutil
import subprocess
import time
from typing import Any

BROWSER = shutil.which("chromium-headless-shell") or shutil.which("chromium")


class Browser:
    def __init__(self, width: int = 1200, height: int = 900):
        assert BROWSER is not None
        to_child_r, self._to_child = os.pipe()
        self._from_child, from_child_w = os.pipe()
        # fds 3 and 4 in the child, set in the child; close_fds=False keeps them (Python's own fds are
        # not inheritable, so nothing else leaks); 200/201 first, so that a pipe end that is itself fd 3
        # or 4 in this process is not overwritten by the other dup2
        hi_r, hi_w = os.dup2(to_child_r, 200, inheritable=False), os.dup2(from_child_w, 201, inheritable=False)

        def fds() -> None:
            os.dup2(200, 3)
            os.dup2(201, 4)

        self.proc = subprocess.Popen(
            [BROWSER, "--headless", "--no-sandbox", "--disable-gpu", "--remote-debugging-pipe", "--no-first-run",
             f"--window-size={width},{height}", "about:blank"],
            close_fds=False, preexec_fn=fds, stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL)
        for fd in (to_child_r, from_child_w, hi_r, hi_w):
            os.close(fd)
        self._id = 0
        self._buf = b""
        self.events: list[dict[str, Any]] = []
        target = self.call("Target.createTarget", url="about:blank")["targetId"]
        self.session = self.call("Target.attachToTarget", targetId=target, flatten=True)["sessionId"]
        for domain in ("Runtime.enable", "Log.enable", "Page.enable"):
            self.call(domain, session=self.session)

    def call(self, method: str, session: str | None = None, timeout: float = 60, **params: Any) -> Any:
        self._id += 1
        msg: dict[str, Any] = {"id": self._id, "method": method, "params": params}
        if session:
            msg["sessionId"] = session
        os.write(self._to_child, json.dumps(msg).encode() + b"\0")
        deadline = time.monotonic() + timeout
        while True:
            while b"\0" in self._buf:
                raw, self._buf = self._buf.split(b"\0", 1)
                reply = json.loads(raw)
                if reply.get("id") == self._id:
                    if "error" in reply:
                        raise RuntimeError(f"{method}: {reply['error']}")
                    return reply.get("result", {})
                if "method" in reply:
                    self.events.append(reply)
            left = deadline - time.monotonic()
            if left <= 0 or not select.select([self._from_child], [], [], left)[0]:
                raise TimeoutError(f"no reply to {method} in {timeout} s")
            chunk = os.read(self._from_child, 1 << 20)
            if not chunk:
                raise RuntimeError("the browser closed the pipe")
            self._buf += chunk

    def goto(self, url: str) -> None:
        self.call("Page.navigate", session=self.session, url=url)

    def js(self, expression: str, timeout: float = 60) -> Any:
        """The value of ``expression`` in the page (JSON-able values; promises awaited)."""
        res = self.call("Runtime.evaluate", session=self.session, timeout=timeout, expression=expression,
                        returnByValue=True, awaitPromise=True)
        if "exceptionDetails" in res:
            raise RuntimeError(res["exceptionDetails"].get("exception", {}).get("description", str(res)))
        return res["result"].get("value")

    def wait_for(self, expression: str, timeout: float = 60, every: float = 0.2) -> Any:
        """Poll ``expression`` until it is truthy; its value. An exception in the page (the document not
        there yet, during a navigation) counts as not yet; the last one is named on timeout."""
        deadline = time.monotonic() + timeout
        last: Exception | None = None
        while True:
            try:
                value = self.js(expression)
            except RuntimeError as exc:
                value, last = None, exc
            if value:
                return value
            if time.monotonic() > deadline:
                raise TimeoutError(f"{expression!r} still falsy after {timeout} s (last error: {last})")
            time.sleep(every)

    def console_errors(self) -> list[str]:
        """Uncaught exceptions, console.error calls and error log entries (failed loads included) so far."""
        self.js("0")  # drain pending events
        out = []
        for ev in self.events:
            p = ev.get("params", {})
            if ev["method"] == "Runtime.exceptionThrown":
                out.append(p["exceptionDetails"].get("exception", {}).get("description") or str(p))
            elif ev["method"] == "Runtime.consoleAPICalled" and p.get("type") in ("error", "assert"):
                out.append(" ".join(str(a.get("value", a.get("description"))) for a in p.get("args", [])))
            elif ev["method"] == "Log.entryAdded" and p["entry"].get("level") == "error":
                out.append(f"{p['entry'].get('text')} {p['entry'].get('url', '')}")
        return out

    def close(self) -> None:
        try:
            self.call("Browser.close", timeout=5)
        except (RuntimeError, TimeoutError, OSError):
            pass
        try:
            self.proc.wait(timeout=10)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait()
        os.close(self._to_child)
        os.close(self._from_child)

    def __enter__(self) -> "Browser":
        return self

    def __exit__(self, *exc: Any) -> None:
        self.close()
