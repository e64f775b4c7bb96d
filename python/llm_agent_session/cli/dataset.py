"""``dataset``: transcripts under SRC into Parquet tables in OUT (issue #26).

Kept in its own module, with its own parser, so the command line's dispatch only names it.
"""

from __future__ import annotations

import argparse
import os
import sys
from typing import Any, Callable

from ..verdict import Kind
from .arguments import whole_number
from .exit_codes import FAILED, NOT_A_DATASET, OK, USAGE
from .output import CliError, Out

DESCRIPTION = """Export the transcripts under SRC (files or directories, searched recursively)
into OUT: a directory of Parquet tables (sessions, messages, tool_calls, compactions,
rewinds, grants), hive-partitioned by date, that DuckDB, Polars, Spark and Ray Data read
as they are. Run it again any time: an unchanged transcript costs a stat, a changed one
is read again, one gone from SRC has its rows removed. OUT is never seen half-written.
Every figure is what the library itself says of the file (Session.load, peek, stats);
a transcript that would not load is a sessions row with the reason, its lines still
exported. SRC is never written."""

EPILOG = """examples:
  llm-agent-session dataset ~/transcripts fleet
  llm-agent-session import claude-code ~/.claude/projects ~/transcripts/claude
  llm-agent-session dataset ~/transcripts/claude fleet --jobs 4
  llm-agent-session query fleet "SELECT tool, count(*) FROM tool_calls GROUP BY tool"

docs/dataset.md: the tables column by column, and what a reader sees while an export runs."""

EXIT_CODES = {
    OK: "every file exported, unchanged, removed or skipped (not a transcript)",
    FAILED: "some files could not be read, or directories listed (each one's line says why); the others were exported, "
            "or the dataset extra (pyarrow) is not installed",
    NOT_A_DATASET: "OUT is a file, a directory of other files, or another version's dataset",
}


def add_parser(add: Callable[..., argparse.ArgumentParser], common: argparse.ArgumentParser) -> None:
    p = add("dataset", EXIT_CODES, parents=[common], help="export transcripts into Parquet tables (DuckDB, Polars, Spark)",
            description=DESCRIPTION + "\n\n" + EPILOG)
    p.add_argument("src", metavar="SRC", nargs="+", help="transcript files or directories (only read)")
    p.add_argument("out", metavar="OUT", help="the dataset directory (new, or one this command made)")
    p.add_argument("-j", "--jobs", type=whole_number(1), default=1, metavar="N",
                   help="read N transcripts at a time in N processes (default 1)")
    p.add_argument("--no-extras", dest="extras", action="store_false",
                   help="leave messages.extras empty (the keys a line has besides the message's own)")
    p.add_argument("--no-redact", action="store_true",
                   help="keep secrets in the rows as they are (by default what the secret rules find is masked as "
                        "«redacted:RULE:FINGERPRINT» and the count said; docs/secrets.md). A transcript exported "
                        "the other way before is read again")
    p.add_argument("--json", action="store_true", help="print the report as JSON")
    p.add_argument("-v", "--verbose", action="store_true", help="a line for every file, not only the ones that need a look")


def run(args: argparse.Namespace, out: Out) -> int:
    try:
        from ..dataset.export import export
        from ..dataset.report import EXPORTED, SKIPPED, FileResult
        from ..dataset.report import FAILED as FAILED_FILE
        from ..dataset.errors import DatasetError, NotADataset
    except ImportError as e:
        raise CliError(f"the dataset command needs pyarrow ({e}): pip install 'llm-agent-session[dataset]'",
                       FAILED) from None
    from .._files import name_as_text
    from .progress import Progress

    srcs = [os.path.expanduser(s) for s in args.src]
    dst = os.path.expanduser(args.out)

    def shown(f: FileResult) -> bool:
        return args.verbose or f.status == FAILED_FILE or (f.status == EXPORTED and f.verdict == Kind.WOULD_FAIL.value)

    def waiting() -> None:
        print(f"waiting for another export into {dst} to finish publishing ...", file=sys.stderr)

    with Progress(f"exporting into {dst}") as bar:
        def on_file(f: FileResult, done: int, total: int) -> None:
            bar.update(done, total, f"exporting {done}/{total}")
            if not args.json and shown(f):
                style = {FAILED_FILE: "error", SKIPPED: "dim"}.get(f.status, "warn" if f.verdict == Kind.WOULD_FAIL.value else None)
                detail = f" ({f.verdict})" if f.verdict and f.verdict != Kind.CLEAN.value else ""
                out.line((f"{f.status:9}", style), " ", name_as_text(f.path), detail, f": {f.reason}" if f.reason else "")
        try:
            report = export(srcs, dst, jobs=args.jobs, extras=args.extras, on_file=on_file, waiting=waiting,
                            redact=not args.no_redact)
        except NotADataset as e:
            raise CliError(str(e), NOT_A_DATASET) from None
        except DatasetError as e:
            raise CliError(str(e), USAGE) from None
    if args.json:
        out.json(_as_json(report))
    else:
        out.line(report.summary())
    return FAILED if report.count(FAILED_FILE) else OK


def _as_json(report: Any) -> Any:
    from dataclasses import asdict

    from .._files import name_as_text

    files = [dict(asdict(f), path=name_as_text(f.path)) for f in report.files if f.status != "unchanged"]
    return {"out": name_as_text(report.out), "files": files,
            "counts": {s: report.count(s) for s in ("exported", "unchanged", "removed", "failed", "skipped")},
            "rows": report.rows, "bytes": report.bytes_read, "seconds": report.seconds,
            "would_fail": report.would_fail, "redacted": report.redacted, "masked": report.masked}
