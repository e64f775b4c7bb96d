"""Importing Claude Code session files (issue #16), on both backends."""

from __future__ import annotations

import json
import os

from tests.support.import_fixtures import (
    check_exit,
    claude_code_session,
    claude_code_subagent,
    claude_code_with_sidechain,
    cc_assistant,
    cc_user,
    conversation,
    event_kinds,
    import_into,
    jsonl,
    tool_result,
    tool_use,
    write,
)

from llm_agent_session import Session
from llm_agent_session.importers import claude_code
from llm_agent_session.importers.claude_code import import_transcript, import_tree


def _import(tmp_path, text, name="sess.jsonl"):
    return import_into(claude_code, tmp_path, text, name)


def test_live_branch_merged_messages_tools_and_compaction(tmp_path):
    src, out, report = _import(tmp_path, claude_code_session())
    assert report["status"] == "imported", report
    assert check_exit(out) == 0
    assert event_kinds(out) == [
        "session-meta",
        "message:user",
        "message:assistant",  # msg_1: thinking, text and two tool calls, streamed as four lines
        "dispatched:toolu_read",
        "dispatched:toolu_test",
        "message:tool:toolu_read",
        "settled:completed",
        "message:tool:toolu_test",
        "settled:failed",  # is_error
        "message:assistant",
        "message:user",  # u3b: the answer the rewind kept, not u3
        "compaction",
        "message:assistant",
        "dispatched:toolu_edit",
        "message:tool:toolu_edit",
        "settled:completed",
        "message:assistant",  # msg_5: text and a call nothing answered
        "dispatched:toolu_again",
        "import-checkpoint",
    ]
    with Session.load(out) as s:
        events = list(s.events)
        meta = s.meta
        pending = s.pending_tool_operations()
        messages = s.messages
    assert meta["imported-from"] == "claude-code"
    assert meta["source-path"] == os.path.abspath(src)
    assert (meta["session-id"], meta["cwd"], meta["git-branch"], meta["version"]) == ("sess-1", "/home/dev/proj", "main", "1.0.98")
    assert meta["summaries"] == ["Fix the date parser"] and meta["title"] == "Date parser fix"
    first = events[2].payload
    assert first["content"] == "Reading the code and running the tests."
    assert first["tool_calls"] == [
        {"id": "toolu_read", "type": "function",
         "function": {"name": "Read", "arguments": json.dumps({"file_path": "/home/dev/proj/dates.py"})}},
        {"id": "toolu_test", "type": "function",
         "function": {"name": "Bash", "arguments": json.dumps({"command": "pytest -x", "timeout": 60})}},
    ]
    assert first["thinking"] == [{"type": "thinking", "thinking": "Let me look.", "signature": "sig1"}]
    assert first["model"] == "claude-opus-4-1" and first["message-id"] == "msg_1"
    assert first["request-id"] == "req_msg_1" and first["usage"]["output_tokens"] == 40
    # Four lines, each repeating the response's id and usage (the last one's output final): one response.
    assert first["token-usage"] == {"input": 12, "output": 40, "cache-read": 14000, "cache-write": 1500,
                                    "response-id": "msg_1"}
    assert first["source-uuids"] == ["a1", "a2", "a3", "a4"]
    assert events[3].payload["arguments"] == {"file_path": "/home/dev/proj/dates.py"}
    # Every envelope carries its source line's time (a dispatch: the line of its tool_use);
    # only the checkpoint has the import's own.
    t = "2025-08-20T09:00:{:02d}.000000Z".format
    assert [ev.ts for ev in events[:6]] == [t(0), t(0), t(1), t(3), t(4), t(6)]
    assert events[11].ts == t(14) and events[-2].ts == t(19)
    assert not events[-1].ts.startswith("2025-08-20")
    assert not any("source-ts" in ev.payload for ev in events)
    read_result = events[5].payload
    assert read_result["content"][1]["type"] == "image_url"
    assert read_result["content"][1]["image_url"]["url"].startswith("data:image/png;base64,")
    assert read_result["tool-use-result"]["file"]["filePath"] == "/home/dev/proj/dates.py"
    user_image = events[10].payload["content"]
    assert user_image[0] == {"type": "text", "text": "yes, and here is the traceback"}
    assert user_image[1]["type"] == "image_url"
    compaction = events[11].payload
    assert compaction["replaces-through-id"] == events[10].id
    assert compaction["tokens-before"] == 155000
    assert "tokens-after" not in compaction  # Claude Code does not record it: unknown, never 0
    assert compaction["summary"].startswith("This session is being continued")
    assert [p.call_id for p in pending] == ["toolu_again"] and pending[0].state == "dispatched"
    assert messages[0].role == "user" and messages[0].content == compaction["summary"]
    # The report: per type, with the abandoned branch and the bookkeeping explained.
    types = report["types"]
    assert types["assistant"]["imported"] == 8
    assert types["user"]["skipped"] == {"not on the live branch (rewound or abandoned)": 1}
    assert types["assistant"]["skipped"] == {"not on the live branch (rewound or abandoned)": 1}
    assert sum(types["file-history-snapshot"]["skipped"].values()) == 1
    assert sum(types["progress"]["skipped"].values()) == 1
    assert sum(types["queue-operation"]["skipped"].values()) == 1
    assert types["summary"]["extras"] == 1 and types["ai-title"]["extras"] == 1
    assert types["system/compact_boundary"]["imported"] == 1
    assert sum(types["system/informational"]["skipped"].values()) == 1
    assert report["malformed"] == []


