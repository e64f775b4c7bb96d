"""The ``import-checkpoint`` record: how far into its source an import got (bytes, lines,
their SHA-256), written last by every import. The next import of that source into the
same OUT reads it to check that part is unchanged and to know where the new part starts."""

from __future__ import annotations

import hashlib
from typing import Any, Dict, Optional, Tuple

from .. import Session

CHECKPOINT = "import-checkpoint"  # an envelope type of its own: kept in events, skipped by replay


def source_digest(data: bytes, end: int) -> str:
    return "sha256:" + hashlib.sha256(memoryview(data)[:end]).hexdigest()


def last_checkpoint(session: Session) -> Tuple[Optional[Dict[str, Any]], int]:
    """The payload of the last checkpoint and how many envelopes follow it (a ``scrub``
    record not counted: a scrub masks what is there and adds nothing to the conversation)."""
    events = session.events
    after = 0
    for ev in reversed(events):
        if ev.type == CHECKPOINT:
            return dict(ev.payload), after
        if ev.type != "scrub":  # secrets/scrub.py's SCRUB
            after += 1
    return None, after
