"""A minimal headless-Chromium driver over the DevTools protocol on pipes (``--remote-debugging-pipe``).

Standard library only: Chromium reads NUL-terminated JSON commands on fd 3 and writes replies and events on fd
4. Enough to open a file, evaluate JavaScript, dispatch input events and take a screenshot.
"""

from __future__ import annotations

import base64
import contextlib
import fcntl
import json
import os
import shutil
import subprocess
import tempfile
import time
from pathlib import Path
from typing import Any


def find_chromium() -> str | None:
    for name in ("chromium", "chromium-browser", "google-chrome", "chrome"):
        path = shutil.which(name)
        if path:
            return path
    return None


class Browser:
    def __init__(self, executable: str, width: int = 1400, height: int = 1000) -> None:
        self._profile = tempfile.mkdtemp(prefix="qdq-chromium-")
        cmd_r, self._cmd_w = os.pipe()
        self._out_r, out_w = os.pipe()

        def _fds() -> None:  # runs in the child before exec: fd 3 = commands in, fd 4 = replies out
            # may be 3 or 4
            a, b = fcntl.fcntl(cmd_r, fcntl.F_DUPFD, 10), fcntl.fcntl(out_w, fcntl.F_DUPFD, 10)
            os.dup2(a, 3)
            os.dup2(b, 4)
            os.set_inheritable(3, True)
            os.set_inheritable(4, True)

        self._proc = subprocess.Popen(
            [executable, "--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
             "--disable-background-networking", "--disable-component-update", "--disable-sync",
             "--disable-dev-shm-usage", f"--user-data-dir={self._profile}", f"--window-size={width},{height}",
             "--remote-debugging-pipe", "about:blank"],
            stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
            close_fds=False, preexec_fn=_fds)  # noqa: PLW1509 - single-threaded test helper
        os.close(cmd_r)
        os.close(out_w)
        self._buf = b""
        self._next = 0
        self._session: str | None = None

    def _send(self, method: str, params: dict[str, Any] | None = None, session: bool = True,
              timeout: float = 30.0) -> dict[str, Any]:
        self._next += 1
        msg: dict[str, Any] = {"id": self._next, "method": method, "params": params or {}}
        if session and self._session:
            msg["sessionId"] = self._session
        os.write(self._cmd_w, json.dumps(msg).encode() + b"\0")
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            while b"\0" in self._buf:
                raw, self._buf = self._buf.split(b"\0", 1)
                reply = json.loads(raw)
                if reply.get("id") == self._next:
                    if "error" in reply:
                        raise RuntimeError(f"{method}: {reply['error']}")
                    return reply.get("result", {})
            chunk = os.read(self._out_r, 1 << 20)
            if not chunk:
                raise RuntimeError(f"chromium exited (code {self._proc.poll()}) during {method}")
            self._buf += chunk
        raise TimeoutError(method)

    def open(self, path: Path, fragment: str = "") -> None:
        """Load ``path`` (``fragment``: what goes after its ``#``, a deep link)."""
        targets = self._send("Target.getTargets", session=False)["targetInfos"]
        page = next(t for t in targets if t["type"] == "page")
        self._session = self._send("Target.attachToTarget", {"targetId": page["targetId"], "flatten": True},
                                   session=False)["sessionId"]
        self._send("Page.enable")
        self._send("Page.navigate", {"url": path.resolve().as_uri() + (f"#{fragment}" if fragment else "")})
        self.wait_for("document.readyState === 'complete' && document.location.protocol === 'file:'")

    def eval(self, expression: str) -> Any:
        result = self._send("Runtime.evaluate", {"expression": expression, "returnByValue": True})
        if "exceptionDetails" in result:
            raise RuntimeError(f"{expression}: {result['exceptionDetails']}")
        return result["result"].get("value")

    def wait_for(self, expression: str, timeout: float = 20.0) -> float:
        start = time.monotonic()
        while time.monotonic() - start < timeout:
            if self.eval(expression):
                return time.monotonic() - start
            time.sleep(0.02)
        raise TimeoutError(expression)

    def screenshot(self, out: Path) -> Path:
        data = self._send("Page.captureScreenshot", {"format": "png"})["data"]
        out.write_bytes(base64.b64decode(data))
        return out

    def close(self) -> None:
        with contextlib.suppress(RuntimeError, TimeoutError, OSError):
            self._send("Browser.close", session=False, timeout=5)
        try:
            self._proc.wait(timeout=10)
        except subprocess.TimeoutExpired:
            self._proc.kill()
            self._proc.wait()
        os.close(self._cmd_w)
        os.close(self._out_r)
        shutil.rmtree(self._profile, ignore_errors=True)

    def __enter__(self) -> Browser:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


#: JavaScript: the words of table headers, finding sentences and legends, and the numbers of every table cell,
#: that a line break splits (a word or number whose characters sit on two lines), and the headers and number
#: cells whose text sticks out of the cell; at most 20
SPLIT_WORDS_JS = r"""(() => {
  const bad = [];
  for (const cell of document.querySelectorAll('th, td')) {
    const walker = document.createTreeWalker(cell, NodeFilter.SHOW_TEXT);
    let node;
    while ((node = walker.nextNode())) {
      const el = node.parentElement;
      if (el.closest('pre') || !el.getClientRects().length) continue;
      const words = cell.tagName === 'TH' || el.closest('.plain, .legend');
      const re = words ? /[A-Za-z0-9]+/g : /[0-9][0-9,.]*[0-9]|[0-9]/g;
      let m;
      while ((m = re.exec(node.data))) {
        const r = document.createRange();
        r.setStart(node, m.index); r.setEnd(node, m.index + m[0].length);
        const tops = new Set([...r.getClientRects()].filter(x => x.width > 0).map(x => Math.round(x.top)));
        if (tops.size > 1) bad.push(m[0] + ' in ' + cell.tagName + '.' + cell.className);
      }
    }
  }
  for (const cell of document.querySelectorAll('th, td.num')) {  // nor does one stick out of its cell
    if (cell.getClientRects().length && cell.scrollWidth > cell.clientWidth + 1)
      bad.push('overflow: ' + cell.textContent);
  }
  return bad.slice(0, 20);
})()"""
