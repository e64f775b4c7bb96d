"""Writing an import: one Session, the tool-call bookkeeping that pairs each call with its
answer, the checkpoint that makes a later import append only what is new, and the
all-or-nothing publication of a new transcript.

A record the library refuses (a lone surrogate, nesting too deep) is made storable
(U+FFFD, the deep part as JSON text) and written with a warning; anything else it
refuses is reported as skipped. Nothing here raises on source content.
"""

from __future__ import annotations

import hashlib
import json
import os
import re
from typing import Any, Dict, List, Mapping, Optional, Sequence, Set, Tuple

from .. import Session, TranscriptError
from ._report import ImportReport, reason_of

CHECKPOINT = "import-checkpoint"  # an envelope type of its own: kept in events, skipped by replay
_SURROGATE = re.compile("[\ud800-\udfff]")
_DEEP = 90  # below the library's 100-level write limit, leaving room for the envelope


def source_digest(data: bytes, end: int) -> str:
    return "sha256:" + hashlib.sha256(memoryview(data)[:end]).hexdigest()


def _storable(value: Any, depth: int = 0) -> Any:
    """The value with lone surrogates replaced and anything nested too deep kept as JSON text."""
    if isinstance(value, str):
        try:
            value.encode("utf-8")
            return value
        except UnicodeEncodeError:
            return _SURROGATE.sub("\ufffd", value)
    if isinstance(value, (dict, list, tuple)) and depth >= _DEEP:
        return _storable(json.dumps(value, ensure_ascii=False, default=str), 0)
    if isinstance(value, dict):
        return {_storable(k): _storable(v, depth + 1) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [_storable(v, depth + 1) for v in value]
    if isinstance(value, float) and (value != value or value in (float("inf"), float("-inf"))):
        return None  # 1e999 parses to inf; JSON has no such number
    return value


class Writer:
    """Appends records; ``kind`` names the source record type for the report.

    The records and their tool bookkeeping live here; how an envelope reaches the file
    is the subclass's: :class:`SessionWriter` through a loaded Session's appends, and
    ``_bulk.BulkWriter`` (a new transcript) by serialising lines itself.
    """

    def __init__(self, report: ImportReport) -> None:
        self.report = report
        self.pending: Dict[str, str] = {}  # call id -> op id, dispatched and not settled
        self.dispatched: Set[str] = set()  # every call id ever dispatched here

    # -- what a subclass provides -------------------------------------------------------------

    def message_ids(self) -> List[str]:
        raise NotImplementedError

    def _message(self, message: Dict[str, Any], extra: Dict[str, Any]) -> str:
        raise NotImplementedError

    def _dispatch(self, call_id: str, tool: str, arguments: str) -> str:
        raise NotImplementedError

    def _settle(self, op_id: str, outcome: str) -> str:
        raise NotImplementedError

    def _compaction(self, summary: str, through: str, tokens_before: int, tokens_after: int) -> str:
        raise NotImplementedError

    def _rewind(self, to_id: Optional[str]) -> Optional[str]:
        raise NotImplementedError

    def _run_context(self, sections: List[Tuple[str, str]], facts: List[Tuple[str, Any]]) -> str:
        raise NotImplementedError

    def checkpoint(self, payload: Dict[str, Any]) -> None:
        raise NotImplementedError

    # -- the one append path ----------------------------------------------------------------

    def _try(self, kind: str, what: str, call: Any, *args: Any) -> Optional[str]:
        try:
            id_ = call(*args)
        except (TypeError, ValueError) as first:
            try:
                id_ = call(*_storable(list(args)))
            except (TypeError, ValueError, TranscriptError) as e:
                self.report.skipped(kind, f"{what} cannot be stored: {reason_of(e)}")
                return None
            self.report.warn(f"{kind}: {what} made storable ({reason_of(first)})")
        except TranscriptError as e:
            self.report.skipped(kind, f"{what} refused: {reason_of(e)}")
            return None
        if id_ is None:
            return None
        self.report["written"] += 1
        return str(id_)

    @property
    def last_message_id(self) -> Optional[str]:
        ids = self.message_ids()
        return ids[-1] if ids else None

    # -- records ------------------------------------------------------------------------------

    def message(self, kind: str, message: Mapping[str, Any], extra: Optional[Mapping[str, Any]] = None) -> Optional[str]:
        return self._try(kind, "message", self._message, dict(message), dict(extra or {}))

    def assistant(
        self, kind: str, content: Any, calls: Sequence[Tuple[str, str, str]], extra: Mapping[str, Any]
    ) -> Optional[str]:
        """An assistant message with its tool calls ((id, name, arguments JSON text)), each
        then dispatched: a call nothing answers stays pending in state ``dispatched``."""
        msg: Dict[str, Any] = {"role": "assistant", "content": content}
        if calls:
            msg["tool_calls"] = [
                {"id": cid, "type": "function", "function": {"name": name, "arguments": args}}
                for cid, name, args in calls
            ]
        id_ = self.message(kind, msg, extra)
        if id_ is None:
            return None
        for cid, name, args in calls:
            if cid in self.dispatched:
                if cid not in self.pending:  # (a pending one: this message written again after a rewind)
                    self.report.warn(f"{kind}: tool call {cid[:80]} appears twice; dispatched once")
                continue
            op = self._try(kind, "tool call", self._dispatch, cid, name, args)
            if op is not None:
                self.dispatched.add(cid)
                self.pending[cid] = op
        return id_

    def tool_result(
        self, kind: str, call_id: str, content: Any, failed: bool, extra: Mapping[str, Any]
    ) -> Optional[str]:
        """The tool message answering ``call_id``, then the settle of its operation."""
        id_ = self.message(kind, {"role": "tool", "tool_call_id": call_id, "content": content}, extra)
        if id_ is None:
            return None
        op = self.pending.pop(call_id, None)
        if op is None:
            why = "answered twice" if call_id in self.dispatched else "answers no tool call of the live conversation"
            self.report.warn(f"{kind}: the result for {call_id[:80]} {why}; kept as a tool message, nothing settled")
        else:
            self._try(kind, "tool settle", self._settle, op, "failed" if failed else "completed")
        return id_

    def compaction(self, kind: str, summary: str, tokens_before: int, tokens_after: int, extra: Mapping[str, Any]) -> Optional[str]:
        """A compaction of everything so far; with nothing to compact, the summary as a user message."""
        through = self.last_message_id
        if through is None:
            return self.message(kind, {"role": "user", "content": summary}, dict(extra, **{"compact-summary": True}))
        return self._try(kind, "compaction", self._compaction, summary, through, tokens_before, tokens_after)

    def rewind(self, kind: str, to_id: Optional[str]) -> Optional[str]:
        """A rewind (SPEC 10.1) to the live message ``to_id``; None (reported) if refused."""
        return self._try(kind, "rewind", self._rewind, to_id)

    def run_context(self, kind: str, sections: List[Tuple[str, str]], facts: List[Tuple[str, Any]]) -> Optional[str]:
        return self._try(kind, "run context", self._run_context, sections, facts)


class SessionWriter(Writer):
    """Appends through an open Session (an import that continues an earlier one)."""

    def __init__(self, session: Session, report: ImportReport) -> None:
        super().__init__(report)
        self.session = session
        for ev in session.events:
            if ev.type == "tool-dispatched":
                call = ev.payload.get("call-id")
                if isinstance(call, str):
                    self.dispatched.add(call)
        for op in session.pending_tool_operations():
            self.pending[op.call_id] = op.op_id

    def message_ids(self) -> List[str]:
        return self.session.message_ids

    def message_sources(self) -> Dict[str, Any]:
        """Each message envelope's ``source-uuid`` extra (where a Claude Code message came from)."""
        return {ev.id: ev.payload.get("source-uuid") for ev in self.session.events if ev.type == "message"}

    def _message(self, message: Dict[str, Any], extra: Dict[str, Any]) -> str:
        return self.session.append_message(message, extra)

    def _dispatch(self, call_id: str, tool: str, arguments: str) -> str:
        return self.session.append_tool_dispatched(call_id, tool, arguments)

    def _settle(self, op_id: str, outcome: str) -> str:
        return self.session.append_tool_settled(op_id, outcome)

    def _compaction(self, summary: str, through: str, tokens_before: int, tokens_after: int) -> str:
        return self.session.append_compaction(summary, through, tokens_before, tokens_after)

    def _rewind(self, to_id: Optional[str]) -> Optional[str]:
        return self.session.append_rewind(to_id)

    def _run_context(self, sections: List[Tuple[str, str]], facts: List[Tuple[str, Any]]) -> str:
        return self.session.append_run_context(sections, facts)

    def checkpoint(self, payload: Dict[str, Any]) -> None:
        # Not a message or any SPEC record: an envelope type of its own, which every reader
        # keeps in events and replay skips (SPEC 2: unknown types replay as far as understood).
        self.session._append(CHECKPOINT, _storable(payload), "import checkpoint")
        self.report["written"] += 1


# -- where the output goes --------------------------------------------------------------------


def last_checkpoint(session: Session) -> Tuple[Optional[Dict[str, Any]], int]:
    """The payload of the last checkpoint and how many envelopes follow it."""
    events = session.events
    for back, ev in enumerate(reversed(events)):
        if ev.type == CHECKPOINT:
            return dict(ev.payload), back
    return None, len(events)


def temp_path_for(out: str) -> str:
    head, name = os.path.split(os.path.abspath(out))
    return os.path.join(head, f".{name}.importing-{os.getpid()}")


def publish(temp: str, out: str) -> None:
    """Give the finished transcript its name; never over an existing file."""
    try:
        os.link(temp, out)
    finally:
        os.unlink(temp)
