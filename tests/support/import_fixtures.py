"""Source files for the importer tests, written here from the two formats as Claude Code
and Codex write them (and as their public viewers and Codex's own rollout reader read
them): no third-party file is copied. Each builder returns JSONL text."""

from __future__ import annotations

import hashlib
import json
import os
import stat
from typing import Any, Dict, List, Optional

from llm_agent_session import Session
from llm_agent_session.cli import main as cli_main

PNG = "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mNk+M9QDwADhgGAWjR9awAAAABJRU5ErkJggg=="


def jsonl(records: List[Dict[str, Any]]) -> str:
    return "".join(json.dumps(r) + "\n" for r in records)


# -- Claude Code -------------------------------------------------------------------------------

_CC_COMMON = {"userType": "external", "cwd": "/home/dev/proj", "sessionId": "sess-1", "version": "1.0.98",
              "gitBranch": "main"}


def cc_user(uuid: str, parent: Optional[str], content: Any, ts: str, **kw: Any) -> Dict[str, Any]:
    rec = {"parentUuid": parent, "isSidechain": False, **_CC_COMMON, "type": "user",
           "message": {"role": "user", "content": content}, "uuid": uuid, "timestamp": ts}
    rec.update(kw)
    return rec


def cc_usage(output: int, input_: int = 12, cache_read: int = 14000, cache_write: int = 1500) -> Dict[str, Any]:
    """``message.usage`` as Claude Code writes it on each line of a response (Anthropic's
    counts: ``input_tokens`` leaves the cache out)."""
    return {"input_tokens": input_, "cache_creation_input_tokens": cache_write, "cache_read_input_tokens": cache_read,
            "cache_creation": {"ephemeral_5m_input_tokens": cache_write, "ephemeral_1h_input_tokens": 0},
            "output_tokens": output, "service_tier": "standard"}


def cc_assistant(uuid: str, parent: Optional[str], mid: str, block: Dict[str, Any], ts: str, **kw: Any) -> Dict[str, Any]:
    rec = {"parentUuid": parent, "isSidechain": False, **_CC_COMMON, "type": "assistant",
           "message": {"id": mid, "type": "message", "role": "assistant", "model": "claude-opus-4-1",
                       "content": [block], "stop_reason": None, "stop_sequence": None,
                       "usage": cc_usage(7)},
           "requestId": "req_" + mid, "uuid": uuid, "timestamp": ts}
    rec.update(kw)
    return rec


def tool_use(id_: str, name: str, inp: Dict[str, Any]) -> Dict[str, Any]:
    return {"type": "tool_use", "id": id_, "name": name, "input": inp}


def tool_result(id_: str, content: Any, is_error: bool = False) -> Dict[str, Any]:
    return {"type": "tool_result", "tool_use_id": id_, "content": content, "is_error": is_error}


