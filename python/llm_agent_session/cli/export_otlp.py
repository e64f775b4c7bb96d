"""``export --format otlp``: the whole run as OpenTelemetry GenAI spans (``llm_agent_session.otlp``).

It reads the file as peek does (no lock, nothing written), so a live transcript or one
that a load would refuse still exports: what parses becomes spans, and what a load would
refuse is recorded on the root span and said here (exit 0: the spans were written).
What the secret rules find is masked first, as in every export (``--no-redact``).
"""

from __future__ import annotations

import argparse
import os
import sys
from .. import otlp
from ..visible import visible
from .advice import PROG, command
from .exit_codes import FAILED, OK
from .new_file import write_new_file
from .output import CliError, Out, human_bytes
from .reading import peek_transcript, require_file
from .redaction import read_redacted, say_masked


def run(args: argparse.Namespace, out: Out) -> int:
    require_file(args.file)
    trace = read_redacted(args.file, args.redactor,
                          lambda readable, _: otlp.from_peek(peek_transcript(readable), content=args.content))
    spans = len(trace.spans)
    if args.output not in (None, "-"):
        write_new_file(args.output, trace.lines(), shared=args.shared)
        _say(f"wrote {args.output} ({human_bytes(os.path.getsize(args.output))}, {spans:,} spans)")
    elif args.output == "-" or args.endpoint is None:
        out.stream.writelines(trace.lines())  # ASCII only: transcript text is escaped in it
    if args.endpoint is not None:
        try:
            sent = otlp.send(trace, args.endpoint, protocol=otlp.protocol_from_environment(),
                             headers=otlp.headers_from_environment())
        except otlp.SendError as e:
            raise CliError(str(e), FAILED) from None
        _say(f"sent {spans:,} spans in {sent.requests:,} request(s) to {sent.url}")
        if sent.rejected_spans or sent.message:
            _say(f"the collector rejected {sent.rejected_spans:,} of them: {sent.message or '(no reason given)'}")
    say_masked("export", args.redactor)
    if trace.unfinished_bytes:
        _say(f"{args.file}: its unfinished last line ({trace.unfinished_bytes:,} bytes, a writer cut off "
             "mid-line) is left out")
    if trace.problems:
        _say(f"{args.file}: a load would refuse it ({len(trace.problems):,} problem(s); the first: "
             f"{trace.problems[0]}); exported what parses, with the problems on the root span. "
             f"`{command('check', args.file)}` says more")
    return OK


def _say(text: str) -> None:
    print(visible(f"{PROG} export: {text}"), file=sys.stderr)