def test_malformed_and_unknown_lines_are_reported_not_fatal(tmp_path):
    lines = claude_code_session().splitlines(keepends=True)
    lines.insert(3, "{not json\n")
    lines.insert(6, "[1, 2]\n")
    lines.insert(8, '{"type": "brand-new-kind", "x": 1}\n')
    src, out, report = _import(tmp_path, "".join(lines))
    assert report["status"] == "imported"
    assert [m["line"] for m in report["malformed"]] == [4, 7]
    assert report["malformed"][0]["offset"] == sum(len(x.encode()) for x in lines[:3])
    assert report["types"]["brand-new-kind"]["skipped"] == {"unknown record type 'brand-new-kind'": 1}
    assert check_exit(out) == 0
    assert event_kinds(out).count("message:assistant") == 4


def test_sidechains_become_their_own_transcripts(tmp_path):
    src, out, report = _import(tmp_path, claude_code_with_sidechain())
    assert report["status"] == "imported"
    assert event_kinds(out) == [
        "session-meta", "message:user", "message:assistant", "dispatched:toolu_task",
        "message:tool:toolu_task", "settled:completed", "message:assistant", "import-checkpoint",
    ]
    assert [c["status"] for c in report["transcripts"]] == ["imported"]
    side = report["transcripts"][0]["out"]
    assert side == os.path.join(str(tmp_path / "out" / "sess"), "sidechains", "s1.jsonl")
    assert check_exit(side) == 0
    assert event_kinds(side) == [
        "session-meta", "message:user", "message:assistant", "dispatched:toolu_grep",
        "message:tool:toolu_grep", "settled:completed", "message:assistant", "import-checkpoint",
    ]
    with Session.load(side) as s:
        assert s.meta["parent"]["session-id"] == "sess-1"
        assert s.meta["parent"]["sidechain-root"] == "s1"
    assert sum(report["types"]["user"]["skipped"].values()) == 2  # counted in the sidechain's report