def claude_code_session() -> str:
    """A session with everything: a title, bookkeeping lines, a message streamed one block
    per line (thinking, text, two parallel tool calls), results (one an error, one with an
    image), a rewind (u3 abandoned for u3b), a compaction, an image from the user, and a
    last tool call that nothing answered."""
    t = "2025-08-20T09:00:{:02d}.000Z".format
    recs: List[Dict[str, Any]] = [
        {"type": "summary", "summary": "Fix the date parser", "leafUuid": "a9"},
        cc_user("u1", None, "fix the date parser", t(0)),
        {"type": "file-history-snapshot", "messageId": "m0", "snapshot": {"trackedFileBackups": {}}, "isSnapshotUpdate": False},
        cc_assistant("a1", "u1", "msg_1", {"type": "thinking", "thinking": "Let me look.", "signature": "sig1"}, t(1)),
        cc_assistant("a2", "a1", "msg_1", {"type": "text", "text": "Reading the code and running the tests."}, t(2)),
        cc_assistant("a3", "a2", "msg_1", tool_use("toolu_read", "Read", {"file_path": "/home/dev/proj/dates.py"}), t(3)),
        cc_assistant("a4", "a3", "msg_1", tool_use("toolu_test", "Bash", {"command": "pytest -x", "timeout": 60}), t(4),
                     **{"message": {"id": "msg_1", "type": "message", "role": "assistant", "model": "claude-opus-4-1",
                                    "content": [tool_use("toolu_test", "Bash", {"command": "pytest -x", "timeout": 60})],
                                    "stop_reason": "tool_use", "usage": cc_usage(40)}}),
        {"type": "progress", "uuid": "p1", "parentUuid": "a4", "data": {"type": "bash_progress"}, "timestamp": t(5)},
        cc_user("u2", "a4", [tool_result("toolu_read", [{"type": "text", "text": "def parse(s): ..."},
                                                        {"type": "image", "source": {"type": "base64", "media_type": "image/png", "data": PNG}}])],
                t(6), toolUseResult={"type": "text", "file": {"filePath": "/home/dev/proj/dates.py"}}),
        cc_user("u2b", "u2", [tool_result("toolu_test", "1 failed: test_iso", is_error=True)], t(7),
                toolUseResult={"stdout": "1 failed", "stderr": "", "interrupted": False}),
        cc_assistant("a5", "u2b", "msg_2", {"type": "text", "text": "One test fails; shall I fix it?"}, t(8)),
        # The user's first answer, later rewound in Claude Code (Esc Esc): a sibling of u3b.
        cc_user("u3", "a5", "no, stop", t(9)),
        cc_assistant("a6", "u3", "msg_3", {"type": "text", "text": "Stopping."}, t(10)),
        cc_user("u3b", "a5", [{"type": "text", "text": "yes, and here is the traceback"},
                              {"type": "image", "source": {"type": "base64", "media_type": "image/png", "data": PNG}}], t(11)),
        {"type": "queue-operation", "operation": "enqueue", "timestamp": t(12), "content": "also add a test", "sessionId": "sess-1"},
        {"parentUuid": None, "logicalParentUuid": "u3b", "isSidechain": False, **_CC_COMMON, "type": "system",
         "subtype": "compact_boundary", "content": "Conversation compacted", "isMeta": False, "level": "info",
         "compactMetadata": {"trigger": "auto", "preTokens": 155000}, "uuid": "c1", "timestamp": t(13)},
        cc_user("u4", "c1", "This session is being continued from a previous conversation. Summary: fixing parse().",
                t(14), isCompactSummary=True, isVisibleInTranscriptOnly=True),
        cc_assistant("a7", "u4", "msg_4", tool_use("toolu_edit", "Edit", {"file_path": "dates.py", "old_string": "a", "new_string": "b"}), t(15)),
        cc_user("u5", "a7", [tool_result("toolu_edit", "The file dates.py has been updated.")], t(16)),
        {"parentUuid": "u5", "isSidechain": False, **_CC_COMMON, "type": "system", "subtype": "informational",
         "content": "hook ran", "uuid": "s1", "timestamp": t(17)},
        cc_assistant("a8", "s1", "msg_5", {"type": "text", "text": "Fixed. Running the tests again."}, t(18)),
        cc_assistant("a9", "a8", "msg_5", tool_use("toolu_again", "Bash", {"command": "pytest"}), t(19)),
        {"type": "ai-title", "aiTitle": "Date parser fix", "sessionId": "sess-1"},
    ]
    return jsonl(recs)


def claude_code_with_sidechain() -> str:
    """Older Claude Code: a Task subagent's lines in the same file, marked isSidechain."""
    t = "2025-06-01T08:00:{:02d}.000Z".format
    recs = [
        cc_user("m1", None, "review the repo", t(0)),
        cc_assistant("m2", "m1", "msg_a", tool_use("toolu_task", "Task", {"description": "review", "prompt": "Review it"}), t(1)),
        cc_user("s1", None, "Review it", t(2), isSidechain=True),
        cc_assistant("s2", "s1", "msg_s", tool_use("toolu_grep", "Grep", {"pattern": "TODO"}), t(3), isSidechain=True),
        cc_user("s3", "s2", [tool_result("toolu_grep", "3 matches")], t(4), isSidechain=True),
        cc_assistant("s4", "s3", "msg_s2", {"type": "text", "text": "Found 3 TODOs."}, t(5), isSidechain=True),
        cc_user("m3", "m2", [tool_result("toolu_task", [{"type": "text", "text": "Found 3 TODOs."}])], t(6)),
        cc_assistant("m4", "m3", "msg_b", {"type": "text", "text": "The review found 3 TODOs."}, t(7)),
    ]
    return jsonl(recs)


def claude_code_subagent() -> str:
    t = "2025-10-01T08:00:{:02d}.000Z".format
    return jsonl([
        cc_user("x1", None, "Count the TODOs", t(0), isSidechain=True, agentId="a1b2"),
        cc_assistant("x2", "x1", "msg_x", {"type": "text", "text": "3"}, t(1), isSidechain=True, agentId="a1b2"),
    ])


# -- Codex -------------------------------------------------------------------------------------


def cx(kind: str, payload: Dict[str, Any], second: int) -> Dict[str, Any]:
    return {"timestamp": f"2025-09-10T12:00:{second:02d}.000Z", "type": kind, "payload": payload}


