"""``Session.salvage`` and ``Session.fork``: new files made of another's lines, verbatim (SPEC 9)."""

from __future__ import annotations

import os
from typing import Any, Dict, List, Mapping, Optional, Sequence, Tuple

from . import _backend, _platform
from ._files import publish_new, write_all
from ._core import Scanned, Span
from ._fold import FoldState, duplicate_reason
from .canonical import dumps, envelope_line, new_id, now_ts, validate
from .errors import CoreFailure, CorruptTranscript, DanglingReference, NotATranscript, public_error
from .messages import Event

COPY_CHUNK = 1 << 20


def _read_source(path: str, final_line: bool) -> Tuple[int, int, Scanned]:
    fd = os.open(path, os.O_RDONLY | _platform.O_CLOEXEC | _platform.O_BINARY)
    try:
        size = os.fstat(fd).st_size
        return fd, size, _backend.core.scan(fd, 0, size, final_line, True, path=path)
    except BaseException:
        os.close(fd)
        raise


def _copy_lines(src: int, spans: Sequence[Span]) -> Any:
    """A writer for publish_new: each span's bytes, verbatim, each followed by ``\\n``."""

    def write(dst: int) -> None:
        batch: List[bytes] = []
        batched = 0
        for _, off, length in spans:
            batch.append(_platform.pread(src, length, off))
            batch.append(b"\n")
            batched += length + 1
            if batched >= COPY_CHUNK:
                write_all(dst, b"".join(batch))
                batch, batched = [], 0
        if batch:
            write_all(dst, b"".join(batch))

    return write


def salvage(path: str, out: str) -> Dict[str, Any]:
    fd, size, found = _read_source(path, final_line=True)
    try:
        dropped: List[Dict[str, Any]] = [
            {"line": line, "start": off, "end": off + length, "reason": reason}
            for line, off, length, reason in found.problems
        ]
        kept: List[Span] = []
        seen = set()
        for id_, span in zip(found.ids, found.spans):
            if id_ in seen:
                line, off, length = span
                dropped.append({"line": line, "start": off, "end": off + length, "reason": duplicate_reason(id_)})
                continue
            seen.add(id_)
            kept.append(span)
        dropped.sort(key=lambda d: d["start"])
        verdict: Dict[str, Any] = {"loads": False, "error": None}

        def check(new_fd: int, new_size: int) -> None:
            try:
                _backend.core.replay(new_fd, new_size)
            except CoreFailure as f:
                verdict["error"] = str(public_error(f, out))
            else:
                verdict["loads"] = True

        # Closed at once, so unlocked: salvage needs no lock (and works where there is none).
        out_fd = publish_new(out, _copy_lines(fd, kept), fsync=True, verify=check, lock=False)
        os.close(out_fd)
    finally:
        os.close(fd)
    return {
        "path": out,
        "source": path,
        "kept": len(kept),
        "dropped": dropped,
        "loads": verdict["loads"],
        "error": verdict["error"],
    }


def fork(
    path: str, out: str, through_id: str, meta: Optional[Mapping[str, Any]]
) -> Tuple[int, FoldState, Sequence[Event]]:
    """Publish the fork at `out`; return its locked descriptor and replayed state."""
    if not isinstance(through_id, str):
        raise TypeError(f"through_id must be a str, not {type(through_id).__name__}")
    fd, size, found = _read_source(path, final_line=False)
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
        copy = _copy_lines(fd, spans[1 : index + 1])
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
