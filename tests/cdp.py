"""A headless Chromium driven over the DevTools protocol on a pipe (no network, no extra package).

Chromium started with ``--remote-debugging-pipe`` reads protocol messages from fd 3
and writes to fd 4, each a JSON object ended by a NUL byte. That is all a test needs
to load a page, press keys, click, read the DOM and take a screenshot.
"""

from __future__ import annotations

import base64
import json
import os
import select
import shutil
import subprocess
import tempfile
import time
from pathlib import Path
from typing import Any

FLAGS = [
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--disable-extensions",
    "--remote-debugging-pipe",
]

KEYS = {  # key -> (code, Windows virtual key code), for Input.dispatchKeyEvent
    "ArrowRight": ("ArrowRight", 39),
    "ArrowLeft": ("ArrowLeft", 37),
    "Home": ("Home", 36),
    "End": ("End", 35),
}


class BrowserError(RuntimeError):
    pass


def find_chromium() -> str | None:
    for name in ("chromium", "chromium-browser", "google-chrome"):
        path = shutil.which(name)
        if path:
            return path
    return None


class Chromium:
    """One headless browser with one page; ``call`` sends a command to that page and waits."""

    def __init__(self, binary: str, width: int = 1280, height: int = 800, timeout: float = 20.0) -> None:
        self.timeout = timeout
        self.profile = tempfile.mkdtemp(prefix="isrcheck-chromium-")
        to_child_r, self._to_child = os.pipe()
        self._from_child, from_child_w = os.pipe()

        def wire_fds() -> None:  # in the child: the pipe ends become fds 3 and 4
            r, w = os.dup(to_child_r), os.dup(from_child_w)
            os.dup2(r, 3)
            os.dup2(w, 4)

        self.proc = subprocess.Popen(
            [binary, *FLAGS, f"--user-data-dir={self.profile}", f"--window-size={width},{height}", "about:blank"],
            preexec_fn=wire_fds,
            close_fds=False,
            stdin=subprocess.DEVNULL,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
        )
        os.close(to_child_r)
        os.close(from_child_w)
        self._buffer = b""
        self._next_id = 0
        self.events: list[dict[str, Any]] = []
        self.session: str | None = None
        targets = self.call("Target.getTargets", browser=True)["targetInfos"]
        page = next(t for t in targets if t["type"] == "page")
        self.session = self.call("Target.attachToTarget", {"targetId": page["targetId"], "flatten": True},
                                 browser=True)["sessionId"]
        self.call("Page.enable")
        self.call("Runtime.enable")
        self.call("Network.enable")
        self.call("Emulation.setDeviceMetricsOverride",
                  {"width": width, "height": height, "deviceScaleFactor": 1, "mobile": False})

    # -- protocol ------------------------------------------------------------------
    def call(self, method: str, params: dict[str, Any] | None = None, browser: bool = False) -> dict[str, Any]:
        self._next_id += 1
        message: dict[str, Any] = {"id": self._next_id, "method": method, "params": params or {}}
        if not browser and self.session:
            message["sessionId"] = self.session
        os.write(self._to_child, json.dumps(message).encode() + b"\0")
        while True:
            reply = self._read()
            if reply.get("id") == self._next_id:
                if "error" in reply:
                    raise BrowserError(f"{method}: {reply['error']}")
                return reply.get("result", {})
            self.events.append(reply)

    def _read(self) -> dict[str, Any]:
        deadline = time.monotonic() + self.timeout
        while b"\0" not in self._buffer:
            left = deadline - time.monotonic()
            ready, _, _ = select.select([self._from_child], [], [], max(0.0, left))
            if not ready:
                raise BrowserError("Chromium did not answer in time")
            chunk = os.read(self._from_child, 1 << 16)
            if not chunk:
                raise BrowserError("Chromium closed the pipe")
            self._buffer += chunk
        raw, self._buffer = self._buffer.split(b"\0", 1)
        return json.loads(raw)

    # -- what tests use --------------------------------------------------------------
    def open(self, path: Path, fragment: str = "") -> None:
        """Load a page (``fragment``, without its '#', is the address's). Give each load its own
        file: the same file with another fragment is no new load, and its script would not run."""
        self.events.clear()
        self.call("Page.navigate", {"url": path.resolve().as_uri() + (f"#{fragment}" if fragment else "")})
        self.wait_for("document.readyState === 'complete' && document.body.dataset.step !== undefined")

    def eval(self, expression: str) -> Any:
        result = self.call("Runtime.evaluate", {"expression": expression, "returnByValue": True})
        if "exceptionDetails" in result:
            raise BrowserError(f"{expression}: {result['exceptionDetails'].get('text')}")
        return result["result"].get("value")

    def wait_for(self, expression: str) -> None:
        deadline = time.monotonic() + self.timeout
        while not self.eval(f"!!({expression})"):
            if time.monotonic() > deadline:
                raise BrowserError(f"timed out waiting for {expression}")
            time.sleep(0.05)

    def press(self, key: str) -> None:
        code, vk = KEYS[key]
        for kind in ("rawKeyDown", "keyUp"):
            self.call("Input.dispatchKeyEvent",
                      {"type": kind, "key": key, "code": code, "windowsVirtualKeyCode": vk, "nativeVirtualKeyCode": vk})

    def click(self, selector: str) -> None:
        """A real mouse click at the centre of the element."""
        box = self.eval(
            f"(function(){{var r=document.querySelector({json.dumps(selector)}).getBoundingClientRect();"
            "return [r.left + r.width / 2, r.top + r.height / 2];})()"
        )
        for kind in ("mousePressed", "mouseReleased"):
            self.call("Input.dispatchMouseEvent",
                      {"type": kind, "x": box[0], "y": box[1], "button": "left", "clickCount": 1})

    def resize(self, width: int, height: int) -> None:
        self.call("Emulation.setDeviceMetricsOverride",
                  {"width": width, "height": height, "deviceScaleFactor": 1, "mobile": False})

    def screenshot(self, path: Path, full_page: bool = False) -> Path:
        """The viewport as PNG, or with ``full_page`` the whole page, as long as its body."""
        params: dict[str, Any] = {"format": "png"}
        if full_page:
            width, height = self.eval("[document.documentElement.clientWidth,"
                                      " Math.ceil(document.body.getBoundingClientRect().height)]")
            params["captureBeyondViewport"] = True
            params["clip"] = {"x": 0, "y": 0, "width": width, "height": height, "scale": 1}
        data = self.call("Page.captureScreenshot", params)["data"]
        path.write_bytes(base64.b64decode(data))
        return path

    def exceptions(self) -> list[str]:
        return [str(e["params"]["exceptionDetails"].get("text")) for e in self.events
                if e.get("method") == "Runtime.exceptionThrown"]

    def requests_made(self) -> list[str]:
        return [e["params"]["request"]["url"] for e in self.events if e.get("method") == "Network.requestWillBeSent"]

    def close(self) -> None:
        try:
            self.call("Browser.close", browser=True)
        except (BrowserError, OSError):
            pass
        try:
            self.proc.wait(timeout=5)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait()
        for fd in (self._to_child, self._from_child):
            try:
                os.close(fd)
            except OSError:
                pass
        shutil.rmtree(self.profile, ignore_errors=True)
