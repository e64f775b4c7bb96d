"""The ``llm-agent-session`` command line, built on the public API only.

Each subcommand lives in its own module and is imported only when run, so
``llm-agent-session peek`` does not pay for the HTML exporter. rich (the ``cli`` extra)
is optional: without it, or when output is not a terminal, everything is plain text.

Exit codes mean one thing in every command (``exit_codes.py``: 0 ok, 1 the operation
failed, 2 a usage error, 3 not a transcript, ``check``'s 4 would repair and 5 would
fail, ``salvage``'s 6 written but does not load yet, ``scan``'s 8 secrets found, 130 Ctrl-C); each command declares
the ones it returns, and its ``--help`` lists them.

Everything printed passes through ``output.visible`` (transcript text is shown, never
obeyed), suggestions name commands (``advice.py``), and ``--json`` keys are spelled as
the Python API spells them (snake_case).
"""

from __future__ import annotations

import argparse
import importlib
import os
import sys
from typing import Any, Callable, Dict, List, Mapping, Optional

from ..visible import visible
from .advice import PROG
from .arguments import HIDDEN_NOTE, CommandParser, whole_number
from .exit_codes import (
    FAILED,
    INTERRUPTED,
    NOT_A_TRANSCRIPT,
    NOT_A_TRANSCRIPT_DETAIL,
    OK,
    OUT_DOES_NOT_LOAD,
    READS_TRANSCRIPT,
    TABLE,
    USAGE,
    WOULD_FAIL,
    WOULD_REPAIR,
    listing,
)
from .output import CliError, Out, want_colour

FILE_HELP = "the transcript (a .jsonl file written by llm-agent-session)"


#: The commands whose parsers live in modules of their own (imported to build them).
MODULE_COMMANDS = {"export": "export", "index": "index", "import": "import_", "scan": "scan", "scrub": "scrub",
                   "dataset": "dataset", "query": "query", "search": "search", "view": "view"}


