"""importers.cache: a source imported into the cache (never beside it), as ``import`` lays
it out, brought up to date as it grows; an import that cannot go on is made again from
the first line with a note, and one that cannot be made again leaves the old transcript."""

from __future__ import annotations

import hashlib
import json
import os
import stat
import threading

import pytest

from tests.support import import_fixtures as fx
from llm_agent_session import Session
from llm_agent_session.importers import cache, claude_code, codex


@pytest.fixture
def cache_home(tmp_path, monkeypatch):
    where = tmp_path / "cache"
    monkeypatch.setenv("LLM_AGENT_SESSION_CACHE", str(where))
    return where


def claude_tree(root) -> dict:
    """A Claude Code projects folder: a session with a subagent, one with a sidechain."""
    project = os.path.join(str(root), "-home-dev-proj")
    return {
        "main": fx.write(os.path.join(project, "sess-1.jsonl"), fx.claude_code_session()),
        "agent": fx.write(os.path.join(project, "sess-1", "subagents", "agent-a1b2.jsonl"), fx.claude_code_subagent()),
        "side": fx.write(os.path.join(project, "sess-2.jsonl"), fx.claude_code_with_sidechain()),
    }


def refreshed(path: str, fmt: str = claude_code.FORMAT, **kw) -> dict:
    outcome = cache.refresh(cache.cached(path, fmt), **kw)
    assert outcome["error"] is None, outcome
    return outcome


def test_sources_are_imported_into_the_cache_as_import_lays_them_out(tmp_path, cache_home):
    src = claude_tree(tmp_path / "projects")
    before = fx.tree_state(tmp_path / "projects")
    outs = {}
    for key, path in src.items():
        outcome = refreshed(path)
        assert outcome["status"] == "imported" and outcome["note"] is None
        outs[key] = [out for out, _ in outcome["outputs"]]
    claude_code.import_tree(str(tmp_path / "projects"), str(tmp_path / "out"))
    mirror = os.path.dirname(outs["main"][0])
    assert len(outs["main"]) == 1  # its subagent is a source of its own, imported when it changes
    assert os.path.dirname(mirror) == str(cache_home / "view-imports")
    assert os.path.basename(mirror) == hashlib.sha256(os.fsencode(os.path.dirname(src["main"]))).hexdigest()[:32]
    made = {os.path.relpath(out, mirror) for key in outs for out in outs[key]}
    expected = {"sess-1.jsonl", "sess-1/subagents/agent-a1b2.jsonl", "sess-2.jsonl", "sess-2/sidechains/s1.jsonl"}
    assert made == expected
    for rel in expected:  # what `import` makes, envelope for envelope
        assert fx.event_kinds(os.path.join(mirror, rel)) == fx.event_kinds(str(tmp_path / "out" / "-home-dev-proj" / rel))
    with Session.load(os.path.join(mirror, "sess-1/subagents/agent-a1b2.jsonl")) as s:
        assert s.meta["parent"]["transcript"] == "../../sess-1.jsonl"
    for folder, dirs, files in os.walk(cache_home):
        assert all(stat.S_IMODE(os.stat(os.path.join(folder, d)).st_mode) == 0o700 for d in dirs)
        assert all(stat.S_IMODE(os.stat(os.path.join(folder, f)).st_mode) == 0o600 for f in files)
    assert fx.tree_state(tmp_path / "projects") == before  # nothing written beside the sources


def test_a_codex_rollout_keeps_its_name_without_zst(tmp_path, cache_home):
    path = fx.write(str(tmp_path / "sessions/2025/09/10/rollout-1.jsonl"), fx.codex_rollout())
    out = refreshed(path, codex.FORMAT)["outputs"][0][0]
    assert os.path.basename(out) == "rollout-1.jsonl" and fx.tool_outcomes(out)["call_rm"] == "outcome-unknown"
    assert cache.cached(path + ".zst", codex.FORMAT).out == out


def test_a_grown_source_gets_what_is_new_and_rows_only_for_new_transcripts(tmp_path, cache_home):
    path = claude_tree(tmp_path / "projects")["main"]
    first = refreshed(path, row_of=lambda out: {"row": os.path.basename(out)})
    out = first["outputs"][0][0]
    assert first["outputs"] == [[out, {"row": "sess-1.jsonl"}]]
    again = refreshed(path, known=frozenset([out]), row_of=lambda out: {"row": out})
    assert again["status"] == "unchanged" and again["outputs"] == [[out, None]]
    inode = os.stat(out).st_ino
    with open(path, "a") as f:
        f.write(json.dumps(fx.cc_user("n1", "a9", "ANOTHER PROMPT", "2025-08-20T10:00:00.000Z")) + "\n")
    assert refreshed(path)["status"] == "appended" and os.stat(out).st_ino == inode
    whole = str(tmp_path / "whole.jsonl")
    claude_code.import_transcript(path, whole, subagents=False)
    assert fx.conversation(out) == fx.conversation(whole)
    assert fx.conversation(out)[-1]["content"] == "ANOTHER PROMPT"


