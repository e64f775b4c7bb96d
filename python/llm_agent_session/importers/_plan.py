"""What an import writes, decided before a byte is written: the records one import of the
source makes, in order, and the live messages and pending operations they leave.

An importer reads its source from the first line every time and hands each record to a
:class:`Planner`, which keeps the tool-call bookkeeping (each call dispatched once, each
answer settling its call) and a model of the fold (live messages, stickiness, compaction,
rewinds, pending operations) so that every reference it records is valid. A record
names other records by their position in the plan; ``_bulk.LineWriter`` gives them ids
as it writes them. Because the plan of a source depends on nothing but the source, the
plan of the part an earlier import read can be made again and compared with the plan of
the whole (``_reconcile``): that is how an import that resumes gives what one import of
the whole source gives.

Nothing here raises on source content: a record the fold would refuse is reported as
skipped, and the importer goes on.
"""

from __future__ import annotations

from typing import Any, Dict, List, Mapping, NamedTuple, Optional, Sequence, Set, Tuple

from .._compaction import compacted
from ..messages import message_extras, payload_marks_sticky
from ._report import ImportReport
from ._source_time import source_time

MESSAGE = "message"
DISPATCHED = "tool-dispatched"
SETTLED = "tool-settled"
COMPACTION = "compaction"
REWIND = "rewind"
RUN_CONTEXT = "run-context"


class Record(NamedTuple):
    """One envelope to write. ``body`` by ``type``:

    - ``message``: the payload (the message's keys over its extras);
    - ``tool-dispatched``: ``(call id, tool, arguments as JSON text)``;
    - ``tool-settled``: ``(position of the dispatch, outcome, reason or None)``;
    - ``compaction``: ``(summary, position of the last message it replaces, tokens
      before, tokens after)`` (a count the source does not state is None);
    - ``rewind``: the position of the message the live conversation goes back to, or None;
    - ``run-context``: ``(sections [(name, text)], facts [(name, value)])``.

    ``ts`` is the source record's time in the line format, None where the source has
    none (the import's own time is written then); ``kind`` the source record type."""

    type: str
    body: Any
    ts: Optional[str]
    kind: str


ROLLED_BACK = ("the source went back to before the message that made this call (a rollback) while the call "
               "had no result; whether it ran is not known")

Call = Tuple[str, str, str, Any]  # (call id, tool name, arguments JSON text, source time)


class Model:
    """The live messages and pending operations a list of records leaves, folded as
    replay folds them: ``live`` holds (position, sticky) of each live message (a
    compaction's summary is the compaction's own position), ``pending`` maps the
    position of each unsettled dispatch to its call id."""

    def __init__(self) -> None:
        self.live: List[Tuple[int, bool]] = []
        self.pending: Dict[int, str] = {}

    def position(self, at: int) -> Optional[int]:
        """Where the record ``at`` is in the live list (None: not live)."""
        live = self.live
        for i in range(len(live) - 1, -1, -1):  # references are nearly always to the last few
            if live[i][0] == at:
                return i
        return None

    def apply(self, at: int, record: Record) -> None:
        """Fold in ``record``, the plan's record number ``at`` (its references already checked)."""
        kind, body = record.type, record.body
        if kind == MESSAGE:
            self.live.append((at, payload_marks_sticky(body)))
        elif kind == DISPATCHED:
            self.pending[at] = body[0]
        elif kind == SETTLED:
            del self.pending[body[0]]
        elif kind == COMPACTION:
            cut = self.position(body[1])
            assert cut is not None
            self.live = compacted(self.live, cut, (at, False), (sticky for _, sticky in self.live))
        elif kind == REWIND:
            cut = -1 if body is None else self.position(body)
            assert cut is not None
            del self.live[cut + 1 :]


def folded(records: Sequence[Record], upto: int) -> Model:
    """The model after the first ``upto`` records."""
    model = Model()
    for at in range(upto):
        model.apply(at, records[at])
    return model


