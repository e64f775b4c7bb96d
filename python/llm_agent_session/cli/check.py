"""``check``: a read-only verdict on what ``Session.load`` would do, with exit codes.

The verdict comes from load's own tail check and replay run read-only on the file
(``llm_agent_session.verdict``): no copy, no lock, nothing written, so a 256 MB transcript checks with
no free space at all, and a torn tail is reported exactly as ``repair`` would remove it.
"""

from __future__ import annotations

import argparse
from dataclasses import asdict
from typing import Any, Dict

from ..verdict import Kind, Verdict, verdict
from .advice import command, error_text, recovery
from .output import Out, count, human_bytes
from .progress import Progress
from .reading import require_file


def report(path: str, v: Verdict) -> Dict[str, Any]:
    """The --json form of a verdict (keys as the Python API spells them)."""
    out: Dict[str, Any] = {"path": path, "size": v.size, "exit_code": v.kind.number, "verdict": v.kind.said}
    out["torn"] = None if v.torn is None else {
        "line": v.torn.line, "offset": v.torn.cut, "bytes": v.torn.removed, "excerpt": v.torn.excerpt,
    }
    out["adds_newline"] = v.adds_newline
    e = v.error
    out["error"] = None if e is None else {
        "type": type(e).__name__,
        "line": getattr(e, "line", None),
        "offset": getattr(e, "offset", None),
        "reason": getattr(e, "reason", None) or str(e),
        "message": error_text(e, path),
    }
    if v.kind.loads:
        out["live_messages"] = v.messages  # as peek and its survey name it
        out["pending_tool_operations"] = [asdict(op) for op in v.pending]  # as peek --json lists them
    out["notes"] = list(v.notes)
    return out


def torn_text(v: Verdict) -> str:
    """The torn line as ``repair`` would report removing it."""
    t = v.torn
    assert t is not None
    return (f"a torn last line of {count(t.removed)} bytes (line {count(t.line)}, from byte {count(t.cut)} "
            f"to the end, starting {t.excerpt[:60]!r})")


def run(args: argparse.Namespace, out: Out) -> int:
    path = args.file
    size = require_file(path)
    try:
        with Progress(f"checking {path} ({human_bytes(size)})"):
            v = verdict(path)
    except OSError as e:  # it cannot be read (or vanished): like a missing file
        v = Verdict(Kind.NOT_A_TRANSCRIPT, size, error=e)
    if args.json:
        out.json(report(path, v))
        return v.kind.number
    if v.kind is Kind.NOT_A_TRANSCRIPT:
        out.line((v.kind.said, "error"), ": " + error_text(v.error or Exception(), path))
        return v.kind.number
    if v.kind is Kind.WOULD_FAIL:
        error = v.error
        assert error is not None
        out.line((v.kind.said, "error"), f": a load raises {type(error).__name__}")
        line = getattr(error, "line", None)
        if line is not None:
            offset, reason = getattr(error, "offset", None), getattr(error, "reason", None)
            out.line(f"  at line {count(line)}, byte offset {count(offset)}: {reason}")
            out.line("  " + recovery(error, path))
        else:
            out.line("  " + error_text(error, path))
        if v.torn:
            out.line(f"  (it would first remove {torn_text(v)})")
        out.line(("  checked read-only; the file was not changed", "dim"))
        return v.kind.number
    if v.kind is Kind.WOULD_REPAIR:
        out.line(
            (v.kind.said, "warn"),
            f": a load removes {torn_text(v)}; `{command('repair', path)}` does it",
        )
    elif v.adds_newline:
        out.line((v.kind.said, "ok"), ": a load adds the missing final newline (no line is removed)")
    else:
        out.line((v.kind.said, "ok"), f": {path}")
    for note in v.notes:
        out.line("  ", (note, "warn"))
    out.line(f"  {count(v.messages)} message(s) the model would be sent; {count(len(v.pending))} pending tool operation(s)")
    out.line(("  checked read-only; the file was not changed", "dim"))
    return v.kind.number
