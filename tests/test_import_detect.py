"""importers.detect: a Claude Code session or a Codex rollout is told by its lines' shape,
whatever it is called and wherever it was copied; a transcript and other JSONL are neither."""

from __future__ import annotations

import json
import os
import threading

import pytest

from tests.support import import_fixtures as fx
from llm_agent_session import Session, user_message
from llm_agent_session.importers import claude_code, codex, detect
from llm_agent_session.importers.detect import HEAD, format_of


def _only_once(backend_name: str) -> None:
    if backend_name != "pure":
        pytest.skip("backend-independent: checked once, in the pure run")


@pytest.mark.parametrize("text, expected", [
    (fx.claude_code_session(), "claude-code"),  # a summary line first, then the graph
    (fx.claude_code_with_sidechain(), "claude-code"),
    (fx.claude_code_subagent(), "claude-code"),
    (fx.codex_rollout(), "codex"),
    (fx.codex_legacy(), "codex"),
])
def test_each_fixture_is_told_by_its_lines_under_any_name(tmp_path, backend_name, text, expected):
    _only_once(backend_name)
    for name in ("1234.jsonl", "copied/elsewhere/notes.jsonl", "rollout-x.jsonl"):
        assert format_of(fx.write(str(tmp_path / name), text)) == expected, name


def test_a_first_line_that_tells_nothing_leaves_it_to_the_next(tmp_path, backend_name):
    """A bookkeeping line, a blank line or a broken one first: the lines after decide."""
    _only_once(backend_name)
    lines = fx.claude_code_session().splitlines(keepends=True)
    path = fx.write(str(tmp_path / "a.jsonl"), '{"type": "mystery"}\n\n{not json\n' + "".join(lines[1:]))
    assert format_of(path) == claude_code.FORMAT
    path = fx.write(str(tmp_path / "b.jsonl"), '{"type": "mystery"}\n' + fx.codex_rollout())
    assert format_of(path) == codex.FORMAT


def test_transcripts_and_other_jsonl_are_neither(tmp_path, backend_name):
    _only_once(backend_name)
    with Session.create(tmp_path / "run.jsonl", {"title": "a transcript"}) as s:
        s.append_message(user_message("hello"))
    assert format_of(str(tmp_path / "run.jsonl")) is None
    others = {
        "notes.jsonl": '{"not": "a session"}\n',
        "user-without-keys.jsonl": '{"type": "user", "message": {"role": "user", "content": "hi"}}\n',
        "codex-without-payload.jsonl": '{"timestamp": "2025-01-01T00:00:00Z", "type": "response_item"}\n',
        "legacy-header-only.jsonl": '{"id": "x", "timestamp": "2025-01-01T00:00:00Z"}\n',
        "empty.jsonl": "",
        "array.jsonl": "[1, 2]\n",
    }
    for name, text in others.items():
        assert format_of(fx.write(str(tmp_path / name), text)) is None, name


def test_a_long_first_line_is_read_whole_up_to_a_bound(tmp_path, backend_name, monkeypatch):
    """A session that starts with a pasted image: its first line, longer than the 64 KiB
    looked at first, is read on to its end; past the bound, a line cut there tells nothing."""
    _only_once(backend_name)
    image = {"type": "image", "source": {"type": "base64", "media_type": "image/png", "data": "A" * (3 * HEAD)}}
    rec = fx.cc_user("u1", None, [image], "2025-08-20T09:00:00.000Z")
    path = fx.write(str(tmp_path / "long.jsonl"), json.dumps(rec) + "\n" + fx.claude_code_session())
    assert format_of(path) == claude_code.FORMAT
    monkeypatch.setattr(detect, "LONGEST", 2 * HEAD)
    assert format_of(path) is None
    short = fx.write(str(tmp_path / "short.jsonl"), json.dumps(dict(rec, message={"role": "user", "content": "x"})))
    assert format_of(short) == claude_code.FORMAT  # a whole file without a last newline is whole


def test_a_fifo_is_nothing_and_never_blocks(tmp_path, backend_name):
    _only_once(backend_name)
    if not hasattr(os, "mkfifo"):
        pytest.skip("no FIFOs here")
    fifo = str(tmp_path / "rollout-fifo.jsonl")
    os.mkfifo(fifo)
    answer = []
    worker = threading.Thread(target=lambda: answer.append(format_of(fifo)), daemon=True)
    worker.start()
    worker.join(10)
    assert answer == [None]


def test_a_compressed_rollout_is_looked_at_decompressed(tmp_path, backend_name):
    _only_once(backend_name)
    zstandard = pytest.importorskip("zstandard")
    data = zstandard.ZstdCompressor().compress(fx.codex_rollout().encode())
    path = tmp_path / "renamed.jsonl.zst"
    path.write_bytes(data)
    assert format_of(str(path)) == codex.FORMAT
    (tmp_path / "rollout-broken.jsonl.zst").write_bytes(b"not zstd at all")
    assert format_of(str(tmp_path / "rollout-broken.jsonl.zst")) is None
