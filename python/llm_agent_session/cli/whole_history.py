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
from dataclasses import dataclass, field
from typing import Any, Dict, List, Optional, Sequence

from .. import Event, Message, PendingToolOperation
from ..history import History, Operation
from ..messages import message_extras
from .conversation import Entry, envelope_summary, operation_seconds
from .output import human_seconds, json_text


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


@dataclass
class WholeHistory:
    meta: Dict[str, Any]
    rows: List[Row]
    envelopes: int  # lines read, the session-meta included
    live: int  # messages in the live conversation at the end
    pending: List[PendingToolOperation] = field(default_factory=list)
    problems: int = 0


def whole_history(envelopes: Sequence[Event]) -> WholeHistory:
    """Fold `envelopes` (every envelope of a file, in order), then describe each."""
    history = History()
    stubs: Dict[str, Any] = {}  # message id -> the stub in effect (the last applied elision naming it)
    for event in envelopes:
        problems = len(history.problems)
        history.feed(event)
        if event.type == "elision" and len(history.problems) == problems:
            for item in event.payload["items"]:
                stubs[item["id"]] = item["stub"]
    answered: Dict[str, Operation] = {}  # tool message id -> the latest operation it answers
    for op in history.operations.values():
        if op.answered_by is not None:
            answered[op.answered_by] = op
    removed_by = Counter(removal.by for removal in history.removed.values())
    refused = {p.index: p.reason for p in history.problems}
    rows: List[Row] = []
    for i in range(len(envelopes)):
        e = envelopes[i]
        if i == 0 and e.type == "session-meta":
            continue  # the header shows the meta
        row = Row(i + 1, e, problem=refused.get(i))
        if e.type in ("message", "compaction") and row.problem is None:
            row.entry = _entry(i + 1, e, history, stubs, answered.get(e.id))
            if e.type == "compaction":
                row.note = f"replaced {removed_by[e.id]:,} message(s) of the conversation with this summary"
        else:
            row.note = _note(e, history, removed_by)
            if e.type not in SAID_BY_THE_NOTE or row.problem is not None:
                row.payload = json_text(e.payload, indent=2, sort_keys=True)
        rows.append(row)
    return WholeHistory(history.meta, rows, len(envelopes), len(history.live_ids), history.pending(), len(history.problems))


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
