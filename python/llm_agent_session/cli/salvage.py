"""``salvage``: ``Session.salvage``, every envelope that parses copied verbatim into a new file."""

from __future__ import annotations

import argparse

from .. import Session, TranscriptError
from .advice import error_text, fork_hint, operation_failure
from .exit_codes import OK, OUT_DOES_NOT_LOAD
from .output import Out
from .progress import Progress
from .reading import require_file


def run(args: argparse.Namespace, out: Out) -> int:
    """Session.salvage: every envelope that parses, verbatim, into a new file."""
    require_file(args.file)
    try:
        with Progress(f"salvaging {args.file}"):
            report = Session.salvage(args.file, args.out)
    except (TranscriptError, OSError) as e:
        raise operation_failure(e, args.file, args.out) from None
    dropped = report["dropped"]
    out.line(("salvaged", "ok"), f": {report['kept']:,} envelope(s) copied to {args.out}; {len(dropped):,} line(s) dropped")
    for d in dropped:
        out.line(f"  line {d['line']:,} (bytes {d['start']:,}–{d['end']:,}): {d['reason']}")
    if report["loads"]:
        out.line(("  the new file loads clean", "ok"))
        return OK
    # The library's advice after "Nothing was changed" is about the source; ours is about OUT.
    error = str(report["error"]).replace(report["path"], args.out)
    error = error.split(" Nothing was changed")[0]
    out.line(("  the new file does not load yet: ", "error"), error_text(Exception(error), args.out))
    out.line(f"  keep what comes before that line: {fork_hint(args.out)}")
    return OUT_DOES_NOT_LOAD