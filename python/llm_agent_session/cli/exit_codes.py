"""The command line's exit codes: one table, each code meaning one thing in every command.

A script can tell every outcome of every command apart by its code alone: ``check``
saying "a load would fail" (5) is never confused with a usage error (2), nor with a
command that failed (1). Each command declares the codes it can return, with what each
means for it (``arguments.CommandParser(exit_codes={...})``); its ``--help`` lists them
from that declaration, with the two every command has (:data:`USAGE`,
:data:`INTERRUPTED`). ``tests/cli/test_help.py`` walks every command's parser and holds
the declarations to this table, and every command run by the test suite to its own.

A new command uses the codes below for what they say; an outcome none of them names
gets a new number here (never a number already used for something else).
"""

from __future__ import annotations

from typing import Dict, Mapping, Optional

from ..verdict import Kind

OK = 0
FAILED = 1
USAGE = 2
# check's answers are the library's verdict kinds, by the numbers the kinds carry
NOT_A_TRANSCRIPT = Kind.NOT_A_TRANSCRIPT.number
WOULD_REPAIR = Kind.WOULD_REPAIR.number
WOULD_FAIL = Kind.WOULD_FAIL.number
OUT_DOES_NOT_LOAD = 6
NOT_A_DATASET = 7
INTERRUPTED = 130  # 128 + SIGINT, as shells report a command stopped by Ctrl-C

#: What each code means, the same in every command (a command's ``--help`` adds what it
#: means there: "ok: loads clean", "failed: OUT exists", ...).
MEANINGS: Dict[int, str] = {
    OK: "ok",
    FAILED: "failed",
    USAGE: "usage error",
    NOT_A_TRANSCRIPT: "not a transcript",
    WOULD_REPAIR: "would repair",
    WOULD_FAIL: "would fail",
    OUT_DOES_NOT_LOAD: "written, does not load yet",
    NOT_A_DATASET: "not a dataset",
    INTERRUPTED: "interrupted",
}

#: The codes every command can return, whatever it declares.
EVERY_COMMAND: Dict[int, str] = {
    USAGE: "a wrong or missing argument (the command's usage is printed)",
    INTERRUPTED: "stopped with Ctrl-C",
}

#: The usual wording of ``NOT_A_TRANSCRIPT`` for a command that reads one.
NOT_A_TRANSCRIPT_DETAIL = "missing, unreadable, empty, or no session-meta first line"
#: The code every command that reads a transcript at FILE declares.
READS_TRANSCRIPT: Dict[int, str] = {NOT_A_TRANSCRIPT: NOT_A_TRANSCRIPT_DETAIL}

#: The whole table, for the top-level ``--help`` and the docs.
TABLE: Dict[int, str] = {
    OK: "the command did what it was asked",
    FAILED: "the operation failed (the message says what, where and what to do)",
    USAGE: EVERY_COMMAND[USAGE],
    NOT_A_TRANSCRIPT: NOT_A_TRANSCRIPT_DETAIL,
    WOULD_REPAIR: "a load would repair a torn tail (check)",
    WOULD_FAIL: "a load would fail (check)",
    OUT_DOES_NOT_LOAD: "OUT was written but does not load yet (salvage)",
    NOT_A_DATASET: "OUT is not a dataset directory (dataset, query)",
    INTERRUPTED: EVERY_COMMAND[INTERRUPTED],
}


def with_every_command(codes: Mapping[int, Optional[str]]) -> Dict[int, str]:
    """A command's declared codes and the ones every command has, in code order. A
    command that never returns one of those declares it as None: ``view``, whose normal
    stop is Ctrl-C, exits 0 then, never 130."""
    merged: Dict[int, Optional[str]] = dict(EVERY_COMMAND)
    merged.update(codes)
    return {code: detail for code, detail in sorted(merged.items()) if detail is not None}


def listing(codes: Mapping[int, str], title: str = "exit codes:") -> str:
    """The ``exit codes:`` section of a ``--help``: one line a code, ``meaning: detail``."""
    rows = [title]
    for code, detail in sorted(codes.items()):
        if code not in MEANINGS:
            raise ValueError(f"exit code {code} is not in cli/exit_codes.py's table")
        rows.append(f"  {code:>3}  {MEANINGS[code]}: {detail}")
    return "\n".join(rows)
