"""Importing Codex rollouts (issue #16), on both backends."""

from __future__ import annotations

import json

import pytest
from tests.support.import_fixtures import (
    check_exit,
    codex_legacy,
    codex_rollout,
    conversation,
    cx,
    cx_msg,
    cx_tokens,
    event_kinds,
    import_into,
    jsonl,
    tool_outcomes,
    write,
)

from llm_agent_session import Session, UsageTotals, usage
from llm_agent_session.importers import codex
from llm_agent_session.importers.codex import import_transcript, import_tree


def _import(tmp_path, text, name="rollout-2025-09-10T12-00-00-0199.jsonl"):
    return import_into(codex, tmp_path, text, name)


def test_rollout_items_calls_events_and_compaction(tmp_path):
    src, out, report = _import(tmp_path, codex_rollout())
    assert report["status"] == "imported", report
    assert check_exit(out) == 0
    kinds = event_kinds(out)
    assert kinds[:-1] == [
        "session-meta",
        "run-context",  # session_meta: instructions and facts
        "message:system",  # developer
        "message:user",  # environment context
        "run-context",  # turn_context
        "message:user",  # text and image; the user_message event is not imported again
        "message:assistant",
        "dispatched:call_ls",
        "dispatched:call_patch",
        "message:tool:call_ls",
        "settled:completed",
        "message:tool:call_patch",
        "settled:failed",  # exit code 1
        "message:assistant",
        "message:user",  # turn 2, interrupted: call_rm unanswered
        "message:assistant",
        "dispatched:call_rm",
        "rewind",  # thread_rolled_back: turn 2 dropped
        "settled:outcome-unknown",  # ... and with it call_rm, which may or may not have run
        "run-context",  # the model changed
        "message:user",
        "message:assistant",
        "compaction",
        "message:user",
    ]
    assert kinds[-1] == "import-checkpoint"
    with Session.load(out) as s:
        events = list(s.events)
        meta = s.meta
        pending = s.pending_tool_operations()
        messages = [m.to_dict() for m in s.messages]
    assert meta["imported-from"] == "codex" and meta["session-id"] == "0199-sess"
    assert (meta["cwd"], meta["version"], meta["git-branch"], meta["git-commit"]) == ("/home/dev/proj", "0.36.0", "main", "abc123")
    assert events[1].payload["sections"][0]["name"] == "instructions"
    assert events[1].payload["sections"][0]["text"] == "Be concise."
    assert events[2].payload["role"] == "system" and events[2].payload["source-role"] == "developer"
    assert dict(events[4].payload["facts"])["model"] == "gpt-5-codex"
    image = events[5].payload["content"]
    assert image[0]["type"] == "text" and image[1]["type"] == "image_url"
    assistant = events[6].payload
    assert assistant["content"] is None
    assert assistant["reasoning"][0]["summary"][0]["text"] == "**Looking**"
    calls = assistant["tool_calls"]
    assert calls[0] == {"id": "call_ls", "type": "function", "function": {"name": "shell", "arguments": '{"command": ["ls"]}'}}
    assert json.loads(calls[1]["function"]["arguments"]) == {"input": "*** Begin Patch\n*** Add File: a.txt\n+hi\n*** End Patch\n"}
    assert events[8].payload["arguments"] == {"input": "*** Begin Patch\n*** Add File: a.txt\n+hi\n*** End Patch\n"}
    shell = events[16].payload
    assert shell["tool-settled" if False else "call-id"] == "call_rm" and shell["tool"] == "local_shell"
    assert shell["arguments"]["command"] == ["rm", "b.py"]
    assert pending == []
    rewind = events[17].payload
    assert rewind["to-id"] == events[13].id  # the end of turn 1
    abandoned = events[18].payload
    assert abandoned["op-id"] == events[16].id and abandoned["outcome"] == "outcome-unknown"
    assert "rollback" in abandoned["reason"]
    compaction = events[22].payload
    assert compaction["tokens-before"] == 5100  # the last token count before it: the prompt it summed up
    assert "tokens-after" not in compaction  # Codex does not record it: unknown, never 0
    # After the rollback and the compaction: sticky system prompt, summary, then the rest.
    assert [m["role"] for m in messages] == ["system", "user", "user"]
    assert messages[1]["content"] == "The user listed the files a.py and b.py."
    assert messages[2]["content"] == "thanks"
    # Every envelope carries the time of its source line; the checkpoint the import's own.
    assert events[5].ts == "2025-09-10T12:00:03.000000Z" and events[7].ts == "2025-09-10T12:00:05.000000Z"
    assert events[0].ts == "2025-09-10T12:00:00.000000Z"  # session_meta's line
    assert all(ev.ts.startswith("2025-09-10T12:00:") for ev in events[:-1])
    assert not events[-1].ts.startswith("2025-09-10")
    assert not any("source-ts" in ev.payload for ev in events if ev.type == "message")
    types = report["types"]
    assert types["event_msg/user_message"]["skipped"] == {"duplicates a response_item message": 2}
    assert types["event_msg/agent_message"]["skipped"] == {"duplicates a response_item message": 1}
    assert types["event_msg/thread_rolled_back"]["imported"] == 1
    assert types["response_item/reasoning"]["extras"] == 1
    assert types["mystery_line"]["skipped"] == {"unknown record type": 1}
    assert report["malformed"] == []


