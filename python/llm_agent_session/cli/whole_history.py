"""The whole history of a transcript in file order, as ``export --all`` writes it.

Every envelope becomes a row: a message (compacted and rewound ones too, marked with the
compaction or rewind that took it out of the conversation; an elided one with its
original content and the stub the model is sent instead; a tool result with how its
operation settled), a compaction's summary with how many messages it replaced, and every
other line (tool dispatches and settles, grants, run context, elisions, rewinds, import
checkpoints, types this version does not know) as what it did. The facts come from
``history.History``, which folds the envelopes with load's own rules.
"""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass
from typing import Any, Dict, Iterator, List, Optional, Sequence

from .. import Event, Message, PendingToolOperation
from ..history import History, Operation
from ..messages import message_extras
from ..visible import json_text
from .conversation import Entry, envelope_summary, operation_seconds
from .output import human_seconds


# Lines whose note (with the messages they concern) says all they hold: their payload is
# not shown again (a dispatch's arguments are in the call, an elision's stubs on the messages).
SAID_BY_THE_NOTE = ("tool-dispatched", "elision", "rewind")


@dataclass
class Row:
    """One envelope of the history: ``entry`` for a message or a compaction's summary,
    else ``note`` (what the line did) and ``payload`` (its JSON, for a closer look; "" where
    the note says it all)."""

    number: int  # its line among the envelopes, from 1
    event: Event
    entry: Optional[Entry] = None
    note: str = ""
    payload: str = ""
    problem: Optional[str] = None  # why the fold could not apply it (a load refuses the file here)


class WholeHistory:
    """What became of each envelope, from a first pass over them (:meth:`read`); the rows
    are made in a second pass, one at a time (:meth:`rows`), so an export of a large file
    holds the facts (ids, operations, stubs), never every row, in memory."""

    def __init__(self, envelopes: Sequence[Event]) -> None:
        self.envelopes = envelopes
        self.history = History()
        self.stubs: Dict[str, Any] = {}  # message id -> the stub in effect (the last applied elision naming it)
        self.answered: Dict[str, Operation] = {}  # tool message id -> the latest operation it answers
        self.removed_by: "Counter[str]" = Counter()  # compaction or rewind id -> how many messages it removed
        self.refused: Dict[int, str] = {}  # envelope index -> why the fold could not apply it
        self.messages = 0  # message and summary rows
        self.first_ts: Optional[str] = None  # the earliest and latest time of those
        self.last_ts: Optional[str] = None

    @classmethod
    def read(cls, envelopes: Sequence[Event]) -> "WholeHistory":
        """Fold `envelopes` (every envelope of a file, in order) and note what became of each."""
        whole = cls(envelopes)
        history = whole.history
        for event in envelopes:
            problems = len(history.problems)
            history.feed(event)
            if len(history.problems) != problems:
                continue
            if event.type == "elision":
                for item in event.payload["items"]:
                    whole.stubs[item["id"]] = item["stub"]
            elif event.type in ("message", "compaction"):
                whole.messages += 1
                ts = event.ts
                whole.first_ts = ts if whole.first_ts is None else min(whole.first_ts, ts)
                whole.last_ts = ts if whole.last_ts is None else max(whole.last_ts, ts)
        for op in history.operations.values():
            if op.answered_by is not None:
                whole.answered[op.answered_by] = op
        whole.removed_by.update(removal.by for removal in history.removed.values())
        whole.refused = {p.index: p.reason for p in history.problems}
        return whole

    @property
    def meta(self) -> Dict[str, Any]:
        return self.history.meta

    @property
    def live(self) -> int:
        """Messages in the live conversation at the end."""
        return len(self.history.state.ids)

    @property
    def pending(self) -> List[PendingToolOperation]:
        return self.history.pending()

    @property
    def problems(self) -> int:
        return len(self.history.problems)

    def rows(self) -> Iterator[Row]:
        """Every envelope but the session-meta (the header shows it), in file order."""
        for i in range(len(self.envelopes)):
            e = self.envelopes[i]
            if i == 0 and e.type == "session-meta":
                continue
            row = Row(i + 1, e, problem=self.refused.get(i))
            if e.type in ("message", "compaction") and row.problem is None:
                row.entry = _entry(i + 1, e, self.history, self.stubs, self.answered.get(e.id))
                if e.type == "compaction":
                    row.note = f"replaced {self.removed_by[e.id]:,} message(s) of the conversation with this summary"
            else:
                row.note = _note(e, self.history, self.removed_by)
                if e.type not in SAID_BY_THE_NOTE or row.problem is not None:
                    row.payload = json_text(e.payload, indent=2, sort_keys=True)
            yield row


def _entry(number: int, e: Event, history: History, stubs: Dict[str, Any], op: Optional[Operation]) -> Entry:
    p = e.payload
    if e.type == "compaction":
        entry = Entry(number, e.id, Message("user", p.get("summary")), "summary", e.ts, dict(p))
    else:
        entry = Entry(number, e.id, Message.from_dict(p), ts=e.ts, extras=message_extras(p))
        if op is not None:
            entry.outcome = op.state
    entry.line = number
    entry.removed = history.removed.get(e.id)
    elisions = history.elided.get(e.id)
    if elisions:
        entry.elided_by = elisions[-1]
        entry.stub = stubs.get(e.id)
        entry.shows_original = True
    return entry


def _note(e: Event, history: History, removed_by: "Counter[str]") -> str:
    """What a line other than a message did, in one line."""
    if e.type == "tool-dispatched":
        op = history.operations.get(e.id)
        if op is not None:
            return operation_note(op)
    if e.type == "rewind":
        return f"{envelope_summary(e)}; {removed_by[e.id]:,} message(s) left it"
    return envelope_summary(e)


def operation_note(op: Operation) -> str:
    """A dispatched tool call and what became of it: ``bash [call_1]: failed, answered by ..., settled at ...``."""
    bits = [f"{op.tool} [{op.call_id}]: {op.state}"]
    if op.answered_by is not None:
        bits.append(f"result {op.answered_by}")
    if op.settled_at is not None:
        seconds = operation_seconds(op.dispatched_at, op.settled_at, op.settle)
        bits.append(f"settled at {op.settled_at}" + ("" if seconds is None else f" after {human_seconds(seconds)}"))
    elif op.state == "dispatched":
        bits.append("no result and no settle: it may or may not have run")
    return ", ".join(bits)
