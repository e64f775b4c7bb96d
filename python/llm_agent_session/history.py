"""The whole history of a transcript in file order, and what became of each line.

``Session.load`` gives the live conversation: what the model would be sent next. A viewer,
an export of everything, a dataset or a trace needs the rest too: which compaction or
rewind took a message out of the live list, which elision replaced its content with a stub,
when each tool operation was dispatched and settled and whether a tool message answered
it, which grants were in force when it ran. ``History`` folds the envelopes with the very
rules load folds them by (``_fold.FoldState``), noting those facts on the way, so its live
list is load's, element for element.

It is lenient, as peek is: an envelope the fold would refuse (a duplicate id, a reference
to nothing live, a settle of an unknown operation) is recorded in ``problems`` and skipped,
and the rest is still read. Where ``problems`` is empty and the envelopes are every line
of a file, ``live_ids`` equals ``Session.load(path).message_ids`` and ``pending()`` equals
its ``pending_tool_operations()`` (a differential test holds them together).

    history = History.read(path)            # or: History(); history.feed(event) per Event
    history.removed.get(message_id)         # Removal(by, kind, ts), or None while live
    history.elided.get(message_id)          # ids of the elisions that stubbed it, in order
    history.operations[op_id].state         # dispatched, result-recorded, completed, ...
"""

from __future__ import annotations

import os
from dataclasses import dataclass, field
from typing import Any, Dict, Iterable, List, Optional, Union, cast

from ._fold import FoldProblem, FoldState, duplicate_reason
from .messages import Event, PendingToolOperation

#: The states of a tool operation: the two of a pending one, then the three outcomes.
OPERATION_STATES = ("dispatched", "result-recorded", "completed", "failed", "outcome-unknown")


@dataclass(frozen=True)
class Removal:
    """What took an entry out of the live conversation: a ``compaction`` (it was folded
    into that compaction's summary) or a ``rewind`` (the conversation was cut back before
    it). ``by`` is that envelope's id, ``ts`` its time."""

    by: str
    kind: str
    ts: str


@dataclass(frozen=True)
class Problem:
    """An envelope the fold could not apply (load would refuse the file there): its
    position among the envelopes fed (0 = the first), id, type and why."""

    index: int
    id: str
    type: str
    reason: str


@dataclass
class Operation:
    """One tool operation: its ``tool-dispatched`` envelope and, once there, its settle.

    ``state`` is ``dispatched`` or ``result-recorded`` while pending (as
    ``Session.pending_tool_operations()`` says), else the settle's outcome.
    ``answered_by`` is the first ``tool`` message with the operation's call id after the
    dispatch (whether it came before or after the settle), ``answered_at`` its time.
    ``grants_id`` names the ``grants`` envelope in force when it was dispatched (``None``:
    none had been written). ``dispatch`` and ``settle`` are the two records' payloads
    (``idempotency``, ``run-id`` and ``round`` are in ``dispatch``).
    """

    op_id: str
    call_id: Any
    tool: Any
    arguments: Any
    dispatched_at: str
    index: int
    grants_id: Optional[str]
    state: str = "dispatched"
    answered_by: Optional[str] = None
    answered_at: Optional[str] = None
    dispatch: Dict[str, Any] = field(default_factory=dict)
    settled_id: Optional[str] = None
    settled_at: Optional[str] = None
    settle: Dict[str, Any] = field(default_factory=dict)

    @property
    def pending(self) -> bool:
        return self.settled_id is None

    @property
    def outcome(self) -> Optional[str]:
        return None if self.settled_id is None else self.state