class Planner:
    """The records of one import, through the calls an importer makes for what it reads.

    Every method returns the position of the record it added (the id the importer holds
    on to), or None where the record was refused (reported as skipped)."""

    def __init__(self, report: ImportReport) -> None:
        self.report = report
        self.records: List[Record] = []
        self.model = Model()
        self.pending: Dict[str, int] = {}  # call id -> its dispatch, not yet settled
        self.dispatched: Set[str] = set()  # every call id dispatched in this plan
        self.odd_times = 0
        self.first_odd_time: Any = None

    # -- the plan ------------------------------------------------------------------------------

    def _add(self, record: Record) -> int:
        at = len(self.records)
        self.records.append(record)
        self.model.apply(at, record)
        return at

    def _time(self, value: Any) -> Optional[str]:
        if value is None:
            return None
        ts = source_time(value)
        if ts is None:
            if not self.odd_times:
                self.first_odd_time = value
            self.odd_times += 1
        return ts

    def finish(self) -> List[Record]:
        """The records; a warning if some source times could not be read."""
        if self.odd_times:
            first = repr(self.first_odd_time)
            self.report.warn(
                f"{self.odd_times} source time(s) are not times (the first: {first[:80]}); those envelopes "
                "carry the import's own time, and a message keeps the source's text as source-ts"
            )
        return self.records

    def message_ids(self) -> List[int]:
        """The live messages, in order."""
        return [at for at, _ in self.model.live]

    @property
    def last_message_id(self) -> Optional[int]:
        live = self.model.live
        return live[-1][0] if live else None

    # -- records ------------------------------------------------------------------------------

    def message(
        self, kind: str, message: Mapping[str, Any], extra: Optional[Mapping[str, Any]] = None, ts: Any = None
    ) -> Optional[int]:
        payload = message_extras(extra or {})
        payload.update(message)
        if not isinstance(payload.get("role"), str):
            self.report.skipped(kind, "message cannot be stored: message role must be str")
            return None
        when = self._time(ts)
        if when is None and ts is not None:
            payload.setdefault("source-ts", ts)  # the source's text, which is not a time
        return self._add(Record(MESSAGE, payload, when, kind))

    def set_extra(self, at: int, key: str, value: Any) -> None:
        """Set an extra of the message record `at`, written before the source stated it (a
        Codex token count comes after the messages of its response)."""
        record = self.records[at]
        assert record.type == MESSAGE
        record.body[key] = value

    def assistant(
        self, kind: str, content: Any, calls: Sequence[Call], extra: Mapping[str, Any], ts: Any = None
    ) -> Optional[int]:
        """An assistant message with its tool calls, each then dispatched (at its own source
        time): a call nothing answers stays pending in state ``dispatched``."""
        msg: Dict[str, Any] = {"role": "assistant", "content": content}
        if calls:
            msg["tool_calls"] = [
                {"id": cid, "type": "function", "function": {"name": name, "arguments": args}}
                for cid, name, args, _ in calls
            ]
        at = self.message(kind, msg, extra, ts)
        if at is None:
            return None
        for cid, name, args, when in calls:
            if cid in self.dispatched:
                self.report.warn(f"{kind}: tool call {cid[:80]} appears twice; dispatched once")
                continue
            self.dispatched.add(cid)
            self.pending[cid] = self._add(Record(DISPATCHED, (cid, name, args), self._time(when), kind))
        return at

    def tool_result(
        self, kind: str, call_id: str, content: Any, failed: bool, extra: Mapping[str, Any], ts: Any = None
    ) -> Optional[int]:
        """The tool message answering ``call_id``, then the settle of its operation."""
        at = self.message(kind, {"role": "tool", "tool_call_id": call_id, "content": content}, extra, ts)
        if at is None:
            return None
        op = self.pending.pop(call_id, None)
        if op is None:
            why = "answered twice" if call_id in self.dispatched else "answers no tool call of the live conversation"
            self.report.warn(f"{kind}: the result for {call_id[:80]} {why}; kept as a tool message, nothing settled")
        else:
            self._add(Record(SETTLED, (op, "failed" if failed else "completed", None), self.records[at].ts, kind))
        return at

    def compaction(
        self, kind: str, summary: str, tokens_before: Optional[int], tokens_after: Optional[int],
        extra: Mapping[str, Any], ts: Any = None,
    ) -> Optional[int]:
        """A compaction of everything so far; with nothing to compact, the summary as a user
        message. A token count the source does not state is None (left out when written)."""
        through = self.last_message_id
        if through is None:
            extra = dict(extra, **{"compact-summary": True})
            return self.message(kind, {"role": "user", "content": summary}, extra, ts)
        return self._add(Record(COMPACTION, (summary, through, tokens_before, tokens_after), self._time(ts), kind))

    def rewind(self, kind: str, to_id: Optional[int], ts: Any = None) -> Optional[int]:
        """A rewind to the live message ``to_id`` (None: nothing stays live); None if
        ``to_id`` is not live. The source has abandoned the calls the cut messages made:
        those still unanswered are settled ``outcome-unknown``, saying so."""
        cut = -1 if to_id is None else self.model.position(to_id)
        if cut is None:
            self.report.skipped(kind, "rewind refused: it names a message that is not live")
            return None
        gone = [self.records[at] for at, _ in self.model.live[cut + 1:]]
        made = {call.get("id") for record in gone if record.type == MESSAGE
                for call in record.body.get("tool_calls") or () if isinstance(call, dict)}
        at = self._add(Record(REWIND, to_id, self._time(ts), kind))
        for call_id in [c for c in self.pending if c in made]:
            settle = (self.pending.pop(call_id), "outcome-unknown", ROLLED_BACK)
            self._add(Record(SETTLED, settle, self.records[at].ts, kind))
        return at

    def run_context(
        self, kind: str, sections: List[Tuple[str, str]], facts: List[Tuple[str, Any]], ts: Any = None
    ) -> int:
        return self._add(Record(RUN_CONTEXT, (sections, facts), self._time(ts), kind))