def test_a_source_changed_before_its_checkpoint_is_imported_again_with_a_note(tmp_path, cache_home):
    path = claude_tree(tmp_path / "projects")["side"]
    out = refreshed(path)["outputs"][0][0]
    inode = os.stat(out).st_ino
    with open(path) as f:
        text = f.read()
    with open(path, "w") as f:
        f.write(text.replace("review the repo", "review the REPO"))
    outcome = refreshed(path)
    assert outcome["status"] == "imported" and "imported again from its first line" in outcome["note"]
    assert "has changed since" in outcome["note"]
    assert os.stat(out).st_ino != inode  # a fresh file, which a follower reads again
    assert fx.conversation(out)[0]["content"] == "review the REPO"
    assert [os.path.basename(o) for o, _ in outcome["outputs"]] == ["sess-2.jsonl", "s1.jsonl"]
    assert not [n for _, dirs, files in os.walk(cache_home) for n in dirs + files if ".was-" in n]


def test_a_transcript_a_killed_import_left_lines_in_is_imported_again(tmp_path, cache_home):
    path = claude_tree(tmp_path / "projects")["main"]
    out = refreshed(path)["outputs"][0][0]
    lines = open(out, "rb").read().splitlines(keepends=True)
    with open(out, "ab") as f:
        f.write(lines[1].replace(b'"id":"', b'"id":"x', 1))  # an envelope after the checkpoint
    outcome = refreshed(path)
    assert "after its last import checkpoint" in outcome["note"]
    assert Session.load(out).close() is None and fx.check_exit(out) == 0


def test_where_importing_again_fails_too_the_old_transcript_stays(tmp_path, cache_home):
    if not hasattr(os, "mkfifo"):
        pytest.skip("no FIFOs here")
    path = claude_tree(tmp_path / "projects")["side"]
    out = refreshed(path)["outputs"][0][0]
    side = os.path.join(os.path.dirname(out), "sess-2", "sidechains", "s1.jsonl")
    kept = {p: (os.stat(p).st_ino, open(p, "rb").read()) for p in (out, side)}
    os.remove(path)
    os.mkfifo(path)  # the source is no file to read any more
    outcome = cache.refresh(cache.cached(path, claude_code.FORMAT))
    assert outcome["status"] == "failed" and "not a regular file" in outcome["error"]
    assert "nor start again from the first line" in outcome["note"] and "showing what was imported before" in outcome["note"]
    assert {p: (os.stat(p).st_ino, open(p, "rb").read()) for p in kept} == kept
    assert [o for o, _ in outcome["outputs"]] == [out]


def test_a_first_import_that_fails_leaves_nothing(tmp_path, cache_home):
    path = str(tmp_path / "projects" / "p" / "s.jsonl")
    os.makedirs(os.path.dirname(path))
    if not hasattr(os, "mkfifo"):
        pytest.skip("no FIFOs here")
    os.mkfifo(path)
    outcome = cache.refresh(cache.cached(path, claude_code.FORMAT))
    assert outcome["status"] == "failed" and outcome["note"] is None and outcome["outputs"] == []
    assert not os.path.exists(cache.cached(path, claude_code.FORMAT).out)


def long_session(path: str, turns: int) -> str:
    """A Claude Code session of `turns` prompts and answers (about 1 KB each)."""
    t = "2025-08-20T09:{:02d}:{:02d}.000Z".format
    records, parent = [], None
    for k in range(turns):
        records.append(fx.cc_user(f"u{k}", parent, f"prompt {k} " + "words " * 80, t(k // 60 % 60, k % 60)))
        records.append(fx.cc_assistant(f"a{k}", f"u{k}", f"msg_{k}", {"type": "text", "text": f"answer {k} " + "x" * 400},
                                       t(k // 60 % 60, k % 60)))
        parent = f"a{k}"
    return fx.write(path, fx.jsonl(records))


def test_two_imports_of_one_source_at_once_take_turns(tmp_path, cache_home):
    """Without the lock, the second made its transcript while the first did (refused: it
    exists) and imported it again over it, with a note."""
    path = long_session(str(tmp_path / "projects" / "p" / "long.jsonl"), 2000)
    item = cache.cached(path, claude_code.FORMAT)
    outcomes = []
    threads = [threading.Thread(target=lambda: outcomes.append(cache.refresh(item))) for _ in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(60)
    assert sorted(o["status"] for o in outcomes) == ["imported", "unchanged", "unchanged", "unchanged"]
    assert all(o["note"] is None for o in outcomes) and fx.check_exit(item.out) == 0


def test_clear_deletes_every_import_and_says_how_much(tmp_path, cache_home):
    for path in claude_tree(tmp_path / "projects").values():
        refreshed(path)
    where, files, size = cache.clear()
    assert where == str(cache_home / "view-imports") and not os.path.exists(where)
    assert files >= 4 and size > 1000
    assert cache.clear() == (where, 0, 0)
    os.makedirs(cache_home / "elsewhere")
    os.symlink(cache_home / "elsewhere", where)
    with pytest.raises(OSError, match="symbolic link"):
        cache.clear()
    assert os.path.isdir(cache_home / "elsewhere")