def cx_msg(role: str, text: str, second: int) -> Dict[str, Any]:
    part = "output_text" if role == "assistant" else "input_text"
    return cx("response_item", {"type": "message", "role": role, "content": [{"type": part, "text": text}]}, second)


def cx_tokens(last: Any, total: Any, second: int, used: float = 7.0) -> Dict[str, Any]:
    """A ``token_count`` event as Codex writes it after a response: the response's counts
    (input, cached input, output, reasoning output) and the session's so far."""
    def counts(c: Any) -> Dict[str, int]:
        return {"input_tokens": c[0], "cached_input_tokens": c[1], "output_tokens": c[2],
                "reasoning_output_tokens": c[3], "total_tokens": c[0] + c[2]}

    return cx("event_msg", {"type": "token_count", "info": {
        "total_token_usage": counts(total), "last_token_usage": counts(last), "model_context_window": 272000},
        "rate_limits": {"primary": {"used_percent": used, "window_minutes": 300, "resets_in_seconds": 9000},
                        "secondary": {"used_percent": 21.0, "window_minutes": 10080, "resets_in_seconds": 500000}}},
        second)


def codex_rollout() -> str:
    """A rollout with everything: meta, developer and context messages, two turns with
    function, custom and local-shell calls, reasoning, duplicated UI events, an interrupted
    turn with an unanswered call, a rollback of that turn, a compaction, an image and an
    unknown line type; a token count after each response that completed (one repeated, as
    Codex does when only its rate limits change)."""
    ctx = {"cwd": "/home/dev/proj", "approval_policy": "on-request", "sandbox_policy": {"mode": "workspace-write"},
           "model": "gpt-5-codex", "effort": "medium", "summary": "auto"}
    recs = [
        cx("session_meta", {"id": "0199-sess", "timestamp": "2025-09-10T12:00:00Z", "cwd": "/home/dev/proj",
                            "originator": "codex_cli_rs", "cli_version": "0.36.0", "instructions": "Be concise.",
                            "git": {"commit_hash": "abc123", "branch": "main", "repository_url": "git@x:y.git"}}, 0),
        cx("response_item", {"type": "message", "role": "developer",
                             "content": [{"type": "input_text", "text": "<permissions instructions>workspace-write</permissions instructions>"}]}, 1),
        cx_msg("user", "<environment_context>\n  <cwd>/home/dev/proj</cwd>\n</environment_context>", 1),
        cx("turn_context", ctx, 2),
        cx("response_item", {"type": "message", "role": "user", "content": [
            {"type": "input_text", "text": "what is in this screenshot, and list the files"},
            {"type": "input_image", "image_url": "data:image/png;base64," + PNG}]}, 3),
        cx("event_msg", {"type": "user_message", "message": "what is in this screenshot, and list the files",
                         "images": ["data:image/png;base64," + PNG]}, 3),
        cx("response_item", {"type": "reasoning", "summary": [{"type": "summary_text", "text": "**Looking**"}],
                             "content": None, "encrypted_content": "gAAAA"}, 4),
        cx("event_msg", {"type": "agent_reasoning", "text": "**Looking**"}, 4),
        cx("response_item", {"type": "function_call", "name": "shell", "arguments": json.dumps({"command": ["ls"]}),
                             "call_id": "call_ls"}, 5),
        cx("response_item", {"type": "custom_tool_call", "status": "completed", "call_id": "call_patch",
                             "name": "apply_patch", "input": "*** Begin Patch\n*** Add File: a.txt\n+hi\n*** End Patch\n"}, 5),
        cx_tokens(last=(3900, 3584, 40, 32), total=(3900, 3584, 40, 32), second=5),
        cx("response_item", {"type": "function_call_output", "call_id": "call_ls",
                             "output": json.dumps({"output": "a.py\nb.py\n", "metadata": {"exit_code": 0, "duration_seconds": 0.01}})}, 6),
        cx("response_item", {"type": "custom_tool_call_output", "call_id": "call_patch",
                             "output": json.dumps({"output": "patch rejected", "metadata": {"exit_code": 1, "duration_seconds": 0.0}})}, 6),
        cx_msg("assistant", "A terminal; the files are a.py and b.py.", 7),
        cx("event_msg", {"type": "agent_message", "message": "A terminal; the files are a.py and b.py."}, 7),
        cx_tokens(last=(4200, 3584, 80, 64), total=(8100, 7168, 120, 96), second=7),
        cx("event_msg", {"type": "task_complete", "last_agent_message": "A terminal"}, 7),
        cx("turn_context", ctx, 8),
        cx_msg("user", "delete b.py", 9),
        cx("event_msg", {"type": "user_message", "message": "delete b.py", "images": []}, 9),
        cx("response_item", {"type": "local_shell_call", "call_id": "call_rm", "status": "in_progress",
                             "action": {"type": "exec", "command": ["rm", "b.py"], "timeout_ms": 10000}}, 10),
        cx("event_msg", {"type": "turn_aborted", "reason": "interrupted"}, 11),
        cx("event_msg", {"type": "thread_rolled_back", "num_turns": 1}, 12),
        cx("turn_context", dict(ctx, model="gpt-5"), 13),
        cx_msg("user", "summarise instead", 14),
        cx_msg("assistant", "You listed two files.", 15),
        cx_tokens(last=(5100, 4096, 12, 0), total=(13200, 11264, 132, 96), second=15),
        cx_tokens(last=(5100, 4096, 12, 0), total=(13200, 11264, 132, 96), second=15, used=9.0),  # rate limits only
        cx("compacted", {"message": "The user listed the files a.py and b.py."}, 16),
        cx_msg("user", "thanks", 17),
        cx("mystery_line", {"x": 1}, 18),
    ]
    return jsonl(recs)


