"""The fold behind ``History``: each envelope folded by load's rules (``FoldState``),
and what became of each line noted on the way.

``HistoryFold.feed`` is the reference, on both cores: the pure core's ``history``
feeds it every envelope peek lists, and a ``History`` keeps feeding it the envelopes
appended later. The native core folds a whole file in Rust (``rust/replay/history.rs``,
note for note this ``feed``) and hands over the same structures, built by
``rust/py/history.rs`` (an operation's ``arguments`` and ``settle`` built on first
access), with its ``FoldState`` made by ``FoldState.from_parts`` as load's is.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Dict, Iterable, List, Optional, Protocol, Set, cast

from ._fold import FoldProblem, FoldState, duplicate_reason
from .messages import Event, _BuiltOnAccess

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
    dispatch (whether it came before or after the settle). ``grants_id`` names the
    ``grants`` envelope in force when it was dispatched (``None``: none had been written).
    After a native read, ``arguments`` and ``settle`` are built from their lines on
    first access (ValueError then if the file was rewritten in place since).
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
    settled_id: Optional[str] = None
    settled_at: Optional[str] = None
    settle: Dict[str, Any] = field(default_factory=dict)

    @property
    def pending(self) -> bool:
        return self.settled_id is None

    @property
    def outcome(self) -> Optional[str]:
        return None if self.settled_id is None else self.state

    def __getstate__(self) -> Dict[str, Any]:
        return {name: getattr(self, name) for name in self.__dataclass_fields__}


# After a native read, `arguments` and `settle` are built on first access. The dataclass
# leaves no class attribute for a field without a default or with a default_factory,
# so the descriptors go on once it is made; an Operation made by its __init__ holds
# both in its __dict__, where the descriptors are never reached.
for _name in ("arguments", "settle"):
    _on_access = _BuiltOnAccess()
    _on_access.__set_name__(Operation, _name)
    setattr(Operation, _name, _on_access)


class SeenIds(Protocol):
    """The ids of the envelopes fed so far (duplicates are refused): a ``set``, or
    ``IdsSinceRead`` after a native read."""

    def __contains__(self, id_: object) -> bool: ...

    def add(self, id_: str) -> None: ...


class IdsSinceRead:
    """The ids a native read found (its id table, ``_native.EnvelopeIds``), and those
    fed since: no string made for each envelope of a big file."""

    __slots__ = ("read", "fed")

    def __init__(self, read: Any) -> None:
        self.read = read
        self.fed: Set[str] = set()

    def __contains__(self, id_: object) -> bool:
        return id_ in self.fed or (isinstance(id_, str) and self.read.get(id_) is not None)

    def add(self, id_: str) -> None:
        self.fed.add(id_)


class HistoryFold:
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
        self._seen: SeenIds = set()
        self._unanswered: Dict[Any, List[str]] = {}  # call id -> op ids no tool message answered yet

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
        self._seen.add(id_)
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
                    op.answered_by = id_
                    if op.state == "dispatched":
                        op.state = "result-recorded"
        state.apply(id_, type_, ts, payload)
