"""The lines of a file that hold a byte string, and where in each line's envelope a text
is: the reference of ``rust/search/``.

Lines start at offset 0 and after each ``\\n`` and run to their ``\\n`` (or the end of the
file). A call examines the lines that start in ``[start, end)`` (``start`` is a line
start), reading each in full, and answers the start offsets of those that contain
`needle` (at most `limit`) and where to go on from: the start of the first line it did
not examine. With `ignore_case` ASCII letters are folded (``bytes.lower``); other
characters match exactly. Reads are in blocks that end at a line end, as the native
core's are, so a long line is read whole.

``find_hits`` also says, for each line found, in which ``GROUPS`` of its envelope the
text is (:func:`payload_groups`): the text is in a string's characters (not its
escapes, not a key) or in a number as ``json.dumps`` writes it.
"""

from __future__ import annotations

import json
import os
import stat
import sys
from typing import Any, Callable, Iterator, List, Optional, Tuple, Union

from .._core import SearchedFile
from .._files import open_to_read
from ..messages import MESSAGE_KEYS
from .lines import BLANK_BYTES, LineProblem, decode_json, parse_envelope
from .tail_check import read_span

BLOCK = 4 << 20  # as rust/search/lines.rs

#: Where a text can be in an envelope, and its bit in ``find_hits``' answer.
GROUPS = ("content", "arguments", "results", "extras")
CONTENT, ARGUMENTS, RESULTS, EXTRAS = 1, 2, 4, 8
#: ``find_hits``' answer for a line the strict reading refuses.
NOT_JSON = -1

_MESSAGE_KEYS = frozenset(MESSAGE_KEYS)


def find_lines(
    fd: int, needle: bytes, start: int, end: int, ignore_case: bool = False, limit: int = sys.maxsize
) -> Tuple[List[int], int]:
    return _scan(fd, needle, start, end, ignore_case, limit, None)


def _scan(
    fd: int, needle: bytes, start: int, end: int, ignore_case: bool, limit: int,
    on_line: Optional[Callable[[bytes], None]],
) -> Tuple[List[int], int]:
    """``find_lines``, handing `on_line` each line found (without its newline, as it is in
    the file) while its block is in memory."""
    _refuse_empty_or_multiline(needle)
    if ignore_case:
        needle = needle.lower()
    lines: List[int] = []
    if limit <= 0:
        return lines, start
    block = BLOCK
    at = start
    while at < end:
        data = os.pread(fd, block, at)
        if not data:
            break
        if len(data) == block:
            last = data.rfind(b"\n")
            if last == -1:  # one line longer than the block: read it again, larger
                block *= 2
                continue
            data = data[: last + 1]
        raw = data
        if ignore_case:
            data = data.lower()
        whole = len(data)
        stop = min(end - at, whole)
        pos = 0
        while pos < stop:
            hit = data.find(needle, pos)
            if hit == -1:
                pos = _line_start_from(data, stop)
                break
            line_start = data.rfind(b"\n", pos, hit) + 1 or pos
            if line_start >= stop:
                pos = _line_start_from(data, stop)
                break
            nl = data.find(b"\n", hit)
            pos = whole if nl == -1 else nl + 1
            lines.append(at + line_start)
            if on_line is not None:
                on_line(raw[line_start: whole if nl == -1 else nl])
            if len(lines) >= limit:
                return lines, at + pos
        at += pos
        if pos < whole:
            break
    return lines, at


def _line_start_from(data: bytes, stop: int) -> int:
    if stop == 0 or stop >= len(data) or data[stop - 1] == 0x0A:
        return min(stop, len(data))
    nl = data.find(b"\n", stop)
    return len(data) if nl == -1 else nl + 1


def find_hits(
    fd: int, needle: bytes, start: int, end: int, ignore_case: bool = False, limit: int = sys.maxsize
) -> Tuple[List[int], List[int], int]:
    """``find_lines``, and for each line the bits of the ``GROUPS`` of its envelope in which
    the text whose written form is `needle` is (``NOT_JSON`` for a line
    ``decode_json`` refuses)."""
    _refuse_empty_or_multiline(needle)
    text = text_of_needle(needle, ignore_case)
    groups: List[int] = []
    lines, after = _scan(fd, needle, start, end, ignore_case, limit,
                         lambda line: groups.append(line_groups(line, text, ignore_case)))
    return lines, groups, after


