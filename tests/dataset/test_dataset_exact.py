"""Every figure of the dataset is what the library itself says of the same file:
``Session.load`` (live messages, pending operations, grants), ``Session.peek(path,
survey=True)`` (lines by type, what each rewind cut), ``History`` (what became of each
operation and message) and ``stats --json`` (tool outcomes, compaction tokens). Held on transcripts with every kind of line, on generated ones, on
the hostile corpus (one that loads with a torn tail, one that would fail) and on
imported Claude Code and Codex histories."""

from __future__ import annotations

import os
from typing import Any, Dict

import pytest

from tests.support import hostile
from tests.support import import_fixtures as fx
from benches.generate import generate
from llm_agent_session import Session
from llm_agent_session.cli.check import report as check_report
from llm_agent_session.verdict import verdict
from llm_agent_session.dataset import export
from llm_agent_session.importers import claude_code, codex
from tests.support.dataset import agrees_with_library, every_kind, rows, small


@pytest.fixture(scope="module")
def fleet(tmp_path_factory: Any) -> Dict[str, str]:
    """SRC with one of each: every kind of line, a small one, a generated one, the hostile
    pair, and the two importers' output."""
    src = tmp_path_factory.mktemp("src")
    paths = {
        "every": every_kind(str(src / "every.jsonl")),
        "small": small(str(src / "small.jsonl"), model="m-small"),
    }
    paths["generated"] = str(src / "gen" / "generated.jsonl")
    os.makedirs(os.path.dirname(paths["generated"]))
    generate(paths["generated"], 600_000, seed=5, torn=True)
    corpus = hostile.build(str(src / "hostile"))
    paths["hostile"], paths["broken"] = corpus.path, corpus.broken
    raw = tmp_path_factory.mktemp("raw")
    for name, importer, text in (("claude", claude_code, fx.claude_code_session()), ("codex", codex, fx.codex_rollout())):
        source = fx.write(str(raw / f"{name}.jsonl"), text)
        paths[name] = str(src / "imported" / f"{name}.jsonl")
        report = importer.import_transcript(source, paths[name])
        assert report["status"] == "imported", report
    return paths


@pytest.fixture(scope="module")
def outs() -> Dict[str, str]:
    return {}


@pytest.fixture
def out(fleet: Dict[str, str], outs: Dict[str, str], tmp_path_factory: Any, backend_name: str) -> str:
    """The fleet exported once per backend (on that backend), for every test of the module."""
    if backend_name not in outs:
        target = str(tmp_path_factory.mktemp("out") / "out")
        report = export(os.path.dirname(fleet["every"]), target)
        assert report.count("failed") == 0 and report.count("exported") == len(fleet), report.files
        outs[backend_name] = target
    return outs[backend_name]


@pytest.mark.parametrize("which", ["every", "small", "generated", "hostile", "claude", "codex"])
def test_a_transcript_that_loads_is_what_load_peek_and_stats_say(fleet: Dict[str, str], out: str, tmp_path: Any,
                                                                 backend_name: str, which: str) -> None:
    agrees_with_library(out, fleet[which], str(tmp_path))


def test_a_transcript_that_would_fail_is_a_row_with_the_reason_and_its_lines_not_live(
        fleet: Dict[str, str], out: str, tmp_path: Any, backend_name: str) -> None:
    path = fleet["broken"]
    [row] = [r for r in rows(out, "SELECT * FROM sessions") if r["path"] == path]
    check = check_report(path, verdict(path))  # as `check --json` prints it
    assert check["verdict"] == "would fail" and row["verdict"] == "would-fail"
    assert check["error"]["reason"] in row["reason"] and f"line {check['error']['line']}" in row["reason"]
    assert row["live_messages"] is None
    messages = [r for r in rows(out, "SELECT * FROM messages ORDER BY line") if r["session_id"] == row["session_id"]]
    assert messages and not any(m["live"] for m in messages)
    # Its lines are salvage's: every envelope that parses, a repeated id's later line left out.
    salvaged = str(tmp_path / "salvaged.jsonl")
    report = Session.salvage(path, salvaged)
    kept = [e for e in Session.peek(salvaged)["envelopes"]]
    assert [m["id"] for m in messages] == [e.id for e in kept if e.type == "message"]
    assert row["envelopes"] == len(kept) and row["skipped_lines"] == len(report["dropped"])


def test_agent_model_and_date_are_on_every_row(fleet: Dict[str, str], out: str) -> None:
    sessions = {r["path"]: r for r in rows(out, "SELECT * FROM sessions")}
    assert sessions[fleet["small"]]["model"] == "m-small" and sessions[fleet["small"]]["agent"] == "small"
    assert sessions[fleet["claude"]]["agent"] == "claude-code" and sessions[fleet["codex"]]["agent"] == "codex"
    assert sessions[fleet["claude"]]["model"] == "claude-opus-4-1"  # the first message's model extra
    assert sessions[fleet["codex"]]["model"] == "gpt-5-codex"  # the first turn context's model fact
    for table in ("messages", "tool_calls", "compactions", "rewinds", "grants"):
        mismatched = rows(out, f"""SELECT count(*) AS n FROM {table} t JOIN sessions s USING (session_id)
                                   WHERE t.agent IS DISTINCT FROM s.agent OR t.model IS DISTINCT FROM s.model
                                      OR t.date <> s.date""")
        assert mismatched == [{"n": 0}], table
    for path, s in sessions.items():
        first = Session.peek(path)["envelopes"][0]
        assert s["meta_id"] == first.id and str(s["date"]) == first.ts[:10]
    assert len({s["session_id"] for s in sessions.values()}) == len(sessions)  # the hostile pair share a meta id
