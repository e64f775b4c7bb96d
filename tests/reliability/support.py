"""Shared pieces of the reliability battery: the tier, the figures report, the reference file.

The battery runs in two tiers: the fast one inside the README's test command, the long
one before a release (``LLM_AGENT_SESSION_TIER=long``; see docs/RELIABILITY.md). Each
test records its figures with :func:`record`; ``tests/reliability/report.py`` runs the
battery and rewrites docs/RELIABILITY.md from them.
"""

from __future__ import annotations

import hashlib
import json
import os
import subprocess
import sys
from typing import Any, Dict, List, Optional, Tuple

import llm_agent_session
from llm_agent_session import Session, _backend

LONG = os.environ.get("LLM_AGENT_SESSION_TIER") == "long"
TIER = "long" if LONG else "fast"
FIGURES_FILE = os.environ.get("LLM_AGENT_SESSION_FIGURES")  # JSON lines, appended by record()
BACKENDS = _backend.available()
TS = "2026-08-09T13:10:08.542283Z"


def record(area: str, figure: str, value: Any, target: str, command: str) -> None:
    """Note one figure for docs/RELIABILITY.md (a no-op unless the report asked for them)."""
    if not FIGURES_FILE:
        return
    row = {"area": area, "figure": figure, "value": value, "target": target, "tier": TIER, "command": command}
    with open(FIGURES_FILE, "a", encoding="utf-8") as f:
        f.write(json.dumps(row) + "\n")


def using(backend: str) -> None:
    _backend.use(backend)
    assert llm_agent_session.backend() == backend


def canon(value: Any) -> str:
    text = json.dumps(value, sort_keys=True, separators=(",", ":"), ensure_ascii=False, allow_nan=False)
    return text.replace("\u2028", "\\u2028").replace("\u2029", "\\u2029")


def line(id_: str, type_: str, payload: Dict[str, Any]) -> bytes:
    return (canon({"id": id_, "payload": payload, "ts": TS, "type": type_, "v": 1}) + "\n").encode()


def padded_message(id_: str, total: int) -> bytes:
    """A message line of exactly `total` bytes, its ``\\n`` included."""
    bare = line(id_, "message", {"role": "user", "content": ""})
    return line(id_, "message", {"role": "user", "content": "x" * (total - len(bare))})


def reference_transcript(crlf: bool = False) -> bytes:
    """Every envelope type, multi-byte UTF-8, an escaped U+2028, a 64 KiB line, lines of
    exactly 4,095 and 4,096 bytes and blank lines; with ``crlf`` every line ends in CRLF."""
    section = "You are a careful agent. ✓"
    digest = "sha256:" + hashlib.sha256(section.encode()).hexdigest()
    call = {"id": "call_1", "type": "function", "function": {"name": "bash", "arguments": '{"cmd":"ls"}'}}
    args = {"cmd": "ls"}
    lines = [
        line("m0", "session-meta", {"agent": "reliability", "model": "ref"}),
        line("m1", "message", {"role": "system", "content": "sys prompt", "sysprompt": True}),
        line("r1", "run-context", {"sections": [{"name": "id", "digest": digest, "text": section}], "facts": [["date", "2026-11-29"]]}),
        line("m2", "message", {"role": "user", "content": "é ☃ 😀 and a line\u2028separator"}),
        line("m3", "message", {"role": "assistant", "content": None, "tool_calls": [call], "finish-reason": "tool_calls"}),
        line("d1", "tool-dispatched", {"call-id": "call_1", "tool": "bash", "arguments": args, "arguments-digest": "sha256:" + hashlib.sha256(canon(args).encode()).hexdigest(), "idempotency": None, "run-id": None, "round": 1}),
        b"\n",
        line("m4", "message", {"role": "tool", "tool_call_id": "call_1", "content": "a.txt\nb.txt"}),
        line("s1", "tool-settled", {"op-id": "d1", "outcome": "completed", "duration": 0.5, "artifact": {"file": "out-1.txt", "digest": "sha256:00", "bytes": 10, "chars": 10, "elided-chars": 0}}),
        line("g1", "grants", {"grants": {"bash": ["ls"]}}),
        b"  \t\n",
        padded_message("m5", 4095),
        padded_message("m6", 4096),
        line("r2", "run-context", {"sections": [{"name": "id", "digest": digest, "rendered-in": "r1"}], "facts": []}),
        padded_message("m7", 64 * 1024),
        line("e1", "elision", {"items": [{"id": "m7", "stub": "[64 KiB elided]"}]}),
        line("c1", "compaction", {"summary": "the story so far", "replaces-through-id": "m5", "tokens-before": 9000, "tokens-after": 300, "fallback": False}),
        line("u1", "future-thing", {"anything": [1, 2, 3]}),
        line("d2", "tool-dispatched", {"call-id": "call_2", "tool": "edit", "arguments": "not json", "arguments-digest": "sha256:11", "idempotency": "k2", "run-id": "run-1", "round": 2}),
        b"\r\n",
        line("m8", "message", {"role": "user", "content": "the last word ∎"}),
    ]
    data = b"".join(lines)
    return data.replace(b"\n", b"\r\n") if crlf else data


def line_spans(data: bytes) -> List[Tuple[int, int, Optional[str]]]:
    """(start, json_end, id) of each line; json_end excludes the ``\\n`` and any trailing CR/space."""
    out = []
    pos = 0
    while pos < len(data):
        nl = data.find(b"\n", pos)
        end = len(data) if nl == -1 else nl
        raw = data[pos:end]
        stripped = raw.rstrip(b" \t\r")
        id_ = json.loads(stripped)["id"] if stripped.strip() else None
        out.append((pos, pos + len(stripped), id_))
        pos = end + 1
    return out


def outcome(path: str) -> Tuple[str, Any]:
    """What load says about the file: ("ok", (event ids, message ids)) or (error class, line)."""
    try:
        with Session.load(path) as s:
            return "ok", ([e.id for e in s.events], list(s.message_ids))
    except llm_agent_session.TranscriptError as e:
        return type(e).__name__, getattr(e, "line", None)


def run_python(code: str, *, backend: str, timeout: float = 60, **kw: Any) -> subprocess.CompletedProcess:
    env = dict(os.environ, LLM_AGENT_SESSION_BACKEND=backend)
    return subprocess.run([sys.executable, "-c", code], env=env, timeout=timeout, **kw)
