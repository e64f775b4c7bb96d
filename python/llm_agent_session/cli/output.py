"""Where the command line writes: styled text on a terminal, plain text everywhere else.

rich is optional (the ``cli`` extra): it is imported only when colour is wanted, and
without it the same text is printed unstyled. Output that goes to a pipe or a file is
always plain, so ``| less``, ``| grep`` and redirects never see escape codes
(``--color always`` keeps colour for ``less -R``).

Transcript content is untrusted (tool output is web pages, files, other people's
transcripts): everything printed goes through :func:`~llm_agent_session.visible.visible`
first, so no byte of a transcript can move the cursor, clear the screen, retitle the
terminal, reorder or hide text. rich's markup is never interpreted (``markup=False``,
text appended as ``Text``).
"""

from __future__ import annotations

import os
import sys
from typing import Any, Optional, TextIO, Tuple, Union

from ..visible import json_text, visible

Part = Union[str, Tuple[str, Optional[str]]]

# Style names used by the renderers, mapped to rich styles (ignored when plain).
STYLES = {
    "role.system": "bold magenta",
    "role.user": "bold green",
    "role.assistant": "bold cyan",
    "role.tool": "bold yellow",
    "role.other": "bold",
    "dim": "dim",
    "id": "dim",
    "extra": "dim italic",
    "call": "cyan",
    "summary": "bold blue",
    "elided": "italic red",
    "warn": "yellow",
    "error": "bold red",
    "ok": "bold green",
    "key": "bold",
}


def rich_available() -> bool:
    """Whether rich (the ``cli`` extra) can be imported; imported here, only when colour is wanted."""
    try:
        __import__("rich")
    except ImportError:
        return False
    return True


def want_colour(choice: str, stream: TextIO) -> bool:
    """``--color``: always, never, or auto (a TTY or FORCE_COLOR, unless NO_COLOR or TERM=dumb)."""
    if choice == "always":
        return True
    if choice == "never":
        return False
    if os.environ.get("NO_COLOR") or os.environ.get("TERM") == "dumb":
        return False
    if os.environ.get("FORCE_COLOR"):
        return True
    try:
        return stream.isatty()
    except (AttributeError, ValueError):
        return False


class Out:
    """A line printer: ``line("plain ", ("styled", "warn"))``."""

    def __init__(self, colour: bool, stream: Optional[TextIO] = None) -> None:
        self.stream = stream if stream is not None else sys.stdout
        self.console: Any = None
        if colour and rich_available():
            from rich.console import Console

            self.console = Console(
                file=self.stream,
                force_terminal=True,
                highlight=False,
                markup=False,
                emoji=False,
                soft_wrap=True,
            )
            if self.console.color_system is None:  # TERM unset (e.g. under less -R): still colour
                self.console = Console(
                    file=self.stream,
                    force_terminal=True,
                    color_system="standard",
                    highlight=False,
                    markup=False,
                    emoji=False,
                    soft_wrap=True,
                )

    @property
    def styled(self) -> bool:
        return self.console is not None

    def line(self, *parts: Part) -> None:
        """One line of output; every part is passed through :func:`visible` (one-line)."""
        if self.console is None:
            self.stream.write("".join(visible(p if isinstance(p, str) else p[0]) for p in parts) + "\n")
            return
        from rich.text import Text

        text = Text()
        for p in parts:
            if isinstance(p, str):
                text.append(visible(p))
            else:
                text.append(visible(p[0]), style=STYLES.get(p[1] or "", p[1] or ""))
        self.console.print(text)

    def json(self, value: Any) -> None:
        """A --json report (see :func:`json_text`)."""
        self.stream.write(json_text(value, indent=2, sort_keys=True) + "\n")

    def block(self, text: str, style: Optional[str] = None, indent: str = "") -> None:
        """Several lines of text, each indented and in one style."""
        for piece in text.split("\n"):
            self.line(indent, (piece, style))


def human_bytes(n: int) -> str:
    size = float(n)
    for unit in ("B", "KB", "MB", "GB", "TB"):
        if size < 1000 or unit == "TB":
            return f"{n:,} B" if unit == "B" else f"{size:.1f} {unit}"
        size /= 1000
    return f"{n} B"


def shorten(text: str, limit: int) -> Tuple[str, int]:
    """The first `limit` characters of `text` (at a line end where one is near); how many were cut."""
    if limit <= 0 or len(text) <= limit:
        return text, 0
    cut = text.rfind("\n", int(limit * 0.8), limit)
    cut = limit if cut == -1 else cut
    return text[:cut], len(text) - cut


class CliError(Exception):
    """A failure to report on stderr (what, where, what to do) with an exit code."""

    def __init__(self, message: str, code: int = 1) -> None:
        super().__init__(message)
        self.code = code


def human_seconds(seconds: float) -> str:
    """A duration for people: ``28.63 s``, ``0.004 s``, ``1,234.50 s``."""
    if seconds != seconds:  # NaN
        return "-"
    if abs(seconds) >= 1 or seconds == 0:
        return f"{seconds:,.2f} s"
    return f"{seconds:.3g} s"


def count(n: Any) -> str:
    """A whole number with thousands separators (anything else as it is)."""
    return f"{n:,}" if isinstance(n, int) and not isinstance(n, bool) else str(n)
