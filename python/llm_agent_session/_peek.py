"""``Session.peek``: read what parses, write nothing, lock nothing, repair nothing (SPEC 5)."""

from __future__ import annotations

import os
from typing import Any, Dict, List, Optional, Tuple

from . import _backend
from ._pure.fold import message_from_payload
from .messages import Event, Message


def describe(line: int, offset: int, numbered: bool) -> str:
    return f"line {line} (byte {offset})" if numbered else f"byte {offset}"


def peek(path: str, *, offset: int = 0, identity: Optional[Tuple[int, int]] = None) -> Dict[str, Any]:
    if not isinstance(offset, int) or isinstance(offset, bool) or offset < 0:
        raise ValueError(f"offset must be an int >= 0, not {offset!r}")
    result: Dict[str, Any] = {
        "path": path,
        "size": 0,
        "meta": {},
        "envelopes": [],
        "messages": [],
        "warnings": [],
        "end": 0,
        "pending": 0,
        "identity": None,
        "restarted": False,
    }
    try:
        fd = os.open(path, os.O_RDONLY | os.O_CLOEXEC)
    except OSError as e:
        result["error"] = f"cannot open {path}: {e.strerror}"
        return result
    try:
        st = os.fstat(fd)
        size = st.st_size
        ident = (st.st_dev, st.st_ino)
        start = offset
        if (identity is not None and tuple(identity) != ident) or size < offset:
            # Another file now (a repair renamed one over it) or shorter: read it all again.
            result["restarted"] = True
            start = 0
        events, spans, problems, end = _backend.core.scan(fd, start, size)
    finally:
        os.close(fd)
    result.update(size=size, identity=ident, end=end, pending=size - end)
    numbered = start == 0
    notes: List[Tuple[int, str]] = [
        (off, f"{describe(line, off, numbered)}: {reason}; skipped") for line, off, _, reason in problems
    ]
    if start == 0:
        error = _first_line_error(events, spans, problems, size, end)
        if error is not None:
            result["error"] = error
            result["warnings"] = [text for _, text in notes]
            return result
        result["meta"] = events[0].payload
    messages: List[Message] = []
    for event, (line, off, _) in zip(events, spans):
        if event.type == "message":
            if isinstance(event.payload.get("role"), str):
                messages.append(message_from_payload(event.payload))
            else:
                notes.append((off, f"{describe(line, off, numbered)}: message payload has no string role; skipped"))
    notes.sort(key=lambda n: n[0])
    result["envelopes"] = events
    result["messages"] = messages
    result["warnings"] = [text for _, text in notes]
    return result


def _first_line_error(
    events: List[Event], spans: List[Tuple[int, int, int]], problems: List[Any], size: int, end: int
) -> Optional[str]:
    if size == 0:
        return "the file is empty"
    first_problem = problems[0] if problems else None
    if events and (first_problem is None or spans[0][1] < first_problem[1]):
        if events[0].type == "session-meta":
            return None
        return f"the first line is a {events[0].type[:40]} envelope, not a session-meta"
    if first_problem is not None:
        return f"the first line is not a session-meta envelope ({first_problem[3]})"
    if end < size:
        return "the first line is not complete yet"
    return "the file holds only blank lines"
