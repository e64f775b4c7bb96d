"""``stats``: where the bytes and the time went, from a peek (every line, no replay).

Lines, bytes and roles come from the library's survey (``Session.peek(path,
survey=True)``, counted in the scan's own pass): bytes per type are the bytes of the
lines themselves, newlines included; bytes no envelope accounts for (blank, malformed
or hand-edited lines, an unfinished tail) are reported as ``other``. Only the payloads
of the small envelope types are built here, and a message's content only when an
elision names it: building and re-serialising every payload was most of the time the
report took on a large file, for the same report.

A tool's duration is its settle's ``duration`` where the writer recorded one, else the
time between its dispatch and its settle (their envelopes' ``ts``: for an imported
session, when the call was made and when its result came back in the source). A
compaction token count that is not recorded makes the total unknown (``null``, shown
as ``?``), never 0.

Token usage is ``llm_agent_session.usage.of_transcript``'s, the totals the dataset's
``sessions`` row holds: each provider response counted once however many lines repeat it
(a Claude Code response streamed one block per line), a count no response states
unknown (``null``, ``?``), never 0.
"""

from __future__ import annotations

import argparse
import math
import os
from collections import Counter, defaultdict
from typing import Any, Dict, List, Tuple

from .. import _peek, usage
from .conversation import content_text, operation_seconds, tokens
from .output import CliError, Out, human_bytes, human_seconds
from .progress import Progress
from .reading import require_file


def percentile(values: List[float], q: float) -> float:
    """The q-th percentile by linear interpolation between closest ranks."""
    data = sorted(values)
    if not data:
        return float("nan")
    k = (len(data) - 1) * q
    lo, hi = math.floor(k), math.ceil(k)
    return data[lo] + (data[hi] - data[lo]) * (k - lo)


def compute(path: str) -> Dict[str, Any]:
    # peek_transcript's peek, with each envelope's type: from the side index where there is
    # one, so that a message line (most of the bytes) is read only if an elision names it.
    with Progress(f"reading {path} ({human_bytes(os.path.getsize(path))})"):
        view = _peek.peek(path, survey=True, types=True)
    if "error" in view:
        raise CliError(f"{path}: not a transcript: {view['error']}", 3)
    envelopes = view["envelopes"]
    types = view["types"]
    survey = view["survey"]
    messages: List[int] = []  # the message envelopes, in order
    message_at: Dict[str, int] = {}  # message id -> envelope index, for what elisions name
    content_chars: Dict[str, int] = {}  # chars of a compaction summary, or of content already elided
    ops: Dict[str, Tuple[str, str]] = {}  # op id -> (tool, dispatch ts)
    tools: Dict[str, Dict[str, Any]] = defaultdict(lambda: {"count": 0, "outcomes": Counter(), "durations": []})
    # A total stays None (unknown) once one compaction does not record its count.
    compactions: Dict[str, Any] = {"count": 0, "fallbacks": 0, "tokens_before": 0, "tokens_after": 0}
    elided = {"elisions": 0, "items": 0, "chars": 0}
    artifacts = {"count": 0, "bytes": 0, "chars": 0, "elided_chars": 0}
    message_at_seen: List[int] = []

    def chars_of(id_: str) -> int:
        if id_ in content_chars:
            return content_chars[id_]
        for m in messages[len(message_at_seen) :]:  # the messages before this elision, read now
            message_at[envelopes[m].id] = m
            message_at_seen.append(m)
        at = message_at.get(id_)
        return 0 if at is None else len(content_text(envelopes[at].payload.get("content")))

    with Progress(f"counting {path}", len(envelopes)) as progress:
        for i in range(len(envelopes)):
            if i % 4096 == 0:
                progress.update(i)
            type_ = types[i]
            if type_ == "message":
                messages.append(i)  # its id is read only if an elision names one, its content if elided
                continue
            e = envelopes[i]
            p = e.payload
            if type_ == "compaction":
                compactions["count"] += 1
                compactions["fallbacks"] += 1 if p.get("fallback") is True else 0
                for key in ("tokens-before", "tokens-after"):
                    total = key.replace("-", "_")
                    value = p.get(key)
                    known = isinstance(value, int) and not isinstance(value, bool)
                    compactions[total] = compactions[total] + value if known and compactions[total] is not None else None
                content_chars[e.id] = len(str(p.get("summary", "")))
            elif type_ == "elision":
                elided["elisions"] += 1
                for item in p.get("items") or ():
                    if not isinstance(item, dict):
                        continue
                    elided["items"] += 1
                    before = chars_of(str(item.get("id")))
                    stub = len(content_text(item.get("stub")))
                    elided["chars"] += max(0, before - stub)
                    content_chars[str(item.get("id"))] = stub
            elif type_ == "tool-dispatched":
                tool = str(p.get("tool"))
                ops[e.id] = (tool, e.ts)
                tools[tool]["count"] += 1
            elif type_ == "tool-settled":
                settled = ops.pop(str(p.get("op-id")), None)
                if settled is None:
                    continue
                tool, dispatched_at = settled
                tools[tool]["outcomes"][str(p.get("outcome"))] += 1
                took = operation_seconds(dispatched_at, e.ts, p)
                if took is not None:
                    tools[tool]["durations"].append(took)
                art = p.get("artifact")
                if isinstance(art, dict):
                    artifacts["count"] += 1
                    for key in ("bytes", "chars", "elided-chars"):
                        if isinstance(art.get(key), int) and not isinstance(art.get(key), bool):
                            artifacts[key.replace("-", "_")] += art[key]
    for tool, _ in ops.values():  # dispatched, never settled
        tools[tool]["outcomes"]["pending"] += 1
    accounted = sum(survey["bytes"].values())
    per_tool = {}
    for name, t in sorted(tools.items()):
        d = t["durations"]
        per_tool[name] = {
            "count": t["count"],
            "outcomes": dict(sorted(t["outcomes"].items())),
            "median_duration": percentile(d, 0.5) if d else None,
            "p95_duration": percentile(d, 0.95) if d else None,
        }
    return {
        "path": path,
        "size": view["size"],
        "types": {t: {"lines": n, "bytes": survey["bytes"][t]} for t, n in sorted(survey["counts"].items())},
        "other_bytes": view["size"] - accounted,
        "roles": dict(sorted(survey["roles"].items())),
        "tools": per_tool,
        "compactions": compactions,
        # rewind lines, and the messages they cut (still in the file)
        "rewinds": {"count": survey["counts"].get("rewind", 0), "rewound_messages": len(survey["rewound"])},
        "elided": elided,
        "artifacts": artifacts,
        # input, output, cache_read, cache_write (null where no response states it), responses, unmeasured
        "usage": usage.of_transcript(path).to_json(),
        "warnings": list(view["warnings"]),
    }


