"""Transcripts with every kind of line, and the dataset's tables read back."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from typing import Any, Dict, List, Optional

from llm_agent_session import Session, assistant_message, tool_message, user_message
from llm_agent_session.dataset import query
from cli_support import build_transcript, call, child_env


def every_kind(path: str) -> str:
    """cli_support's transcript (messages with extras, operations in every state, a
    compaction, an elision, an artifact, grants, run-context), then a rewind and a settle
    of an interrupted call, so every table has rows."""
    t = build_transcript(path)
    with Session.load(path) as s:
        kept = s.append_message(user_message("one more thing"))
        s.append_message(assistant_message("on it", [call("call_6", "bash", '{"cmd": "make"}')]))
        op = s.append_tool_dispatched("call_6", "bash", {"cmd": "make"})
        s.append_rewind(kept)
        s.resolve_tool_operation(op, reason="interrupted")
        s.append_message(user_message("after the rewind"))
    assert t.ids
    return path


def small(path: str, text: str = "hello", model: Optional[str] = None) -> str:
    """A short transcript: a user turn, a tool call answered and settled."""
    with Session.create(path, {"agent": "small", **({"model": model} if model else {})}) as s:
        s.append_message(user_message(text))
        s.append_message(assistant_message(None, [call("c1", "grep", '{"q": "x"}')]))
        op = s.append_tool_dispatched("c1", "grep", {"q": "x"})
        s.append_message(tool_message("c1", "x: 1"))
        s.append_tool_settled(op, "completed", duration=0.25)
    return path


def rows(out: str, sql: str) -> List[Dict[str, Any]]:
    return query(out, sql).to_pylist()


def table(out: str, name: str, order: str = "session_id, line") -> List[Dict[str, Any]]:
    order = "session_id" if name == "sessions" else order
    return rows(out, f"SELECT * FROM {name} ORDER BY {order}")


def all_tables(out: str) -> Dict[str, List[Dict[str, Any]]]:
    from llm_agent_session.dataset import TABLE_NAMES

    order = {"sessions": "session_id, path"}
    return {t: rows(out, f"SELECT * FROM {t} ORDER BY {order.get(t, 'session_id, line')}") for t in TABLE_NAMES}


def glob_count(out: str, name: str) -> int:
    import duckdb

    con = duckdb.connect()
    return con.execute(f"SELECT count(*) FROM read_parquet('{out}/{name}/**/*.parquet', hive_partitioning = true)").fetchone()[0]


def cli(backend: str, *args: str, timeout: float = 300, **kw: Any) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "llm_agent_session", *args], capture_output=True, text=True,
                          timeout=timeout, env=child_env(backend), **kw)


def stats_json(backend: str, path: str) -> Dict[str, Any]:
    r = cli(backend, "stats", "--json", path)
    assert r.returncode == 0, r.stderr
    return json.loads(r.stdout)


def tree_state(root: str) -> Dict[str, Any]:
    """Every file under `root`: its bytes' digest, mode and mtime (SRC must not change)."""
    import hashlib

    state = {}
    for directory, _, names in os.walk(root):
        for name in names:
            p = os.path.join(directory, name)
            st = os.lstat(p)
            digest = hashlib.sha256(open(p, "rb").read()).hexdigest() if os.path.isfile(p) and not os.path.islink(p) else None
            state[os.path.relpath(p, root)] = (digest, st.st_mode, st.st_mtime_ns)
    return state
