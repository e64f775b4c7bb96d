"""The viewer over Claude Code and Codex sessions (``view ~/.claude/projects``), through its
data API in process: each imported into the cache in the background and listed as its
import finishes, beside the transcripts of other PATHs; a session open in a page followed
as its source grows; an import that cannot go on made again, with a note; nothing written
beside a source. (In Chromium, with worker processes: test_view_browser.py.)"""

from __future__ import annotations

import json
import os
import time

import pytest
from tests.support.view import build_sources, client_for

from tests.support import import_fixtures as fx
from llm_agent_session.view import imports

CLAUDE = "projects/-home-dev-proj/sess-1.jsonl"
SUBAGENT = "projects/-home-dev-proj/sess-1/subagents/agent-a1b2.jsonl"
SIDECHAINED = "projects/-home-dev-proj/sess-2.jsonl"
SIDECHAIN = "projects/-home-dev-proj/sess-2/sidechains/s1.jsonl"
ROLLOUT = "sessions/2025/09/10/rollout-2025-09-10T12-00-00-0199.jsonl"


@pytest.fixture
def sources(tmp_path, monkeypatch):
    monkeypatch.setenv("LLM_AGENT_SESSION_CACHE", str(tmp_path / "cache"))
    return build_sources(str(tmp_path))


def shelf_rows(client, done=True):
    """The shelf's rows, once it is done (or, with `done` False, as soon as there are any)."""
    for _ in range(1000):
        got = client.get("/api/shelf").json()
        if got["done"] or got["rows"] and not done:
            return {row["name"]: row for row in got["rows"]}
        time.sleep(0.02)
    raise AssertionError("the shelf never finished")


def follow_until(client, name, more_than, what="count", seconds=10.0):
    """Follow `name` as the page does until its `what` passes `more_than`."""
    end = time.monotonic() + seconds
    while True:
        got = client.get("/api/follow", params={"t": name}).json()
        if got[what] > more_than:
            return got
        if time.monotonic() > end:
            raise AssertionError(f"{name}: {what} stayed {got[what]}")
        time.sleep(0.05)


def texts(client, name):
    items = client.get("/api/window", params={"t": name, "count": 200}).json()["items"]
    return json.dumps([item["body"] for item in items])


def claude_turn(k, parent):
    """A prompt, an answer with a tool call, and its result, as Claude Code writes them."""
    t = f"2025-08-20T10:00:{k:02d}.000Z"
    return [fx.cc_user(f"p{k}", parent, f"NEW PROMPT {k}", t),
            fx.cc_assistant(f"r{k}", f"p{k}", f"msg_new{k}", fx.tool_use(f"toolu_new{k}", "Bash", {"command": "ls"}), t),
            fx.cc_user(f"o{k}", f"r{k}", [fx.tool_result(f"toolu_new{k}", f"NEW RESULT {k}")], t)]


def append(path, records):
    with open(path, "a", encoding="utf-8") as f:
        f.write(fx.jsonl(records))


def test_sources_are_listed_beside_transcripts_and_nothing_is_written_beside_them(sources, tmp_path):
    before = {top: fx.tree_state(top) for top in (sources.projects, sources.sessions)}
    client = client_for([sources.projects, sources.sessions, sources.transcripts])
    rows = shelf_rows(client)
    assert sorted(rows) == sorted([CLAUDE, SUBAGENT, SIDECHAINED, SIDECHAIN, ROLLOUT, "transcripts/run.jsonl"])
    assert (rows[CLAUDE]["agent"], rows[CLAUDE]["title"], rows[CLAUDE]["verdict"]) == ("claude-code", "Date parser fix",
                                                                                       "clean")
    assert rows[CLAUDE]["source"] == sources.claude and rows[CLAUDE]["link"] == CLAUDE
    assert (rows[ROLLOUT]["agent"], rows[ROLLOUT]["model"], rows[ROLLOUT]["source"]) == ("codex", "gpt-5-codex",
                                                                                         sources.rollout)
    assert rows[SUBAGENT]["messages"] == 2 and rows[SIDECHAIN]["messages"] == 4
    info = client.get("/api/transcript", params={"t": CLAUDE}).json()
    assert info["meta"]["source-path"] == sources.claude and info["note"] is None
    assert "1 failed: test_iso" in texts(client, CLAUDE)
    imported = str(tmp_path / "cache" / "view-imports")
    assert len([f for _, _, files in os.walk(imported) for f in files if f.endswith(".jsonl")]) == 5
    assert {top: fx.tree_state(top) for top in before} == before


