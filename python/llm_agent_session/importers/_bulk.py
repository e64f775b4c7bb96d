"""Writing an import's envelopes fast: lines serialised here and written in large chunks
to the file (the private temporary file that becomes a new OUT, or the end of the OUT an
earlier import made). The pure backend serialises with the library's canonical encoder
and envelope builder; the native one with the source reader's ``encode``
(``_native.SourceReader``: the same bytes, the source's strings copied as they were where
their escapes are already canonical).

A Session append validates, copies and folds every payload and writes it with one
system call, which is right for a live agent and costs a whole import most of its time.
Here the records come from a plan (``_plan``) whose model of the fold has already kept
every reference valid (compaction, rewind, settle); a record's positions become the ids
of the lines written for them. What can still fail is per line (lone surrogates,
numbers JSON has not, nesting past the write limit): such a record is made storable
(U+FFFD for a lone surrogate, the deep part as JSON text, null for a number JSON has
not) and written with a warning. The file is not read back (that cost a third of an
import): every line is the encoder's, and the importer tests ``check`` every file they
import, damaged sources included."""

from __future__ import annotations

import os
import re
import time
from typing import Any, Dict, List, Optional, Tuple

from ..canonical import MAX_WRITE_DEPTH, dumps, envelope_line, new_id, sha256_digest
from ..session import dispatched_payload
from ._plan import COMPACTION, DISPATCHED, MESSAGE, REWIND, RUN_CONTEXT, SETTLED, Record
from ._report import ImportReport, reason_of
from ._source import json_text

_FLUSH = 1 << 20
_SURROGATE = re.compile("[\ud800-\udfff]")
_DEEP = 90  # below the library's 100-level write limit, leaving room for the envelope


