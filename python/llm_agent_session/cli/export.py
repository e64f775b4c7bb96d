"""``export``: the conversation (replay applied) as HTML, Markdown or an OpenAI messages array;
the whole run as OpenTelemetry spans (``--format otlp``, in ``export_otlp.py``)."""

from __future__ import annotations

import argparse
import os
import sys

from .. import Session
from .conversation import annotate, rewound_groups
from .output import CliError, Out, visible
from .reading import open_read_only


def run(args: argparse.Namespace, out: Out) -> int:
    if args.format == "otlp":  # read as peek reads (a file load refuses still exports): its own module
        from .export_otlp import run as run_otlp

        return run_otlp(args, out)
    if args.content or args.endpoint:
        raise CliError("--content and --endpoint are for --format otlp", 2)
    with open_read_only(args.file) as opened:
        s = opened.session
        messages, ids = s.messages, s.message_ids
        meta = s.meta
        if args.format == "openai":
            entries = []
        else:
            entries = annotate(s.events, ids, messages, 0, len(ids))
        pending = s.pending_tool_operations()
        note = opened.note
    rewound = []
    if args.format == "html":
        # What rewinds cut stays on the page, marked (SPEC 10.1: nothing is ever deleted).
        view = Session.peek(args.file, survey=True)
        if "survey" in view and "error" not in view:
            rewound = rewound_groups(view["envelopes"], view["survey"]["rewound"])
    limit = 0 if args.full else args.max_chars
    if args.format == "openai":
        from .export_openai import render as render_openai

        text = render_openai(messages)
    elif args.format == "markdown":
        from .export_markdown import render as render_markdown

        text = render_markdown(args.file, meta, entries, limit)
    else:
        from .export_html import render as render_html

        text = render_html(args.file, meta, entries, pending, limit, rewound)
    if args.output in (None, "-"):
        out.stream.write(text)
    else:
        try:
            with open(args.output, "x", encoding="utf-8") as f:
                f.write(text)
        except FileExistsError:
            raise CliError(f"{args.output}: already exists; name a new file (export never overwrites)", 1) from None
        except OSError as e:
            raise CliError(f"{args.output}: cannot write it ({e.strerror})", 1) from None
        print(visible(f"wrote {args.output} ({os.path.getsize(args.output):,} bytes, {len(messages):,} messages)"),
              file=sys.stderr)
    if note:
        print(visible(f"llm-agent-session export: {note}"), file=sys.stderr)
    return 0
