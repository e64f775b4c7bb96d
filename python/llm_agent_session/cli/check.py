"""``check``: a read-only verdict on what ``Session.load`` would do, with exit codes.

The verdict comes from loading a private copy, since load itself repairs: the copy gives
the exact error (line, byte offset) and the exact size of the repair, and the file the
user named is never opened for writing.
"""

from __future__ import annotations

import argparse
import os

from .. import CorruptTranscript, NotATranscript, Session, SessionLocked, TranscriptError, UnsupportedVersion
from .output import Out, human_bytes
from .progress import Progress
from .reading import load_error_text, peek, private_copy, require_file

CLEAN, WOULD_REPAIR, WOULD_FAIL, NOT_A_TRANSCRIPT = 0, 1, 2, 3


def run(args: argparse.Namespace, out: Out) -> int:
    path = args.file
    require_file(path)
    view = peek(path)
    if "error" in view:
        out.line(("not a transcript", "error"), f": {path}: {view['error']}")
        return NOT_A_TRANSCRIPT
    with private_copy(path) as copy:
        before = os.path.getsize(copy)
        try:
            with Progress(f"checking {path} ({human_bytes(before)})"):
                session = Session.load(copy)
        except NotATranscript as e:
            out.line(("not a transcript", "error"), ": " + load_error_text(e, path, copy))
            return NOT_A_TRANSCRIPT
        except (CorruptTranscript, UnsupportedVersion) as e:
            after = os.path.getsize(copy) if os.path.exists(copy) else before
            out.line(("would fail", "error"), f": Session.load would raise {type(e).__name__}")
            if e.line is not None:
                out.line(f"  at line {e.line}, byte offset {e.offset}: {e.reason}")
            out.line("  " + load_error_text(e, path, copy))
            out.line(f"  to recover: llm-agent-session salvage {path} NEW.jsonl (every line that parses), "
                     f"or llm-agent-session fork {path} NEW.jsonl --through ID (everything up to an envelope)")
            if after < before:
                out.line(f"  (it would first remove a torn last line of {before - after:,} bytes)")
            out.line(("  checked on a private copy; the file was not changed", "dim"))
            return WOULD_FAIL
        except (SessionLocked, TranscriptError, OSError) as e:
            out.line(("would fail", "error"), ": " + load_error_text(e, path, copy))
            return WOULD_FAIL
        try:
            after = os.path.getsize(copy)
            warnings = session.warnings
            messages = len(session.message_ids)
            pending = session.pending_tool_operations()
        finally:
            session.close()
    code = CLEAN
    if after < before:
        code = WOULD_REPAIR
        out.line(
            ("would repair", "warn"),
            f": a load removes a torn last line of {before - after:,} bytes "
            f"(llm-agent-session repair {path} does it)",
        )
    elif after > before:
        out.line(("loads clean", "ok"), ": a load adds the missing final newline (no line is removed)")
    else:
        out.line(("loads clean", "ok"), f": {path}")
    for w in warnings:
        out.line("  ", ("on the copy, load " + load_error_text(Exception(w), path, copy), "warn"))
    out.line(f"  {messages:,} message(s) the model would be sent; {len(pending)} pending tool operation(s)")
    for w in view["warnings"]:
        out.line("  ", ("peek: " + w, "dim"))
    out.line(("  checked on a private copy; the file was not changed", "dim"))
    return code
