"""``peek``: what the file says without opening it (Session.peek: no lock, no write, no repair).

It also says whether ``Session.load`` would accept the file, from load's own tail check
and replay run read-only (``llm_agent_session.verdict``): a file load would refuse is reported as such
(line, byte, reason, the command that helps), not as "the model would be sent N".
"""

from __future__ import annotations

import argparse
from dataclasses import asdict
from typing import Any, Dict, Optional, Tuple

from ..verdict import Kind, Verdict, verdict
from ..visible import json_text
from .advice import command, error_text, recovery
from .check import report as verdict_report
from .output import CliError, Out, count, human_bytes
from .reading import peek, require_file


def summarise(path: str) -> Tuple[Dict[str, Any], Optional[Verdict]]:
    """The report (its keys are the Python API's own: ``Session.peek`` and its survey)
    and load's verdict (None when peek finds no transcript)."""
    # The library surveys in the scan's own pass: no envelope is built here but the
    # open tool operations (a Python loop over every envelope was most of peek's time).
    view = peek(path, survey=True)
    survey = view["survey"]
    report: Dict[str, Any] = {
        "path": path,
        "size": view["size"],
        "end": view["end"],
        "pending": view["pending"],
        "meta": view["meta"],
        "envelopes": len(view["envelopes"]),
        "counts": dict(sorted(survey["counts"].items())),
        "messages": len(view["messages"]),
        "live_messages": survey["live_messages"],
        "pending_tool_operations": [asdict(op) for op in survey["pending_tool_operations"]],
        "replay_problem": survey["replay_problem"],
        "warnings": list(view["warnings"]),
    }
    if "error" in view:
        report["error"] = view["error"]
        return report, None
    try:
        v = verdict(path)
    except OSError as e:  # e.g. it vanished between the two reads
        v = Verdict(Kind.WOULD_FAIL, view["size"], error=e)
    report["load"] = verdict_report(path, v)
    return report, v


def run(args: argparse.Namespace, out: Out) -> int:
    require_file(args.file)
    report, v = summarise(args.file)
    if args.json:
        out.json(report)
        return 3 if "error" in report else 0
    if "error" in report or v is None:
        raise CliError(f"{args.file}: not a transcript: {report.get('error')}", 3)
    load = report["load"]
    out.line(("file      ", "key"), f"{args.file}  {human_bytes(report['size'])}")
    out.line(("meta      ", "key"), json_text(report["meta"], sort_keys=True))
    out.line(("envelopes ", "key"), count(report["envelopes"]))
    for type_, n in report["counts"].items():
        out.line(f"  {type_:<16} {n:>10,}")
    if not v.kind.loads and v.error is not None:
        e = v.error
        out.line(("messages  ", "key"), f"{count(report['messages'])} lines; ",
                 (f"a load would refuse this file ({type(e).__name__})", "error"))
        line = getattr(e, "line", None)
        if line is not None:
            offset, reason = getattr(e, "offset", None), getattr(e, "reason", None)
            out.line(("refused   ", "error"), f"line {count(line)} (byte {count(offset)}): {reason}")
            out.line(("to do     ", "key"), recovery(e, args.file))
        else:
            out.line(("refused   ", "error"), error_text(e, args.file))
    else:
        # From load's own replay (the survey's count agrees on every file load accepts).
        out.line(("messages  ", "key"), f"{count(report['messages'])} lines; the model would be sent {count(v.messages)}")
    ops = report["pending_tool_operations"]
    out.line(("pending   ", "key"), f"{count(len(ops))} tool operation(s)" if ops else "no tool operation")
    for op in ops:
        args_text = json_text(op["arguments"], sort_keys=True)
        out.line(
            "  ",
            (f"{op['state']:<16}", "warn"),
            f" {op['tool']} [{op['call_id']}] {args_text[:80]}",
            (f"  op {op['op_id']} at {op['dispatched_at']}"
             + (f", idempotency {op['idempotency']}" if op["idempotency"] is not None else ""), "dim"),
        )
    if report["pending"]:
        torn = load.get("torn")
        now = (f"; a load now would remove it (`{command('check', args.file)}` says more)" if torn
               else f"; `{command('check', args.file)}` tells what a load would do")
        out.line(
            ("tail      ", "key"),
            (f"{count(report['pending'])} bytes of an unfinished last line at byte {count(report['end'])} "
             f"(a writer mid-line, or torn by a crash){now}", "warn"),
        )
    else:
        out.line(("tail      ", "key"), ("clean: the file ends with a whole line", "ok"))
    for note in load.get("notes") or ():
        out.line(("load      ", "warn"), note)
    for w in report["warnings"]:
        out.line(("warning   ", "warn"), w)
    return 0