def test_a_session_open_in_a_page_follows_its_source(sources):
    client = client_for([sources.projects, sources.sessions])
    for name in (CLAUDE, SUBAGENT, ROLLOUT):
        assert client.get("/api/transcript", params={"t": name}).status_code == 200
    info = client.get("/api/transcript", params={"t": CLAUDE}).json()
    parent = "a9"
    for k in range(3):
        append(sources.claude, claude_turn(k, parent))
        parent = f"o{k}"
        got = follow_until(client, CLAUDE, info["count"])
        assert got["generation"] == info["generation"] and f"NEW RESULT {k}" in texts(client, CLAUDE)
        info = got
    append(sources.subagent, [fx.cc_assistant("x3", "x2", "msg_x3", {"type": "text", "text": "SUBAGENT GOES ON"},
                                              "2025-10-01T08:00:09.000Z", isSidechain=True, agentId="a1b2")])
    follow_until(client, SUBAGENT, 3)
    assert "SUBAGENT GOES ON" in texts(client, SUBAGENT)
    count = client.get("/api/transcript", params={"t": ROLLOUT}).json()["count"]
    append(sources.rollout, [fx.cx_msg("assistant", "CODEX GOES ON", 19)])
    follow_until(client, ROLLOUT, count)
    assert "CODEX GOES ON" in texts(client, ROLLOUT)


def test_an_unchanged_source_is_not_imported_again_on_follow(sources):
    client = client_for([sources.projects])
    info = client.get("/api/transcript", params={"t": CLAUDE}).json()
    unit = client.app.app.state.viewer.imports.by_name[CLAUDE]  # (the Guard wraps the application)
    finished = unit.finished
    for _ in range(5):
        assert client.get("/api/follow", params={"t": CLAUDE}).json()["count"] == info["count"]
    assert unit.finished == finished


def test_a_source_rewritten_before_its_checkpoint_is_imported_again_with_a_note(sources):
    client = client_for([sources.projects])
    info = client.get("/api/transcript", params={"t": SIDECHAINED}).json()
    with open(sources.sidechained) as f:
        text = f.read()
    with open(sources.sidechained, "w") as f:  # an earlier line changed: the import cannot go on from it
        f.write(text.replace("review the repo", "review the whole REPO"))
    follow_until(client, SIDECHAINED, info["generation"], what="generation")
    again = client.get("/api/transcript", params={"t": SIDECHAINED}).json()
    assert "imported again from its first line" in again["note"] and "has changed since" in again["note"]
    assert "review the whole REPO" in texts(client, SIDECHAINED)
    assert client.get("/api/transcript", params={"t": SIDECHAIN}).json()["note"] == again["note"]


def test_a_deep_link_opens_a_source_before_the_shelf_is_read(sources):
    client = client_for([sources.projects, sources.sessions])
    for name in (SIDECHAIN, SUBAGENT, ROLLOUT, CLAUDE):  # the shelf never asked for
        info = client.get("/api/transcript", params={"t": name}).json()
        assert info["count"] > 2 and info["meta"]["source-path"].startswith(os.path.dirname(sources.projects)), name
    for name in ("projects/-home-dev-proj/nothing.jsonl", "projects/../transcripts/run.jsonl",
                 "projects/-home-dev-proj/sess-9/sidechains/s1.jsonl"):
        assert client.get("/api/transcript", params={"t": name}).status_code in (403, 404), name


def test_a_source_file_given_as_a_path_opens_straight_into_its_import(sources):
    client = client_for([sources.claude])
    info = client.get("/api/transcript", params={"t": "sess-1.jsonl"}).json()
    assert info["meta"]["source-path"] == sources.claude and info["title"] == "Date parser fix" and info["count"] > 10
    assert list(shelf_rows(client)) == ["sess-1.jsonl"]


def test_a_session_started_later_is_found(sources, monkeypatch):
    monkeypatch.setattr(imports, "RESCAN", 0.2)
    monkeypatch.setattr(imports, "POLL", 0.05)
    client = client_for([sources.projects])
    assert len(shelf_rows(client)) == 4
    later = os.path.join(sources.projects, "-home-dev-other", "sess-3.jsonl")
    fx.write(later, fx.claude_code_with_sidechain())
    for _ in range(500):
        rows = client.get("/api/shelf").json()["rows"]
        if "projects/-home-dev-other/sess-3.jsonl" in {row["name"] for row in rows}:
            break
        time.sleep(0.02)
    else:
        raise AssertionError("the new session never came")
    assert client.get("/api/transcript", params={"t": "projects/-home-dev-other/sess-3.jsonl"}).json()["count"] > 5


def test_a_source_that_cannot_be_imported_is_a_row_that_says_why(sources, monkeypatch):
    from llm_agent_session.importers import _source

    monkeypatch.setattr(_source, "MAX_SOURCE_BYTES", os.path.getsize(sources.sidechained) + 1)
    client = client_for([sources.projects])
    rows = shelf_rows(client)
    assert rows[CLAUDE]["verdict"] == "unreadable" and "the importers' bound" in rows[CLAUDE]["why"]
    assert rows[CLAUDE]["link"] is None and rows[SIDECHAINED]["verdict"] == "clean"
    r = client.get("/api/transcript", params={"t": CLAUDE})
    assert r.status_code == 404 and "the importers' bound" in r.json()["error"]
