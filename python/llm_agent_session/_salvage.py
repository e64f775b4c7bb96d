"""``Session.salvage``: every envelope of a damaged transcript that parses, verbatim, in a new file."""

from __future__ import annotations

import os
from typing import Any, Dict, List

from . import _backend
from ._files import publish_new
from ._core import Span
from ._fold import duplicate_reason
from ._verbatim import copy_lines, read_source
from .errors import CoreFailure, public_error


def salvage(path: str, out: str) -> Dict[str, Any]:
    fd, size, found = read_source(path, final_line=True)
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
        out_fd = publish_new(out, copy_lines(fd, kept), fsync=True, verify=check, lock=False)
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
