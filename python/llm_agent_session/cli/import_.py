"""``import``: Claude Code sessions and Codex rollouts into transcripts (issue #16).

Kept in its own module, with its own parser, so the command line's dispatch only names it.
"""

from __future__ import annotations

import argparse
import json
import os
from types import ModuleType
from typing import Any, Callable, List

from .arguments import whole_number
from .exit_codes import FAILED, OK, USAGE
from .output import CliError, Out

DESCRIPTION = """Import another agent's session files into transcripts. SRC is one file
(then OUT is the new transcript) or a directory tree (then OUT is a directory that mirrors
it, one transcript per session file). Importing into an OUT an earlier import made reads
the source again and appends what brings OUT to what one import of the whole source gives
(usually what a session still running gained since), so this can run every few minutes;
a file whose imported part changed is refused, never rewritten. OUT may not be
inside SRC. A file that is not a regular file (a FIFO, a device), or that passes the
importers' bounds (1 GiB decompressed, 10 million lines, a line of 256 MiB), fails with
a reason and the others are imported."""

EPILOG = """where the sources are by default:
  claude-code  ~/.claude/projects/<project>/<session-uuid>.jsonl
               (subagents in <session-uuid>/subagents/; Claude Code deletes sessions
               after 30 days unless cleanupPeriodDays in ~/.claude/settings.json says otherwise)
  codex        ~/.codex/sessions/YYYY/MM/DD/rollout-<time>-<uuid>.jsonl
               (older versions: ~/.codex/sessions/rollout-*.jsonl; archived ones in
               ~/.codex/archived_sessions; .jsonl.zst needs the zstandard module)

examples:
  llm-agent-session import claude-code ~/.claude/projects ~/transcripts/claude
  llm-agent-session import codex ~/.codex/sessions ~/transcripts/codex"""


EXIT_CODES = {OK: "every file imported or unchanged",
              FAILED: "at least one file failed (its line says why), or SRC does not exist"}


def add_parser(add: Callable[..., argparse.ArgumentParser], common: argparse.ArgumentParser) -> None:
    p = add("import", EXIT_CODES, parents=[common], help="import Claude Code or Codex session files into transcripts",
            description=DESCRIPTION + "\n\n" + EPILOG)
    p.add_argument("source_format", choices=("claude-code", "codex"), metavar="FORMAT",
                   help="claude-code or codex")
    p.add_argument("src", metavar="SRC", help="a session file, or a directory of them")
    p.add_argument("out", metavar="OUT", help="the transcript (or, for a directory SRC, the directory) to write")
    p.add_argument("--json", action="store_true", help="print every file's report as JSON lines")
    p.add_argument("-v", "--verbose", action="store_true", help="per file, every record type and why any was skipped")
    p.add_argument("--redact", action="store_true",
                   help="mask the secrets `scan` finds in everything written (docs/secrets.md)")
    p.add_argument("-j", "--jobs", type=whole_number(1), default=1, metavar="N",
                   help="for a directory SRC, import N files at a time in N processes (default 1; "
                        "the per-file lines still come in file order)")


def _print_report(out: Out, report: Any, verbose: bool, indent: str = "") -> None:
    status = report["status"]
    style = {"failed": "error", "unchanged": "dim", "appended": "ok", "imported": "ok"}.get(status, None)
    if status == "failed":
        out.line(indent, (f"{status:9}", style), " ", report["source"], ": ", str(report["error"]))
        return
    out.line(indent, (f"{status:9}", style), " ", report["source"], " -> ", report["out"],
             "" if status == "unchanged" else f" ({report.summary()})")
    if verbose and status != "unchanged":
        for kind, counts in sorted(report["types"].items()):
            line = f"{indent}    {kind}: {counts['imported']} imported, {counts['extras']} as extras"
            out.line(line)
            for reason, n in counts["skipped"].items():
                out.line(f"{indent}      {n} skipped: {reason}")
        for m in report["malformed"][:20]:
            out.line(f"{indent}    malformed line {m['line']} (byte {m['offset']}): {m['reason']}")
        for w in report["warnings"][:20]:
            out.line((f"{indent}    {w}", "warn"))
    for child in report["transcripts"]:
        _print_report(out, child, verbose, indent + "  ")


def _all(reports: List[Any]) -> List[Any]:
    flat = []
    for r in reports:
        flat.append(r)
        flat.extend(_all(r["transcripts"]))
    return flat


def run(args: argparse.Namespace, out: Out) -> int:
    from .progress import Progress

    from ..importers import claude_code, codex
    from ..importers._driver import refuse_out_inside

    importer: ModuleType = claude_code if args.source_format == "claude-code" else codex
    src, dst = os.path.expanduser(args.src), os.path.expanduser(args.out)
    policy = None
    if args.redact:
        from ..secrets import ConfigError, Policy

        try:
            policy = Policy()
        except (ConfigError, ValueError) as e:
            raise CliError(str(e), USAGE) from None
    if not os.path.exists(src):
        raise CliError(f"{src}: no such file or directory (the default location is "
                       f"{importer.DEFAULT_SOURCE})", FAILED)

    def show(report: Any) -> None:
        if args.json:
            out.stream.write(json.dumps(report, ensure_ascii=True, default=str) + "\n")
        else:
            _print_report(out, report, args.verbose)

    if os.path.isdir(src):
        if os.path.exists(dst) and not os.path.isdir(dst):
            raise CliError(f"{dst}: SRC is a directory, so OUT must be a directory (it is a file)", USAGE)
        try:
            refuse_out_inside(src, dst)
        except ValueError as e:
            raise CliError(str(e), USAGE) from None
        with Progress(f"importing {src}") as bar:
            def on_file(report: Any, done: int, total: int) -> None:
                bar.update(done, total, f"importing {done}/{total}")
                show(report)
            reports = importer.import_tree(src, dst, on_file=on_file, workers=args.jobs, redaction=policy)
    else:
        if os.path.isdir(dst):
            dst = os.path.join(dst, importer.out_name(os.path.basename(src)) if hasattr(importer, "out_name")
                               else os.path.basename(src))
        reports = [importer.import_transcript(src, dst, redaction=policy)]
        show(reports[0])
    flat = _all(reports)
    counts = {s: sum(1 for r in flat if r["status"] == s) for s in ("imported", "appended", "unchanged", "failed")}
    if not args.json:
        out.line(("", None), f"{len(flat)} transcript(s): " + ", ".join(f"{n} {s}" for s, n in counts.items() if n))
    return FAILED if counts["failed"] else OK
