"""``export``: a transcript as HTML, Markdown or an OpenAI messages array, or the whole run
as OpenTelemetry spans (``--format otlp``, written and sent by ``export_otlp.py``).

Without ``--all`` an export is the live conversation (replay applied: what the model
would be sent next); with ``--all`` (html, markdown) it is the whole history in file
order (``whole_history.py``), written as it is rendered, a row at a time, so its memory
does not grow with the file. Each format is one entry of :data:`FORMATS`: what its
``--help`` says, whether it can write the whole history, and the function that renders it.

Every format reads the transcript through one ``secrets.Redactor`` (``--no-redact`` turns
it off): what the rules find is masked before anything is rendered, and the count is said
on stderr. A file written with ``-o`` is private to the user (0600) unless ``--shared``.
"""

from __future__ import annotations

import argparse
import os
import sys
from typing import Any, Callable, Dict, Iterable, List, NamedTuple, Optional

from .. import Session
from ..visible import visible
from .arguments import whole_number
from .conversation import Entry, RewoundGroup, annotate, rewound_groups
from .exit_codes import FAILED, OK, READS_TRANSCRIPT, USAGE
from .new_file import write_new_file
from .output import CliError, Out
from .reading import open_read_only, peek_transcript, require_file
from .redaction import add_redaction_arguments, read_redacted, redactor_of, say_masked
from .whole_history import WholeHistory


class Exported(NamedTuple):
    text: Iterable[str]  # the export, in pieces to write one after the other
    messages: int  # how many messages it holds (for the line on stderr)
    note: Optional[str] = None  # why it was read from a private copy, if it was


class Live(NamedTuple):
    """The live conversation, read without changing the file."""

    meta: Dict[str, Any]
    entries: List[Entry]
    messages: List[Any]
    pending: List[Any]
    note: Optional[str]


def read_live(path: str, annotated: bool = True, index: bool = True) -> Live:
    with open_read_only(path, index=index) as opened:
        s = opened.session
        messages, ids = s.messages, s.message_ids
        entries = annotate(s.events, ids, messages, 0, len(ids)) if annotated else []
        return Live(s.meta, entries, messages, s.pending_tool_operations(), opened.note)


def _whole(args: argparse.Namespace) -> WholeHistory:
    require_file(args.file)
    return read_redacted(args.file, args.redactor,
                         lambda readable, _: WholeHistory.read(peek_transcript(readable)["envelopes"]))


def _limit(args: argparse.Namespace) -> int:
    return 0 if args.full else int(args.max_chars)


def html(args: argparse.Namespace) -> Exported:
    from .export_html import render, render_all

    if args.all:
        whole = _whole(args)
        return Exported(render_all(args.file, whole, _limit(args)), whole.messages)

    def read(readable: str, original: bool) -> Any:
        # What rewinds cut stays on the page, marked: nothing is ever deleted from a transcript.
        return read_live(readable, index=original), Session.peek(readable, survey=True)

    live, view = read_redacted(args.file, args.redactor, read)
    rewound: List[RewoundGroup] = []
    if "survey" in view and "error" not in view:
        rewound = rewound_groups(view["envelopes"], view["survey"]["rewound"])
    text = render(args.file, live.meta, live.entries, live.pending, _limit(args), rewound)
    return Exported([text], len(live.entries), live.note)


def markdown(args: argparse.Namespace) -> Exported:
    from .export_markdown import render, render_all

    if args.all:
        whole = _whole(args)
        return Exported(render_all(args.file, whole, _limit(args)), whole.messages)
    live = read_redacted(args.file, args.redactor, lambda readable, original: read_live(readable, index=original))
    text = render(args.file, live.meta, live.entries, _limit(args), live.pending)
    return Exported([text], len(live.entries), live.note)


def openai(args: argparse.Namespace) -> Exported:
    from .export_openai import render

    live = read_redacted(args.file, args.redactor,
                         lambda readable, original: read_live(readable, annotated=False, index=original))
    return Exported([render(live.messages)], len(live.messages), live.note)


class Format(NamedTuple):
    help: str
    render: Callable[[argparse.Namespace], Exported]
    whole_history: bool  # whether --all can write it


FORMATS: Dict[str, Format] = {
    "html": Format("one self-contained page", html, True),
    "markdown": Format("a Markdown document", markdown, True),
    "openai": Format("a chat-completions messages array (JSON)", openai, False),
}


def add_parser(add: Callable[..., argparse.ArgumentParser], common: argparse.ArgumentParser) -> None:
    p = add(
        "export",
        {OK: "written", FAILED: "it does not load (without --all; otlp exports what parses), or OUT exists or cannot "
                             "be written, or the --endpoint collector could not be reached or refused",
         **READS_TRANSCRIPT},
        parents=[common], help="the conversation (or with --all the whole history) as " + ", ".join(FORMATS),
    )
    p.add_argument("file", metavar="FILE", help="the transcript (a .jsonl file written by llm-agent-session)")
    p.add_argument("--format", required=True, choices=tuple(FORMATS) + ("otlp",),
                   help="; ".join(f"{name}: {f.help}" for name, f in FORMATS.items())
                   + "; otlp: OpenTelemetry GenAI spans, one OTLP/JSON request per line (docs/otlp.md)")
    p.add_argument("--all", action="store_true",
                   help="the whole history in file order, not only the live conversation: compacted and rewound "
                        "messages marked by what removed them, elided ones with their original and stub, every "
                        "tool dispatch and settle, grants, run context (" + ", ".join(
                            name for name, f in FORMATS.items() if f.whole_history) + ")")
    p.add_argument("-o", "--output", metavar="OUT", help="write to this new file instead of stdout")
    p.add_argument("--max-chars", type=whole_number(0), default=100_000, metavar="N",
                   help="shorten each tool result and extra to N chars (default 100000; not for openai)")
    p.add_argument("--full", action="store_true", help="do not shorten tool results or extras")
    p.add_argument("--content", action="store_true",
                   help="otlp: put the messages in the spans (opt-in: they hold whatever the conversation held)")
    p.add_argument("--endpoint", metavar="URL",
                   help="otlp: also send the spans to this OTLP/HTTP collector (e.g. http://localhost:4318); "
                   "nothing goes to stdout then unless -o - is given")
    add_redaction_arguments(p, "OUT")


def run(args: argparse.Namespace, out: Out) -> int:
    args.redactor = redactor_of(args)
    if args.format == "otlp":  # read as peek reads (a file a load refuses still exports): its own module
        from .export_otlp import run as run_otlp

        return run_otlp(args, out)
    if args.content or args.endpoint:
        raise CliError("--content and --endpoint are for --format otlp", USAGE)
    chosen = FORMATS[args.format]
    if args.all and not chosen.whole_history:
        raise CliError(f"--all is for {', '.join(n for n, f in FORMATS.items() if f.whole_history)}, "
                       f"not {args.format}", USAGE)
    exported = chosen.render(args)
    if args.output in (None, "-"):
        for piece in exported.text:
            out.stream.write(piece)
    else:
        write_new_file(args.output, exported.text, shared=args.shared)
        print(visible(f"wrote {args.output} ({os.path.getsize(args.output):,} bytes, {exported.messages:,} messages)"),
              file=sys.stderr)
    say_masked("export", args.redactor)
    if exported.note:
        print(visible(f"llm-agent-session export: {exported.note}"), file=sys.stderr)
    return OK
