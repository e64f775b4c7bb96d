"""``Session.peek``: read what parses, write nothing, lock nothing, repair nothing (docs/FORMAT.md, "Reading without opening (peek)")."""

from __future__ import annotations

import os
import stat
import sys
from array import array
from typing import Any, Dict, List, Optional, Sequence, Tuple, Union

from . import _backend, _files, _index
from ._core import HistoryRead, IndexTable, Scanned, Span, SurveyCounts
from ._events import Concatenated, ShiftedSpans, TypesOf
from ._fold import dispatched_operation
from .messages import Event


def describe(line: int, offset: int, numbered: bool) -> str:
    return f"line {line} (byte {offset})" if numbered else f"byte {offset}"


def open_to_read(path: str) -> Union[Tuple[int, os.stat_result], str]:
    """A read-only descriptor of the regular file at `path` and its status, or why there
    is none (peek's ``error``). Nothing is locked; O_NONBLOCK: opening a FIFO planted at
    the path must not hang the viewer."""
    try:
        fd = _files.open_to_read(path)
    except OSError as e:
        return f"cannot open {path}: {e.strerror}"
    try:
        st = os.fstat(fd)
    except BaseException:
        os.close(fd)
        raise
    if not stat.S_ISREG(st.st_mode):
        os.close(fd)
        return f"{path} is not a regular file, so not a transcript"
    return fd, st


def read_history(
    path: str, keep_payloads: bool = True, *, end: Optional[int] = None, identity: Optional[Tuple[int, int]] = None,
) -> Optional[HistoryRead]:
    """``History.read``: the history of the envelopes ``peek(path)`` lists, folded by the
    core; None where peek lists none (its ``error``). With `end`, of the bytes before it
    only; with `identity`, None unless the file is still that one (a viewer's own peek)."""
    opened = open_to_read(path)
    if isinstance(opened, str):
        return None
    fd, st = opened
    try:
        if identity is not None and (st.st_dev, st.st_ino) != tuple(identity):
            return None
        size = st.st_size if end is None else min(end, st.st_size)
        return _backend.core.history(fd, size, keep_payloads, path=path)
    finally:
        os.close(fd)


def peek(
    path: str, *, offset: int = 0, identity: Optional[Tuple[int, int]] = None, survey: bool = False,
    spans: bool = False, index: bool = True, types: bool = False,
) -> Dict[str, Any]:
    """``Session.peek``; with `spans` (the viewer's) the result also has ``spans``: the
    ``(line, byte offset, length)`` of each envelope, lines counted from where it read;
    with `types` (stats'), ``types``: each envelope's type, read from no line the index
    knows the kind of.
    With `index`, a peek of the whole file takes what the side index kept for it holds
    (when it still describes the file) and scans only the bytes after it (a survey, only
    when no whole line follows the index; else the file is scanned whole)."""
    survey = bool(survey)  # any truthy value, on both cores
    if not isinstance(offset, int) or isinstance(offset, bool) or offset < 0:
        raise ValueError(f"offset must be an int >= 0, not {offset!r}")
    if survey and offset:
        raise ValueError(
            "survey=True needs the whole file: a compaction or a settle may refer to lines before "
            f"offset {offset}; peek with offset=0 to survey"
        )
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
    if survey:
        result["survey"] = _survey_of(None, [], [])
    if spans:
        result["spans"] = []
    opened = open_to_read(path)
    if isinstance(opened, str):
        result["error"] = opened
        return result
    fd, st = opened
    try:
        size = st.st_size
        ident = (st.st_dev, st.st_ino)
        start = offset
        if (identity is not None and tuple(identity) != ident) or size < offset:
            # Another file now (a repair renamed one over it) or shorter: read it all again.
            result["restarted"] = True
            start = 0
        table = _index.table(path, fd, st, survey) if index and start == 0 else None
        if table is not None:
            found = _backend.core.scan(fd, table.end, size, path=path)
            if not survey or not (found.events or found.problems):
                result = _indexed(result, table, found, size, ident, survey, spans)
                if types:
                    result["types"] = TypesOf(table.kinds, table.kind_table, result["envelopes"])
                return result
        found = _backend.core.scan(fd, start, size, want_survey=survey, path=path)
    finally:
        os.close(fd)
    end = found.end
    result.update(size=size, identity=ident, end=end, pending=size - end)
    numbered = start == 0
    notes: List[Tuple[int, str]] = [
        (off, f"{describe(line, off, numbered)}: {reason}; skipped") for line, off, _, reason in found.problems
    ]
    if start == 0:
        error = _first_line_error(found, size)
        if error is not None:
            result["error"] = error
            result["warnings"] = [text for _, text in notes]
            return result
        result["meta"] = found.events[0].payload
    for line, off in found.bad_roles:
        notes.append((off, f"{describe(line, off, numbered)}: message payload has no string role; skipped"))
    notes.sort(key=lambda n: n[0])
    result["envelopes"] = found.events
    if spans:
        result["spans"] = found.spans
    if types:
        result["types"] = TypesOf(b"", [], found.events)
    result["messages"] = found.messages
    result["warnings"] = [text for _, text in notes]
    if survey:
        result["survey"] = _survey_of(found.survey, found.events, found.spans)
    return result


