"""The fold behind ``History``: each envelope folded by load's rules (``FoldState``),
and what became of each line noted on the way.

``HistoryFold.feed`` is the reference, on both cores: the pure core's ``history``
feeds it every envelope peek lists, and a ``History`` keeps feeding it the envelopes
appended later. The native core folds a whole file in Rust (``rust/replay/history.rs``,
note for note this ``feed``) and hands over the same structures (``rust/py/history.rs``),
with its ``FoldState`` made by ``FoldState.from_parts`` as load's is. Its ``removed``,
``elided``, ``operations``, ``answers`` and ``calls`` are ``ReadMapping``s: an entry is built when it
is first asked for.
"""

from __future__ import annotations

import sys
from bisect import bisect_right
from dataclasses import dataclass, field
from typing import Any, Dict, Iterable, Iterator, List, Mapping, MutableMapping, Optional, Protocol, Sequence, Set, Tuple, TypeVar, cast

from ._fold import FoldProblem, FoldState, duplicate_reason
from .messages import Event

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


# Slots where dataclasses offer them (3.10+): 124,771 operations of a 1 GB transcript
# take 28 MB less (no __dict__ each).
_SLOTS: Dict[str, Any] = {"slots": True} if sys.version_info >= (3, 10) else {}


@dataclass(**_SLOTS)
class Operation:
    """One tool operation: its ``tool-dispatched`` envelope and, once there, its settle.

    ``state`` is ``dispatched`` or ``result-recorded`` while pending (as
    ``Session.pending_tool_operations()`` says), else the settle's outcome.
    ``answered_by`` is the first ``tool`` message with the operation's call id after the
    dispatch (whether it came before or after the settle), ``answered_at`` its time.
    ``grants_id`` names the ``grants`` envelope in force when it was dispatched (``None``:
    none had been written). ``dispatch`` and ``settle`` are the two records' payloads
    (``idempotency``, ``run-id`` and ``round`` are in ``dispatch``). ``arguments`` is
    ``None`` and ``dispatch`` and ``settle`` are empty in a ``History(keep_payloads=False)``.
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


V = TypeVar("V")
V_co = TypeVar("V_co", covariant=True)


class ReadRows(Protocol[V_co]):
    """What a native read keeps of a mapping (``rust/py/history.rs``): its keys in
    order, and each value built when asked for."""

    def __len__(self) -> int: ...

    def keys(self) -> List[str]: ...

    def find(self, key: str) -> Optional[int]: ...

    def build(self, at: int) -> V_co: ...

    def tally(self) -> Optional[Sequence[Tuple[V_co, int, str]]]: ...


class ReadMapping(MutableMapping[str, V]):
    """A dict whose entries from a native read are built when first asked for.

    ``History.removed``, ``.elided``, ``.operations``, ``.answers`` and ``.calls`` after a native
    read: at 1 GB, half a million entries whose objects were most of the read's time and
    memory. An entry built is kept (the same object on every access, and a change to it
    stays), the entries set since follow the read's, and it compares, iterates and reads
    like the dict the pure core gives.
    """

    __slots__ = ("_rows", "_built", "_later", "_gone", "_keep")

    def __init__(self, rows: ReadRows[V]) -> None:
        self._rows = rows
        # Whether an entry built is stored. ``History.read`` turns it off for ``removed``:
        # the read builds one shared Removal per remover (same object on every access
        # anyway), and a viewer's pass over them all kept 260,000 keys at 1 GB.
        self._keep = True
        self._built: Dict[str, V] = {}  # the read's entries asked for (or set) so far
        self._later: Dict[str, V] = {}  # entries set since that the read does not hold
        self._gone: Set[str] = set()  # the read's entries deleted since

    def _find(self, key: object) -> Optional[int]:
        if not isinstance(key, str) or key in self._gone:
            return None
        return self._rows.find(key)

    def __getitem__(self, key: str) -> V:
        if key in self._later:
            return self._later[key]
        value = self._built.get(key)
        if value is None:
            at = self._find(key)
            if at is None:
                raise KeyError(key)
            value = self._rows.build(at)
            if self._keep:
                # setdefault: of two threads building one entry, both keep the first stored.
                value = self._built.setdefault(key, value)
        return value

    def keep_built(self, keep: bool) -> None:
        """Whether an entry built for a lookup is stored for the next one (the default);
        off where building it again gives the same object anyway."""
        self._keep = keep

    def passing_items(self) -> Iterator[Tuple[str, V]]:
        """``items()``, except that an entry not built yet is built for this pass alone
        and not kept: a look at every operation of a big read without holding them all
        (124,771 at 1 GB). An entry built or set before is the one kept."""
        gone, built, build = self._gone, self._built, self._rows.build
        for at, key in enumerate(self._rows.keys()):  # keys() is in the order build() takes
            if key not in gone:
                value = built.get(key)
                yield key, build(at) if value is None else value
        yield from list(self._later.items())

    def tally(self) -> Optional[Tuple[Sequence[Tuple[V, int, str]], List[Tuple[str, V]]]]:
        """Where the read shares one value among many entries (``removed``: one Removal for
        every entry a compaction or rewind took out) and nothing it holds was set or
        deleted since: each of its values with how many entries have it and the first
        (``ReadRows.tally``), and the entries set since, in order. None otherwise."""
        if self._gone or self._built:
            return None
        found = self._rows.tally()
        return None if found is None else (found, list(self._later.items()))

    def __setitem__(self, key: str, value: V) -> None:
        if key not in self._later and self._find(key) is not None:
            self._built[key] = value
        else:
            self._later[key] = value

    def __delitem__(self, key: str) -> None:
        if key in self._later:
            del self._later[key]
        elif self._find(key) is not None:
            self._gone.add(key)
            self._built.pop(key, None)
        else:
            raise KeyError(key)

    def __contains__(self, key: object) -> bool:
        return key in self._later or self._find(key) is not None

    def __iter__(self) -> Iterator[str]:
        gone = self._gone
        for key in self._rows.keys():
            if key not in gone:
                yield key
        yield from self._later

    def __len__(self) -> int:
        return len(self._rows) - len(self._gone) + len(self._later)

    def __repr__(self) -> str:
        return repr(dict(self.items()))


def passing_items(mapping: Mapping[str, V]) -> Iterator[Tuple[str, V]]:
    """``mapping.items()``, a ``ReadMapping``'s built for the pass alone (see there)."""
    if isinstance(mapping, ReadMapping):
        return mapping.passing_items()
    return iter(list(mapping.items()))


