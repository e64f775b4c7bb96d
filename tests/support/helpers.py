"""Shared helpers for the conformance suite: raw line writing, canonical JSON as the
spec defines it, subprocess launching with the current backend, and an independent
reference implementation of the replay fold (docs/FORMAT.md's replay) to compare the library against.
"""

from __future__ import annotations

import hashlib
import json
import os
import re
import subprocess
import sys
import textwrap
from pathlib import Path
from typing import Any, Dict, Iterable, List, Optional, Tuple

import llm_agent_session
from llm_agent_session import Message

UUID7_RE = re.compile(r"^[0-9a-f]{8}-[0-9a-f]{4}-7[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$")
TS_RE = re.compile(r"^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}\.\d{6}Z$")
TS = "2026-08-09T13:10:08.542283Z"

ENVELOPE_KEYS = ["id", "payload", "ts", "type", "v"]


# --------------------------------------------------------------------------- canonical JSON


def canon(value: Any) -> str:
    """The line format's serialisation (docs/FORMAT.md), written independently of the library."""
    text = json.dumps(value, sort_keys=True, separators=(",", ":"), ensure_ascii=False, allow_nan=False)
    return text.replace("\u2028", "\\u2028").replace("\u2029", "\\u2029")


def sha(text_or_bytes: Any) -> str:
    data = text_or_bytes.encode("utf-8") if isinstance(text_or_bytes, str) else text_or_bytes
    return "sha256:" + hashlib.sha256(data).hexdigest()


def digest_of(value: Any) -> str:
    return sha(canon(value))


# --------------------------------------------------------------------------- raw lines


def env_line(id_: str, type_: str, payload: Any, *, ts: str = TS, v: Any = 1) -> bytes:
    return (canon({"id": id_, "payload": payload, "ts": ts, "type": type_, "v": v}) + "\n").encode("utf-8")


def meta_line(id_: str = "meta-0", payload: Optional[dict] = None) -> bytes:
    return env_line(id_, "session-meta", {} if payload is None else payload)


def msg_line(id_: str, role: str = "user", content: Any = "hi", **keys: Any) -> bytes:
    payload = {"role": role}
    if content is not None:
        payload["content"] = content
    payload.update(keys)
    return env_line(id_, "message", payload)


def compaction_line(id_: str, through: str, summary: str = "sum", before: int = 10, after: int = 2,
                    fallback: bool = False) -> bytes:
    return env_line(id_, "compaction", {"summary": summary, "replaces-through-id": through,
                                        "tokens-before": before, "tokens-after": after,
                                        "fallback": fallback})


def elision_line(id_: str, items: List[Tuple[str, Any]]) -> bytes:
    return env_line(id_, "elision", {"items": [{"id": i, "stub": s} for i, s in items]})


def dispatched_line(id_: str, call_id: str = "call-1", tool: str = "t", arguments: Any = None) -> bytes:
    arguments = {} if arguments is None else arguments
    return env_line(id_, "tool-dispatched", {
        "call-id": call_id, "tool": tool, "arguments": arguments,
        "arguments-digest": digest_of(arguments), "idempotency": None, "run-id": None, "round": None})


def settled_line(id_: str, op_id: str, outcome: str = "completed", **extra: Any) -> bytes:
    payload = {"op-id": op_id, "outcome": outcome}
    payload.update(extra)
    return env_line(id_, "tool-settled", payload)


def write_raw(path: Any, *chunks: bytes) -> bytes:
    data = b"".join(chunks)
    with open(path, "wb") as f:
        f.write(data)
    return data


def append_raw(path: Any, data: bytes) -> None:
    with open(path, "ab") as f:
        f.write(data)


def read(path: Any) -> bytes:
    with open(path, "rb") as f:
        return f.read()


def lines_of(path: Any) -> List[bytes]:
    """Complete lines (with their newline)."""
    data = read(path)
    out = data.split(b"\n")
    return [l + b"\n" for l in out[:-1]]