def build_parser(only: Optional[str] = None) -> CommandParser:
    """The whole command line's parser; with `only` (a command's name), the commands of
    modules of their own but that one are left bare: enough to parse that command's
    arguments, without importing the others' modules to build theirs (the HTML exporter
    and the redaction checks cost ``search`` 50 ms of its start)."""
    parser = CommandParser(
        prog=PROG,
        description="The durable, resumable JSONL transcript of an LLM agent run: look at one, check it, repair it.",
        epilog=listing(TABLE, "exit codes (each means one thing in every command; COMMAND -h lists "
                                          "the ones it returns):") + "\n\n" + HIDDEN_NOTE,
    )
    parser.add_argument("--version", action="version", version=f"%(prog)s {_version()}",
                        help="print the version and exit")
    common = argparse.ArgumentParser(add_help=False)
    common.add_argument(
        "--color", "--colour", dest="color", choices=("auto", "always", "never"), default="auto",
        help="colour the output: auto (default) only on a terminal without NO_COLOR; always for less -R",
    )
    sub = parser.add_subparsers(dest="command", required=True, metavar="COMMAND", help="what to do (COMMAND -h for more)",
                                parser_class=CommandParser)

    def add_parser(name: str, exit_codes: Mapping[int, Optional[str]], **kw: Any) -> CommandParser:
        """A command: `exit_codes` are the codes it returns (``exit_codes.py``) and what each means for it."""
        kw.setdefault("description", kw.get("help"))  # `COMMAND -h` says what it does too
        return sub.add_parser(name, exit_codes=exit_codes, **kw)

    demo = add_parser("demo", {OK: "the demo ran: the run was killed and resumed", FAILED: "it failed"},
                      help="run a scripted agent, kill it with SIGKILL mid-write, resume it")
    demo.add_argument("--dir", help="where to write the transcript (default: a new temp directory)")

    p = add_parser(
        "peek", {OK: "the file was read (whether a load would accept it is in the report)", **READS_TRANSCRIPT},
        parents=[common], help="what the file says without opening it (never writes)",
    )
    p.add_argument("file", metavar="FILE", help=FILE_HELP)
    p.add_argument("--json", action="store_true", help="print the report as JSON")

    p = add_parser(
        "show", {OK: "shown",
                 FAILED: "it does not load (the error says where and what to run), or no such --from ID",
                 **READS_TRANSCRIPT},
        parents=[common], help="the conversation as the model would be sent it next",
    )
    p.add_argument("file", metavar="FILE", help=FILE_HELP)
    p.add_argument("--raw", action="store_true", help="every envelope in file order instead (no replay)")
    p.add_argument("--last", type=whole_number(0), metavar="N", help="only the last N messages (envelopes with --raw)")
    p.add_argument("--from", dest="from_id", metavar="ID", help="start at the message (envelope with --raw) with this id")
    p.add_argument("--max-chars", type=whole_number(0), default=2000, metavar="N",
                   help="shorten tool results and extras (payloads with --raw) to N chars (default 2000)")
    p.add_argument("--full", action="store_true", help="do not shorten anything")
    p.add_argument("--extras", action="store_true",
                   help="print each message's extras (usage, thinking, source ids, ...); by default only their names")

    p = add_parser(
        "tail", {OK: "printed (with -f: stopped with Ctrl-C)", **READS_TRANSCRIPT},
        parents=[common], help="print envelopes as they are appended (-f follows)",
    )
    p.add_argument("file", metavar="FILE", help=FILE_HELP)
    p.add_argument("-f", "--follow", action="store_true", help="keep printing new envelopes until Ctrl-C")
    p.add_argument("-n", "--lines", type=whole_number(0), default=10, metavar="N", help="start with the last N envelopes (default 10)")
    p.add_argument("--json", action="store_true",
                   help="print each envelope as its JSON line (control, bidi and invisible characters as \\uXXXX escapes)")

    p = add_parser(
        "check",
        {OK: "loads clean",
         WOULD_REPAIR: "a load would repair a torn tail (which line and how many bytes is printed)",
         WOULD_FAIL: "a load would fail (the error, line and byte offset are printed)",
         NOT_A_TRANSCRIPT: NOT_A_TRANSCRIPT_DETAIL},
        parents=[common],
        help=f"read-only verdict: {OK} clean, {WOULD_REPAIR} would repair, {WOULD_FAIL} would fail, "
             f"{NOT_A_TRANSCRIPT} not a transcript",
    )
    p.add_argument("file", metavar="FILE", help=FILE_HELP)
    p.add_argument("--json", action="store_true", help="print the verdict as JSON (the exit code is the same)")

    p = add_parser(
        "repair", {OK: "loaded: repaired, or nothing to repair", FAILED: "it cannot be loaded (locked, damaged, read-only)",
                   **READS_TRANSCRIPT},
        parents=[common], help="load the file (repairing a torn tail) and report what changed",
    )
    p.add_argument("file", metavar="FILE", help=FILE_HELP + "; repaired in place (atomically)")

    p = add_parser(
        "salvage", {OK: "OUT was written and loads clean",
                    FAILED: "nothing was written (OUT exists, the disk is full, ...)",
                    OUT_DOES_NOT_LOAD: "OUT was written but does not load yet (what to run next is printed)",
                    **READS_TRANSCRIPT},
        parents=[common], help="copy every envelope that parses into the new file OUT",
    )
    p.add_argument("file", metavar="FILE", help=FILE_HELP + " (only read)")
    p.add_argument("out", metavar="OUT", help="the new file to write (never an existing one)")

    p = add_parser(
        "fork", {OK: "OUT was written", FAILED: "nothing was written (no such ID, OUT exists, the part does not replay)",
                 **READS_TRANSCRIPT},
        parents=[common], help="a new transcript OUT with FILE's envelopes through --through ID",
    )
    p.add_argument("file", metavar="FILE", help=FILE_HELP + " (only read)")
    p.add_argument("out", metavar="OUT", help="the new transcript to write (never an existing file)")
    p.add_argument("--through", required=True, metavar="ID",
                   help="the id of the last envelope to copy (`llm-agent-session show --raw FILE` lists them)")

    p = add_parser(
        "stats", {OK: "counted", **READS_TRANSCRIPT},
        parents=[common], help="bytes, messages, tool operations, compactions, elisions, artifacts, token usage",
    )
    p.add_argument("file", metavar="FILE", help=FILE_HELP)
    p.add_argument("--json", action="store_true", help="print the report as JSON")

    for command, module in MODULE_COMMANDS.items():  # these commands keep their parsers in their own modules
        if only is None or only == command:
            importlib.import_module(f"{__name__}.{module}").add_parser(add_parser, common)
        else:
            sub.add_parser(command)
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
        ("view", "view"),
        ("search", "search"),
        ("dataset", "dataset"),
        ("query", "query"),
        ("scan", "scan"),
        ("scrub", "scrub"),
        ("index", "index"),
    )
}


def main(argv: Optional[List[str]] = None) -> int:
    argv = sys.argv[1:] if argv is None else argv
    # A command named first is all the parser needs to know of the commands' own modules.
    parser = build_parser(argv[0] if argv and argv[0] in MODULE_COMMANDS else None)
    args = parser.parse_args(argv)
    if args.command == "demo":
        from ..demo import main as demo_main

        return demo_main(args.dir)
    out = Out(want_colour(args.color, sys.stdout))
    try:
        return COMMANDS[args.command](args, out)
    except CliError as e:
        sys.stdout.flush()
        if e.code == USAGE:  # found after parsing: said as argparse says it, with the command's usage
            for line in parser.usage_error(args, str(e)):
                print(visible(line), file=sys.stderr)
        else:
            print(visible(f"{PROG} {args.command}: error: {e}"), file=sys.stderr)
        return e.code
    except KeyboardInterrupt:
        print(file=sys.stderr)
        return INTERRUPTED
    except BrokenPipeError:
        # The reader went away (| head): stop quietly; point stdout at nothing so the
        # interpreter's final flush does not complain.
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
        return OK
