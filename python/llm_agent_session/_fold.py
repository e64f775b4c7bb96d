"""The replay fold (docs/FORMAT.md, "Replay: from lines to the conversation"), shared by
load and by every append.

``FoldState`` is the whole in-memory state of a session, on both cores. The pure
replay (``_pure/replay.py``) feeds it every envelope in file order; the native one
folds in Rust (``rust/replay/fold.rs``, the same rules) and hands over what survived
(``FoldState.from_parts``). An append first asks ``check`` (so a bad reference raises
before a byte is written) and then feeds it the envelope it wrote. One code path
is what makes "the state after an append equals a load of the same file" true.
"""

from __future__ import annotations

from typing import Any, Dict, Iterator, List, Mapping, MutableMapping, Optional, Protocol, Tuple, cast

from ._compaction import compacted
from .messages import Message, PendingToolOperation, freeze

OUTCOMES = ("completed", "failed", "outcome-unknown")


class KeptExtras(Protocol):
    """The extras of every message line as a native load read them
    (``_native.KeptExtras``), by the line's index in the events replay read."""

    def get(self, event: int) -> Optional[Dict[str, Any]]:
        """A new dict of that message line's extras; None: not a message line."""


class SettledOps(Protocol):
    """The op ids of the settled operations, as ``FoldState.settled`` keeps them: a
    ``set`` (the pure core, a new session), or ``_native.SettledIds`` after a native
    load (kept in Rust: no string made per settle of the file)."""

    def __contains__(self, op_id: object) -> bool: ...

    def __iter__(self) -> Iterator[str]: ...

    def __len__(self) -> int: ...

    def add(self, op_id: str) -> None: ...

NAME_MAX = 255


def dispatched_operation(op_id: str, ts: str, payload: Dict[str, Any], state: str) -> PendingToolOperation:
    """The operation a ``tool-dispatched`` envelope opened (docs/FORMAT.md): the one constructor
    of the pure fold, peek's survey and the native replay (``rust/py/survivors.rs``).
    Reads every key leniently: the fold has checked ``call-id`` and ``tool`` first;
    peek's survey has not."""
    get = payload.get
    return PendingToolOperation(
        op_id=op_id,
        call_id=get("call-id"),  # type: ignore[arg-type]
        tool=get("tool"),  # type: ignore[arg-type]
        arguments=get("arguments"),
        arguments_digest=get("arguments-digest"),  # type: ignore[arg-type]
        idempotency=get("idempotency"),
        run_id=get("run-id"),
        round=get("round"),
        dispatched_at=ts,
        state=state,
    )


def duplicate_reason(id_: str) -> str:
    """Why a line whose id an earlier line has is refused (load) or dropped (salvage)."""
    return f"duplicate envelope id {id_[:80]} (an earlier line has it)"


class FoldProblem(Exception):
    """A reason the fold refuses an envelope. ``kind``: corrupt, dangling or unknown-op."""

    def __init__(self, kind: str, reason: str) -> None:
        super().__init__(kind, reason)
        self.kind = kind
        self.reason = reason


def artifact_name_problem(name: Any) -> Optional[str]:
    """Why `name` is not a plain basename for ``<stem>.artifacts/``, or None if it is one."""
    if not isinstance(name, str):
        return "artifact file is not a string"
    if name in ("", ".", ".."):
        return f"artifact file {name!r} is not a file name"
    if "/" in name or "\\" in name or "\x00" in name:
        return "artifact file is a path, not a plain basename"
    if len(name.encode("utf-8", "surrogatepass")) > NAME_MAX:
        return f"artifact file name is longer than {NAME_MAX} bytes"
    return None


def message_from_payload(payload: Dict[str, Any]) -> Message:
    """The Message a message line holds; extras (keys other than the message keys) are dropped."""
    return Message.from_dict(payload)


