"""Streaming envelope parsing: the strict replay (load) and the lenient scan (peek, salvage)."""

from __future__ import annotations

from typing import Any, Dict, List, Tuple

from .._core import Problem, Span
from .._fold import FoldProblem, FoldState, duplicate_reason
from ..errors import CoreFailure
from ..messages import Event
from .lines import LineProblem, is_blank, parse_envelope
from .tail_check import read_span


def replay(fd: int, size: int) -> Tuple[FoldState, List[Event]]:
    """Parse and fold every line of the first `size` bytes of `fd`, or raise CoreFailure."""
    buf = read_span(fd, 0, size)
    return _replay(buf, len(buf))


def _replay(buf: Any, size: int) -> Tuple[FoldState, List[Event]]:
    state = FoldState()
    events: List[Event] = []
    seen: Dict[str, int] = {}  # id -> index in events: duplicates, and Session.message_extra
    pos = 0
    line_no = 0
    find = buf.find
    while pos < size:
        nl = find(b"\n", pos)
        end = size if nl == -1 else nl
        line_no += 1
        raw = buf[pos:end]
        if not is_blank(raw):
            try:
                id_, type_, ts, payload = parse_envelope(raw, pos)
            except LineProblem as p:
                if not events and p.kind != "version":
                    raise CoreFailure(
                        "not-a-transcript",
                        line_no,
                        pos,
                        f"the first line is not a session-meta envelope ({p.reason})",
                    ) from None
                raise CoreFailure(p.kind, line_no, pos, p.reason) from None
            if not events:
                if type_ != "session-meta":
                    raise CoreFailure(
                        "not-a-transcript",
                        line_no,
                        pos,
                        f"the first line is a {type_[:40]} envelope, not a session-meta",
                    )
                state.meta = payload
            if id_ in seen:
                raise CoreFailure("corrupt", line_no, pos, duplicate_reason(id_))
            seen[id_] = len(events)
            try:
                state.check(type_, payload)
            except FoldProblem as p:
                raise CoreFailure(p.kind, line_no, pos, p.reason) from None
            state.apply(id_, type_, ts, payload)
            events.append(Event(id_, type_, ts, 1, payload))
        pos = end + 1
    if not events:
        reason = "the file is empty" if size == 0 else "the file holds only blank lines"
        raise CoreFailure("not-a-transcript", 0, 0, reason)
    state.envelope_at = seen
    return state, events


def scan(
    fd: int, start: int, size: int, final_line: bool = False
) -> Tuple[List[Event], List[Span], List[Problem], int]:
    """Parse what parses in bytes [start, size): lenient, no fold.

    Returns (events, spans, problems, end): line numbers count from `start` (1 = the
    first line read); offsets are file offsets; `end` is the offset just past the last
    ``\\n``. Bytes after it are an unfinished line, left alone unless `final_line` asks
    to parse them too.
    """
    return _scan(read_span(fd, start, size), start, final_line)


def _scan(buf: bytes, base: int, final_line: bool) -> Tuple[List[Event], List[Span], List[Problem], int]:
    events: List[Event] = []
    spans: List[Span] = []
    problems: List[Problem] = []
    size = len(buf)
    end = buf.rfind(b"\n") + 1
    stop = size if final_line else end
    pos = 0
    line_no = 0
    find = buf.find
    while pos < stop:
        nl = find(b"\n", pos, stop)
        line_end = stop if nl == -1 else nl
        line_no += 1
        raw = buf[pos:line_end]
        if not is_blank(raw):
            try:
                id_, type_, ts, payload = parse_envelope(raw, base + pos)
            except LineProblem as p:
                problems.append((line_no, base + pos, line_end - pos, p.reason))
            else:
                events.append(Event(id_, type_, ts, 1, payload))
                spans.append((line_no, base + pos, line_end - pos))
        pos = line_end + 1
    return events, spans, problems, base + end
