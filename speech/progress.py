"""A small progress bar / live status line for long work (stderr, only redrawn on a terminal)."""

from __future__ import annotations

import sys
import time
from typing import IO


class Progress:
    def __init__(self, total: int, label: str = "", stream: IO[str] | None = None, enabled: bool | None = None) -> None:
        self.total = max(total, 0)
        self.label = label
        self.done = 0
        self.stream = stream or sys.stderr
        self.tty = self.stream.isatty() if enabled is None else enabled
        self._t0 = time.monotonic()
        self._status = ""

    def update(self, n: int = 1, status: str = "") -> None:
        self.done += n
        self._status = status
        self._draw()

    def _draw(self) -> None:
        elapsed = time.monotonic() - self._t0
        frac = self.done / self.total if self.total else 1.0
        eta = elapsed / frac - elapsed if frac > 0 else 0.0
        width = 24
        bar = "#" * int(frac * width) + "-" * (width - int(frac * width))
        line = f"{self.label} [{bar}] {self.done}/{self.total} {elapsed:5.1f}s eta {eta:5.1f}s {self._status}"
        if self.tty:
            self.stream.write("\r\x1b[K" + line[:200])
        else:
            self.stream.write(line + "\n")
        self.stream.flush()

    def close(self) -> None:
        if self.tty:
            self.stream.write("\n")
            self.stream.flush()

    def __enter__(self) -> "Progress":
        if self.tty:
            self._draw()
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()