def parsed_lines(path: Any) -> List[dict]:
    return [json.loads(l) for l in lines_of(path) if l.strip()]


def line_offsets(data: bytes) -> List[int]:
    offs = [0]
    for i, b in enumerate(data):
        if b == 0x0A:
            offs.append(i + 1)
    return offs


def listdir_names(path: Any) -> List[str]:
    return sorted(os.listdir(path))


# --------------------------------------------------------------------------- API adapters
# Where the spec leaves the exact Python shape of an argument open, the suite goes through
# these so that one place documents the shape used.


def run_context(session, sections: List[Tuple[str, str]], facts: Iterable[Tuple[str, Any]] = ()):
    """append_run_context with sections as (name, text) pairs and facts as (key, value) pairs."""
    return session.append_run_context(list(sections), list(facts))


def artifact(file: str, digest: str = "sha256:" + "0" * 64, bytes_: int = 10, chars: int = 10,
             elided: int = 5) -> Dict[str, Any]:
    return {"file": file, "digest": digest, "bytes": bytes_, "chars": chars, "elided-chars": elided}


# --------------------------------------------------------------------------- subprocesses


#: The folder that holds ``tests/`` (and ``benches/``): on a child's path, it imports
#: ``tests.support`` as the tests do.
ROOT = str(Path(__file__).resolve().parent.parent.parent)


def child_env(**extra: str) -> Dict[str, str]:
    """This process's environment for a child Python: the package this process imported
    and the test tree on its path, the same backend, unbuffered output."""
    env = dict(os.environ)
    pkg_parent = str(Path(llm_agent_session.__file__).resolve().parent.parent)
    env["PYTHONPATH"] = os.pathsep.join(p for p in (pkg_parent, ROOT, env.get("PYTHONPATH")) if p)
    env["LLM_AGENT_SESSION_BACKEND"] = llm_agent_session.backend()
    env["PYTHONDONTWRITEBYTECODE"] = "1"
    env["PYTHONUNBUFFERED"] = "1"
    env.update(extra)
    return env


PRELUDE = textwrap.dedent(
    """
    import os, sys, json
    import llm_agent_session
    from llm_agent_session import *
    want = os.environ["LLM_AGENT_SESSION_BACKEND"]
    assert llm_agent_session.backend() == want, (llm_agent_session.backend(), want)
    """
)


def run_py(code: str, *args: str, timeout: float = 60, check: bool = True, **kw) -> subprocess.CompletedProcess:
    proc = subprocess.run(
        [sys.executable, "-c", PRELUDE + textwrap.dedent(code), *args],
        env=child_env(), capture_output=True, text=True, timeout=timeout, **kw,
    )
    if check and proc.returncode != 0:
        raise AssertionError(f"child failed rc={proc.returncode}\nstdout:\n{proc.stdout}\nstderr:\n{proc.stderr}")
    return proc


def spawn_py(code: str, *args: str, **kw) -> subprocess.Popen:
    return subprocess.Popen(
        [sys.executable, "-c", PRELUDE + textwrap.dedent(code), *args],
        env=child_env(), stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, bufsize=1, **kw,
    )


# --------------------------------------------------------------------------- reference fold


