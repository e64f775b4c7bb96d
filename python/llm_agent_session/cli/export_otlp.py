"""``export --format otlp``: the whole run as OpenTelemetry GenAI spans (``llm_agent_session.otlp``).

It reads the file as peek does (no lock, nothing written), so a live transcript or one
that a load would refuse still exports: what parses becomes spans, and what a load would
refuse is recorded on the root span and said here (exit 0: the spans were written).
"""

from __future__ import annotations

import argparse
import os
import sys
from typing import Iterable

from .. import otlp
from .advice import PROG, command
from .output import CliError, Out, human_bytes, visible
from .reading import peek_transcript, require_file


def run(args: argparse.Namespace, out: Out) -> int:
    require_file(args.file)
    trace = otlp.from_peek(peek_transcript(args.file), content=args.content)
    spans = len(trace.spans)
    if args.output not in (None, "-"):
        size = _write_new(args.output, trace.lines())
        _say(f"wrote {args.output} ({human_bytes(size)}, {spans:,} spans)")
    elif args.output == "-" or args.endpoint is None:
        out.stream.writelines(trace.lines())  # ASCII only: transcript text is escaped in it
    if args.endpoint is not None:
        try:
            sent = otlp.send(trace, args.endpoint, protocol=otlp.protocol_from_environment(),
                             headers=otlp.headers_from_environment())
        except otlp.SendError as e:
            raise CliError(str(e), 1) from None
        _say(f"sent {spans:,} spans in {sent.requests:,} request(s) to {sent.url}")
        if sent.rejected_spans or sent.message:
            _say(f"the collector rejected {sent.rejected_spans:,} of them: {sent.message or '(no reason given)'}")
    if trace.unfinished_bytes:
        _say(f"{args.file}: its unfinished last line ({trace.unfinished_bytes:,} bytes, a writer cut off "
             "mid-line) is left out")
    if trace.problems:
        _say(f"{args.file}: a load would refuse it ({len(trace.problems):,} problem(s); the first: "
             f"{trace.problems[0]}); exported what parses, with the problems on the root span. "
             f"`{command('check', args.file)}` says more")
    return 0


def _write_new(path: str, lines: Iterable[str]) -> int:
    """Write `lines` to the new file `path` (never over an existing one); a failed write
    leaves nothing behind."""
    try:
        f = open(path, "x", encoding="ascii", newline="")
    except FileExistsError:
        raise CliError(f"{path}: already exists; name a new file (export never overwrites)", 1) from None
    except OSError as e:
        raise CliError(f"{path}: cannot write it ({e.strerror})", 1) from None
    try:
        with f:
            f.writelines(lines)
        return os.path.getsize(path)
    except OSError as e:
        os.unlink(path)
        raise CliError(f"{path}: cannot write it ({e.strerror}); nothing was kept", 1) from None


def _say(text: str) -> None:
    print(visible(f"{PROG} export: {text}"), file=sys.stderr)
