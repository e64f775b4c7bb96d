"""What both runtime integrations share: a transcript whose live messages mirror a
runtime's own history (its native items, stored losslessly in each message's extras),
kept in memory and written off the event loop.

A *unit* is what one runtime item (or a few) became on disk: one or more `message`
lines. Syncing to a new history keeps the longest run of units whose items still
lead the history, rewinds to the last of them (a `rewind`: nothing leaves the file),
and appends units for the rest.
"""

from __future__ import annotations

import copy
import os
from dataclasses import dataclass, field
from typing import Any, Callable, Dict, List, Mapping, Optional, Sequence, Tuple, TypeVar

from .. import Message, Session
from ..aio import SerialThread
from ..canonical import dumps, validate

# (message as a dict of the message keys, the extras written beside it)
Record = Tuple[Dict[str, Any], Dict[str, Any]]
# (envelope id, the message as replay gives it, its extras)
LiveRecord = Tuple[str, Message, Dict[str, Any]]


def canonical(value: Any) -> str:
    """The line format's serialisation of a JSON value: what makes two items the same."""
    validate(value, "item")
    return dumps(value)


@dataclass
class Unit:
    """Some runtime items and the transcript messages that hold them."""

    natives: List[Any]
    ids: List[str] = field(default_factory=list)
    keys: List[str] = field(default_factory=list)

    def __post_init__(self) -> None:
        if not self.keys:
            self.keys = [canonical(n) for n in self.natives]


@dataclass
class PlannedUnit:
    """A unit not yet written: its items and the messages to write for them."""

    natives: List[Any]
    records: List[Record]


# Reads live transcript messages back into units (the integration's own format, and a
# fallback for messages that others wrote, such as the answers to interrupted calls).
ReadUnits = Callable[[Sequence[LiveRecord], Sequence[Unit]], List[Unit]]
# Turns runtime items that are not on disk yet into units to write.
PlanUnits = Callable[[Sequence[Any], Sequence[Unit]], List[PlannedUnit]]


def open_transcript(path: Any, meta: Optional[Mapping[str, Any]], redaction: Any = None) -> Session:
    """Create the transcript, or load it (and take its lock) when it exists; `redaction`: a
    ``secrets.Policy`` for what is written (docs/secrets.md)."""
    path = os.fspath(path)
    if not os.path.lexists(path):
        try:
            return Session.create(path, meta, redaction=redaction)
        except FileExistsError:
            pass  # created meanwhile by someone else: load it like any existing one
    return Session.load(path, redaction=redaction)


def unanswered_calls_ran(session: Session) -> bool:
    """Whether a live tool call that no tool message answers was dispatched: a crash cut
    it off mid-call (its operation is still pending), or its operation was settled other
    than as a deferral. Only then do the adapters answer the calls
    (``Session.answer_interrupted_tool_calls``). Calls that were never dispatched are left
    alone: a runtime leaves them so on purpose while it waits for an approval, and
    resumes them itself."""
    return any(
        not (op.outcome == "outcome-unknown" and isinstance(op.reason, str) and op.reason.startswith(DEFERRED))
        for call in session._unanswered_tool_calls()
        for op in call.operations
    )


# The start of a settle's reason for a call the runtime deferred (it did not run).
DEFERRED = "deferred"


class Mirror:
    """The live messages of an open transcript as a runtime's items, and the writes that
    keep them equal to the runtime's history. Blocking: call through the adapter's thread."""

    def __init__(self, session: Session, read_units: ReadUnits, plan_units: PlanUnits) -> None:
        self.session = session
        self._read_units = read_units
        self._plan_units = plan_units
        self.units: List[Unit] = []
        self.read_tail()

    def live_records(self, start: int) -> List[LiveRecord]:
        s = self.session
        ids, messages = s.message_ids, s.messages
        return [(ids[i], messages[i], s.message_extra(ids[i])) for i in range(start, len(ids))]

    def read_tail(self) -> None:
        """Read the live messages that no unit holds yet: all of them when opening, those
        that someone appended through the `Session` since (the app, answers to interrupted calls)."""
        held = [i for u in self.units for i in u.ids]
        if self.session.message_ids[: len(held)] != held:  # rewound or compacted meanwhile
            self.units, held = [], []
        self.units.extend(self._read_units(self.live_records(len(held)), self.units))

    def natives(self) -> List[Any]:
        """The runtime's items, in order: the mirror's own objects (copy what leaves)."""
        return [n for u in self.units for n in u.natives]

    def native_texts(self) -> List[str]:
        """The runtime's items as their canonical JSON texts, in order."""
        return [k for u in self.units for k in u.keys]

    def sync(self, desired: Sequence[Any]) -> None:
        """Make the live transcript hold exactly `desired`, rewriting as little as it can."""
        keys = [canonical(n) for n in desired]
        kept, pos = 0, 0
        for unit in self.units:
            end = pos + len(unit.keys)
            if keys[pos:end] != unit.keys:
                break
            kept, pos = kept + 1, end
        planned = self._plan_units(list(desired[pos:]), self.units[:kept])
        for plan in planned:  # every record checked before anything is written
            for message, extra in plan.records:
                validate(message, "message")
                validate(extra, "extra")
        if kept < len(self.units):
            self.session.append_rewind(self.units[kept - 1].ids[-1] if kept else None)
            del self.units[kept:]
        for plan in planned:
            ids = [self.session.append_message(m, extra=e) for m, e in plan.records]
            self.units.append(Unit(copy.deepcopy(plan.natives), ids))


_Owner = TypeVar("_Owner", bound="TranscriptOwner")


def adapter_thread() -> SerialThread:
    """The thread an adapter's blocking transcript work runs on, off the event loop (not
    the loop's default executor, which the app may keep busy): one call at a time, in
    the order awaited; each call runs to its end even if its task is cancelled, which
    then learns it when the call is done (``llm_agent_session.aio``)."""
    return SerialThread("llm-agent-session-adapter")


class TranscriptOwner:
    """What an adapter that holds an open transcript shares: the `Session` it reads and
    writes through `_gate` (an `adapter_thread()`), `close()`, and `async with`."""

    _transcript: Session
    _gate: SerialThread

    @property
    def transcript(self) -> Session:
        """The open `Session` underneath (for reading, and for the app's own settles and
        messages; its calls block on disk briefly)."""
        return self._transcript

    async def close(self) -> None:
        """Release the file and its lock (after every call awaited before this one). A
        cancelled close still closes: the lock is released whatever the awaiting task does."""
        await self._gate.run_last(self._transcript.close)

    async def __aenter__(self: _Owner) -> _Owner:
        return self

    async def __aexit__(self, *exc: Any) -> None:
        await self.close()
