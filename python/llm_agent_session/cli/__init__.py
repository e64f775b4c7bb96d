"""The ``llm-agent-session`` command line, built on the public API only.

Each subcommand lives in its own module and is imported only when run, so
``llm-agent-session peek`` does not pay for the HTML exporter. rich (the ``cli`` extra)
is optional: without it, or when output is not a terminal, everything is plain text.

Exit codes: 0 success; 1 the operation failed (the message says what, where and what
to do); 2 a usage error; 3 the file is not a transcript (or cannot be read). ``check``
documents its own: 0 loads clean, 1 would repair a torn tail, 2 would fail, 3 not a
transcript. Every subcommand's ``--help`` lists its codes.

Everything printed passes through ``output.visible`` (transcript text is shown, never
obeyed), suggestions name commands (``advice.py``), and ``--json`` keys are spelled as
the Python API spells them (snake_case).
"""

from __future__ import annotations

import argparse
import importlib
import os
import sys
from typing import Any, Callable, Dict, List, Optional, Tuple

from .advice import PROG
from .arguments import whole_number
from .output import CliError, Out, visible, want_colour

USAGE_EXIT = "  2  usage error (a wrong or missing argument)"


def exit_codes(*rows: str) -> str:
    """A subcommand's --help epilog: its exit codes, then how output treats transcript text."""
    return "exit codes:\n" + "\n".join(f"  {row}" for row in rows) + "\n" + USAGE_EXIT + "\n\n" + OUTPUT_NOTE


OUTPUT_NOTE = """Transcript text is shown, never obeyed: control characters and escape sequences
appear as \\x1b, \\r, ...; invisible and bidi characters as <U+202E>, ...; rich markup
as the brackets it is. --json keys are spelled as in the Python API (snake_case)."""

NOT_A_TRANSCRIPT_EXIT = "3  not a transcript (missing, unreadable, empty, or no session-meta first line)"


