"""The lines of a file that hold a byte string: the reference of ``rust/search.rs``.

Lines start at offset 0 and after each ``\\n`` and run to their ``\\n`` (or the end of the
file). A call examines the lines that start in ``[start, end)`` (``start`` is a line
start), reading each in full, and answers the start offsets of those that contain
`needle` (at most `limit`) and where to go on from: the start of the first line it did
not examine. With `ignore_case` ASCII letters are folded (``bytes.lower``); other
characters match exactly. Reads are in blocks that end at a line end, as the native
core's are, so a long line is read whole.
"""

from __future__ import annotations

import os
import sys
from typing import List, Tuple

BLOCK = 4 << 20  # as rust/search.rs


def find_lines(
    fd: int, needle: bytes, start: int, end: int, ignore_case: bool = False, limit: int = sys.maxsize
) -> Tuple[List[int], int]:
    if not needle or b"\n" in needle:
        raise ValueError("the text searched for must not be empty or hold a newline")
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
