"""An import into an OUT an earlier import made: from what OUT holds to what one import of
the whole source gives.

The plan of the part of the source the last import read (``before``) is made again and
compared with the plan of the whole source (``after``). They agree up to some record:
past it, ``before`` held what the earlier import could only guess at the end of what it
saw (a Codex user message whose ``response_item`` twin was not written yet, an assistant
message whose calls went on, a Claude Code branch the user then rewound). So OUT is
brought to where ``after`` stands at that record, by the state it leaves rather than by
what was written: its live messages are rewound to the longest run they share with that
state and the rest appended again; each operation pending there is matched with an open
one of OUT for the same call (or dispatched again). Then the rest of ``after`` is written,
a dispatch taking over an open operation of OUT for the same call where there is one
(the message that made it was written again). An operation still open after that was
dispatched on a branch the source has abandoned: it is settled ``outcome-unknown``, with
a reason saying so. Live messages and pending operations are then what one import of the
whole source leaves."""

from __future__ import annotations

from typing import Dict, List, Optional, Sequence

from .. import Session
from ..messages import Message, PendingToolOperation
from ._bulk import LineWriter, storable
from ._plan import COMPACTION, DISPATCHED, MESSAGE, Model, Record, folded

ABANDONED = ("the source abandoned the branch of the conversation this call was made on (rewound, rolled "
             "back or replaced) after an earlier import wrote it; whether the call ran is not known")


def agreed(before: Sequence[Record], after: Sequence[Record]) -> int:
    """How many leading records the two plans share."""
    n = 0
    for a, b in zip(before, after):
        if a != b:
            break
        n += 1
    return n


def append(session: Session, before: Sequence[Record], after: Sequence[Record], writer: LineWriter) -> None:
    """Write to ``writer`` (the end of ``session``'s file) what takes ``session`` from where
    the earlier imports left it to where ``after`` ends."""
    k = agreed(before, after)
    model = folded(after, k)
    _live_messages(session, after, model, writer)
    reuse = _operations(session, after, k, model, writer)
    for at in range(k, len(after)):
        op = reuse.get(at)
        if op is not None:
            writer.ids[at] = op
        else:
            writer.write(at, after[at])


def _as_message(record: Record) -> Dict[str, object]:
    """The live message a record makes, in ``Message.to_dict`` form."""
    if record.type == COMPACTION:
        return {"role": "user", "content": record.body[0]}
    return Message.from_dict(record.body).to_dict()


def _same(message: Message, record: Record) -> bool:
    have, want = message.to_dict(), _as_message(record)
    return have == want or have == storable(want)


def _live_messages(session: Session, after: Sequence[Record], model: Model, writer: LineWriter) -> None:
    ids = session.message_ids
    messages = session.messages
    want = model.live
    same = 0
    while same < len(ids) and same < len(want) and _same(messages[same], after[want[same][0]]):
        same += 1
    if same < len(ids):
        writer.rewind(ids[same - 1] if same else None)
    for i in range(same):
        writer.ids[want[i][0]] = ids[i]
    for at, _ in want[same:]:
        record = after[at]
        if record.type == MESSAGE:
            writer.write(at, record)
        else:  # a compaction's summary, as the message it left
            writer.ids[at] = writer.line(MESSAGE, {"role": "user", "content": record.body[0], "compact-summary": True},
                                         record.ts)


def _operations(session: Session, after: Sequence[Record], k: int, model: Model, writer: LineWriter) -> Dict[int, str]:
    """Match OUT's open operations with the plan's; answer which dispatches past ``k``
    take over an open one (position -> op id). The others are settled as abandoned."""
    free: Dict[str, List[PendingToolOperation]] = {}
    for op in session.pending_tool_operations():
        free.setdefault(op.call_id, []).append(op)

    def take(record: Record) -> Optional[str]:
        ops = free.get(record.body[0])
        if not ops:
            return None
        payload = writer.dispatched_payload(record.body)
        for i, op in enumerate(ops):
            if op.tool == payload["tool"] and op.arguments_digest == payload["arguments-digest"]:
                return ops.pop(i).op_id
        return None

    for at in sorted(model.pending):
        taken = take(after[at])
        if taken is not None:
            writer.ids[at] = taken
        else:  # settled in OUT since (on a branch the source left): open it again
            writer.write(at, after[at])
    reuse: Dict[int, str] = {}
    for at in range(k, len(after)):
        if after[at].type == DISPATCHED:
            taken = take(after[at])
            if taken is not None:
                reuse[at] = taken
    for ops in free.values():
        for op in ops:
            writer.settle(op.op_id, "outcome-unknown", ABANDONED)
    return reuse
