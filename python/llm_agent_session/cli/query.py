"""``query``: SQL over a dataset directory with DuckDB, each table a view by its name."""

from __future__ import annotations

import argparse
import contextlib
import datetime
import decimal
import json
import os
import re
from typing import Any, Callable, List

from ..visible import json_text, visible
from .exit_codes import FAILED, NOT_A_DATASET, OK
from .output import CliError, Out

DESCRIPTION = """Run SQL over the dataset in OUT (made by `llm-agent-session dataset`) with
DuckDB. Each table is a view by its name: sessions, messages, tool_calls, compactions,
rewinds, grants (docs/dataset.md has their columns). One query sees one committed export,
even while another export publishes. Times are UTC. Only statements that read are run,
over OUT's tables and no other file, with no extension loaded (a query is data you may
have been sent); --unrestricted runs any DuckDB statement with your access to files."""

EPILOG = """examples:
  llm-agent-session query fleet "SELECT tool, count(*) AS calls FROM tool_calls GROUP BY tool ORDER BY calls DESC"
  llm-agent-session query fleet "SELECT * FROM sessions WHERE verdict <> 'clean'" --json"""

EXIT_CODES = {
    OK: "the result was printed",
    FAILED: "the query failed (the message says why: a syntax error, an unknown column ...), or was refused "
            "(a statement that writes, or a file beyond OUT's tables, without --unrestricted), or the "
            "dataset extra (pyarrow, duckdb) is not installed",
    NOT_A_DATASET: "OUT is not a dataset (no _dataset.json: make one with the dataset command), or holds "
                   "no dataset yet (its first export has not finished)",
}

MAX_CELL = 80


def add_parser(add: Callable[..., argparse.ArgumentParser], common: argparse.ArgumentParser) -> None:
    p = add("query", EXIT_CODES, parents=[common], help="SQL over a dataset with DuckDB (a view per table)",
            description=DESCRIPTION + "\n\n" + EPILOG)
    p.add_argument("out", metavar="OUT", help="the dataset directory")
    p.add_argument("sql", metavar="SQL", help="the query (DuckDB SQL)")
    shape = p.add_mutually_exclusive_group()
    shape.add_argument("--json", action="store_true", help="print the rows as a JSON array of objects")
    shape.add_argument("--csv", action="store_true", help="print the rows as CSV with a header line (text a spreadsheet would run as a formula, "
                       "starting with = + - @ or a tab or CR, gets a ' before it; numbers stay numbers)")
    p.add_argument("--full", action="store_true", help=f"do not shorten cells to {MAX_CELL} characters (table only)")
    p.add_argument("--unrestricted", action="store_true",
                   help="run any DuckDB statement with your access to files and the network (COPY ... TO, "
                        "ATTACH, read_csv of any file, INSTALL ...); without it, only statements that read, "
                        "over OUT's tables only")