class SeenIds(Protocol):
    """The ids of the envelopes fed so far, each with its position among them (a
    duplicate is refused): a ``dict``, or ``IdsSinceRead`` after a native read."""

    def __contains__(self, id_: object) -> bool: ...

    def __setitem__(self, id_: str, index: int) -> None: ...

    def get(self, id_: str) -> Optional[int]: ...


class IdsSinceRead:
    """The ids a native read found, and those fed since: no string made for each
    envelope of a big file. `read` is its id table (``_native.EnvelopeIds``: id -> its
    place among the envelopes folded, the duplicates left out); `duplicates`, how many
    envelopes had been folded when each duplicate came, which turns that place into the
    position among every envelope fed."""

    __slots__ = ("read", "duplicates", "fed")

    def __init__(self, read: Any, duplicates: List[int]) -> None:
        self.read = read
        self.duplicates = duplicates
        self.fed: Dict[str, int] = {}

    def get(self, id_: str) -> Optional[int]:
        index = self.fed.get(id_)
        if index is None and isinstance(id_, str):
            at: Optional[int] = self.read.get(id_)
            if at is not None:
                index = at + bisect_right(self.duplicates, at)
        return index

    def __contains__(self, id_: object) -> bool:
        return isinstance(id_, str) and self.get(id_) is not None

    def __setitem__(self, id_: str, index: int) -> None:
        self.fed[id_] = index


class HistoryFold:
    """The fold of a transcript's envelopes, fed in file order, with what became of each."""

    def __init__(self, keep_payloads: bool = True) -> None:
        self.keep_payloads = keep_payloads
        self.state = FoldState()
        self.meta: Dict[str, Any] = {}
        self.count = 0  # envelopes fed
        self.removed: MutableMapping[str, Removal] = {}  # message or summary id -> what removed it
        self.elided: MutableMapping[str, List[str]] = {}  # message or summary id -> elision ids, in order
        self.operations: MutableMapping[str, Operation] = {}  # op id -> operation, in file order
        self.answers: MutableMapping[str, str] = {}  # tool message id -> the op id it answered
        self.calls: MutableMapping[Any, List[str]] = {}  # call id -> op ids dispatched for it, in file order
        self.grants_by_id: Dict[str, Dict[str, Any]] = {}  # grants envelope id -> its snapshot
        self.grants_id: Optional[str] = None  # the grants envelope in force now
        self.problems: List[Problem] = []
        self._seen: SeenIds = {}  # id -> its position among the envelopes fed
        self._unanswered: Dict[Any, List[str]] = {}  # call id -> op ids no tool message answered yet

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
                arguments=payload.get("arguments") if self.keep_payloads else None,
                dispatched_at=ts,
                index=index,
                grants_id=self.grants_id,
                dispatch=payload if self.keep_payloads else {},
            )
            self._unanswered.setdefault(call_id, []).append(id_)
            self.calls.setdefault(call_id, []).append(id_)
        elif type_ == "tool-settled":
            op = self.operations[payload["op-id"]]
            op.settled_id, op.settled_at = id_, ts
            if self.keep_payloads:
                op.settle = payload
            op.state = payload["outcome"]
        elif type_ == "message" and payload.get("role") == "tool":
            call_id = payload.get("tool_call_id")
            if isinstance(call_id, str):
                for op_id in self._unanswered.pop(call_id, ()):
                    op = self.operations[op_id]
                    op.answered_by, op.answered_at = id_, ts
                    self.answers.setdefault(id_, op_id)
                    if op.state == "dispatched":
                        op.state = "result-recorded"
        elif type_ == "run-context" and not self.keep_payloads:
            return  # the fold keeps only the sections' texts from it
        state.apply(id_, type_, ts, payload)