FILE_HELP = "the transcript (a .jsonl file written by llm-agent-session)"


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog=PROG,
        description="The durable, resumable JSONL transcript of an LLM agent run: look at one, check it, repair it.",
        epilog="exit codes: 0 ok, 1 the operation failed, 2 usage error, 3 not a transcript "
        "(check has its own, see check -h; every COMMAND -h lists its codes)\n\n" + OUTPUT_NOTE,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    parser.add_argument("--version", action="version", version=f"%(prog)s {_version()}",
                        help="print the version and exit")
    common = argparse.ArgumentParser(add_help=False)
    common.add_argument(
        "--color", "--colour", dest="color", choices=("auto", "always", "never"), default="auto",
        help="colour the output: auto (default) only on a terminal without NO_COLOR; always for less -R",
    )
    sub = parser.add_subparsers(dest="command", required=True, metavar="COMMAND", help="what to do (COMMAND -h for more)")

    def add_parser(name: str, codes: Tuple[str, ...], **kw: Any) -> argparse.ArgumentParser:
        kw.setdefault("description", kw.get("help"))  # `COMMAND -h` says what it does too
        return sub.add_parser(
            name, epilog=exit_codes(*codes), formatter_class=argparse.RawDescriptionHelpFormatter, **kw
        )

    demo = add_parser("demo", ("0  the demo ran: the run was killed and resumed", "1  it failed"),
                      help="run a scripted agent, kill it with SIGKILL mid-write, resume it")
    demo.add_argument("--dir", help="where to write the transcript (default: a new temp directory)")

    p = add_parser(
        "peek", ("0  the file was read (whether a load would accept it is in the report)", NOT_A_TRANSCRIPT_EXIT),
        parents=[common], help="what the file says without opening it (never writes)",
    )
    p.add_argument("file", metavar="FILE", help=FILE_HELP)
    p.add_argument("--json", action="store_true", help="print the report as JSON")

    p = add_parser(
        "show", ("0  shown", "1  it does not load (the error says where and what to run), or no such --from ID",
                 NOT_A_TRANSCRIPT_EXIT),
        parents=[common], help="the conversation as the model would be sent it next",
    )
    p.add_argument("file", metavar="FILE", help=FILE_HELP)
    p.add_argument("--raw", action="store_true", help="every envelope in file order instead (no replay)")
    p.add_argument("--last", type=whole_number(0), metavar="N", help="only the last N messages (envelopes with --raw)")
    p.add_argument("--from", dest="from_id", metavar="ID", help="start at the message (envelope with --raw) with this id")
    p.add_argument("--max-chars", type=whole_number(0), default=2000, metavar="N",
                   help="shorten tool results (payloads with --raw) to N chars (default 2000)")
    p.add_argument("--full", action="store_true", help="do not shorten anything")

    p = add_parser(
        "tail", ("0  printed (with -f: stopped with Ctrl-C)", NOT_A_TRANSCRIPT_EXIT),
        parents=[common], help="print envelopes as they are appended (-f follows)",
    )
    p.add_argument("file", metavar="FILE", help=FILE_HELP)
    p.add_argument("-f", "--follow", action="store_true", help="keep printing new envelopes until Ctrl-C")
    p.add_argument("-n", "--lines", type=whole_number(0), default=10, metavar="N", help="start with the last N envelopes (default 10)")
    p.add_argument("--json", action="store_true",
                   help="print each envelope as its JSON line (control, bidi and invisible characters as \\uXXXX escapes)")

    p = add_parser(
        "check",
        ("0  loads clean",
         "1  a load would repair a torn tail (which line and how many bytes is printed)",
         "2  a load would fail (the error, line and byte offset are printed)",
         "3  not a transcript (missing, empty, or no session-meta first line)"),
        parents=[common], help="read-only verdict: 0 clean, 1 would repair, 2 would fail, 3 not a transcript",
    )
    p.add_argument("file", metavar="FILE", help=FILE_HELP)
    p.add_argument("--json", action="store_true", help="print the verdict as JSON (the exit code is the same)")

    p = add_parser(
        "repair", ("0  loaded: repaired, or nothing to repair", "1  it cannot be loaded (locked, damaged, read-only)",
                   NOT_A_TRANSCRIPT_EXIT),
        parents=[common], help="load the file (repairing a torn tail) and report what changed",
    )
    p.add_argument("file", metavar="FILE", help=FILE_HELP + "; repaired in place (atomically)")

    p = add_parser(
        "salvage", ("0  OUT was written and loads clean",
                    "1  OUT was written but does not load yet (what to run next is printed), or nothing was "
                    "written (OUT exists, the disk is full, ...)", NOT_A_TRANSCRIPT_EXIT),
        parents=[common], help="copy every envelope that parses into the new file OUT",
    )
    p.add_argument("file", metavar="FILE", help=FILE_HELP + " (only read)")
    p.add_argument("out", metavar="OUT", help="the new file to write (never an existing one)")

    p = add_parser(
        "fork", ("0  OUT was written", "1  nothing was written (no such ID, OUT exists, the part does not replay)",
                 NOT_A_TRANSCRIPT_EXIT),
        parents=[common], help="a new transcript OUT with FILE's envelopes through --through ID",
    )
    p.add_argument("file", metavar="FILE", help=FILE_HELP + " (only read)")
    p.add_argument("out", metavar="OUT", help="the new transcript to write (never an existing file)")
    p.add_argument("--through", required=True, metavar="ID",
                   help="the id of the last envelope to copy (`llm-agent-session show --raw FILE` lists them)")

    p = add_parser(
        "stats", ("0  counted", NOT_A_TRANSCRIPT_EXIT),
        parents=[common], help="bytes, messages, tool operations, compactions, elisions, artifacts",
    )
    p.add_argument("file", metavar="FILE", help=FILE_HELP)
    p.add_argument("--json", action="store_true", help="print the report as JSON")

    p = add_parser(
        "export", ("0  written", "1  it does not load, or OUT exists or cannot be written", NOT_A_TRANSCRIPT_EXIT),
        parents=[common], help="the conversation as html, markdown or an openai messages array",
    )
    p.add_argument("file", metavar="FILE", help=FILE_HELP)
    p.add_argument("--format", required=True, choices=("html", "markdown", "openai"),
                   help="html: one self-contained page; markdown; openai: a chat-completions messages array (JSON)")
    p.add_argument("-o", "--output", metavar="OUT", help="write to this new file instead of stdout")
    p.add_argument("--max-chars", type=whole_number(0), default=100_000, metavar="N",
                   help="shorten each tool result to N chars (default 100000; not for openai)")
    p.add_argument("--full", action="store_true", help="do not shorten tool results")

    from . import dataset, import_, query  # these commands keep their parsers in their own modules

    import_.add_parser(add_parser, common)
    dataset.add_parser(add_parser, common)
    query.add_parser(add_parser, common)
    return parser


def _version() -> str:
    from .. import __version__

    return __version__


Handler = Callable[[argparse.Namespace, Out], int]


def _run_module(name: str) -> Handler:
    """The ``run`` of the module ``cli/<name>.py``, imported when the command runs."""

    def run(args: argparse.Namespace, out: Out) -> int:
        module = importlib.import_module(f"{__name__}.{name}")
        return int(module.run(args, out))

    return run


# Each command's module is named after it (``import`` is a keyword: ``import_.py``).
COMMANDS: Dict[str, Handler] = {
    command: _run_module(module)
    for command, module in (
        ("peek", "peek"),
        ("show", "show"),
        ("tail", "tail"),
        ("check", "check"),
        ("repair", "repair"),
        ("salvage", "salvage"),
        ("fork", "fork"),
        ("stats", "stats"),
        ("export", "export"),
        ("import", "import_"),
        ("dataset", "dataset"),
        ("query", "query"),
    )
}


def main(argv: Optional[List[str]] = None) -> int:
    parser = build_parser()
    args = parser.parse_args(sys.argv[1:] if argv is None else argv)
    if args.command == "demo":
        from ..demo import main as demo_main

        return demo_main(args.dir)
    out = Out(want_colour(args.color, sys.stdout))
    try:
        return COMMANDS[args.command](args, out)
    except CliError as e:
        sys.stdout.flush()
        print(visible(f"{PROG} {args.command}: error: {e}"), file=sys.stderr)
        return e.code
    except KeyboardInterrupt:
        print(file=sys.stderr)
        return 130
    except BrokenPipeError:
        # The reader went away (| head): stop quietly; point stdout at nothing so the
        # interpreter's final flush does not complain.
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
        return 0