def reference_replay(events) -> Dict[str, Any]:
    """docs/FORMAT.md's replay section, written from the documents alone. `events` is a sequence of
    Event-like objects (id, type, ts, payload) in file order, meta included."""
    live: List[Tuple[str, Message]] = []
    grants: Dict[str, Any] = {}
    dispatched: Dict[str, Any] = {}
    order: List[str] = []
    settled = set()
    tool_msg_call_ids_after: Dict[str, bool] = {}
    carriers: Dict[str, str] = {}
    for ev in events:
        t, p = ev.type, ev.payload
        if t == "message":
            live.append((ev.id, Message.from_dict(p)))
            for op_id, d in dispatched.items():
                if op_id not in settled and p.get("tool_call_id") == d["call-id"] and p.get("role") == "tool":
                    tool_msg_call_ids_after[op_id] = True
        elif t == "compaction":
            idx = [i for i, (mid, _) in enumerate(live) if mid == p["replaces-through-id"]]
            assert idx, "dangling compaction"
            i = idx[0]
            live = [e for e in live[: i + 1] if e[1].is_sticky] + [(ev.id, Message("user", p["summary"]))] + live[i + 1:]
        elif t == "elision":
            for item in p["items"]:
                idx = [i for i, (mid, _) in enumerate(live) if mid == item["id"]]
                assert idx, "dangling elision"
                i = idx[0]
                m = live[i][1]
                d = m.to_dict()
                d["content"] = item["stub"]
                live[i] = (live[i][0], Message.from_dict(d))
        elif t == "rewind":
            # the README's rewind section: the live list ends with to-id; null leaves nothing
            if p["to-id"] is None:
                live = []
            else:
                idx = [i for i, (mid, _) in enumerate(live) if mid == p["to-id"]]
                assert idx, "dangling rewind"
                live = live[: idx[0] + 1]
        elif t == "grants":
            grants = p["grants"]
        elif t == "tool-dispatched":
            dispatched[ev.id] = dict(p, ts=ev.ts)
            order.append(ev.id)
        elif t == "tool-settled":
            assert p["op-id"] in dispatched and p["op-id"] not in settled
            settled.add(p["op-id"])
        elif t == "run-context":
            for s in p["sections"]:
                if "text" in s:
                    carriers.setdefault(s["digest"], s["text"])
    pending = []
    for op_id in order:
        if op_id in settled:
            continue
        d = dispatched[op_id]
        pending.append(dict(
            op_id=op_id, call_id=d["call-id"], tool=d["tool"], arguments=d["arguments"],
            arguments_digest=d["arguments-digest"], idempotency=d["idempotency"], run_id=d["run-id"],
            round=d["round"], dispatched_at=d["ts"],
            state="result-recorded" if tool_msg_call_ids_after.get(op_id) else "dispatched"))
    return {
        "messages": [m for _, m in live],
        "message_ids": [i for i, _ in live],
        "grants": grants,
        "pending": pending,
        "sections": carriers,
    }


def pending_as_dicts(session) -> List[Dict[str, Any]]:
    out = []
    for op in session.pending_tool_operations():
        out.append(dict(op_id=op.op_id, call_id=op.call_id, tool=op.tool, arguments=op.arguments,
                        arguments_digest=op.arguments_digest, idempotency=op.idempotency,
                        run_id=op.run_id, round=op.round, dispatched_at=op.dispatched_at, state=op.state))
    return out


def kill_child_at(code: str, *args: str, marker: str = "IN_TOOL", timeout: float = 60) -> None:
    """Run `code` in a child, wait for it to print `marker`, then SIGKILL it there."""
    import signal

    child = spawn_py(code, *args)
    try:
        line = child.stdout.readline()
        assert line.strip() == marker, child.stderr.read()
        os.kill(child.pid, signal.SIGKILL)
        child.wait(timeout=timeout)
    finally:
        if child.poll() is None:
            child.kill()
        child.stdout.close()
        child.stderr.close()


def crash_view(path: Any) -> Tuple[list, list]:
    """What a new process's `Session.load` sees: pending operations [call id, tool, state]
    and live messages [role, [tool call ids]], as JSON values."""
    out = run_py(
        """
        s = Session.load(sys.argv[1])
        print(json.dumps([[o.call_id, o.tool, o.state] for o in s.pending_tool_operations()]))
        print(json.dumps([[m.role, [c["id"] for c in (m.tool_calls or [])]] for m in s.messages]))
        s.close()
        """,
        str(path),
    ).stdout.splitlines()
    return json.loads(out[0]), json.loads(out[1])