def _plain(value: Any) -> Any:
    """A cell as JSON has it: times and dates as ISO 8601 text, a DECIMAL as a number
    (``SELECT 1.5`` is one), the rest as they are."""
    if isinstance(value, (datetime.datetime, datetime.date, datetime.time)):
        return value.isoformat()
    if isinstance(value, decimal.Decimal):
        exponent = value.as_tuple().exponent  # a DECIMAL(p, 0) as an integer, exactly
        return int(value) if isinstance(exponent, int) and exponent >= 0 else float(value)
    if isinstance(value, datetime.timedelta):
        return value.total_seconds()
    if isinstance(value, bytes):
        return value.decode("utf-8", "replace")
    if isinstance(value, dict):
        return {str(k): _plain(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [_plain(v) for v in value]
    return value


def _text(value: Any) -> str:
    if value is None:
        return ""
    if isinstance(value, decimal.Decimal):
        return str(value)  # exactly, to its scale
    plain = _plain(value)
    return plain if isinstance(plain, str) else json.dumps(plain, ensure_ascii=False)


# What a spreadsheet opening a CSV file takes for the start of a formula (OWASP's list for
# CSV injection): "=HYPERLINK(...)" in a message would be a live link, "@SUM(...)" run.
_FORMULA_START = ("=", "+", "-", "@", "\t", "\r")
_NUMBER = re.compile(r"[+-]?(\d+\.?\d*|\.\d+)([eE][+-]?\d+)?")


def _csv_line(cells: List[str]) -> str:
    """One CSV record (RFC 4180, ending in ``\\n``): a cell holding a comma, a quote, a CR or
    a LF quoted. (Python's csv module before 3.12 leaves a lone CR unquoted, which every
    reader takes for the end of the record.)"""
    if cells == [""]:
        return '""\n'  # else a blank line, which readers skip
    return ",".join('"' + c.replace('"', '""') + '"' if _NEEDS_QUOTES.search(c) else c for c in cells) + "\n"


_NEEDS_QUOTES = re.compile(r'[,"\r\n]')


def _csv_cell(value: Any) -> str:
    """A cell of --csv: its text, with a ``'`` put before text a spreadsheet would run as a
    formula. A number (a numeric column, or text that is only a number) stays as it is."""
    text = _text(value)
    if isinstance(value, (int, float, decimal.Decimal)) or not text.startswith(_FORMULA_START):
        return text
    return text if _NUMBER.fullmatch(text) else "'" + text


def run(args: argparse.Namespace, out: Out) -> int:
    try:
        from ..dataset.query import QueryRefused, check_statements, connect, refusals
        from ..dataset.errors import DatasetError, NotADataset
    except ImportError as e:
        raise CliError(f"the query command needs pyarrow and duckdb ({e}): pip install 'llm-agent-session[dataset]'",
                       FAILED) from None
    import duckdb

    try:
        con = connect(os.path.expanduser(args.out), unrestricted=args.unrestricted)
    except NotADataset as e:
        raise CliError(str(e), NOT_A_DATASET) from None
    except DatasetError as e:
        raise CliError(str(e), FAILED) from None
    try:
        if not args.unrestricted:
            check_statements(con, args.sql)
        with contextlib.nullcontext() if args.unrestricted else refusals():
            result = con.sql(args.sql)
            names: List[str] = [] if result is None else list(result.columns)
            rows = [] if result is None else result.fetchall()
    except QueryRefused as e:
        raise CliError(f"the query was refused: {e}", FAILED) from None
    except duckdb.Error as e:
        raise CliError(f"the query failed: {e}", FAILED) from None
    finally:
        con.close()
    if args.json:
        out.stream.write(json_text([dict(zip(names, map(_plain, row))) for row in rows], indent=2) + "\n")
    elif args.csv:
        # A PIVOT names columns by values from transcripts: the header is neutralised too.
        text = "".join(_csv_line(cells) for cells in [[_csv_cell(n) for n in names]] +
                       [[_csv_cell(v) for v in row] for row in rows])
        out.stream.write(visible(text, multiline=True) if _is_tty(out) else text)
    else:
        _table(out, names, rows, args.full)
    return OK


def _is_tty(out: Out) -> bool:
    try:
        return bool(out.stream.isatty())
    except (AttributeError, ValueError):
        return False


def _table(out: Out, names: List[str], rows: List[Any], full: bool) -> None:
    """Aligned columns; every cell one line (through ``visible``), shortened unless `full`."""
    def cell(value: Any) -> str:
        text = visible(_text(value))
        return text if full or len(text) <= MAX_CELL else text[: MAX_CELL - 1] + "…"

    cells = [[cell(v) for v in row] for row in rows]
    widths = [max([len(n)] + [len(r[i]) for r in cells]) for i, n in enumerate(names)]
    out.line(("  ".join(n.ljust(w) for n, w in zip(names, widths)).rstrip(), "key"))
    for r in cells:
        out.line("  ".join(c.ljust(w) for c, w in zip(r, widths)).rstrip())
    out.line((f"({len(rows)} row{'s' if len(rows) != 1 else ''})", "dim"))
