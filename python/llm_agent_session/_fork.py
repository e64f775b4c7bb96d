"""``Session.fork``: a new transcript, a fresh meta line then another's envelopes verbatim."""

from __future__ import annotations

import os
from typing import Any, Dict, Mapping, Optional, Sequence, Tuple

from . import _backend
from ._files import publish_new, write_all
from ._fold import FoldState
from ._verbatim import copy_lines, read_source
from .canonical import dumps, envelope_line, new_id, now_ts, validate
from .errors import CoreFailure, CorruptTranscript, DanglingReference, NotATranscript, public_error
from .messages import Event


def fork(
    path: str, out: str, through_id: str, meta: Optional[Mapping[str, Any]]
) -> Tuple[int, FoldState, Sequence[Event]]:
    """Publish the fork at `out`; return its locked descriptor and replayed state."""
    if not isinstance(through_id, str):
        raise TypeError(f"through_id must be a str, not {type(through_id).__name__}")
    fd, size, found = read_source(path, final_line=False)
    events, spans, problems = found.events, found.spans, found.problems
    try:
        if found.first_type != "session-meta" or (problems and problems[0][1] < spans[0][1]):
            raise NotATranscript(f"{path}: the first line is not a session-meta envelope; nothing to fork")
        index = next((i for i, id_ in enumerate(found.ids) if id_ == through_id), None)
        if index is None or index == 0:
            raise DanglingReference(
                f"{path}: no envelope after the meta line has id {through_id!r}; fork names the last "
                "envelope to copy (see message_ids or events)",
                path=path,
            )
        for line, off, _, reason in problems:
            if off < spans[index][1]:
                raise public_error(CoreFailure("corrupt", line, off, reason), path)
        new_meta: Dict[str, Any] = dict(events[0].payload if meta is None else meta)
        new_meta["forked-from"] = {"path": os.path.abspath(path), "id": through_id}
        validate(new_meta, "meta")
        head = envelope_line(new_id(), "session-meta", now_ts(), dumps(new_meta))
        copy = copy_lines(fd, spans[1 : index + 1])
        replayed: Dict[str, Any] = {}

        def write(dst: int) -> None:
            write_all(dst, head)
            copy(dst)

        def check(new_fd: int, new_size: int) -> None:
            try:
                replayed["result"] = _backend.core.replay(new_fd, new_size)
            except CoreFailure as f:
                err = public_error(f, path)
                if isinstance(err, CorruptTranscript):
                    raise type(err)(
                        f"{path}: the part to fork does not replay: {f.reason} (line {f.line} of "
                        "the fork); nothing was written",
                        path=path,
                        reason=f.reason,
                    ) from None
                raise err from None

        out_fd = publish_new(out, write, fsync=True, verify=check)
    finally:
        os.close(fd)
    state, new_events = replayed["result"]
    return out_fd, state, new_events
