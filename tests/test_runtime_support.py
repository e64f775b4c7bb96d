"""The README's runtime section: `message_extra` and `answer_interrupted_tool_calls`."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import textwrap

import pytest

from tests.support.helpers import child_env, dispatched_line, env_line, meta_line, msg_line, parsed_lines, read, write_raw
from llm_agent_session import Message, Session, assistant_message, tool_message, user_message
from llm_agent_session.session import INTERRUPTED_TEXT, NEVER_RUN_TEXT, RESULT_GONE_TEXT, RESULT_LOST_TEXT

# --------------------------------------------------------------------------- 10.2 message_extra

ITEM = {"type": "function_call", "call_id": "c1", "arguments": '{"a": 1}', "nested": {"n": [1, 2.5, None, True]}}


def test_message_extra_reads_back_what_the_append_stored(session, tpath):
    mid = session.append_message(user_message("hi"), extra={"sdk-item": ITEM, "finish-reason": "stop"})
    plain = session.append_message(user_message("plain"))
    assert session.message_extra(mid) == {"sdk-item": ITEM, "finish-reason": "stop"}
    assert session.message_extra(plain) == {}
    got = session.message_extra(mid)
    got["sdk-item"]["nested"]["n"].append("changed")
    assert session.message_extra(mid)["sdk-item"] == ITEM  # a deep copy each time
    session.close()
    with Session.load(tpath) as again:
        assert again.message_extra(mid) == {"sdk-item": ITEM, "finish-reason": "stop"}
        assert again.message_extra(plain) == {}


def test_message_extra_of_messages_no_longer_live(session, tpath):
    a = session.append_message(user_message("a"), extra={"k": "a"})
    b = session.append_message(user_message("b"), extra={"k": "b"})
    session.append_compaction("sum", a, 10, 2)
    session.append_rewind(None)
    assert (session.message_extra(a), session.message_extra(b)) == ({"k": "a"}, {"k": "b"})
    session.close()
    with Session.load(tpath) as again:
        assert again.messages == []
        assert (again.message_extra(a), again.message_extra(b)) == ({"k": "a"}, {"k": "b"})


def test_message_extra_key_error_for_anything_but_a_message(session, tpath):
    op = session.append_tool_dispatched("c1", "t", {})
    cid_base = session.append_message(user_message("x"))
    cid = session.append_compaction("sum", cid_base, 1, 1)
    meta_id = session.events[0].id
    for wrong in ["nope", op, cid, meta_id, 7, None]:
        with pytest.raises(KeyError):
            session.message_extra(wrong)  # type: ignore[arg-type]
    session.close()
    with Session.load(tpath) as again:
        for wrong in ["nope", op, cid, meta_id]:
            with pytest.raises(KeyError):
                again.message_extra(wrong)


def test_message_extra_of_a_hand_written_line_drops_every_message_key(tmp_path):
    path = tmp_path / "t.jsonl"
    write_raw(path, meta_line(), msg_line("m1", "user", "x", name="n", sticky=True, depth=2, extra_key={"a": 1}))
    with Session.load(path) as s:
        assert s.message_extra("m1") == {"extra_key": {"a": 1}}


def test_message_extra_reads_only_its_own_line(tmp_path):
    """Another line rewritten in place (same length) after the load changes nothing:
    message_extra never reads the file beyond the line it names."""
    path = tmp_path / "t.jsonl"
    other = msg_line("m2", "user", "x" * 50)
    data = write_raw(path, meta_line(), msg_line("m1", "user", "a", k="v"), other, msg_line("m3", "user", "b", k="w"))
    with Session.load(path) as s:
        start = data.index(other)
        with open(path, "r+b") as f:
            f.seek(start)
            f.write(b"#" * (len(other) - 1))  # garbage where m2 was
        assert s.message_extra("m1") == {"k": "v"} and s.message_extra("m3") == {"k": "w"}


@pytest.mark.parametrize("edit", [
    (b'"STOP"', b'"stop"'),  # a value
    (b'"contenX"', b'"content"'),  # a message key turned into an extra
    None,  # the whole line, garbage
])
def test_message_extra_after_an_in_place_edit_is_what_was_loaded(tmp_path, edit):
    """Issue #24, item 11: a same-length edit of message lines after the load. Both cores
    answer what the lines held when loaded (from memory), never the edited bytes."""
    path = tmp_path / "t.jsonl"
    with_extras = msg_line("m1", "user", "hi", **{"finish-reason": "stop", "item": {"n": [1]}})
    without = msg_line("m2", "user", "plain")
    data = write_raw(path, meta_line(), with_extras, without)
    with Session.load(path) as s:
        for line in (with_extras, without):
            new = line.replace(edit[1], edit[0]) if edit else b"#" * (len(line) - 1) + b"\n"
            with open(path, "r+b") as f:
                f.seek(data.index(line))
                f.write(new)
        assert read(path) != data and len(read(path)) == len(data)
        assert s.message_extra("m1") == {"finish-reason": "stop", "item": {"n": [1]}}
        assert s.message_extra("m2") == {}
        with pytest.raises(KeyError):
            s.message_extra(s.events[0].id)  # still not a message line


# --------------------------------------------------------------------------- 10.3 interrupted calls


def chat_api_accepts(messages):
    """The OpenAI chat-completions rule: every assistant tool call is answered by a tool
    message before the next non-tool message."""
    waiting = set()
    for m in messages:
        if m.role == "tool":
            waiting.discard(m.tool_call_id)
            continue
        if waiting:
            return False
        if m.role == "assistant" and m.tool_calls:
            waiting = {c["id"] for c in m.tool_calls}
    return not waiting


def call(id_, name="bash"):
    return {"id": id_, "type": "function", "function": {"name": name, "arguments": "{}"}}


KILLED_MID_TOOL = """
s = Session.create(sys.argv[1], {"agent": "killed"})
s.append_message(user_message("list files"))
s.append_message(assistant_message(None, [
    {"id": "c1", "type": "function", "function": {"name": "ls", "arguments": "{}"}},
    {"id": "c2", "type": "function", "function": {"name": "rm", "arguments": "{}"}},
]))
s.append_tool_dispatched("c1", "ls", {})
s.append_message(tool_message("c1", "a.txt"))
s.append_tool_settled(s.pending_tool_operations()[0].op_id, "completed")
s.append_tool_dispatched("c2", "rm", {"path": "a.txt"})
print("inside the tool", flush=True)
os.kill(os.getpid(), signal.SIGKILL)
"""


def test_answering_a_call_killed_mid_tool(tmp_path):
    path = tmp_path / "killed.jsonl"
    code = "import os, signal, sys\nfrom llm_agent_session import *\n" + textwrap.dedent(KILLED_MID_TOOL)
    proc = subprocess.run([sys.executable, "-c", code, str(path)], env=child_env(), capture_output=True, text=True)
    assert proc.returncode == -signal.SIGKILL and "inside the tool" in proc.stdout
    with Session.load(path) as s:
        [op] = s.pending_tool_operations()
        assert (op.call_id, op.state) == ("c2", "dispatched")
        assert not chat_api_accepts(s.messages)
        new = s.answer_interrupted_tool_calls()
        assert len(new) == 1 and s.message_ids[-1] == new[0]
        last = s.messages[-1]
        assert (last.role, last.tool_call_id, last.content) == ("tool", "c2", INTERRUPTED_TEXT)
        assert chat_api_accepts(s.messages) and s.pending_tool_operations() == []
        tail = parsed_lines(path)[-2:]
        assert [t["type"] for t in tail] == ["message", "tool-settled"]  # the message first
        assert tail[1]["payload"] == {"op-id": op.op_id, "outcome": "outcome-unknown", "reason": "interrupted"}
        assert s.answer_interrupted_tool_calls() == []  # nothing left to answer
    with Session.load(path) as again:
        assert chat_api_accepts(again.messages) and again.pending_tool_operations() == []


def test_never_dispatched_calls_and_given_content(session, tpath):
    session.append_message(user_message("go"))
    session.append_message(assistant_message("two things", [call("a"), call("b"), call("a")]))
    session.append_tool_dispatched("b", "bash", {})
    new = session.answer_interrupted_tool_calls(content="[interrupted by the user]")
    assert [(m.tool_call_id, m.content) for m in session.messages[-2:]] == [
        ("a", NEVER_RUN_TEXT),
        ("b", "[interrupted by the user]"),
    ]
    assert len(new) == 2 and chat_api_accepts(session.messages)
    assert session.pending_tool_operations() == []


def test_result_recorded_is_left_for_the_app(session):
    session.append_message(assistant_message(None, [call("c1")]))
    op = session.append_tool_dispatched("c1", "bash", {})
    session.append_message(tool_message("c1", "done"))
    assert session.answer_interrupted_tool_calls() == []
    assert [(p.op_id, p.state) for p in session.pending_tool_operations()] == [(op, "result-recorded")]


def test_a_rewound_result_is_answered_as_gone(session):
    a = session.append_message(assistant_message(None, [call("c1")]))
    op = session.append_tool_dispatched("c1", "bash", {})
    session.append_message(tool_message("c1", "done"))
    session.append_tool_settled(op, "completed")
    session.append_rewind(a)
    session.close()
    with Session.load(session.path) as s:
        s.answer_interrupted_tool_calls()
        assert s.messages[-1] == Message("tool", RESULT_GONE_TEXT, tool_call_id="c1")
        assert chat_api_accepts(s.messages)


def test_a_compacted_result_is_answered_as_gone(session):
    # A sticky assistant message outlives the compaction that folds its call's result away.
    session.append_message(Message("assistant", None, tool_calls=[call("c1")], sticky=True))
    op = session.append_tool_dispatched("c1", "bash", {})
    result = session.append_message(tool_message("c1", "done"))
    session.append_tool_settled(op, "completed")
    session.append_compaction("it listed the files", result, 100, 10)
    session.answer_interrupted_tool_calls()
    assert [m.content for m in session.messages[-2:]] == ["it listed the files", RESULT_GONE_TEXT]


def test_a_reused_call_id_is_answered_by_what_came_after_its_own_call(session, tpath):
    """Providers reuse call ids across turns: the first call_0's answer does not answer
    the second, and the first call's operation is not the second's."""
    session.append_message(assistant_message(None, [call("call_0")]))
    first = session.append_tool_dispatched("call_0", "bash", {})
    session.append_message(tool_message("call_0", "a.txt"))
    session.append_tool_settled(first, "completed")
    session.append_message(user_message("again"))
    session.append_message(assistant_message(None, [call("call_0"), call("call_1")]))
    second = session.append_tool_dispatched("call_0", "bash", {})
    session.close()
    with Session.load(tpath) as s:  # a crash inside the second call_0
        assert not chat_api_accepts(s.messages)
        assert len(s.answer_interrupted_tool_calls()) == 2
        assert [(m.tool_call_id, m.content) for m in s.messages[-2:]] == [
            ("call_0", INTERRUPTED_TEXT),  # its own operation was cut off mid-call
            ("call_1", NEVER_RUN_TEXT),
        ]
        assert s.pending_tool_operations() == [] and chat_api_accepts(s.messages)
        [settle] = [e.payload for e in s.events if e.type == "tool-settled"][1:]
        assert (settle["op-id"], settle["outcome"]) == (second, "outcome-unknown")


def test_a_reused_call_id_never_dispatched_is_never_run(session):
    session.append_message(assistant_message(None, [call("call_0")]))
    op = session.append_tool_dispatched("call_0", "bash", {})
    session.append_message(tool_message("call_0", "ok"))
    session.append_tool_settled(op, "completed")
    session.append_message(assistant_message(None, [call("call_0")]))
    session.answer_interrupted_tool_calls()
    assert session.messages[-1].content == NEVER_RUN_TEXT  # not "ran": that was the first call_0


@pytest.mark.parametrize("reason", ["the app could not tell", "interrupted"])
def test_an_outcome_unknown_call_may_or_may_not_have_run(session, reason):
    """Settled outcome-unknown with nothing rewound or compacted: nobody knows whether it
    ran. Also when an earlier answer to it was rewound (reason "interrupted")."""
    a = session.append_message(assistant_message(None, [call("c1")]))
    op = session.append_tool_dispatched("c1", "bash", {})
    if reason == "interrupted":
        session.answer_interrupted_tool_calls()  # the answer, then the settle
        session.append_rewind(a)
    else:
        session.resolve_tool_operation(op, reason=reason)
    before = len(session.events)
    session.answer_interrupted_tool_calls(content="[stopped]")
    assert session.messages[-1].content == "[stopped]"
    assert session.answer_interrupted_tool_calls() == []
    assert len(session.events) == before + 1  # the answer alone: it is settled already
    assert "may or may not have run" in INTERRUPTED_TEXT


def test_a_settled_call_whose_result_was_never_recorded(session):
    session.append_message(assistant_message(None, [call("c1"), call("c2")]))
    session.append_tool_settled(session.append_tool_dispatched("c1", "bash", {}), "completed")
    session.append_tool_settled(session.append_tool_dispatched("c2", "bash", {}), "failed", error="boom")
    session.answer_interrupted_tool_calls()
    assert [m.content for m in session.messages[-2:]] == [RESULT_LOST_TEXT, RESULT_LOST_TEXT]


def test_answered_calls_and_no_calls_write_nothing(session, tpath):
    session.append_message(user_message("hi"))
    session.append_message(assistant_message(None, [call("c1")]))
    session.append_message(tool_message("c1", "ok"))
    session.append_message(assistant_message("done"))
    before = read(tpath)
    assert session.answer_interrupted_tool_calls() == []
    assert read(tpath) == before


def test_bad_content_writes_nothing(session, tpath):
    session.append_message(assistant_message(None, [call("c1")]))
    before = read(tpath)
    with pytest.raises(ValueError):
        session.answer_interrupted_tool_calls(content=[{"type": "text", "text": float("nan")}])
    with pytest.raises(TypeError):
        session.answer_interrupted_tool_calls(content=5)
    assert read(tpath) == before


def test_calls_of_a_hand_written_file(tmp_path):
    path = tmp_path / "t.jsonl"
    write_raw(path, meta_line(), msg_line("m1", "assistant", None, tool_calls=[call("x1"), "junk", {"id": 3}]),
              dispatched_line("d1", "x1"), env_line("u1", "future-type", {}))
    with Session.load(path) as s:
        assert len(s.answer_interrupted_tool_calls()) == 1
        assert s.messages[-1].tool_call_id == "x1" and s.pending_tool_operations() == []
    assert os.path.getsize(path) > 0