def search_files(
    paths: List[str], needle: bytes, largest: int, ignore_case: bool = False, head: int = 4096, tail: int = 0
) -> List[Union[OSError, SearchedFile]]:
    """For each path, an OSError (it could not be opened or read) or ``(identity,
    regular, part, tail)``: ``fstat``'s ``(dev, ino, size, mtime_ns, ctime_ns)``, whether
    it is a regular file, and for one of at most `largest` bytes ``part``, ``(head, meta,
    lines, groups, next)`` (its first `head` bytes, :func:`first_line_is_meta` of them,
    :func:`find_hits` over the whole file) and with `tail` > 0 ``(resume, last bytes)``
    (:func:`tail_start`). `head` and `tail` are at most 1 MiB."""
    _refuse_empty_or_multiline(needle)
    text_of_needle(needle, ignore_case)  # its ValueError before any read, as the core's
    head, tail = min(head, ENDS_MAX), min(tail, ENDS_MAX)
    return [_search_file(path, needle, largest, ignore_case, head, tail) for path in paths]


#: The most ``search_files`` keeps of a file's start or end.
ENDS_MAX = 1 << 20

def _search_file(path: str, needle: bytes, largest: int, ignore_case: bool, head: int, tail: int
                 ) -> Union[OSError, SearchedFile]:
    try:
        fd = open_to_read(path)
    except OSError as e:
        return _bare(e)
    try:
        st = os.fstat(fd)
        identity = (st.st_dev, st.st_ino, st.st_size, st.st_mtime_ns, st.st_ctime_ns)
        regular = stat.S_ISREG(st.st_mode)
        if not regular or st.st_size > largest:
            return identity, regular, None, None
        first = read_span(fd, 0, head)
        lines, groups, after = find_hits(fd, needle, 0, st.st_size, ignore_case)
        part = (first, first_line_is_meta(first), lines, groups, after)
        return identity, regular, part, tail_start(fd, st.st_size, tail) if tail else None
    except OSError as e:
        return _bare(e)
    finally:
        os.close(fd)


def _bare(e: OSError) -> OSError:
    """`e` as the native core makes it: ``OSError(errno, strerror)`` (its subclass by the
    errno), or ``OSError(message)``; no file name."""
    return OSError(e.errno, e.strerror) if e.errno is not None else OSError(*e.args)


def tail_start(fd: int, size: int, length: int) -> Tuple[int, bytes]:
    """Where a search of the file grown past `size` starts (the start of its last line
    when that has no newline yet, else `size`), and its last min(`length`, `size`) bytes."""
    start = max(0, size - length)
    last = read_span(fd, start, size)
    if len(last) < size - start:
        raise OSError(f"the file ends before byte {size:,} (truncated while it was read)")
    if not last or last.endswith(b"\n"):
        return size, last
    at = start + last.rfind(b"\n") + 1
    while at == start and start > 0:  # a last line longer than `length`
        start = max(0, start - (1 << 20))
        seen = read_span(fd, start, at)
        at = start + seen.rfind(b"\n") + 1
    return at, last


def first_line_is_meta(head: bytes) -> bool:
    """Whether the first line of `head` that is not blank ends within it (with its
    ``\n``) and is a ``session-meta`` envelope as a scan reads it. False says only that
    this look cannot tell (``walk.first_line_problem`` looks closer)."""
    body = head.lstrip(BLANK_BYTES + b"\n")
    if not body:
        return False
    lead = len(head) - len(body)
    newline = head.find(b"\n", lead)
    if newline < 0:
        return False
    start = head.rfind(b"\n", 0, lead) + 1
    try:
        return parse_envelope(head[start:newline], start)[1] == "session-meta"
    except LineProblem:
        return False