def storable(value: Any, depth: int = 0) -> Any:
    """The value with lone surrogates replaced and anything nested too deep kept as JSON text."""
    if isinstance(value, str):
        try:
            value.encode("utf-8")
            return value
        except UnicodeEncodeError:
            return _SURROGATE.sub("\ufffd", value)
    if isinstance(value, (dict, list, tuple)) and depth >= _DEEP:
        return storable(json_text(value, default=str), 0)
    if isinstance(value, dict):
        return {storable(k): storable(v, depth + 1) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [storable(v, depth + 1) for v in value]
    if isinstance(value, float) and (value != value or value in (float("inf"), float("-inf"))):
        return None  # 1e999 parses to inf; JSON has no such number
    return value


class _Clock:
    """``now_ts()`` without a strftime per line: the second's text is reused."""

    def __init__(self) -> None:
        self._second = -1
        self._prefix = ""

    def __call__(self) -> str:
        ns = time.time_ns()
        second, micros = divmod(ns // 1000, 1_000_000)
        if second != self._second:
            self._second = second
            self._prefix = time.strftime("%Y-%m-%dT%H:%M:%S", time.gmtime(second))
        return f"{self._prefix}.{micros:06d}Z"


def _too_deep(value: Any) -> bool:
    """Whether containers nest past the library's write limit (the payload itself is level 1)."""
    stack: List[Tuple[Any, int]] = [(value, 1)]
    while stack:
        v, depth = stack.pop()
        if depth > MAX_WRITE_DEPTH:
            return True
        items = v.values() if type(v) is dict else v
        for item in items:
            t = type(item)
            if t is dict or t is list:
                stack.append((item, depth + 1))
    return False


class LineWriter:
    """Appends envelopes to the file ``fd`` (opened for appending).

    ``ids`` maps a plan position to the id of the line written for it (or, for an OUT an
    earlier import made, of the line already there that stands for it); ``sections``
    maps a run-context section's digest to the line that carries its text."""

    def __init__(self, fd: int, report: ImportReport, reader: Any = None,
                 sections: Optional[Dict[str, str]] = None) -> None:
        self.fd = fd
        self.report = report
        self.buf: List[bytes] = []
        self.size = 0
        self.clock = _Clock()
        # The native reader's serialiser (the bytes the reference writes, the source's
        # strings copied as they were); None on the pure backend.
        self.encode = None if reader is None else reader.encode
        self.ids: Dict[int, str] = {}
        self.sections: Dict[str, str] = dict(sections or {})

    # -- lines ---------------------------------------------------------------------------------

    def line(self, type_: str, payload: Dict[str, Any], ts: Optional[str] = None, id_: Optional[str] = None) -> str:
        """Serialise and buffer one envelope (``ts`` None: the import's own time);
        TypeError/ValueError (nothing buffered) if it cannot be stored."""
        encoded = self.encode(type_, payload, id_, ts) if self.encode is not None else None
        if encoded is not None:
            id_, line = encoded
        else:  # the pure backend, or a payload the native encoder leaves to the reference
            text = dumps(payload)  # ValueError on NaN or infinity
            # Fewer brackets than the limit (strings' own included) cannot nest past it.
            if text.count("{") + text.count("[") >= MAX_WRITE_DEPTH and _too_deep(payload):
                raise ValueError(f"nested deeper than {MAX_WRITE_DEPTH} levels")
            id_ = id_ or new_id()
            line = envelope_line(id_, type_, ts or self.clock(), text)  # UnicodeEncodeError (a ValueError) on lone surrogates
        self.buf.append(line)
        self.size += len(line)
        self.report["written"] += 1
        if self.size >= _FLUSH:
            self.flush()
        return id_

    def flush(self) -> None:
        data = b"".join(self.buf)
        self.buf, self.size = [], 0
        view = memoryview(data)
        while view:
            view = view[os.write(self.fd, view):]

    # -- records --------------------------------------------------------------------------------

    def write(self, at: int, record: Record) -> str:
        """Write the plan's record number ``at``; its id is ``ids[at]`` from then on."""
        try:
            id_ = self._write(record, record.body)
        except (TypeError, ValueError) as first:
            # Raises again only for what no source gives (parsed JSON is always storable so);
            # the import then fails and what it wrote is rolled back.
            id_ = self._write(record, storable(record.body))
            self.report.warn(f"{record.kind}: a {record.type} made storable ({reason_of(first)})")
        self.ids[at] = id_
        return id_

    def dispatched_payload(self, body: Any) -> Dict[str, Any]:
        """The ``tool-dispatched`` payload of a dispatch record's body."""
        try:
            return dispatched_payload(body[0], body[1], body[2])
        except (TypeError, ValueError):
            safe = storable(list(body))
            return dispatched_payload(safe[0], safe[1], safe[2])

    def _write(self, record: Record, body: Any) -> str:
        kind, ts, ids = record.type, record.ts, self.ids
        if kind == MESSAGE:
            return self.line(MESSAGE, body, ts)
        if kind == DISPATCHED:
            return self.line(DISPATCHED, dispatched_payload(body[0], body[1], body[2]), ts)
        if kind == SETTLED:
            return self.settle(ids[body[0]], body[1], body[2], ts)
        if kind == COMPACTION:
            summary, through, before, after = body
            payload = {"summary": summary, "replaces-through-id": ids[through], "fallback": False}
            # A count the source does not state is left out, never written as 0.
            if before is not None:
                payload["tokens-before"] = before
            if after is not None:
                payload["tokens-after"] = after
            return self.line(COMPACTION, payload, ts)
        if kind == REWIND:
            return self.rewind(None if body is None else ids[body], ts)
        if kind == RUN_CONTEXT:
            return self._run_context(body[0], body[1], ts)
        raise ValueError(f"no such record type {kind!r}")  # a bug in an importer

    def settle(self, op_id: str, outcome: str, reason: Optional[str] = None, ts: Optional[str] = None) -> str:
        payload = {"op-id": op_id, "outcome": outcome}
        if reason is not None:
            payload["reason"] = reason
        return self.line(SETTLED, payload, ts)

    def rewind(self, to_id: Optional[str], ts: Optional[str] = None) -> str:
        return self.line(REWIND, {"to-id": to_id}, ts)

    def _run_context(self, sections: List[Tuple[str, str]], facts: List[Tuple[str, Any]], ts: Optional[str]) -> str:
        id_ = new_id()
        out = []
        here: Dict[str, str] = {}
        for name, text in sections:
            digest = sha256_digest(text.encode("utf-8"))
            if digest in self.sections:
                out.append({"name": name, "digest": digest, "rendered-in": self.sections[digest]})
            elif digest in here:
                out.append({"name": name, "digest": digest, "rendered-in": id_})
            else:
                here[digest] = id_
                out.append({"name": name, "digest": digest, "text": text})
        self.line(RUN_CONTEXT, {"sections": out, "facts": [[k, v] for k, v in facts]}, ts, id_)
        self.sections.update(here)
        return id_
