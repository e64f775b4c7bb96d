"""``stats``: where the bytes and the time went, from a peek (every line, no replay).

Bytes per type are the length of each envelope in the line format's serialisation,
which is what the library writes; bytes no envelope accounts for (blank, malformed or
hand-edited lines, an unfinished tail) are reported as ``other``.
"""

from __future__ import annotations

import argparse
import json
import math
from collections import Counter, defaultdict
from typing import Any, Dict, List

from .conversation import canonical_line, content_text
from .output import CliError, Out, human_bytes
from .progress import Progress
from .reading import peek, require_file


def percentile(values: List[float], q: float) -> float:
    """The q-th percentile by linear interpolation between closest ranks."""
    data = sorted(values)
    if not data:
        return float("nan")
    k = (len(data) - 1) * q
    lo, hi = math.floor(k), math.ceil(k)
    return data[lo] + (data[hi] - data[lo]) * (k - lo)


def compute(path: str) -> Dict[str, Any]:
    view = peek(path)
    if "error" in view:
        raise CliError(f"{path}: not a transcript: {view['error']}", 3)
    envelopes = view["envelopes"]
    bytes_by_type: Counter = Counter()
    lines_by_type: Counter = Counter()
    roles: Counter = Counter()
    content_chars: Dict[str, int] = {}
    ops: Dict[str, str] = {}  # op id -> tool
    tools: Dict[str, Dict[str, Any]] = defaultdict(lambda: {"count": 0, "outcomes": Counter(), "durations": []})
    compactions = {"count": 0, "fallbacks": 0, "tokens-before": 0, "tokens-after": 0}
    elided = {"elisions": 0, "items": 0, "chars": 0}
    artifacts = {"count": 0, "bytes": 0, "chars": 0, "elided-chars": 0}
    total = len(envelopes)
    with Progress(f"counting {path}", total) as progress:
        for i in range(total):
            if i % 4096 == 0:
                progress.update(i)
            e = envelopes[i]
            p = e.payload
            lines_by_type[e.type] += 1
            bytes_by_type[e.type] += len(canonical_line(e).encode("utf-8")) + 1
            if e.type == "message":
                roles[str(p.get("role"))] += 1
                content_chars[e.id] = len(content_text(p.get("content")))
            elif e.type == "compaction":
                compactions["count"] += 1
                compactions["fallbacks"] += 1 if p.get("fallback") is True else 0
                for key in ("tokens-before", "tokens-after"):
                    if isinstance(p.get(key), int):
                        compactions[key] += p[key]
                content_chars[e.id] = len(str(p.get("summary", "")))
            elif e.type == "elision":
                elided["elisions"] += 1
                for item in p.get("items") or ():
                    if not isinstance(item, dict):
                        continue
                    elided["items"] += 1
                    before = content_chars.get(str(item.get("id")), 0)
                    stub = len(content_text(item.get("stub")))
                    elided["chars"] += max(0, before - stub)
                    content_chars[str(item.get("id"))] = stub
            elif e.type == "tool-dispatched":
                tool = str(p.get("tool"))
                ops[e.id] = tool
                tools[tool]["count"] += 1
            elif e.type == "tool-settled":
                settled = ops.pop(str(p.get("op-id")), None)
                if settled is None:
                    continue
                tool = settled
                tools[tool]["outcomes"][str(p.get("outcome"))] += 1
                if isinstance(p.get("duration"), (int, float)) and not isinstance(p.get("duration"), bool):
                    tools[tool]["durations"].append(float(p["duration"]))
                art = p.get("artifact")
                if isinstance(art, dict):
                    artifacts["count"] += 1
                    for key in ("bytes", "chars", "elided-chars"):
                        if isinstance(art.get(key), int):
                            artifacts[key] += art[key]
    for tool in ops.values():  # dispatched, never settled
        tools[tool]["outcomes"]["pending"] += 1
    accounted = sum(bytes_by_type.values())
    per_tool = {}
    for name, t in sorted(tools.items()):
        d = t["durations"]
        per_tool[name] = {
            "count": t["count"],
            "outcomes": dict(sorted(t["outcomes"].items())),
            "median-duration": percentile(d, 0.5) if d else None,
            "p95-duration": percentile(d, 0.95) if d else None,
        }
    return {
        "path": path,
        "size": view["size"],
        "types": {t: {"lines": lines_by_type[t], "bytes": bytes_by_type[t]} for t in sorted(lines_by_type)},
        "other-bytes": view["size"] - accounted,
        "roles": dict(sorted(roles.items())),
        "tools": per_tool,
        "compactions": compactions,
        "elided": elided,
        "artifacts": artifacts,
        "warnings": list(view["warnings"]),
    }


def run(args: argparse.Namespace, out: Out) -> int:
    require_file(args.file)
    report = compute(args.file)
    if args.json:
        out.stream.write(json.dumps(report, ensure_ascii=False, indent=2, sort_keys=True) + "\n")
        return 0
    size = report["size"] or 1
    out.line(("file        ", "key"), f"{args.file}  {human_bytes(report['size'])}")
    out.line(("by type      ", "key"), ("lines       bytes   share", "dim"))
    for t, row in report["types"].items():
        out.line(f"  {t:<16} {row['lines']:>9,} {human_bytes(row['bytes']):>11} {100 * row['bytes'] / size:>6.1f}%")
    if report["other-bytes"]:
        out.line(f"  {'other':<16} {'':>9} {human_bytes(report['other-bytes']):>11}", ("  (blank, malformed or unfinished lines)", "dim"))
    out.line(("messages    ", "key"), ", ".join(f"{r} {n:,}" for r, n in report["roles"].items()) or "none")
    out.line(("tools       ", "key"), ("count  outcomes                         median     p95", "dim") if report["tools"] else "none")
    for name, t in report["tools"].items():
        outcomes = ", ".join(f"{k} {v}" for k, v in t["outcomes"].items())
        med = "-" if t["median-duration"] is None else f"{t['median-duration']:.3f}s"
        p95 = "-" if t["p95-duration"] is None else f"{t['p95-duration']:.3f}s"
        out.line(f"  {name:<16} {t['count']:>5}  {outcomes:<32} {med:>7} {p95:>7}")
    c = report["compactions"]
    out.line(
        ("compactions ", "key"),
        f"{c['count']}" + (f": {c['tokens-before']:,} → {c['tokens-after']:,} tokens, {c['fallbacks']} fallback(s)" if c["count"] else ""),
    )
    el = report["elided"]
    out.line(("elided      ", "key"), f"{el['chars']:,} chars in {el['items']} item(s) of {el['elisions']} elision(s)")
    a = report["artifacts"]
    out.line(
        ("artifacts   ", "key"),
        f"{a['count']}" + (f": {human_bytes(a['bytes'])}, {a['chars']:,} chars, {a['elided-chars']:,} elided from the model's view" if a["count"] else ""),
    )
    for w in report["warnings"]:
        out.line(("warning     ", "warn"), w)
    return 0