def _refuse_empty_or_multiline(needle: bytes) -> None:
    if not needle or b"\n" in needle:
        raise ValueError("the text searched for must not be empty or hold a newline")


def line_groups(line: bytes, text: str, ignore_case: bool) -> int:
    """The bits of the ``GROUPS`` of the envelope on `line` in which `text` is."""
    try:
        value = decode_json(line, 0)
    except LineProblem:
        return NOT_JSON
    if not isinstance(value, dict):
        return 0
    return payload_groups(value.get("type"), value.get("payload"), text, ignore_case)


def text_of_needle(needle: bytes, ignore_case: bool) -> str:
    """The text whose written form (a JSON string's content) is `needle`, ASCII letters
    lowered with `ignore_case`. ValueError when `needle` is not one in UTF-8, or empty."""
    if not needle or b"\n" in needle:
        raise ValueError("the text searched for must not be empty or hold a newline")
    try:
        text = json.loads('"' + needle.decode("utf-8") + '"')
    except ValueError:
        raise ValueError("the text searched for is not a JSON string's content in UTF-8") from None
    if not isinstance(text, str):
        raise ValueError("the text searched for is not a JSON string's content in UTF-8")
    return _fold(text) if ignore_case else text


def _fold(text: str) -> str:
    """ASCII letters lowered, no other character changed (``bytes.lower`` folds ASCII
    only: 30x faster than a character at a time on CJK text)."""
    if text.isascii():
        return text.lower()
    return text.encode("utf-8", "surrogatepass").lower().decode("utf-8", "surrogatepass")


def payload_groups(type_: Any, payload: Any, text: str, ignore_case: bool) -> int:
    """The bits of the ``GROUPS`` of an envelope (its ``type`` and ``payload``) in which
    `text` (folded with `ignore_case`) is, by :func:`fields`."""
    found = 0
    for bit, value in fields(type_, payload):
        if not found & bit and any(leaf_holds(leaf, text, ignore_case) for leaf in _leaves(value)):
            found |= bit
    return found


def leaf_holds(leaf: Any, text: str, ignore_case: bool) -> bool:
    """Whether a string's characters, or a number as ``json.dumps`` writes it, hold `text`."""
    if not isinstance(leaf, str):
        leaf = _number_text(leaf)
    return text in (_fold(leaf) if ignore_case else leaf)


def _number_text(n: Any) -> str:
    if isinstance(n, float):
        return json.dumps(n)
    try:
        return str(n)
    except ValueError:  # past CPython's digit limit (3.11+): a chunk of digits at a time
        sign, n = ("-", -n) if n < 0 else ("", n)
        chunks = []
        while n:
            n, chunk = divmod(n, 10**1000)
            chunks.append(str(chunk).rjust(1000, "0"))
        return sign + "".join(reversed(chunks)).lstrip("0")


def fields(type_: Any, payload: Any) -> Iterator[Tuple[int, Any]]:
    """``(group bit, value)`` for the parts of an envelope's payload."""
    if not isinstance(payload, dict):
        return
    rest = dict(payload)
    if type_ == "message":
        yield (RESULTS if payload.get("role") == "tool" else CONTENT), payload.get("content")
        yield CONTENT, payload.get("name")
        yield ARGUMENTS, payload.get("tool_calls")
        for key in _MESSAGE_KEYS:
            rest.pop(key, None)
    elif type_ == "compaction":
        yield CONTENT, rest.pop("summary", None)
    elif type_ == "elision":
        items = rest.pop("items", None)
        yield CONTENT, [item.get("stub") for item in items if isinstance(item, dict)] if isinstance(items, list) else items
    elif type_ == "run-context":
        yield CONTENT, [rest.pop("sections", None), rest.pop("facts", None)]
    elif type_ == "tool-dispatched":
        yield ARGUMENTS, [rest.pop("tool", None), rest.pop("arguments", None)]
    elif type_ == "tool-settled":
        yield RESULTS, [rest.pop("error", None), rest.pop("reason", None)]
    yield EXTRAS, rest


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
