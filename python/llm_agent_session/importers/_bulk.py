"""Writing a new transcript fast: lines serialised here and written in large chunks to
the private temporary file that becomes OUT. The pure backend serialises with the
library's canonical encoder and envelope builder; the native one with the source
reader's ``encode`` (``_native.SourceReader``: the same bytes, the source's strings
copied as they were where their escapes are already canonical).

A Session append validates, copies and folds every payload and writes it with one
system call, which is right for a live agent and costs a whole import most of its time.
Here the payloads are built by the importer from parsed JSON, so the checks that can
fail are few (lone surrogates, numbers JSON has not, nesting past the write limit) and
are made per line; the references (compaction, rewind, settle) are kept valid by a small
model of the live ids, the fold's own stickiness rule included. The file is not read
back before it gets its name (that cost a third of an import): every line is the
encoder's, and the model is what the importer tests check, with ``check`` on every
file they import, damaged sources included."""

from __future__ import annotations

import os
import time
from typing import Any, Dict, List, Optional, Tuple

from .._compaction import compacted
from ..canonical import MAX_WRITE_DEPTH, dumps, envelope_line, new_id, sha256_digest
from ..errors import DanglingReference
from ..messages import message_extras, payload_marks_sticky
from ..session import dispatched_payload
from ._report import ImportReport
from ._writer import CHECKPOINT, Writer, _storable

_FLUSH = 1 << 20


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


class BulkWriter(Writer):
    """Appends to the file ``fd`` (opened for appending, after its meta line)."""

    def __init__(self, fd: int, report: ImportReport, reader: Any = None) -> None:
        super().__init__(report)
        self.fd = fd
        self.buf: List[bytes] = []
        self.size = 0
        self.clock = _Clock()
        # The native reader's serialiser (the bytes the reference writes, the source's
        # strings copied as they were); None on the pure backend.
        self.encode = None if reader is None else reader.encode
        self.live: List[Tuple[str, bool]] = []  # (message id, sticky), as replay would fold them
        self.sections: Dict[str, str] = {}  # run-context digest -> the id of the line carrying its text

    def message_ids(self) -> List[str]:
        return [id_ for id_, _ in self.live]

    # -- lines ---------------------------------------------------------------------------------

    def _line(self, type_: str, payload: Dict[str, Any], id_: Optional[str] = None) -> str:
        """Serialise and buffer one envelope; TypeError/ValueError (nothing buffered) if it cannot be stored."""
        encoded = self.encode(type_, payload, id_) if self.encode is not None else None
        if encoded is not None:
            id_, line = encoded
        else:  # the pure backend, or a payload the native encoder leaves to the reference
            text = dumps(payload)  # ValueError on NaN or infinity
            # Fewer brackets than the limit (strings' own included) cannot nest past it.
            if text.count("{") + text.count("[") >= MAX_WRITE_DEPTH and _too_deep(payload):
                raise ValueError(f"nested deeper than {MAX_WRITE_DEPTH} levels")
            id_ = id_ or new_id()
            line = envelope_line(id_, type_, self.clock(), text)  # UnicodeEncodeError (a ValueError) on lone surrogates
        self.buf.append(line)
        self.size += len(line)
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

    def _message(self, message: Dict[str, Any], extra: Dict[str, Any]) -> str:
        payload = message_extras(extra)
        payload.update(message)
        if not isinstance(payload.get("role"), str):
            raise TypeError("message role must be str")
        id_ = self._line("message", payload)
        self.live.append((id_, payload_marks_sticky(payload)))  # the fold's own rule
        return id_

    def _dispatch(self, call_id: str, tool: str, arguments: str) -> str:
        return self._line("tool-dispatched", dispatched_payload(call_id, tool, arguments))

    def _settle(self, op_id: str, outcome: str) -> str:
        return self._line("tool-settled", {"op-id": op_id, "outcome": outcome})

    def _index(self, id_: str, what: str) -> int:
        for i in range(len(self.live) - 1, -1, -1):
            if self.live[i][0] == id_:
                return i
        raise DanglingReference(f"{what} names {id_}, which is not a live message", reason="not live")

    def _compaction(self, summary: str, through: str, tokens_before: int, tokens_after: int) -> str:
        i = self._index(through, "compaction")
        payload = {"summary": summary, "replaces-through-id": through, "tokens-before": tokens_before,
                   "tokens-after": tokens_after, "fallback": False}
        id_ = self._line("compaction", payload)
        self.live = compacted(self.live, i, (id_, False), (entry[1] for entry in self.live))
        return id_

    def _rewind(self, to_id: Optional[str]) -> Optional[str]:
        i = -1 if to_id is None else self._index(to_id, "rewind")
        id_ = self._line("rewind", {"to-id": to_id})
        del self.live[i + 1:]
        return id_

    def _run_context(self, sections: List[Tuple[str, str]], facts: List[Tuple[str, Any]]) -> str:
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
        self._line("run-context", {"sections": out, "facts": [[k, v] for k, v in facts]}, id_)
        self.sections.update(here)
        return id_

    def checkpoint(self, payload: Dict[str, Any]) -> None:
        self._line(CHECKPOINT, _storable(payload))
        self.report["written"] += 1
        self.flush()
