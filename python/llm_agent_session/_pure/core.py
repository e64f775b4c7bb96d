"""The pure-Python core as a ``_core.Core``: the reference every native answer is held to."""

from __future__ import annotations

import operator
from typing import Any, List, Optional, Tuple

from .._core import AppendSize, EncodeEnvelope, HistoryRead, Replayed, Scanned
from .._fold import message_from_payload
from .._history_fold import HistoryFold
from ..messages import Message
from . import lines as _lines
from . import replay as _replay
from .columns import dataset_pass, usage_pass
from .index import index_table, make_index, replay_indexed
from .search import find_hits, find_lines, first_line_is_meta, search_files
from .secrets import Prefilter as secret_prefilter
from .survey import survey
from .tail_check import copy_prefix, tail_check

__all__ = ["name", "tail_check", "copy_prefix", "replay", "replay_indexed", "make_index", "index_table", "scan", "history", "encode_envelope", "append_size",
           "identical_prefix", "find_lines", "find_hits", "dataset_pass", "usage_pass",
           "secret_prefilter", "first_line_is_meta", "search_files"]

name = "pure"
# ``Session`` runs the reference's serialiser (``canonical``) and append check itself.
encode_envelope: Optional[EncodeEnvelope] = None
append_size: Optional[AppendSize] = None


def identical_prefix(a: List[Any], b: List[Any]) -> int:
    """How many leading items of `a` and `b` are the very same objects (``is``)."""
    if all(map(operator.is_, a, b)):  # at C speed, the usual answer: all of them
        return min(len(a), len(b))
    return list(map(operator.is_, a, b)).index(False)



def replay(fd: int, size: int, path: Optional[str] = None) -> Replayed:
    # `path` only tells the native core how to reopen the file; this reads it all now.
    state, events = _replay.replay(fd, size)
    return Replayed(state=state, events=events)


def scan(
    fd: int,
    start: int,
    size: int,
    final_line: bool = False,
    want_ids: bool = False,
    want_survey: bool = False,
    path: Optional[str] = None,
) -> Scanned:
    events, spans, problems, end = _replay.scan(fd, start, size, final_line)
    messages: List[Message] = []
    bad_roles: List[Tuple[int, int]] = []
    for event, (line, off, _) in zip(events, spans):
        if event.type == "message":
            if isinstance(event.payload.get("role"), str):
                messages.append(message_from_payload(event.payload))
            else:
                bad_roles.append((line, off))
    return Scanned(
        events=events,
        spans=spans,
        problems=problems,
        end=end,
        first_type=events[0].type if events else None,
        messages=messages,
        bad_roles=bad_roles,
        ids=[e.id for e in events] if want_ids else [],
        survey=survey(events, spans) if want_survey else None,
    )


#: The most envelopes a history read holds (``rust/replay/history.rs``'s ``MAX_ENVELOPES``).
MAX_HISTORY_ENVELOPES = 2**32 - 1


def history(fd: int, size: int, keep_payloads: bool = True, path: Optional[str] = None) -> Optional[HistoryRead]:
    events, spans, problems, _ = _replay.scan(fd, 0, size)
    # Peek lists nothing unless the first line is a session-meta envelope.
    if not events or events[0].type != "session-meta" or (problems and problems[0][1] < spans[0][1]):
        return None
    if len(events) > MAX_HISTORY_ENVELOPES:  # the native read's bound (its notes index in 32 bits)
        raise MemoryError(f"the transcript has more than {MAX_HISTORY_ENVELOPES} envelopes, the most a history read "
                          "holds; read a part of it (History.read's end) or load it instead")
    fold = HistoryFold(keep_payloads)
    fold.feed_all(events)
    return HistoryRead(
        state=fold.state,
        fed=fold.count,
        removed=fold.removed,
        elided=fold.elided,
        operations=fold.operations,
        answers=fold.answers,
        calls=fold.calls,
        grants_by_id=fold.grants_by_id,
        grants_id=fold.grants_id,
        problems=fold.problems,
        seen=fold._seen,
        unanswered=fold._unanswered,
    )
