"""A progress bar on stderr for reads that take a while (only on a TTY, only with rich).

Nothing appears for work that finishes within ``DELAY`` seconds, so quick commands and
scripts never see it. The library's calls (load, peek) give no progress of their own,
so while one runs the bar pulses with the file's size; loops in the CLI advance it.
"""

from __future__ import annotations

import os
import sys
import threading
from typing import Any, Optional

from ..visible import visible
from .output import rich_available

# Seconds before the bar shows; LLM_AGENT_SESSION_PROGRESS_DELAY overrides it (tests use 0).
DELAY = 0.5


def _delay() -> float:
    try:
        return float(os.environ.get("LLM_AGENT_SESSION_PROGRESS_DELAY", DELAY))
    except ValueError:
        return DELAY


class Progress:
    """``with Progress("reading x.jsonl (1.0 GB)") as p: ... p.update(done, total)``."""

    def __init__(self, label: str, total: Optional[int] = None) -> None:
        self.label = visible(label)
        self.total = total
        self.done = 0
        self._lock = threading.Lock()
        self._bar: Any = None
        self._task: Any = None
        self._timer: Optional[threading.Timer] = None
        self._closed = False

    def __enter__(self) -> "Progress":
        if sys.stderr.isatty() and rich_available() and not os.environ.get("NO_COLOR"):
            self._timer = threading.Timer(_delay(), self._show)
            self._timer.daemon = True
            self._timer.start()
        return self

    def _show(self) -> None:
        from rich.console import Console
        from rich.progress import BarColumn, Progress as RichProgress, TextColumn, TimeElapsedColumn

        with self._lock:
            if self._closed:
                return
            self._bar = RichProgress(
                TextColumn("{task.description}", markup=False),  # a file name is not markup
                BarColumn(),
                TextColumn("{task.percentage:>3.0f}%" if self.total else ""),
                TimeElapsedColumn(),
                console=Console(stderr=True),
                transient=True,
            )
            self._task = self._bar.add_task(self.label, total=self.total, completed=self.done)
            self._bar.start()

    def update(self, done: int, total: Optional[int] = None, label: Optional[str] = None) -> None:
        with self._lock:
            self.done = done
            if total is not None:
                self.total = total
            if label is not None:
                self.label = visible(label)
            if self._bar is not None:
                self._bar.update(self._task, completed=done, total=self.total, description=self.label)

    def __exit__(self, *exc: Any) -> None:
        with self._lock:
            self._closed = True
            if self._timer is not None:
                self._timer.cancel()
            if self._bar is not None:
                self._bar.stop()
