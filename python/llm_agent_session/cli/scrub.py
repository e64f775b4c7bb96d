"""``scrub``: transcripts rewritten with their secrets masked (docs/secrets.md).

Each transcript is copied with its secrets masked and renamed over itself under the
writer's lock, and gets a ``scrub`` record; a SIGKILL leaves the old file or the new one.
A directory is scrubbed file by file (its ``*.jsonl``; files that are not transcripts,
such as Claude Code sources, are skipped and listed).
"""

from __future__ import annotations

import argparse
import json
import os
from typing import Any, Callable, Optional

from ..errors import NotATranscript, SessionLocked
from .advice import error_text
from .exit_codes import FAILED, NOT_A_TRANSCRIPT, OK, USAGE
from .output import CliError, Out, count

DESCRIPTION = """Mask the secrets `scan` finds in transcripts, in place: each file is copied with
every secret replaced by «redacted:RULE:FINGERPRINT» (digests recomputed, ids and order
kept), the copy checked to load, and renamed over the original under the writer's lock,
with a `scrub` record at its end. The conversation, pending tool calls and grants replay
as before but for the masked spans, so the history can still be resumed. A file held
by a running session is refused. A DIR is scrubbed file by file (*.jsonl)."""

EXIT_CODES = {OK: "every transcript was scrubbed or had nothing to mask",
              FAILED: "a transcript could not be scrubbed (held by a session, damaged, read-only; it is unchanged)",
              NOT_A_TRANSCRIPT: "a FILE named is not a transcript"}


def add_parser(add: Callable[..., argparse.ArgumentParser], common: argparse.ArgumentParser) -> None:
    p = add("scrub", EXIT_CODES, parents=[common], help="mask the secrets in transcripts, in place",
            description=DESCRIPTION)
    p.add_argument("paths", nargs="+", metavar="PATH", help="a transcript, or a directory of them")
    p.add_argument("--keep-original", action="store_true",
                   help="keep each file as it was beside it, as FILE.unscrubbed (it still holds the secrets)")
    p.add_argument("--env", action="append", default=[], metavar="NAME",
                   help="also mask the value of this environment variable wherever it is (repeatable)")
    p.add_argument("--config", metavar="FILE", help="rules and allowed values (as scan takes them)")
    p.add_argument("--json", action="store_true", help="one JSON object per transcript")


def _policy(args: argparse.Namespace) -> Any:
    from ..secrets import ConfigError, Policy, load_rules

    try:
        return Policy(load_rules(args.config), env=args.env)
    except (ConfigError, ValueError) as e:
        raise CliError(str(e), USAGE) from None


def _report(out: Out, args: argparse.Namespace, path: str, status: str, report: Any = None,
            reason: Optional[str] = None) -> None:
    if args.json:
        row = {"path": path, "status": status, "error": reason}
        if report is not None:
            row.update(masked=report.masked, rules=report.rules, lines=report.lines, digests=report.digests,
                       kept=report.kept, warnings=report.warnings)
        out.stream.write(json.dumps(row, ensure_ascii=True) + "\n")
        return
    style = {"scrubbed": "ok", "clean": "dim", "failed": "error", "skipped": "dim"}[status]
    if report is not None and report.masked:
        rules = ", ".join(f"{name} {n}" for name, n in sorted(report.rules.items()))
        detail = f": {count(report.masked)} secret(s) masked ({rules}), {count(report.lines)} line(s) rewritten"
        if report.kept:
            detail += f"; the original is kept as {report.kept}"
    elif status == "clean":
        detail = ": nothing to mask"
    else:
        detail = f": {reason}"
    out.line((f"{status:9}", style), f" {path}{detail}")
    for warning in report.warnings if report is not None else []:
        out.line(("    " + warning, "warn"))


def run(args: argparse.Namespace, out: Out) -> int:
    from ..secrets import scrub_file
    from ..secrets.scrub import transcripts_under

    policy = _policy(args)
    failed, not_transcript, done = [], [], 0
    for top in args.paths:
        if not os.path.exists(top):
            raise CliError(f"{top}: no such file or directory", NOT_A_TRANSCRIPT)
        named = not os.path.isdir(top)
        for path in [top] if named else transcripts_under(top):
            try:
                report = scrub_file(path, policy, keep_original=args.keep_original)
            except NotATranscript as e:
                _report(out, args, path, "failed" if named else "skipped", reason=error_text(e, path))
                if named:
                    not_transcript.append(path)
                continue
            except SessionLocked as e:
                failed.append(path)
                _report(out, args, path, "failed", reason=error_text(e, path) + " (stop the process that has it "
                        "open, or wait for it to finish)")
                continue
            except (OSError, ValueError, RuntimeError) as e:  # damaged (CorruptTranscript is a ValueError), I/O
                failed.append(path)
                _report(out, args, path, "failed", reason=error_text(e, path))
                continue
            done += 1
            _report(out, args, path, "scrubbed" if report.masked else "clean", report)
    if not args.json:
        out.line(f"{count(done)} transcript(s) scrubbed or clean"
                 + (f", {count(len(failed))} failed" if failed else ""))
    if failed:
        return FAILED
    return NOT_A_TRANSCRIPT if not_transcript else OK