def test_legacy_flat_layout(tmp_path):
    src, out, report = _import(tmp_path, codex_legacy(), name="rollout-2025-05-01-legacy.jsonl")
    assert report["status"] == "imported"
    assert event_kinds(out)[1:-1] == [
        "run-context", "message:user", "message:assistant", "dispatched:c1", "message:tool:c1",
        "settled:completed", "message:assistant",
    ]
    with Session.load(out) as s:
        assert s.meta["session-id"] == "legacy-1" and s.meta["git-branch"] == "dev"
    assert report["types"]["legacy/state"]["skipped"] == {"a legacy state record, not part of the conversation": 2}
    assert report["types"]["legacy/message"]["imported"] == 2
    assert check_exit(out) == 0


def test_event_messages_without_response_items_are_imported_once(tmp_path):
    text = jsonl([
        cx("session_meta", {"id": "s"}, 0),
        cx("event_msg", {"type": "user_message", "message": "hi", "images": []}, 1),
        cx("event_msg", {"type": "agent_message", "message": "hello"}, 2),
        cx("event_msg", {"type": "task_complete"}, 3),
        cx_msg("user", "again", 4),
        cx("event_msg", {"type": "user_message", "message": "again"}, 4),
    ])
    src, out, report = _import(tmp_path, text)
    assert [(m["role"], m["content"]) for m in conversation(out)] == [("user", "hi"), ("assistant", "hello"), ("user", "again")]
    assert report["types"]["event_msg/user_message"] == {"imported": 1, "extras": 0, "skipped": {"duplicates a response_item message": 1}}


def test_incremental_import_of_a_running_rollout(tmp_path):
    lines = codex_rollout().splitlines(keepends=True)
    src = str(tmp_path / "r.jsonl")
    out = str(tmp_path / "o.jsonl")
    # Grown a few lines at a time, cut mid-turn (between two calls of one message) and
    # mid-line: after each import, the same as one import of what the source then held.
    for stop in (3, 9, 12, 17, 22, len(lines)):
        grown = "".join(lines[:stop])
        write(src, grown + (lines[stop][:25] if stop < len(lines) else ""))
        report = import_transcript(src, out)
        assert report["status"] in ("imported", "appended"), report
        assert check_exit(out) == 0
        once = str(tmp_path / f"once-{stop}.jsonl")
        import_transcript(write(str(tmp_path / f"prefix-{stop}.jsonl"), grown), once)
        assert conversation(out) == conversation(once), stop
        assert tool_outcomes(out) == tool_outcomes(once), stop
    assert import_transcript(src, out)["status"] == "unchanged"


def test_tree_mirrors_dated_directories(tmp_path, capsys):
    from llm_agent_session.cli import main

    root = tmp_path / "sessions"
    write(str(root / "2025" / "09" / "10" / "rollout-2025-09-10T12-00-00-0199.jsonl"), codex_rollout())
    write(str(root / "rollout-2025-05-01-legacy.jsonl"), codex_legacy())
    write(str(root / "2025" / "09" / "11" / "rollout-broken.jsonl"), "\x00\xff garbage\n{\"type\":\n")
    out = tmp_path / "out"
    assert main(["import", "codex", str(root), str(out), "--color", "never"]) == 0
    text = capsys.readouterr().out
    assert "3 transcript(s): 3 imported" in text
    assert "2 malformed line(s) (1, 2)" in text
    for rel in ("2025/09/10/rollout-2025-09-10T12-00-00-0199.jsonl", "rollout-2025-05-01-legacy.jsonl",
                "2025/09/11/rollout-broken.jsonl"):
        assert check_exit(str(out / rel)) == 0
    reports = import_tree(str(root), str(out))
    assert [r["status"] for r in reports] == ["unchanged"] * 3


