"""Search a transcript for a text: the byte scan over the whole file, and for each line
it found, where in the envelope the text is.

The scan (``find_lines``) is the core's (``rust/search/``, ``_pure/search.py``): it looks for
the text encoded as the line format writes strings (``needle``), so a quote, a backslash, a
tab or a non-ASCII character matches as written in the file. With ``ignore_case`` ASCII
letters are folded (as a browser's find does for them); other letters match exactly, so
``É`` does not find ``é``.

A line the scan found may hold the text only in a key, inside an escape (``n`` in ``\\n``),
or in a field the reader does not want: ``find_hits`` (the scan, and each line found parsed
by the core while it is in memory) and :func:`groups_of` (for an envelope already read) say
in which of ``GROUPS`` it is, looking at each string's characters and each number as
``json.dumps`` writes it:

* ``content``: what was said: message content (but a tool's), a compaction's summary, an
  elision's stubs, the run context's sections and facts;
* ``arguments``: tool calls: a ``tool-dispatched``'s tool and arguments, an assistant
  message's ``tool_calls``;
* ``results``: what tools answered: a ``tool`` message's content, a settle's error and reason;
* ``extras``: everything else: message extras, the meta, grants, the rest of each payload,
  envelopes of unknown types.
"""

from __future__ import annotations

import json
import os
import sys
from typing import Iterator, List, Set, Tuple

from . import _backend
from ._pure import search as _reference
from .messages import Event

GROUPS = _reference.GROUPS


def needle(text: str, ignore_case: bool = True) -> bytes:
    """`text` as the line format writes it inside a string (UTF-8, JSON escapes,
    U+2028/U+2029 escaped), ASCII letters lowered with `ignore_case`. ValueError when
    empty."""
    if not text:
        raise ValueError("the text searched for is empty")
    encoded = _string_body(text)
    return encoded.lower() if ignore_case else encoded


def _string_body(text: str) -> bytes:
    body = json.dumps(text, ensure_ascii=False)[1:-1]
    if "\u2028" in body or "\u2029" in body:
        body = body.replace("\u2028", "\\u2028").replace("\u2029", "\\u2029")
    return body.encode("utf-8", "surrogatepass")


def find_lines(
    fd: int, text_needle: bytes, start: int, end: int, ignore_case: bool = True, limit: int = sys.maxsize
) -> Tuple[List[int], int]:
    """The start offsets of the lines starting in ``[start, end)`` of `fd` that hold
    `text_needle` (see :func:`needle`), at most `limit`, and where to go on from."""
    return _backend.core.find_lines(fd, text_needle, start, end, ignore_case, limit)


def scan(path: str, text: str, ignore_case: bool = True, chunk: int = 64 << 20) -> Iterator[int]:
    """The start offset of every line of the file at `path` that holds `text`."""
    wanted = needle(text, ignore_case)
    fd = os.open(path, os.O_RDONLY)
    try:
        at, size = 0, os.fstat(fd).st_size
        while at < size:
            lines, at = find_lines(fd, wanted, at, min(at + chunk, size), ignore_case)
            yield from lines
    finally:
        os.close(fd)


def find_hits(
    fd: int, text_needle: bytes, start: int, end: int, ignore_case: bool = True, limit: int = sys.maxsize
) -> Tuple[List[int], List[int], int]:
    """:func:`find_lines`, and for each line the ``GROUPS`` of its envelope in which the
    text is, as bits (``1 << GROUPS.index(name)``; :func:`groups_named` names them), -1
    for a line that is not JSON."""
    return _backend.core.find_hits(fd, text_needle, start, end, ignore_case, limit)


def groups_named(bits: int) -> Set[str]:
    """The ``GROUPS`` whose bits (content 1, arguments 2, results 4, extras 8) are set."""
    return {name for i, name in enumerate(GROUPS) if bits >> i & 1}


def groups_of(event: Event, text_needle: bytes, ignore_case: bool = True) -> Set[str]:
    """The ``GROUPS`` of `event` in which the text whose written form is `text_needle`
    (see :func:`needle`) is: in a string's characters, or a number as ``json.dumps``
    writes it (never in a key)."""
    text = _reference.text_of_needle(text_needle, ignore_case)
    return groups_named(_reference.payload_groups(event.type, event.payload, text, ignore_case))