def test_directory_tree_with_subagents(tmp_path, capsys):
    from llm_agent_session.cli import main

    root = tmp_path / "projects"
    write(str(root / "-home-dev-proj" / "sess-1.jsonl"), claude_code_session())
    write(str(root / "-home-dev-proj" / "sess-1" / "subagents" / "agent-a1b2.jsonl"), claude_code_subagent())
    write(str(root / "-home-dev-other" / "sess-2.jsonl"), claude_code_with_sidechain())
    out = tmp_path / "imported"
    assert main(["import", "claude-code", str(root), str(out), "--color", "never"]) == 0
    text = capsys.readouterr().out
    assert "4 transcript(s): 4 imported" in text
    made = sorted(os.path.relpath(os.path.join(d, f), out) for d, _, fs in os.walk(out) for f in fs)
    assert made == [
        "-home-dev-other/sess-2.jsonl",
        "-home-dev-other/sess-2/sidechains/s1.jsonl",
        "-home-dev-proj/sess-1.jsonl",
        "-home-dev-proj/sess-1/subagents/agent-a1b2.jsonl",
    ]
    for rel in made:
        path = str(out / rel)
        assert check_exit(path) == 0
        assert main(["show", "--color", "never", path]) == 0
        assert main(["stats", "--color", "never", path]) == 0
    with Session.load(str(out / "-home-dev-proj/sess-1/subagents/agent-a1b2.jsonl")) as s:
        assert s.meta["parent"]["transcript"] == os.path.join("..", "..", "sess-1.jsonl")
        assert s.meta["agent-id"] == "a1b2"
        assert [(m.role, m.content) for m in s.messages] == [("user", "Count the TODOs"), ("assistant", "3")]
    capsys.readouterr()
    assert main(["import", "claude-code", str(root), str(out), "--color", "never"]) == 0
    assert "4 transcript(s): 4 unchanged" in capsys.readouterr().out
    reports = import_tree(str(root), str(out))
    assert [r["status"] for r in reports] == ["unchanged", "unchanged"]


def test_incremental_import_appends_only_what_is_new(tmp_path):
    full = claude_code_session().splitlines(keepends=True)
    src = write(str(tmp_path / "s.jsonl"), "".join(full[:10]))
    out = str(tmp_path / "o.jsonl")
    first = import_transcript(src, out)
    assert first["status"] == "imported"
    before = event_kinds(out)
    # The session runs on; the last line is still being written.
    write(src, "".join(full) + full[1][:40])
    second = import_transcript(src, out)
    assert second["status"] == "appended", second
    assert second["pending_tail"] == 40
    after = event_kinds(out)
    assert after[: len(before)] == before
    once = str(tmp_path / "once.jsonl")
    import_transcript(write(str(tmp_path / "whole.jsonl"), "".join(full)), once)
    drop = lambda kinds: [k for k in kinds if k != "import-checkpoint"]  # noqa: E731
    assert drop(after) == drop(event_kinds(once))
    assert conversation(out) == conversation(once)
    assert check_exit(out) == 0
    size = os.path.getsize(out)
    assert import_transcript(src, out)["status"] == "unchanged"
    assert os.path.getsize(out) == size
    # The already-imported part changed: refused, nothing written.
    write(src, "".join(full).replace("fix the date parser", "fix the time parser"))
    refused = import_transcript(src, out)
    assert refused["status"] == "failed" and "changed" in refused["error"]
    assert os.path.getsize(out) == size


def test_a_failed_import_leaves_nothing_at_out(tmp_path):
    out = tmp_path / "o.jsonl"
    report = import_transcript(str(tmp_path / "missing.jsonl"), str(out))
    assert report["status"] == "failed" and "cannot read" in report["error"]
    assert not out.exists() and os.listdir(tmp_path) == []
    write(str(out), "not a transcript\n")
    report = import_transcript(write(str(tmp_path / "s.jsonl"), claude_code_session()), str(out))
    assert report["status"] == "failed" and "choose a new OUT" in report["error"]
    assert out.read_text() == "not a transcript\n"


def test_interrupted_tool_calls_stay_pending_and_orphans_are_kept(tmp_path):
    t = "2025-08-20T10:00:{:02d}.000Z".format
    text = jsonl([
        cc_user("u1", None, "go", t(0)),
        cc_assistant("a1", "u1", "m1", tool_use("t1", "Bash", {"command": "sleep 100"}), t(1)),
        cc_assistant("a2", "a1", "m1", tool_use("t2", "Bash", {"command": "ls"}), t(2)),
        cc_user("u2", "a2", [tool_result("t2", "x")], t(3)),
        cc_user("u3", "u2", [tool_result("nobody", "stray")], t(4)),
        cc_user("u4", "u3", "[Request interrupted by user for tool use]", t(5)),
    ])
    src, out, report = _import(tmp_path, text)
    assert event_kinds(out)[1:-1] == [
        "message:user", "message:assistant", "dispatched:t1", "dispatched:t2", "message:tool:t2",
        "settled:completed", "message:tool:nobody", "message:user",
    ]
    with Session.load(out) as s:
        assert [(p.call_id, p.state) for p in s.pending_tool_operations()] == [("t1", "dispatched")]
    assert any("nobody" in w for w in report["warnings"])
    assert check_exit(out) == 0


