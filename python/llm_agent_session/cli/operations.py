"""``repair``, ``salvage`` and ``fork``: the library's own operations, reporting what they did."""

from __future__ import annotations

import argparse
import os
from typing import Optional

from .. import NotATranscript, Session, SessionLocked, TranscriptError
from .advice import error_text, fork_hint
from .output import CliError, Out
from .progress import Progress
from .reading import require_file


def _failure(e: BaseException, path: str, out: Optional[str] = None) -> CliError:
    """The CliError for a failure about `path` (or the new file `out`)."""
    if isinstance(e, SessionLocked):
        return CliError(f"{error_text(e, path)} (stop the process that has it open, or wait for it to finish)", 1)
    if isinstance(e, NotATranscript):
        return CliError(error_text(e, path), 3)
    if isinstance(e, FileExistsError):
        return CliError(f"{e.filename or out or path}: already exists; it is never overwritten, name a new file", 1)
    return CliError(error_text(e, path), 1)


def repair(args: argparse.Namespace, out: Out) -> int:
    """Session.load (which repairs a torn tail) and close; say what it changed."""
    path = args.file
    require_file(path)
    before = os.path.getsize(path)
    try:
        with Progress(f"loading {path}"):
            session = Session.load(path)
    except (TranscriptError, OSError) as e:
        raise _failure(e, path) from None
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


def salvage(args: argparse.Namespace, out: Out) -> int:
    """Session.salvage: every envelope that parses, verbatim, into a new file."""
    require_file(args.file)
    try:
        with Progress(f"salvaging {args.file}"):
            report = Session.salvage(args.file, args.out)
    except (TranscriptError, OSError) as e:
        raise _failure(e, args.file, args.out) from None
    dropped = report["dropped"]
    out.line(("salvaged", "ok"), f": {report['kept']:,} envelope(s) copied to {args.out}; {len(dropped):,} line(s) dropped")
    for d in dropped:
        out.line(f"  line {d['line']:,} (bytes {d['start']:,}–{d['end']:,}): {d['reason']}")
    if report["loads"]:
        out.line(("  the new file loads clean", "ok"))
        return 0
    # The library's advice after "Nothing was changed" is about the source; ours is about OUT.
    error = str(report["error"]).replace(report["path"], args.out)
    error = error.split(" Nothing was changed")[0]
    out.line(("  the new file does not load yet: ", "error"), error_text(Exception(error), args.out))
    out.line(f"  keep what comes before that line: {fork_hint(args.out)}")
    return 1


def fork(args: argparse.Namespace, out: Out) -> int:
    """Session.fork: a new transcript with the envelopes up to and including --through."""
    require_file(args.file)
    try:
        with Progress(f"forking {args.file}"):
            session = Session.fork(args.file, args.out, args.through)
    except (TranscriptError, OSError) as e:
        raise _failure(e, args.file, args.out) from None
    try:
        events = len(session.events)
        messages = len(session.message_ids)
        pending = session.pending_tool_operations()
    finally:
        session.close()
    out.line(("forked", "ok"), f": {args.out} holds {events - 1:,} envelope(s) of {args.file} through {args.through}")
    out.line(f"  {messages:,} message(s) the model would be sent; {len(pending):,} pending tool operation(s)")
    return 0
