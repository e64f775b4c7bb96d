"""Transcripts with every kind of line, and the dataset's tables read back."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from collections import Counter
from typing import Any, Dict, List, Optional

from llm_agent_session import Session, Usage, assistant_message, tool_message, user_message
from llm_agent_session import usage as token_usage
from llm_agent_session.cli.stats import compute
from llm_agent_session.dataset import query
from llm_agent_session.dataset.grow import PENDING
from llm_agent_session.dataset.layout import MANIFEST
from llm_agent_session.history import History
from llm_agent_session.messages import message_extras
from tests.support.cli import build_transcript, call, child_env


def every_kind(path: str) -> str:
    """tests.support.cli's transcript (messages with extras, operations in every state, a
    compaction, an elision, an artifact, grants, run-context), then a response streamed
    over two lines (one response id: counted once, at the second) that a rewind takes out,
    a settle of an interrupted call, and a response without an id, so every table has rows
    and every token column values."""
    t = build_transcript(path)
    with Session.load(path) as s:
        kept = s.append_message(user_message("one more thing"))
        s.append_message(assistant_message("thinking it over"), usage=Usage(40, 1, 900, 120, "resp_every_1"))
        s.append_message(assistant_message("on it", [call("call_6", "bash", '{"cmd": "make"}')]),
                         usage=Usage(40, 35, 900, 120, "resp_every_1"))
        op = s.append_tool_dispatched("call_6", "bash", {"cmd": "make"})
        s.append_rewind(kept)
        s.resolve_tool_operation(op, reason="interrupted")
        s.append_message(user_message("after the rewind"))
        s.append_message(assistant_message("noted"), usage=Usage(input=7, output=3))
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


# -- what the library says of a transcript, and what the dataset holds of it ----------------


def _loaded(path: str, tmp: str) -> Session:
    copy = os.path.join(tmp, "copy-" + os.path.basename(path)[-40:])
    shutil.copyfile(path, copy)  # a load repairs a torn tail: never the original
    return Session.load(copy)


def agrees_with_library(out: str, path: str, tmp: str) -> Dict[str, Any]:
    """Check that the dataset `out` holds of transcript `path` (one that loads) what the
    library says of it: ``Session.load`` (live messages, pending operations, grants, every
    message's fields), ``Session.peek(path, survey=True)`` (lines by type, what each rewind
    cut), ``History`` (each operation's state, settle, answer and grants; what removed or
    elided each message), ``stats`` (tool outcomes, compaction tokens), and, where the
    export kept a grow state, that it names the grants in force and the operations still
    open. Its sessions row is returned."""
    [row] = [r for r in rows(out, "SELECT * FROM sessions") if r["path"] == path]
    sid = row["session_id"]
    assert all(c in "0123456789abcdef" for c in sid)

    def of(table: str) -> List[Dict[str, Any]]:
        return rows(out, f"SELECT * FROM {table} WHERE session_id = '{sid}' ORDER BY line")

    messages, calls, compactions, rewinds, grants = (of("messages"), of("tool_calls"), of("compactions"),
                                                     of("rewinds"), of("grants"))
    survey = Session.peek(path, survey=True)["survey"]
    # Every operation and what became of every message, as ``History`` folds the file.
    history = History.read(path, keep_payloads=False)
    assert [c["op_id"] for c in calls] == list(history.operations)
    for c in calls:
        op = history.operations[c["op_id"]]
        assert (c["call_id"], c["tool"], c["outcome"], c["settled_id"], c["answered_by"], c["grants_id"]) == (
            op.call_id, op.tool, op.state, op.settled_id, op.answered_by, op.grants_id), c["op_id"]
    for m in messages + compactions:
        removal, elided = history.removed.get(m["id"]), history.elided.get(m["id"])
        assert (m["removed_by"], m["removed_kind"]) == ((removal.by, removal.kind) if removal else (None, None))
        assert m["elided_by"] == (elided[-1] if elided else None)
    stats = json.loads(json.dumps(compute(path)))  # as `stats --json` prints it
    with _loaded(path, tmp) as s:
        assert row["verdict"] == ("torn-tail" if s.warnings else "clean")
        assert row["live_messages"] == len(s.messages)
        assert {m["id"] for m in messages if m["live"]} | {c["id"] for c in compactions if c["live"]} == set(s.message_ids)
        assert row["envelopes"] == len(s.events) and row["skipped_lines"] == 0
        assert row["pending_operations"] == len(s.pending_tool_operations())
        pending = [c for c in calls if c["outcome"] in PENDING]
        assert [(c["op_id"], c["outcome"], c["call_id"], c["tool"]) for c in pending] == [
            (op.op_id, op.state, op.call_id, op.tool) for op in s.pending_tool_operations()]
        assert [json.loads(c["arguments"]) if c["arguments"] else None for c in pending] == [
            op.arguments for op in s.pending_tool_operations()]
        in_force = [g for g in grants if g["in_force"]]
        assert (json.loads(in_force[0]["grants"]) if in_force else {}) == s.grants
        by_id = {m["id"]: m for m in messages}
        for e in s.events:
            if e.type != "message":
                continue
            m = by_id[e.id]
            p = e.payload
            assert m["role"] == p["role"] and m["ts"].strftime("%Y-%m-%dT%H:%M:%S.%fZ") == e.ts
            assert (json.loads(m["content"]) if m["content"] is not None else None) == p.get("content")
            assert (json.loads(m["tool_calls"]) if m["tool_calls"] is not None else None) == p.get("tool_calls")
            assert (json.loads(m["extras"]) if m["extras"] else {}) == message_extras(p)
            assert m["tool_call_id"] == p.get("tool_call_id") and m["name"] == p.get("name")
            if isinstance(p.get("content"), str):
                assert m["text"] == p["content"]
            stated = token_usage.of_message(p)
            assert (m["response_id"], m["input_tokens"], m["output_tokens"], m["cache_read_tokens"],
                    m["cache_write_tokens"]) == ((None,) * 5 if stated is None else (stated.response_id, *stated.figures))
        # Token usage: each row's flag and the totals as the library's reference counts them
        # (every message payload, in file order), and the totals the rows add up to.
        lines = [(token_usage.of_message(e.payload), e.payload.get("role") == "assistant")
                 for e in s.events if e.type == "message"]
        flags, totals = token_usage.count_lines(lines)
        assert [m["usage_counted"] for m in messages] == flags
        assert (row["input_tokens"], row["output_tokens"], row["cache_read_tokens"], row["cache_write_tokens"],
                row["responses"], row["unmeasured_responses"]) == (*totals.figures, totals.responses, totals.unmeasured)
        for column in ("input_tokens", "output_tokens", "cache_read_tokens", "cache_write_tokens"):
            figures = [m[column] for m in messages if m["usage_counted"] and m[column] is not None]
            assert row[column] == (sum(figures) if figures else None), column
        assert token_usage.of_transcript(path) == totals
        grants_now = s.grants
    assert row["messages"] == survey["counts"].get("message", 0) == len(messages)
    for kind, n in (("compaction", "compactions"), ("rewind", "rewinds"), ("elision", "elisions"), ("grants", "grants")):
        assert row[n] == survey["counts"].get(kind, 0), kind
    assert {m["id"]: m["removed_by"] for m in messages + compactions if m["removed_kind"] == "rewind"} == survey["rewound"]
    cut = Counter(survey["rewound"].values())
    assert [r["rewound"] for r in rewinds] == [cut[r["id"]] for r in rewinds]
    counted: Dict[str, Dict[str, int]] = {}
    for c in calls:
        outcome = "pending" if c["outcome"] in PENDING else c["outcome"]
        counted.setdefault(c["tool"], {}).setdefault(outcome, 0)
        counted[c["tool"]][outcome] += 1
    assert counted == {t: v["outcomes"] for t, v in stats["tools"].items()}
    assert row["tool_calls"] == sum(v["count"] for v in stats["tools"].values())
    for outcome in ("completed", "failed", "outcome-unknown"):
        assert row[outcome.replace("-", "_")] == sum(v["outcomes"].get(outcome, 0) for v in stats["tools"].values())
    for key in ("tokens_before", "tokens_after"):  # stats: unknown (None) once one compaction states none
        values = [c[key] for c in compactions]
        assert (None if None in values else sum(values)) == stats["compactions"][key], key
    assert row["bytes"] == os.path.getsize(path)
    state = grow_state(out, path)
    if state is not None:
        assert state["in_force"] == ([in_force[0]["id"], in_force[0]["grants"]] if in_force else None)
        assert (json.loads(state["in_force"][1]) if state["in_force"] else {}) == grants_now
        assert sorted(op[0] for op in state["open"]) == sorted(
            c["op_id"] for c in calls if c["outcome"] in PENDING or not c["answered"])
    return row


def manifest_entry(out: str, path: str) -> Dict[str, Any]:
    with open(os.path.join(out, MANIFEST)) as f:
        sources = json.load(f)["sources"]
    [entry] = [e for e in sources.values() if e["path"] == path]
    return entry


def grow_state(out: str, path: str) -> Optional[Dict[str, Any]]:
    state: Optional[Dict[str, Any]] = manifest_entry(out, path).get("grow")
    return state
