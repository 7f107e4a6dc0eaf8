"""A one-line progress display: done / total, a bar, the rate and the time left, redrawn in place on a
terminal (stderr by default) and silent elsewhere. :meth:`Progress.text` gives the line itself, for callers
that draw it through another writer (the corpus run draws it through pytest's terminal reporter)."""

from __future__ import annotations

import sys
import time
from typing import TextIO


def duration(seconds: float) -> str:
    """``42s``, ``3m05s``, ``1h02m``."""
    s = max(0, int(round(seconds)))
    if s < 60:
        return f"{s}s"
    if s < 3600:
        return f"{s // 60}m{s % 60:02d}s"
    return f"{s // 3600}h{s % 3600 // 60:02d}m"


class Progress:
    def __init__(self, label: str, stream: TextIO | None = None, enabled: bool | None = None,
                 every: float = 0.1) -> None:
        self.label = label
        self.stream = stream or sys.stderr
        self.enabled = self.stream.isatty() if enabled is None else enabled
        self.every = every  # seconds between two redraws
        self.start = time.monotonic()
        self._last = -1.0

    def due(self, done: int, total: int) -> bool:
        """Whether a redraw is due now: at most one every ``every`` seconds, and always the last one."""
        now = time.monotonic()
        if done < total and now - self._last < self.every:
            return False
        self._last = now
        return True

    def text(self, done: int, total: int, extra: str = "", width: int = 30) -> str:
        """The line: label, bar (``width`` characters; 0 for none), done / total, rate, time left or taken."""
        elapsed = max(time.monotonic() - self.start, 1e-9)
        rate = done / elapsed
        bar = ""
        if width > 0:
            filled = int(width * done / total) if total > 0 else 0
            bar = f" [{'#' * filled}{'.' * (width - filled)}]"
        if done >= total:
            when = f"in {duration(elapsed)}"
        else:
            when = f"eta {duration((total - done) / rate)}" if rate > 0 else "eta ?"
        return f"{self.label}{bar} {done:,}/{total:,} {rate:,.0f}/s {when}" + (f", {extra}" if extra else "")

    def __call__(self, done: int, total: int, extra: str = "") -> None:
        if not self.enabled or total <= 0 or not self.due(done, total):
            return
        self.stream.write("\r" + self.text(done, total, extra))
        if done >= total:
            self.stream.write("\n")
        self.stream.flush()
