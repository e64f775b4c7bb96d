"""Where the command line writes: styled text on a terminal, plain text everywhere else.

rich is optional (the ``cli`` extra): it is imported only when colour is wanted, and
without it the same text is printed unstyled. Output that goes to a pipe or a file is
always plain, so ``| less``, ``| grep`` and redirects never see escape codes
(``--color always`` keeps colour for ``less -R``).

Transcript content is untrusted (tool output is web pages, files, other people's
transcripts): everything printed goes through :func:`visible` first, so no byte of a
transcript can move the cursor, clear the screen, retitle the terminal, reorder or hide
text. rich's markup is never interpreted (``markup=False``, text appended as ``Text``).
"""

from __future__ import annotations

import json
import os
import re
import sys
from typing import Any, Optional, TextIO, Tuple, Union

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


# What a terminal (or a viewer) would act on instead of showing: C0 controls but \t and
# \n (\n is kept only in multi-line text), DEL, C1 controls (U+0080-U+009F: U+009B is a
# one-byte CSI), the invisible format characters (Unicode Cf: soft hyphen, zero-width
# space and joiners, bidi marks, embeddings, overrides and isolates, word joiner, BOM,
# tag characters), the line and paragraph separators U+2028/U+2029, the Hangul fillers
# and the combining grapheme joiner (blank but not spaces), and lone surrogates (a
# JSON "\\ud800" or an undecodable file name; a terminal cannot print them).
# tests/cli/test_visible.py checks this against the running Python's Unicode tables.
_HIDDEN = (
    "\x00-\x08\x0b-\x1f\x7f-\x9f\u00ad\u034f\u0600-\u0605\u061c\u06dd\u070f\u0890\u0891\u08e2"
    "\u115f\u1160\u17b4\u17b5\u180b-\u180f\u200b-\u200f\u2028-\u202e\u2060-\u206f\u3164"
    "\ud800-\udfff\ufeff\uffa0\ufff9-\ufffb\U000110bd\U000110cd\U00013430-\U0001343f"
    "\U0001bca0-\U0001bca3\U0001d173-\U0001d17a\U000e0000-\U000e0fff"
)
_HIDDEN_LINE = re.compile(f"[\n{_HIDDEN}]")  # single-line fields: \n shown too
_HIDDEN_BLOCK = re.compile(f"[{_HIDDEN}]")
_NAMED = {"\n": "\\n", "\r": "\\r"}


def _shown(match: "re.Match[str]") -> str:
    ch = match.group()
    code = ord(ch)
    if ch in _NAMED:
        return _NAMED[ch]
    if code < 0x100:
        return f"\\x{code:02x}"
    return f"<U+{code:04X}>"


def visible(text: str, multiline: bool = False) -> str:
    """`text` with everything a terminal would act on shown as text instead.

    The one neutraliser of the command line: ESC becomes ``\\x1b``, CR ``\\r``, U+202E
    ``<U+202E>``, and so on; a reader sees that they are there and nothing is hidden,
    reordered or overwritten. Newlines are kept only when `multiline` (a block of
    content); in a one-line field (a role, a tool name, an id, a file name) a newline
    could forge a line of output, so it is shown as ``\\n``. Tabs are kept.
    """
    pattern = _HIDDEN_BLOCK if multiline else _HIDDEN_LINE
    if pattern.search(text) is None:
        return text
    return pattern.sub(_shown, text)


def _json_escaped(match: "re.Match[str]") -> str:
    code = ord(match.group())
    if code > 0xFFFF:  # as JSON writes it: a surrogate pair
        code -= 0x10000
        return f"\\u{0xD800 + (code >> 10):04x}\\u{0xDC00 + (code & 0x3FF):04x}"
    return f"\\u{code:04x}"


def json_text(value: Any, **kw: Any) -> str:
    """JSON for --json and the openai export: the same values, with the characters that
    :func:`visible` shows written as ``\\uXXXX`` escapes (JSON itself escapes only C0),
    so printing it to a terminal is safe and parsing it gives back exactly the data."""
    return json_visible(json.dumps(value, ensure_ascii=False, **kw))


def json_visible(text: str) -> str:
    """JSON text with the characters :func:`visible` shows written as ``\\uXXXX``: the
    same JSON value (outside JSON's own escapes they can only occur inside strings)."""
    return _HIDDEN_BLOCK.sub(_json_escaped, text)


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