def test_zstd_rollouts(tmp_path):
    zstandard = pytest.importorskip("zstandard")
    data = zstandard.ZstdCompressor().compress(codex_rollout().encode())
    src = tmp_path / "rollout-x.jsonl.zst"
    src.write_bytes(data)
    plain = str(tmp_path / "plain.jsonl")
    import_transcript(write(str(tmp_path / "rollout-x.jsonl"), codex_rollout()), plain)
    out = str(tmp_path / "out.jsonl")
    report = import_transcript(str(src), out)
    assert report["status"] == "imported"
    assert conversation(out) == conversation(plain)
    # A torn compressed file gives what decompresses, and says it is torn.
    src.write_bytes(data[: len(data) // 2])
    torn = import_transcript(str(src), str(tmp_path / "torn.jsonl"))
    assert torn["status"] == "imported" and "the zstd stream ends early" in torn["warnings"][0]
    src.write_bytes(b"not zstd at all")
    assert "zstd" in import_transcript(str(src), str(tmp_path / "bad.jsonl"))["error"]


def test_zstd_without_the_module_says_what_to_install(tmp_path, monkeypatch):
    import sys

    monkeypatch.setitem(sys.modules, "zstandard", None)  # as if the zstd extra were not installed
    src = tmp_path / "rollout-x.jsonl.zst"
    src.write_bytes(b"(\xb5/\xfd")
    report = import_transcript(str(src), str(tmp_path / "out.jsonl"))
    assert report["status"] == "failed" and "llm-agent-session[zstd]" in report["error"]
    assert not (tmp_path / "out.jsonl").exists()


def test_a_server_side_compaction_keeps_its_replacement_history_as_the_summary(tmp_path):
    text = jsonl([
        cx("session_meta", {"id": "s"}, 0),
        cx_msg("user", "first question", 1),
        cx_msg("assistant", "first answer", 2),
        cx("compacted", {"message": "", "replacement_history": [
            {"type": "message", "role": "user", "content": [{"type": "input_text", "text": "first question"}]},
            {"type": "compaction", "encrypted_content": "gAAA"}]}, 3),
        cx_msg("user", "next", 4),
    ])
    src, out, report = _import(tmp_path, text)
    assert [(m["role"], m["content"]) for m in conversation(out)] == [("user", "first question"), ("user", "next")]
    assert report["types"]["compacted"]["imported"] == 1


def test_each_token_count_goes_on_its_response_once(tmp_path):
    """Codex writes a response's items, then its token_count: the count goes on every
    assistant message of the response, with one response id (the session's and the line
    of the response's first item: Codex records none), so it counts once. Codex's input
    includes the cached tokens: input is the rest, cache-read the cached; output includes
    reasoning. A count repeated with only its rate limits changed adds nothing; a response
    cut off by an abort has its id and no count. The count as Codex wrote it is kept."""
    src, out, report = _import(tmp_path, codex_rollout())
    events = Session.peek(out)["envelopes"]
    assistants = [e.payload for e in events if e.type == "message" and e.payload["role"] == "assistant"]
    assert [a.get("token-usage") for a in assistants] == [
        {"input": 3900 - 3584, "output": 40, "cache-read": 3584, "response-id": "0199-sess:7"},  # the calls
        {"input": 4200 - 3584, "output": 80, "cache-read": 3584, "response-id": "0199-sess:14"},
        {"response-id": "0199-sess:21"},  # the aborted turn's call: no count came
        {"input": 5100 - 4096, "output": 12, "cache-read": 4096, "response-id": "0199-sess:26"},
    ]
    assert assistants[1]["token-count"]["last_token_usage"]["reasoning_output_tokens"] == 64
    assert assistants[1]["token-count"]["model_context_window"] == 272000
    assert report["types"]["event_msg/token_count"] == {"imported": 0, "extras": 3, "skipped": {
        "a token count repeating the last one, or without a count": 1}}
    assert usage.of_transcript(out) == UsageTotals(input=316 + 616 + 1004, output=132, cache_read=3584 + 3584 + 4096,
                                                   cache_write=None, responses=4, unmeasured=1)


def test_a_response_of_several_messages_counts_once_and_a_count_without_one_is_reported(tmp_path):
    meta = cx("session_meta", {"id": "s-2"}, 0)
    text = jsonl([
        meta, cx_msg("user", "go", 1),
        cx_msg("assistant", "first, a note", 2),  # one response: two messages and a call
        cx_msg("assistant", "then the call", 2),
        cx("response_item", {"type": "function_call", "name": "shell", "arguments": "{}", "call_id": "c1"}, 2),
        cx_tokens(last=(900, 0, 30, 0), total=(900, 0, 30, 0), second=3),
        cx("response_item", {"type": "function_call_output", "call_id": "c1", "output": "ok"}, 4),
        cx_tokens(last=(50, 0, 5, 0), total=(950, 0, 35, 0), second=5),  # no message of its own (a compaction's)
    ])
    src, out, report = _import(tmp_path, text)
    assistants = [e.payload for e in Session.peek(out)["envelopes"] if e.type == "message" and e.payload["role"] == "assistant"]
    want = {"input": 900, "output": 30, "cache-read": 0, "response-id": "s-2:3"}
    assert [a["token-usage"] for a in assistants] == [want, want]
    assert "token-count" not in assistants[0] and "token-count" in assistants[1]
    assert usage.of_transcript(out) == UsageTotals(input=900, output=30, cache_read=0, responses=1)
    assert any("1 token count(s) came after no assistant message" in w for w in report["warnings"])
