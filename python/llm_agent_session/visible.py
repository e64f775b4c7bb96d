"""Transcript text made safe to show: on a terminal, in a page, in JSON read elsewhere.

Transcript content is untrusted (tool output is web pages, files, other people's
transcripts). Every surface (the command line, the viewer, the dataset's reports, the
OTLP export's messages) shows it through :func:`visible` or writes it as JSON through
:func:`json_text`, so no byte of a transcript can move a terminal's cursor, clear the
screen, retitle it, reorder or hide text, on a terminal or in a page.
"""

from __future__ import annotations

import json
import re
from typing import Any

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