class History:
    """The fold of a transcript's envelopes, fed in file order, with what became of each."""

    def __init__(self) -> None:
        self.state = FoldState()
        self.meta: Dict[str, Any] = {}
        self.count = 0  # envelopes fed
        self.removed: Dict[str, Removal] = {}  # message or summary id -> what removed it
        self.elided: Dict[str, List[str]] = {}  # message or summary id -> elision ids, in order
        self.operations: Dict[str, Operation] = {}  # op id -> operation, in file order
        self.grants_by_id: Dict[str, Dict[str, Any]] = {}  # grants envelope id -> its snapshot
        self.grants_id: Optional[str] = None  # the grants envelope in force now
        self.problems: List[Problem] = []
        self._seen: Dict[str, int] = {}
        self._unanswered: Dict[Any, List[str]] = {}  # call id -> op ids no tool message answered yet

    @classmethod
    def read(cls, path: Union[str, "os.PathLike[str]"]) -> "History":
        """The history of every envelope of the file at `path` that parses, read as peek
        reads it (no lock, nothing written; malformed lines are skipped and are in peek's
        warnings, not here)."""
        from .session import Session

        history = cls()
        history.feed_all(Session.peek(path)["envelopes"])
        return history

    # -- feeding --------------------------------------------------------------------------

    def feed_all(self, events: Iterable[Event]) -> None:
        for event in events:
            self.feed(event)

    def feed(self, event: Event) -> None:
        """Fold in the next envelope of the file."""
        index = self.count
        self.count += 1
        id_, type_, ts, payload = event.id, event.type, event.ts, event.payload
        if id_ in self._seen:
            self.problems.append(Problem(index, id_, type_, duplicate_reason(id_)))
            return
        self._seen[id_] = index
        if index == 0 and type_ == "session-meta":
            self.meta = payload
            self.state.meta = payload
        state = self.state
        try:
            state.check(type_, payload)
        except FoldProblem as p:
            self.problems.append(Problem(index, id_, type_, p.reason))
            return
        if type_ == "compaction":
            cut = state.position(payload["replaces-through-id"])
            assert cut is not None  # check() found it
            gone = Removal(id_, "compaction", ts)
            for entry_id, message in zip(state.ids[: cut + 1], state.messages[: cut + 1]):
                if not message.is_sticky:
                    self.removed[entry_id] = gone
        elif type_ == "rewind":
            to_id = payload["to-id"]
            end = 0 if to_id is None else cast(int, state.position(to_id)) + 1
            gone = Removal(id_, "rewind", ts)
            for entry_id in state.ids[end:]:
                self.removed[entry_id] = gone
        elif type_ == "elision":
            for item in payload["items"]:
                self.elided.setdefault(item["id"], []).append(id_)
        elif type_ == "grants":
            self.grants_by_id[id_] = payload["grants"]
            self.grants_id = id_
        elif type_ == "tool-dispatched":
            call_id = payload.get("call-id")
            self.operations[id_] = Operation(
                op_id=id_,
                call_id=call_id,
                tool=payload.get("tool"),
                arguments=payload.get("arguments"),
                dispatched_at=ts,
                index=index,
                grants_id=self.grants_id,
                dispatch=payload,
            )
            self._unanswered.setdefault(call_id, []).append(id_)
        elif type_ == "tool-settled":
            op = self.operations[payload["op-id"]]
            op.settled_id, op.settled_at, op.settle = id_, ts, payload
            op.state = payload["outcome"]
        elif type_ == "message" and payload.get("role") == "tool":
            call_id = payload.get("tool_call_id")
            if isinstance(call_id, str):
                for op_id in self._unanswered.pop(call_id, ()):
                    op = self.operations[op_id]
                    op.answered_by, op.answered_at = id_, ts
                    if op.state == "dispatched":
                        op.state = "result-recorded"
        state.apply(id_, type_, ts, payload)

    # -- reading --------------------------------------------------------------------------

    @property
    def live_ids(self) -> List[str]:
        """The ids of the live conversation, as ``Session.load(path).message_ids``."""
        return list(self.state.ids)

    def is_live(self, entry_id: str) -> bool:
        """Whether the message (or compaction summary) `entry_id` is in the live conversation."""
        return self.state.position(entry_id) is not None

    def pending(self) -> List[PendingToolOperation]:
        """The operations without a settle, as ``Session.pending_tool_operations()``."""
        return self.state.pending_operations()

    def grants_for(self, op: Operation) -> Optional[Dict[str, Any]]:
        """The grants snapshot in force when `op` was dispatched (``None``: none written)."""
        return None if op.grants_id is None else self.grants_by_id[op.grants_id]