def usage_line(totals: Dict[str, Any]) -> str:
    """``input 1,204 · output 9,876 · cache read 61,608 · cache write ? (12 responses, each
    once)``; ``none recorded`` where no response records usage."""
    n, unmeasured = totals["responses"], totals["unmeasured"]
    silent = f"{unmeasured:,} unmeasured" if unmeasured else ""
    if not n:
        return "none recorded" + (f" ({unmeasured:,} assistant message(s) record none)" if unmeasured else "")
    counts = " · ".join(f"{name} {tokens(totals[key])}" for name, key in (
        ("input", "input"), ("output", "output"), ("cache read", "cache_read"), ("cache write", "cache_write")))
    return f"{counts}  ({n:,} response(s), each counted once" + (f"; {silent}, left out" if silent else "") + ")"


def run(args: argparse.Namespace, out: Out) -> int:
    require_file(args.file)
    report = compute(args.file)
    if args.json:
        out.json(report)
        return 0
    size = report["size"] or 1
    out.line(("file        ", "key"), f"{args.file}  {human_bytes(report['size'])}")
    out.line(("by type      ", "key"), ("lines       bytes   share", "dim"))
    for t, row in report["types"].items():
        out.line(f"  {t:<16} {row['lines']:>9,} {human_bytes(row['bytes']):>11} {100 * row['bytes'] / size:>6.1f}%")
    if report["other_bytes"]:
        out.line(f"  {'other':<16} {'':>9} {human_bytes(report['other_bytes']):>11}", ("  (blank, malformed or unfinished lines)", "dim"))
    out.line(("messages    ", "key"), ", ".join(f"{r} {n:,}" for r, n in report["roles"].items()) or "none")
    out.line(("tools       ", "key"), ("count  outcomes                           median       p95", "dim") if report["tools"] else "none")
    for name, t in report["tools"].items():
        outcomes = ", ".join(f"{k} {v:,}" for k, v in t["outcomes"].items())
        med = "-" if t["median_duration"] is None else human_seconds(t["median_duration"])
        p95 = "-" if t["p95_duration"] is None else human_seconds(t["p95_duration"])
        out.line(f"  {name:<16} {t['count']:>5,}  {outcomes:<32} {med:>9} {p95:>9}")
    c = report["compactions"]
    out.line(
        ("compactions ", "key"),
        f"{c['count']:,}" + (f": {tokens(c['tokens_before'])} → {tokens(c['tokens_after'])} tokens, "
                             f"{c['fallbacks']:,} fallback(s)" if c["count"] else ""),
    )
    r = report["rewinds"]
    out.line(
        ("rewinds     ", "key"),
        f"{r['count']:,}" + (f": {r['rewound_messages']:,} message(s) rewound (kept in the file)" if r["count"] else ""),
    )
    el = report["elided"]
    out.line(("elided      ", "key"), f"{el['chars']:,} chars in {el['items']:,} item(s) of {el['elisions']:,} elision(s)")
    out.line(("tokens      ", "key"), usage_line(report["usage"]))
    a = report["artifacts"]
    out.line(
        ("artifacts   ", "key"),
        f"{a['count']:,}" + (f": {human_bytes(a['bytes'])}, {a['chars']:,} chars, {a['elided_chars']:,} elided from the model's view" if a["count"] else ""),
    )
    for w in report["warnings"]:
        out.line(("warning     ", "warn"), w)
    return 0