def codex_legacy() -> str:
    """The flat layout of early Codex (sessions/rollout-*.jsonl): a header line, then the
    items themselves without type/payload wrappers, and state records."""
    return jsonl([
        {"id": "legacy-1", "timestamp": "2025-05-01T10:00:00.000Z", "instructions": "",
         "git": {"branch": "dev", "commit_hash": "f00"}},
        {"record_type": "state"},
        {"type": "message", "role": "user", "content": [{"type": "input_text", "text": "hello"}]},
        {"type": "function_call", "name": "shell", "arguments": "{\"command\":[\"pwd\"]}", "call_id": "c1"},
        {"type": "function_call_output", "call_id": "c1", "output": "/home"},
        {"record_type": "state"},
        {"type": "message", "role": "assistant", "content": [{"type": "output_text", "text": "You are in /home."}]},
    ])


def write(path: str, text: str) -> str:
    os.makedirs(os.path.dirname(path) or ".", exist_ok=True)
    with open(path, "w", encoding="utf-8") as fh:
        fh.write(text)
    return path


def tree_state(top: Any) -> Dict[str, Any]:
    """Every file and folder under `top`: its mode, size, modification time and digest (to
    show that nothing under a source folder was written)."""
    found = {}
    for folder, dirs, files in os.walk(top):
        for name in dirs + files:
            path = os.path.join(folder, name)
            st = os.lstat(path)
            digest = hashlib.sha256(open(path, "rb").read()).hexdigest() if stat.S_ISREG(st.st_mode) else None
            found[os.path.relpath(path, top)] = (st.st_mode, st.st_size, st.st_mtime_ns, digest)
    return found


def check_exit(path: str) -> int:
    """``llm-agent-session check`` in this process (so on the backend under test)."""
    return cli_main(["check", "--color", "never", path])


def conversation(path: str) -> List[Dict[str, Any]]:
    """The live messages as (role, content, tool_call_id, tool call ids) dicts, after load."""
    with Session.load(path) as s:
        return [m.to_dict() for m in s.messages]


def event_kinds(path: str) -> List[str]:
    """Every envelope's type, with the role for messages: a picture of what went where."""
    out = []
    with Session.load(path) as s:
        for ev in s.events:
            if ev.type == "message":
                role = ev.payload["role"]
                tcid = ev.payload.get("tool_call_id")
                out.append(f"message:{role}" + (f":{tcid}" if tcid else ""))
            elif ev.type == "tool-dispatched":
                out.append(f"dispatched:{ev.payload['call-id']}")
            elif ev.type == "tool-settled":
                out.append(f"settled:{ev.payload['outcome']}")
            else:
                out.append(ev.type)
    return out


def tool_outcomes(path: str) -> Dict[str, Any]:
    """Each call id's outcome ("dispatched" while pending) and the message its answer follows."""
    out: Dict[str, Any] = {}
    with Session.load(path) as s:
        ops = {}
        for ev in s.events:
            if ev.type == "tool-dispatched":
                ops[ev.id] = ev.payload["call-id"]
                out[ev.payload["call-id"]] = "dispatched"
            elif ev.type == "tool-settled":
                out[ops[ev.payload["op-id"]]] = ev.payload["outcome"]
    return out


def import_into(importer: Any, tmp_path: Any, text: str, name: str) -> Any:
    """Write ``text`` as src/<name> and import it into out/<name>: (src, out, report)."""
    src = write(str(tmp_path / "src" / name), text)
    out = str(tmp_path / "out" / name)
    return src, out, importer.import_transcript(src, out)