def peek_through_index(path: str, unindexed_at_most: Optional[int] = None) -> Optional[Dict[str, Any]]:
    """A whole file's ``peek(path, spans=True)`` when a side index still describes it
    (and, with `unindexed_at_most`, no more bytes than that follow its end), with that
    index's table as ``table`` (a viewer's jumps read it); else None, having read nothing
    but the index and the bytes it checks (the viewer shows the file's end first then)."""
    opened = open_to_read(path)
    if isinstance(opened, str):
        return None
    fd, st = opened
    try:
        table = _index.table(path, fd, st, False)
        if table is None or (unindexed_at_most is not None and st.st_size - table.end > unindexed_at_most):
            return None
        found = _backend.core.scan(fd, table.end, st.st_size, path=path)
    finally:
        os.close(fd)
    result: Dict[str, Any] = {"path": path, "restarted": False}
    result = _indexed(result, table, found, st.st_size, (st.st_dev, st.st_ino), False, True)
    result["table"] = table
    return result


# Envelopes whose offsets the native side index hands over at a time: 8 MB, a few ms
# with the GIL held (the 10 GB transcript's 42 MB in one call held it 60 ms, while the
# viewer's page waited to be answered).
OFFSETS_PIECE = 1 << 20


def offsets_of(spans: Sequence[Span]) -> "array[int]":
    """The byte offsets of `spans` (peek's) as a compact array: from the native side
    index's table a piece at a time, else span by span."""
    index = getattr(spans, "_index", None)
    native = getattr(index, "offsets", None)
    out = array("q")
    if native is not None:
        for start in range(0, len(spans), OFFSETS_PIECE):
            out.frombytes(native(start, start + OFFSETS_PIECE))
        if sys.byteorder != "little":
            out.byteswap()
    else:
        out.extend(span[1] for span in spans)
    return out


def _indexed(
    result: Dict[str, Any], table: IndexTable, found: Scanned, size: int, ident: Tuple[int, int], survey: bool,
    spans: bool,
) -> Dict[str, Any]:
    """The peek of a whole file from its side index's table and a scan of the bytes after
    it (line numbers counted on from the index's lines)."""
    lines = table.lines
    notes: List[Tuple[int, str]] = [
        (off, f"{describe(line + lines, off, True)}: {reason}; skipped") for line, off, _, reason in found.problems
    ]
    for line, off in found.bad_roles:
        notes.append((off, f"{describe(line + lines, off, True)}: message payload has no string role; skipped"))
    notes.sort(key=lambda n: n[0])
    events = Concatenated(table.events, found.events)
    all_spans = Concatenated(table.spans, ShiftedSpans(found.spans, lines))
    result.update(size=size, identity=ident, end=found.end, pending=size - found.end)
    result["meta"] = table.meta
    result["envelopes"] = events
    if spans:
        result["spans"] = all_spans
    result["messages"] = Concatenated(table.messages, found.messages)
    result["warnings"] = [text for _, text in notes]
    if survey:
        result["survey"] = _survey_of(table.survey, events, all_spans)
    return result


def _survey_of(counts: Optional[SurveyCounts], events: Any, spans: Any) -> Dict[str, Any]:
    """``peek(..., survey=True)["survey"]`` from what the core counted (by envelope index)."""
    if counts is None:
        return {
            "counts": {}, "bytes": {}, "roles": {},
            "live_messages": None, "replay_problem": None, "pending_tool_operations": [], "rewound": {},
        }
    problem = None
    if counts.problem is not None:
        e: Event = events[counts.problem]
        line, off, _ = spans[counts.problem]
        if e.type == "rewind":
            to = e.payload.get("to-id", ())
            why = (
                f"to-id {to[:80]} names no message in the live conversation"
                if isinstance(to, str)
                else ("has no to-id" if to == () else "has a to-id that is neither a string nor null")
            )
        else:
            through = e.payload.get("replaces-through-id")
            why = (
                f"replaces-through-id {through[:80]} names no message in the live conversation"
                if isinstance(through, str)
                else "has no string replaces-through-id"
            )
        problem = f"{describe(line, off, True)}: {e.type} {e.id[:80]} {why}"
    pending = []
    for i, answered in counts.open:  # only these envelopes' payloads are built
        e = events[i]
        pending.append(dispatched_operation(e.id, e.ts, e.payload, "result-recorded" if answered else "dispatched"))
    return {
        "counts": {type_: lines for type_, lines, _ in counts.types},
        "bytes": {type_: size for type_, _, size in counts.types},
        "roles": dict(counts.roles),
        "live_messages": None if problem else counts.live,
        "replay_problem": problem,
        "pending_tool_operations": pending,
        # message (or summary) id -> the rewind that cut it, in the order they were cut
        "rewound": {events[m].id: events[r].id for m, r in counts.rewound},
    }


def _first_line_error(found: Scanned, size: int) -> Optional[str]:
    if size == 0:
        return "the file is empty"
    problems, spans, end = found.problems, found.spans, found.end
    first_problem = problems[0] if problems else None
    if found.first_type is not None and (first_problem is None or spans[0][1] < first_problem[1]):
        if found.first_type == "session-meta":
            return None
        return f"the first line is a {found.first_type[:40]} envelope, not a session-meta"
    if first_problem is not None:
        return f"the first line is not a session-meta envelope ({first_problem[3]})"
    if end < size:
        return "the first line is not complete yet"
    return "the file holds only blank lines"
