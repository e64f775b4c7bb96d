"""``repair``: ``Session.load`` (which repairs a torn tail) and close, reporting what changed."""

from __future__ import annotations

import argparse
import os

from .. import Session, TranscriptError
from .advice import operation_failure
from .output import Out
from .progress import Progress
from .reading import require_file


def run(args: argparse.Namespace, out: Out) -> int:
    """Session.load (which repairs a torn tail) and close; say what it changed."""
    path = args.file
    require_file(path)
    before = os.path.getsize(path)
    try:
        with Progress(f"loading {path}"):
            session = Session.load(path)
    except (TranscriptError, OSError) as e:
        raise operation_failure(e, path) from None
    try:
        warnings = session.warnings
        messages = len(session.message_ids)
        pending = session.pending_tool_operations()
    finally:
        session.close()
    after = os.path.getsize(path)
    if warnings:
        for w in warnings:
            out.line(("repaired", "warn"), f": {w}")
    elif after > before:
        out.line(("repaired", "warn"), f": added the missing final newline to {path}")
    else:
        out.line(("nothing to repair", "ok"), f": {path} loads clean")
    out.line(f"  {before:,} → {after:,} bytes; {messages:,} message(s); {len(pending):,} pending tool operation(s)")
    for op in pending:
        out.line("  ", (f"{op.state}", "warn"), f" {op.tool} [{op.call_id}] op {op.op_id}")
    return 0