"""``fork``: ``Session.fork``, a new transcript with the envelopes up to and including --through."""

from __future__ import annotations

import argparse

from .. import Session, TranscriptError
from .advice import operation_failure
from .output import Out
from .progress import Progress
from .reading import require_file


def run(args: argparse.Namespace, out: Out) -> int:
    """Session.fork: a new transcript with the envelopes up to and including --through."""
    require_file(args.file)
    try:
        with Progress(f"forking {args.file}"):
            session = Session.fork(args.file, args.out, args.through)
    except (TranscriptError, OSError) as e:
        raise operation_failure(e, args.file, args.out) from None
    try:
        events = len(session.events)
        messages = len(session.message_ids)
        pending = session.pending_tool_operations()
    finally:
        session.close()
    out.line(("forked", "ok"), f": {args.out} holds {events - 1:,} envelope(s) of {args.file} through {args.through}")
    out.line(f"  {messages:,} message(s) the model would be sent; {len(pending):,} pending tool operation(s)")
    return 0
