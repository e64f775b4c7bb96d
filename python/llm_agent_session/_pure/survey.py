"""Peek's survey (``Session.peek(path, survey=True)``): the reference of
``rust/survey.rs``, over the envelopes a scan found and their lines.

Lines and bytes by type; messages by role; how many messages replay would give
(compactions folded as replay folds them: the sticky messages up to the one named,
then the summary, then the rest); and the ``tool-dispatched`` operations without a
``tool-settled``, each with whether a message answered it. Lenient, like peek: a value of the wrong
type is passed over rather than refused; only a compaction naming nothing in the
live conversation (or a rewind naming nothing live, or without a string or null
``to-id``) stops the count, since the count would be wrong past it. A rewind cuts the
live list back to its ``to-id``.
"""

from __future__ import annotations

from typing import Any, Dict, List, Optional, Sequence, Tuple

from .._compaction import compacted
from .._core import Span, SurveyCounts
from ..messages import Event, payload_marks_sticky


def _string(payload: Dict[str, Any], key: str) -> Optional[str]:
    value = payload.get(key)
    return value if isinstance(value, str) else None


def survey(events: Sequence[Event], spans: Sequence[Span]) -> SurveyCounts:
    types: Dict[str, List[int]] = {}  # type -> [lines, bytes]
    roles: Dict[str, int] = {}
    live: List[Tuple[str, bool, int]] = []  # (id, sticky, envelope index)
    rewound: List[Tuple[int, int]] = []
    position: Dict[str, int] = {}
    problem: Optional[int] = None
    open_ops: Dict[str, List[Any]] = {}  # op id -> [index, call id, answered]; dict order = first dispatch
    waiting: Dict[str, List[str]] = {}  # call id -> op ids dispatched with it, not yet answered
    for index, (e, (_, _, length)) in enumerate(zip(events, spans)):
        type_ = e.type
        tally = types.setdefault(type_, [0, 0])
        tally[0] += 1
        tally[1] += length + 1
        if type_ == "message":
            p = e.payload
            role = p.get("role")
            if not isinstance(role, str):
                continue
            roles[role] = roles.get(role, 0) + 1
            position[e.id] = len(live)
            live.append((e.id, payload_marks_sticky(p), index))
            answers = _string(p, "tool_call_id") if role == "tool" else None  # only a tool message answers a call
            if answers is not None:
                for op_id in waiting.pop(answers, ()):
                    op = open_ops.get(op_id)
                    if op is not None and op[1] == answers:
                        op[2] = True
        elif type_ == "tool-dispatched":
            call = _string(e.payload, "call-id")
            open_ops[e.id] = [index, call, False]  # a repeated id keeps its first place
            if call is not None:
                waiting.setdefault(call, []).append(e.id)
        elif type_ == "tool-settled":
            settles = _string(e.payload, "op-id")
            if settles is not None:
                open_ops.pop(settles, None)
        elif type_ == "rewind" and problem is None:
            p = e.payload
            to_id = p.get("to-id", ())  # () stands for a missing key: load refuses it
            if to_id is None:
                end = 0
            elif isinstance(to_id, str) and to_id in position:
                end = position[to_id] + 1
            else:
                problem = index
                continue
            rewound.extend((at, index) for _, _, at in live[end:])
            del live[end:]
            position = {id_: k for k, (id_, _, _) in enumerate(live)}
        elif type_ == "compaction" and problem is None:
            through = _string(e.payload, "replaces-through-id")
            cut = position.get(through) if through is not None else None
            if cut is None:
                problem = index
                continue
            live = compacted(live, cut, (e.id, False, index), (entry[1] for entry in live))
            position = {id_: k for k, (id_, _, _) in enumerate(live)}
    return SurveyCounts(
        types=[(t, lines, size) for t, (lines, size) in types.items()],
        roles=list(roles.items()),
        live=len(live),
        problem=problem,
        open=[(index, answered) for index, _, answered in open_ops.values()],
        rewound=rewound,
    )
