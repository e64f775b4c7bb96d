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

from typing import Dict, List, Sequence, Tuple

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
    """Match OUT's open operations with the plan's dispatches that are pending where the
    plans part or come after it; write the dispatches among the first that found none,
    settle as abandoned the open operations nothing took, and answer the dispatches past
    ``k`` that take over an open operation (position -> op id).

    Pending operations are listed in file order, so an operation still pending at the
    end of the plan takes over an open one only while they come in the plan's order;
    after the first that cannot, the rest are dispatched anew (in order)."""
    free: Dict[str, List[Tuple[int, PendingToolOperation]]] = {}
    for n, op in enumerate(session.pending_tool_operations()):  # (file order)
        free.setdefault(op.call_id, []).append((n, op))
    final = folded(after, len(after)).pending
    last = -1  # the file place of the last open operation a still-pending one took over
    in_order = True
    reuse: Dict[int, str] = {}
    for at in sorted(model.pending) + [at for at in range(k, len(after)) if after[at].type == DISPATCHED]:
        stays = at in final
        if stays and not in_order:
            continue
        ops = free.get(after[at].body[0], [])
        payload = writer.dispatched_payload(after[at].body) if ops else None
        match = next((i for i, (n, op) in enumerate(ops) if (n > last or not stays) and payload is not None
                      and op.tool == payload["tool"] and op.arguments_digest == payload["arguments-digest"]), None)
        if match is None:
            in_order = in_order and not stays
            continue
        n, op = ops.pop(match)
        if stays:
            last = n
        reuse[at] = op.op_id
    for ops in free.values():
        for _, op in ops:
            writer.settle(op.op_id, "outcome-unknown", ABANDONED)
    for at in sorted(model.pending):
        taken = reuse.pop(at, None)
        if taken is not None:
            writer.ids[at] = taken
        else:  # settled in OUT since (on a branch the source left), or out of order: anew
            writer.write(at, after[at])
    return reuse
