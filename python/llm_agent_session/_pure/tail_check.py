"""The tail check and the verbatim repair copy (docs/FORMAT.md, "Reading: the tail first"), in pure Python.

Works on bytes only, before anything is decoded: a crash can stop a line inside a
multi-byte character, and a reader that decodes first dies before it can repair.
"""

from __future__ import annotations

import os
from typing import Any, Optional, Tuple

from .. import _platform
from .._core import TailVerdict
from ..errors import CoreFailure
from .lines import (
    TOO_DEEP,
    TORN,
    LineProblem,
    classify,
    excerpt,
    first_line_span,
    is_blank,
    parse_envelope,
    too_deep_reason,
)

COPY_CHUNK = 1 << 20



def read_span(fd: int, start: int, size: int) -> bytes:
    """Bytes [start, size) of `fd`, or fewer if the file shrank meanwhile.

    pread into memory, never mmap: a file that shrinks under a mapping kills the
    reader with SIGBUS (a writer rolling back a failed append does exactly that), and
    Linux refuses to map an append-only (chattr +a) file opened for writing.
    """
    chunks = []
    offset = start
    while offset < size:
        chunk = _platform.pread(fd, min(1 << 30, size - offset), offset)
        if not chunk:
            break
        chunks.append(chunk)
        offset += len(chunk)
    return chunks[0] if len(chunks) == 1 else b"".join(chunks)


def line_number(buf: bytes, offset: int) -> int:
    return buf.count(b"\n", 0, offset) + 1


def last_line_span(buf: Any, end: int) -> Optional[Tuple[int, int]]:
    """(start, end) of the last non-blank line ending at or before `end`, or None."""
    pos = end
    while True:
        start = buf.rfind(b"\n", 0, pos) + 1
        if not is_blank(buf[start:pos]):
            return start, pos
        if start == 0:
            return None
        pos = start - 1


def check_first_line(buf: Any, size: int) -> Tuple[int, int]:
    """The span of the session-meta line, or CoreFailure: never repair what is not ours."""
    span = first_line_span(buf, size)
    if span is None:
        reason = "the file is empty" if size == 0 else "the file holds only blank lines"
        raise CoreFailure("not-a-transcript", 0, 0, reason)
    start, end, _ = span
    line = line_number(buf, start)
    try:
        _, type_, _, _ = parse_envelope(buf[start:end], start)
    except LineProblem as p:
        if p.kind == "version":
            raise CoreFailure("version", line, start, p.reason) from None
        raise CoreFailure(
            "not-a-transcript", line, start, f"the first line is not a session-meta envelope ({p.reason})"
        ) from None
    if type_ != "session-meta":
        raise CoreFailure(
            "not-a-transcript",
            line,
            start,
            f"the first line is a {type_[:40]} envelope, not a session-meta",
        )
    return start, end


def tail_check(fd: int, size: int) -> TailVerdict:
    """Decide what load must do to the end of the file; raise CoreFailure when it must refuse."""
    buf = read_span(fd, 0, size)
    return _tail_check(buf, len(buf))


def _tail_check(buf: Any, size: int) -> TailVerdict:
    first_start, _ = check_first_line(buf, size)
    last = last_line_span(buf, size)
    assert last is not None  # the first line is non-blank
    start, end = last
    whole_kind = "clean" if buf[size - 1 : size] == b"\n" else "no-newline"
    if start == first_start:
        return TailVerdict(kind=whole_kind, cut=size, line=0, excerpt=b"")
    raw = buf[start:end]
    verdict = classify(raw)
    if verdict not in (TOO_DEEP, TORN):
        return TailVerdict(kind=whole_kind, cut=size, line=0, excerpt=b"")  # a whole last line needs no number
    line = line_number(buf, start)
    if verdict == TOO_DEEP:
        raise CoreFailure("corrupt", line, start, too_deep_reason())
    prev = last_line_span(buf, start - 1)
    assert prev is not None  # the first line is before it
    p_start, p_end = prev
    if p_start != first_start:
        p_verdict = classify(buf[p_start:p_end])
        p_line = line_number(buf, p_start)
        if p_verdict == TOO_DEEP:
            raise CoreFailure("corrupt", p_line, p_start, too_deep_reason())
        if p_verdict == TORN:
            if b"\0" in buf[p_start:p_end] or b"\0" in raw:
                why = (
                    ", but zero bytes like these are the mark of a probable power loss "
                    "(data the OS had not yet written to disk)"
                )
            else:
                why = ", so this is damage, not a crash tail"
            raise CoreFailure(
                "corrupt",
                p_line,
                p_start,
                f"not a JSON value, and neither is the last line (line {line}); a crash tears "
                f"only the last line{why}",
            )
    return TailVerdict(kind="torn", cut=start, line=line, excerpt=excerpt(raw))


def copy_prefix(src_fd: int, dst_fd: int, length: int) -> None:
    """Copy bytes [0, length) of `src_fd` to `dst_fd` verbatim; OSError on failure."""
    offset = 0
    while offset < length:
        chunk = _platform.pread(src_fd, min(COPY_CHUNK, length - offset), offset)
        if not chunk:
            raise OSError(f"the file shrank during the repair copy (at byte {offset} of {length})")
        view = memoryview(chunk)
        while view:
            written = os.write(dst_fd, view)
            view = view[written:]
        offset += len(chunk)