def _grow_and_compare(tmp_path, stages, same_operations=True):
    """Import each stage of a growing source into one OUT; after each, the same
    conversation (and tool outcomes) as one import of that stage."""
    from tests.support.import_fixtures import tool_outcomes

    src, out = str(tmp_path / "s.jsonl"), str(tmp_path / "o.jsonl")
    for n, text in enumerate(stages):
        write(src, text)
        report = import_transcript(src, out)
        assert report["status"] in ("imported", "appended"), report
        assert check_exit(out) == 0
        once = str(tmp_path / f"once-{n}.jsonl")
        import_transcript(write(str(tmp_path / f"stage-{n}.jsonl"), text), once)
        assert conversation(out) == conversation(once), n
        if same_operations:
            assert tool_outcomes(out) == tool_outcomes(once), n
    return out


def test_incremental_when_the_last_message_goes_on_growing(tmp_path):
    """One content block per line: the import may land between two blocks of one message."""
    lines = claude_code_session().splitlines(keepends=True)
    stages = ["".join(lines[:n]) for n in (5, 6, 7, 12, len(lines))]
    out = _grow_and_compare(tmp_path, stages)
    assert "rewind" in event_kinds(out)


def test_incremental_when_claude_code_rewound_after_the_import(tmp_path):
    t = "2025-08-21T10:00:{:02d}.000Z".format
    base = [
        cc_user("u1", None, "hi", t(0)),
        cc_assistant("a1", "u1", "m1", {"type": "text", "text": "hello"}, t(1)),
        cc_user("u2", "a1", "delete everything", t(2)),
        cc_assistant("a2", "u2", "m2", tool_use("t1", "Bash", {"command": "rm -rf x"}), t(3)),
        cc_user("u3", "a2", [tool_result("t1", "done")], t(4)),
    ]
    # The user went back to before u2 (Esc Esc) and asked something else.
    later = base + [
        cc_user("u2b", "a1", "list files instead", t(5)),
        cc_assistant("a3", "u2b", "m3", {"type": "text", "text": "a.py"}, t(6)),
    ]
    # A rewind does not undo a call that ran: t1 stays settled here, while one import of
    # the final file never sees the abandoned branch at all.
    out = _grow_and_compare(tmp_path, [jsonl(base), jsonl(later)], same_operations=False)
    from tests.support.import_fixtures import tool_outcomes

    assert tool_outcomes(out) == {"t1": "completed"}
    with Session.load(out) as s:
        rewinds = [ev for ev in s.events if ev.type == "rewind"]
        assert len(rewinds) == 1 and rewinds[0].payload["to-id"] == s.message_ids[1]
        # The rewound call ran: its operation stays settled.
        assert s.pending_tool_operations() == []


def test_parallel_tool_results_and_progress_forks_off_the_walked_branch(tmp_path):
    """Recent Claude Code gives each parallel call's result its own call's line as parent,
    older versions forked a progress line off each call: a walk up the parents misses
    results that the source answered, and Claude Code itself puts them back on resume."""
    t = "2025-09-01T10:00:{:02d}.000Z".format
    text = jsonl([
        cc_user("u1", None, "check both", t(0)),
        cc_assistant("a1", "u1", "m1", tool_use("tA", "Read", {"file_path": "a"}), t(1)),
        cc_assistant("a2", "a1", "m1", tool_use("tB", "Read", {"file_path": "b"}), t(2)),
        cc_user("rA", "a1", [tool_result("tA", "A")], t(3), sourceToolAssistantUUID="a1"),
        cc_user("rB", "a2", [tool_result("tB", "B")], t(4), sourceToolAssistantUUID="a2"),
        cc_assistant("a3", "rB", "m2", tool_use("tC", "Bash", {"command": "make"}), t(5)),
        {"type": "progress", "uuid": "p1", "parentUuid": "a3", "data": {"type": "bash_progress"}, "timestamp": t(6)},
        cc_user("rC", "a3", [tool_result("tC", "built")], t(7)),
        cc_assistant("a4", "p1", "m3", {"type": "text", "text": "A, B, built."}, t(8)),
    ])
    src, out, report = _import(tmp_path, text)
    assert event_kinds(out)[1:-1] == [
        "message:user", "message:assistant", "dispatched:tA", "dispatched:tB",
        "message:tool:tA", "settled:completed", "message:tool:tB", "settled:completed",
        "message:assistant", "dispatched:tC", "message:tool:tC", "settled:completed", "message:assistant",
    ]
    assert "skipped" not in json.dumps(report["types"]["user"]) or report["types"]["user"]["skipped"] == {}
    assert check_exit(out) == 0


