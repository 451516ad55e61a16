"""A tiny headless-Chromium driver for the report tests: the DevTools protocol over a pipe.

``chromium --remote-debugging-pipe`` reads protocol commands (JSON, each ended by a NUL byte) from
fd 3 and writes answers and events to fd 4, so no websocket client and no new dependency is needed.
``Page`` opens one file and records every console message, uncaught exception, log entry and
network request the page makes.
"""

from __future__ import annotations

import base64
import fcntl
import json
import os
import shutil
import subprocess
import tempfile
import time
from pathlib import Path
from typing import Any

BROWSERS = ("chromium", "chromium-browser", "google-chrome", "chrome")
FLAGS = (
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-quic",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--disable-extensions",
    "--disable-default-apps",
    "--hide-scrollbars",
    "--mute-audio",
    "--remote-debugging-pipe",
)


def find_browser() -> str | None:
    """The path of a Chromium-family browser, or None."""
    for name in BROWSERS:
        path = shutil.which(name)
        if path:
            return path
    return None


class Browser:
    """One headless browser process, driven through the DevTools protocol on a pipe."""

    def __init__(self, executable: str, timeout: float = 60.0) -> None:
        self.timeout = timeout
        self.profile = tempfile.mkdtemp(prefix="nsysq-chromium-")
        to_child_r, self._to_child = os.pipe()
        self._from_child, from_child_w = os.pipe()

        def wire() -> None:  # in the child: fd 3 = commands in, fd 4 = answers out
            high_r = fcntl.fcntl(to_child_r, fcntl.F_DUPFD, 10)  # out of the way of 3 and 4 first
            high_w = fcntl.fcntl(from_child_w, fcntl.F_DUPFD, 10)
            os.dup2(high_r, 3)
            os.dup2(high_w, 4)

        self.proc = subprocess.Popen(
            [executable, *FLAGS, f"--user-data-dir={self.profile}", "about:blank"],
            preexec_fn=wire,
            close_fds=False,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
        )
        os.close(to_child_r)
        os.close(from_child_w)
        self._buffer = b""
        self._next_id = 0
        self.events: list[dict[str, Any]] = []

    def close(self) -> None:
        try:
            self.call("Browser.close")
        except (OSError, RuntimeError, TimeoutError):
            pass
        try:
            self.proc.wait(timeout=10)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait()
        for fd in (self._to_child, self._from_child):
            try:
                os.close(fd)
            except OSError:
                pass
        shutil.rmtree(self.profile, ignore_errors=True)

    def __enter__(self) -> Browser:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    # -- the protocol ------------------------------------------------------------------------------
    def _read_message(self, deadline: float) -> dict[str, Any]:
        while b"\0" not in self._buffer:
            if time.monotonic() > deadline:
                raise TimeoutError("the browser did not answer in time")
            chunk = os.read(self._from_child, 1 << 16)
            if not chunk:
                raise RuntimeError("the browser closed its DevTools pipe")
            self._buffer += chunk
        raw, _, self._buffer = self._buffer.partition(b"\0")
        message: dict[str, Any] = json.loads(raw)
        return message

    def call(self, method: str, session: str | None = None, **params: Any) -> dict[str, Any]:
        """Send one command and wait for its answer (events that arrive meanwhile are recorded)."""
        self._next_id += 1
        ident = self._next_id
        message: dict[str, Any] = {"id": ident, "method": method, "params": params}
        if session:
            message["sessionId"] = session
        os.write(self._to_child, json.dumps(message).encode() + b"\0")
        deadline = time.monotonic() + self.timeout
        while True:
            answer = self._read_message(deadline)
            if answer.get("id") == ident:
                if "error" in answer:
                    raise RuntimeError(f"{method}: {answer['error']}")
                result: dict[str, Any] = answer.get("result", {})
                return result
            self.events.append(answer)

    def wait_for(self, method: str, session: str | None = None) -> dict[str, Any]:
        """Wait for an event (one already recorded counts)."""
        deadline = time.monotonic() + self.timeout
        seen = 0
        while True:
            for event in self.events[seen:]:
                if event.get("method") == method and (session is None or event.get("sessionId") == session):
                    return event
            seen = len(self.events)
            self.events.append(self._read_message(deadline))

    def open(self, path: Path, width: int = 1280, height: int = 900, mobile: bool = False) -> Page:
        return self.open_url(path.resolve().as_uri(), width, height, mobile)

    def open_url(self, url: str, width: int = 1280, height: int = 900, mobile: bool = False) -> Page:
        """Open ``url`` in a new tab of the given size; return once its load event fired."""
        target = self.call("Target.createTarget", url="about:blank")["targetId"]
        session = self.call("Target.attachToTarget", targetId=target, flatten=True)["sessionId"]
        page = Page(self, session)
        for domain in ("Page", "Runtime", "Log", "Network"):
            self.call(f"{domain}.enable", session)
        self.call(
            "Emulation.setDeviceMetricsOverride",
            session,
            width=width,
            height=height,
            deviceScaleFactor=1,
            mobile=mobile,
        )
        page.mark = len(self.events)
        self.call("Page.navigate", session, url=url)
        self.wait_for("Page.loadEventFired", session)
        page.evaluate("1")  # let the load's own events arrive
        return page


class Page:
    """One open page: evaluate JavaScript, list what went wrong, take screenshots."""

    def __init__(self, browser: Browser, session: str) -> None:
        self.browser = browser
        self.session = session
        self.mark = 0

    def _events(self, method: str) -> list[dict[str, Any]]:
        return [
            e["params"]
            for e in self.browser.events[self.mark :]
            if e.get("method") == method and e.get("sessionId") == self.session
        ]

    def evaluate(self, expression: str) -> Any:
        answer = self.browser.call(
            "Runtime.evaluate", self.session, expression=expression, returnByValue=True, awaitPromise=True
        )
        if "exceptionDetails" in answer:
            raise RuntimeError(f"{expression!r} threw: {answer['exceptionDetails']}")
        return answer["result"].get("value")

    def errors(self) -> list[str]:
        """Console errors and warnings, uncaught exceptions and error log entries (CSP violations
        are logged here too)."""
        out = [
            f"console.{c['type']}: {c.get('args')}"
            for c in self._events("Runtime.consoleAPICalled")
            if c["type"] in ("error", "warning", "assert")
        ]
        out += [f"exception: {x['exceptionDetails']}" for x in self._events("Runtime.exceptionThrown")]
        out += [
            f"log {e['entry']['level']}: {e['entry'].get('text')}"
            for e in self._events("Log.entryAdded")
            if e["entry"]["level"] in ("error", "warning")
        ]
        return out

    def requests(self) -> list[str]:
        """Every URL the page asked for."""
        return [r["request"]["url"] for r in self._events("Network.requestWillBeSent")]

    def screenshot(self, path: Path, full_page: bool = True) -> None:
        params: dict[str, Any] = {"format": "png"}
        if full_page:
            size = self.browser.call("Page.getLayoutMetrics", self.session)["cssContentSize"]
            params["clip"] = {"x": 0, "y": 0, "width": size["width"], "height": size["height"], "scale": 1}
            params["captureBeyondViewport"] = True
        data = self.browser.call("Page.captureScreenshot", self.session, **params)["data"]
        path.write_bytes(base64.b64decode(data))
