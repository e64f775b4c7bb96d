"""Search a transcript for a text: the byte scan over the whole file, then the few lines it
found are parsed to say where the text is.

The scan (``find_lines``) is the core's (``rust/search.rs``, ``_pure/search.py``): it looks for
the text encoded as the line format writes strings (``needle``), so a quote, a backslash, a
tab or a non-ASCII character matches as written in the file, and no line is parsed. With
``ignore_case`` ASCII letters are folded (as a browser's find does for them); other letters
match exactly, so ``É`` does not find ``é``.

A line the scan found may hold the text only in a key, or in a field the reader does not
want; :func:`groups_of` says in which of ``GROUPS`` it is, by looking at each string (and
number) of the envelope on its own, encoded the same way:

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
from typing import Any, Callable, Dict, Iterator, List, Set, Tuple

from . import _backend
from .messages import MESSAGE_KEYS, Event

GROUPS = ("content", "arguments", "results", "extras")

_MESSAGE_KEYS = frozenset(MESSAGE_KEYS)


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


def groups_of(event: Event, text_needle: bytes, ignore_case: bool = True) -> Set[str]:
    """The ``GROUPS`` of `event` in which `text_needle` occurs within one string or number."""
    found: Set[str] = set()
    holds = _matcher(text_needle, ignore_case)
    for group, value in fields(event):
        if group not in found and any(holds(leaf) for leaf in _leaves(value)):
            found.add(group)
    return found


def _matcher(text_needle: bytes, ignore_case: bool) -> Callable[[Any], bool]:
    """Whether a leaf, encoded as the line format writes it, holds `text_needle`."""
    plain = text_needle.decode("utf-8", "replace")
    if plain.isascii() and _string_body(plain) == text_needle:
        # A text the line format writes as it is (no quote, backslash or control
        # character): look in each string itself, without encoding it (5x faster on
        # the realistic corpus). ASCII strings fold exactly with str.lower(); others
        # are folded as bytes (bytes.lower() folds ASCII letters only, as the scan does).
        def holds(leaf: Any) -> bool:
            if isinstance(leaf, str):
                if not ignore_case:
                    return plain in leaf
                if leaf.isascii():
                    return plain in leaf.lower()
                return text_needle in leaf.encode("utf-8", "surrogatepass").lower()
            return _encoded_holds(leaf, text_needle, ignore_case)

        return holds
    return lambda leaf: _encoded_holds(leaf, text_needle, ignore_case)


def _encoded_holds(leaf: Any, text_needle: bytes, ignore_case: bool) -> bool:
    encoded = _string_body(leaf) if isinstance(leaf, str) else json.dumps(leaf).encode()
    return text_needle in (encoded.lower() if ignore_case else encoded)


def fields(event: Event) -> Iterator[Tuple[str, Any]]:
    """``(group, value)`` for the parts of `event`'s payload, by ``GROUPS``."""
    payload: Dict[str, Any] = event.payload if isinstance(event.payload, dict) else {}
    type_ = event.type
    rest = dict(payload)
    if type_ == "message":
        tool = payload.get("role") == "tool"
        yield ("results" if tool else "content"), payload.get("content")
        yield "content", payload.get("name")
        yield "arguments", payload.get("tool_calls")
        for key in _MESSAGE_KEYS:
            rest.pop(key, None)
    elif type_ == "compaction":
        yield "content", rest.pop("summary", None)
    elif type_ == "elision":
        items = rest.pop("items", None)
        yield "content", [item.get("stub") for item in items if isinstance(item, dict)] if isinstance(items, list) else items
    elif type_ == "run-context":
        yield "content", [rest.pop("sections", None), rest.pop("facts", None)]
    elif type_ == "tool-dispatched":
        yield "arguments", [rest.pop("tool", None), rest.pop("arguments", None)]
    elif type_ == "tool-settled":
        yield "results", [rest.pop("error", None), rest.pop("reason", None)]
    yield "extras", rest


def _leaves(value: Any) -> Iterator[Any]:
    """The strings and numbers of a JSON value (not its keys), depth first."""
    stack = [value]
    while stack:
        v = stack.pop()
        if isinstance(v, str):
            yield v
        elif isinstance(v, dict):
            stack.extend(v.values())
        elif isinstance(v, list):
            stack.extend(v)
        elif isinstance(v, (int, float)) and not isinstance(v, bool):
            yield v