def test_a_parallel_result_written_after_the_import_still_answers_its_call(tmp_path):
    from tests.support.import_fixtures import tool_outcomes

    t = "2025-09-01T11:00:{:02d}.000Z".format
    first = [
        cc_user("u1", None, "both", t(0)),
        cc_assistant("a1", "u1", "m1", tool_use("tA", "Bash", {"command": "slow"}), t(1)),
        cc_assistant("a2", "a1", "m1", tool_use("tB", "Bash", {"command": "fast"}), t(2)),
        cc_user("rB", "a2", [tool_result("tB", "fast done")], t(3)),
    ]
    later = first + [
        cc_user("rA", "a1", [tool_result("tA", "slow done")], t(4)),
        cc_assistant("a3", "rB", "m2", {"type": "text", "text": "both done"}, t(5)),
    ]
    src, out = str(tmp_path / "s.jsonl"), str(tmp_path / "o.jsonl")
    for stage in (first, later, later):
        write(src, jsonl(stage))
        assert import_transcript(src, out)["status"] in ("imported", "appended", "unchanged")
        assert check_exit(out) == 0
    assert tool_outcomes(out) == {"tA": "completed", "tB": "completed"}
    assert event_kinds(out).count("message:tool:tA") == 1
    assert [m["role"] for m in conversation(out)] == ["user", "assistant", "tool", "tool", "assistant"]


def test_sidechains_whose_names_sanitise_alike_get_files_of_their_own(tmp_path):
    t = "2025-06-01T08:00:{:02d}.000Z".format
    long = "x" * 64
    roots = ["side/one", "side.one", "sideone", long + "-a", long + "-b"]
    recs = [cc_user("m1", None, "go", t(0))]
    for n, root in enumerate(roots):
        recs += [cc_user(root, None, f"task {n}", t(n + 1), isSidechain=True),
                 cc_assistant(f"{root}/answer", root, f"msg_{n}", {"type": "text", "text": f"done {n}"}, t(n + 1),
                              isSidechain=True)]
    src, out, report = _import(tmp_path, jsonl(recs))
    paths = [r["out"] for r in report["transcripts"]]
    assert [r["status"] for r in report["transcripts"]] == ["imported"] * 5
    assert len(set(paths)) == 5
    assert os.path.basename(paths[2]) == "sideone.jsonl"  # a plain name stays as it is
    for n, path in enumerate(paths):
        with Session.load(path) as s:
            assert s.meta["parent"]["sidechain-root"] == roots[n]
            assert [m.content for m in s.messages] == [f"task {n}", f"done {n}"]
    # The same files on the next run (unchanged), and after the source grew.
    again = import_transcript(src, out)
    assert [(r["out"], r["status"]) for r in again["transcripts"]] == [(p, "unchanged") for p in paths]
    write(src, jsonl(recs + [cc_assistant("m2", "m1", "msg_m", {"type": "text", "text": "ok"}, t(9))]))
    grown = import_transcript(src, out)
    assert grown["status"] == "appended"
    assert [r["out"] for r in grown["transcripts"]] == paths  # (each checkpointed past the new line)
    assert [r["written"] for r in grown["transcripts"]] == [1] * 5