class FoldState:
    """Live conversation, grants, tool operations and run-context index of one transcript."""

    __slots__ = (
        "meta",
        "ids",
        "messages",
        "index",
        "grants",
        "pending",
        "settled",
        "waiting_by_call",
        "sections",
        "section_lines",
        "envelope_at",
        "kept_extras",
    )

    def __init__(self) -> None:
        self.meta: Dict[str, Any] = {}
        self.ids: List[str] = []  # parallel to messages
        self.messages: List[Message] = []
        self.index: Optional[Dict[str, int]] = {}  # id -> position; None = rebuild on demand
        self.grants: Dict[str, Any] = {}
        self.pending: Dict[str, PendingToolOperation] = {}  # insertion order = file order
        self.settled: SettledOps = set()
        self.waiting_by_call: Dict[str, List[str]] = {}  # call id -> pending op ids still "dispatched"
        # digest -> text, from lines that carry it (after a native load: built on access)
        self.sections: MutableMapping[str, str] = {}
        # digest -> id of the first line carrying it (after a native load: a LazyTexts too)
        self.section_lines: MutableMapping[str, str] = {}
        # envelope id -> its index in the events replay read (after a native load: a
        # native map); what Session.message_extra finds a line by
        self.envelope_at: Mapping[str, int] = {}
        # After a native load, the extras of each message line as it read them (the pure
        # core keeps its Events); what Session.message_extra answers for the lines read.
        self.kept_extras: Optional[KeptExtras] = None

    @classmethod
    def from_parts(
        cls,
        meta: Dict[str, Any],
        ids: List[str],
        messages: List[Message],
        grants: Dict[str, Any],
        pending: List[PendingToolOperation],
        settled: SettledOps,
        sections: MutableMapping[str, str],
        section_lines: MutableMapping[str, str],
        envelope_at: Mapping[str, int],
        kept_extras: Optional[KeptExtras] = None,
    ) -> "FoldState":
        """The state a replay done elsewhere (the native core) ended in."""
        state = cls()
        state.meta = meta
        state.ids = ids
        state.messages = messages
        state.index = None
        state.grants = grants
        state.pending = {op.op_id: op for op in pending}
        state.settled = settled
        for op in pending:
            if op.state == "dispatched":
                state.waiting_by_call.setdefault(op.call_id, []).append(op.op_id)
        state.sections = sections
        state.section_lines = section_lines
        state.envelope_at = envelope_at
        state.kept_extras = kept_extras
        return state

    # -- lookups -------------------------------------------------------------------------

    def position(self, id_: str) -> Optional[int]:
        if self.index is None:
            self.index = {k: i for i, k in enumerate(self.ids)}
        return self.index.get(id_)

    # -- validation shared by replay and append ----------------------------------------------

    def check(self, type_: str, payload: Dict[str, Any]) -> None:
        """Raise FoldProblem if `payload` of `type_` cannot be applied to this state."""
        if type_ == "message":
            if not isinstance(payload.get("role"), str):
                raise FoldProblem("corrupt", "message payload has no string role")
        elif type_ == "grants":
            if not isinstance(payload.get("grants"), dict):
                raise FoldProblem("corrupt", "grants payload has no object under grants")
        elif type_ == "compaction":
            summary = payload.get("summary")
            through = payload.get("replaces-through-id")
            if not isinstance(summary, str):
                raise FoldProblem("corrupt", "compaction has no string summary")
            if not isinstance(through, str):
                raise FoldProblem("corrupt", "compaction has no string replaces-through-id")
            if self.position(through) is None:
                raise FoldProblem(
                    "dangling",
                    f"compaction replaces-through-id {through[:80]} names no message in the live conversation",
                )
        elif type_ == "elision":
            items = payload.get("items")
            if not isinstance(items, list):
                raise FoldProblem("corrupt", "elision has no items list")
            for item in items:
                if not isinstance(item, dict) or not isinstance(item.get("id"), str) or "stub" not in item:
                    raise FoldProblem("corrupt", "elision item is not an object with a string id and a stub")
                if self.position(item["id"]) is None:
                    raise FoldProblem(
                        "dangling",
                        f"elision names {item['id'][:80]}, which is not in the live conversation",
                    )
        elif type_ == "rewind":
            if "to-id" not in payload:
                raise FoldProblem("corrupt", "rewind has no to-id")
            to_id = payload["to-id"]
            if to_id is None:
                return
            if not isinstance(to_id, str):
                raise FoldProblem("corrupt", "rewind to-id is neither a string nor null")
            if self.position(to_id) is None:
                raise FoldProblem(
                    "dangling",
                    f"rewind to-id {to_id[:80]} names no message in the live conversation",
                )
        elif type_ == "tool-dispatched":
            if not isinstance(payload.get("call-id"), str):
                raise FoldProblem("corrupt", "tool-dispatched has no string call-id")
            if not isinstance(payload.get("tool"), str):
                raise FoldProblem("corrupt", "tool-dispatched has no string tool")
        elif type_ == "tool-settled":
            op_id = payload.get("op-id")
            if not isinstance(op_id, str):
                raise FoldProblem("corrupt", "tool-settled has no string op-id")
            outcome = payload.get("outcome")
            if outcome not in OUTCOMES or not isinstance(outcome, str):
                raise FoldProblem("corrupt", "tool-settled outcome is not completed, failed or outcome-unknown")
            if op_id in self.settled:
                raise FoldProblem("unknown-op", f"tool-settled names operation {op_id[:80]}, which is already settled")
            if op_id not in self.pending:
                raise FoldProblem(
                    "unknown-op", f"tool-settled names operation {op_id[:80]}, which was never dispatched"
                )
            artifact = payload.get("artifact")
            if artifact is not None:
                if not isinstance(artifact, dict):
                    raise FoldProblem("corrupt", "tool-settled artifact is not an object")
                problem = artifact_name_problem(artifact.get("file"))
                if problem is not None:
                    raise FoldProblem("corrupt", problem)

    # -- the fold ----------------------------------------------------------------------------

    def apply(
        self, id_: str, type_: str, ts: str, payload: Dict[str, Any], message: Optional[Message] = None
    ) -> None:
        """Fold one envelope in; `check` must have passed for it. `message`: for a
        `message`, the Message its payload makes, if the caller has one (an append)."""
        if type_ == "message":
            # Kept read-only (`Message._frozen`): `Session.messages` hands these very
            # objects out, and `sync_messages` knows them again by identity.
            msg = message if message is not None else message_from_payload(payload)._frozen()
            if self.index is not None:
                self.index[id_] = len(self.ids)
            self.ids.append(id_)
            self.messages.append(msg)
            call_id = msg.tool_call_id
            # Only a `tool` message answers a call.
            if msg.role == "tool" and isinstance(call_id, str) and call_id in self.waiting_by_call:
                for op_id in self.waiting_by_call.pop(call_id):
                    op = self.pending.get(op_id)
                    if op is not None:
                        self.pending[op_id] = _with_state(op, "result-recorded")
        elif type_ == "compaction":
            cut = self.position(payload["replaces-through-id"])
            assert cut is not None
            sticky = [message.is_sticky for message in self.messages[: cut + 1]]
            self.ids = compacted(self.ids, cut, id_, sticky)
            self.messages = compacted(self.messages, cut, Message("user", payload["summary"]), sticky)
            self.index = None
        elif type_ == "rewind":
            # The live list ends with `to-id` (null: nothing is left).
            to_id = payload["to-id"]
            end = 0 if to_id is None else cast(int, self.position(to_id)) + 1
            del self.ids[end:]
            del self.messages[end:]
            self.index = None
        elif type_ == "elision":
            for item in payload["items"]:
                pos = self.position(item["id"])
                assert pos is not None
                self.messages[pos] = self.messages[pos].with_content(freeze(item["stub"]))
        elif type_ == "grants":
            self.grants = payload["grants"]
        elif type_ == "tool-dispatched":
            op = dispatched_operation(id_, ts, payload, "dispatched")
            self.pending[id_] = op
            self.waiting_by_call.setdefault(op.call_id, []).append(id_)
        elif type_ == "tool-settled":
            op_id = payload["op-id"]
            op = self.pending.pop(op_id)
            self.settled.add(op_id)
            waiting = self.waiting_by_call.get(op.call_id)
            if waiting is not None and op_id in waiting:
                waiting.remove(op_id)
                if not waiting:
                    del self.waiting_by_call[op.call_id]
        elif type_ == "run-context":
            sections = payload.get("sections")
            if isinstance(sections, list):
                for section in sections:
                    if isinstance(section, dict):
                        digest, text = section.get("digest"), section.get("text")
                        if isinstance(digest, str) and isinstance(text, str):
                            self.sections.setdefault(digest, text)
                            self.section_lines.setdefault(digest, id_)

    def pending_operations(self) -> List[PendingToolOperation]:
        return list(self.pending.values())

    def snapshot_messages(self) -> Tuple[List[Message], List[str]]:
        return list(self.messages), list(self.ids)


def _with_state(op: PendingToolOperation, state: str) -> PendingToolOperation:
    from dataclasses import replace

    return replace(op, state=state)
