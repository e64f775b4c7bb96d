"""The live tool calls that no tool message answers, and what became of each: what
``Session.answer_interrupted_tool_calls`` answers, and how (README, "For agent runtimes").

Providers reuse call ids (``call_0`` in every turn), so a call is answered only by a
``tool`` message with its id that comes after the assistant message that made it (the
nearest such call before the tool message, when several are open), and an operation
belongs to the call with its id made last before the operation was dispatched.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Dict, Iterable, List, Mapping, Optional, Sequence, Tuple

from .messages import Event, Message, PendingToolOperation

# The texts of the answers (also in the README, "For agent runtimes").
INTERRUPTED_TEXT = (
    "This tool call was interrupted before its result was recorded. It may or may not have "
    "run: check its effects before running it again."
)
NEVER_RUN_TEXT = "This tool call was never run: the run stopped before it was dispatched."
RESULT_GONE_TEXT = (
    "This tool call ran, but its result is no longer in the conversation (it was rewound or "
    "compacted away)."
)
RESULT_LOST_TEXT = "This tool call ran, but its result was never recorded in the conversation."


@dataclass
class CallOperation:
    """An operation dispatched for an unanswered call."""

    op_id: str
    # None while pending; else the settle's outcome and reason.
    outcome: Optional[str] = None
    reason: Optional[str] = None
    # A tool message with the call's id followed its dispatch (live or not).
    recorded: bool = False


@dataclass
class UnansweredCall:
    """A tool call of a live assistant message that no live tool message answers."""

    call_id: str
    message_id: str  # the assistant message that made it
    operations: List[CallOperation] = field(default_factory=list)

    def answer(self, pending: Mapping[str, PendingToolOperation], content: Any) -> Tuple[Any, List[str]]:
        """The answer's content, and the operations to settle ``outcome-unknown`` after it."""
        ops = self.operations
        waiting = [op.op_id for op in ops if op.op_id in pending and pending[op.op_id].state == "dispatched"]
        if waiting:  # cut off mid-call
            return (INTERRUPTED_TEXT if content is None else content), waiting
        if any(op.recorded and op.outcome in (None, "completed", "failed") for op in ops):
            return RESULT_GONE_TEXT, []  # it ran and its result was recorded: rewound or compacted since
        if any(op.outcome in ("completed", "failed") for op in ops):
            return RESULT_LOST_TEXT, []
        if ops:  # settled outcome-unknown: nobody knows whether it ran
            return (INTERRUPTED_TEXT if content is None else content), []
        return NEVER_RUN_TEXT, []


def unanswered_calls(messages: Sequence[Message], ids: Sequence[str]) -> List[UnansweredCall]:
    """The calls of the live assistant messages that no later live tool message answers,
    in the order they were made (a call id twice in one message is one call)."""
    open_calls: Dict[str, List[UnansweredCall]] = {}
    made: List[UnansweredCall] = []
    for id_, m in zip(ids, messages):
        if m.role == "tool":
            waiting = open_calls.get(m.tool_call_id) if isinstance(m.tool_call_id, str) else None
            if waiting:
                waiting.pop()  # the nearest call with this id before it
            continue
        if m.role != "assistant" or not isinstance(m.tool_calls, (list, tuple)):
            continue
        here = set()
        for call in m.tool_calls:
            call_id = call.get("id") if isinstance(call, Mapping) else None
            if isinstance(call_id, str) and call_id not in here:
                here.add(call_id)
                new = UnansweredCall(call_id, id_)
                open_calls.setdefault(call_id, []).append(new)
                made.append(new)
    still_open = {id(c) for waiting in open_calls.values() for c in waiting}
    return [c for c in made if id(c) in still_open]


def find_operations(calls: Sequence[UnansweredCall], events: Iterable[Event]) -> None:
    """Fill each call's operations from `events`: the envelopes in file order from the
    first call's message on."""
    by_message: Dict[Tuple[str, str], UnansweredCall] = {(c.message_id, c.call_id): c for c in calls}
    wanted = {c.call_id for c in calls}
    owner: Dict[str, Optional[UnansweredCall]] = {}  # call id -> the call made last, if it is one of `calls`
    ops: Dict[str, CallOperation] = {}
    for event in events:
        type_ = event.type
        if type_ == "message":
            payload = event.payload
            role = payload.get("role")
            if role == "assistant" and isinstance(payload.get("tool_calls"), list):
                for call in payload["tool_calls"]:
                    call_id = call.get("id") if isinstance(call, dict) else None
                    if call_id in wanted:
                        owner[call_id] = by_message.get((event.id, call_id))
            elif role == "tool" and payload.get("tool_call_id") in wanted:
                current = owner.get(payload["tool_call_id"])
                for op in current.operations if current is not None else ():
                    op.recorded = True
        elif type_ == "tool-dispatched":
            current = owner.get(event.payload.get("call-id"))  # type: ignore[arg-type]
            if current is not None:
                op = CallOperation(event.id)
                current.operations.append(op)
                ops[event.id] = op
        elif type_ == "tool-settled":
            settled = ops.get(event.payload.get("op-id"))  # type: ignore[arg-type]
            if settled is not None:
                settled.outcome = event.payload.get("outcome")
                settled.reason = event.payload.get("reason")
