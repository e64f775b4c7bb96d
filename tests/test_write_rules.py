"""Rules found by attacking the shipped core (issue #18; docs/FORMAT.md's `message` and tool lines; docs/durability.md): extras
named like message keys, a forked child's lock, exact equality in sync_messages, huge
integers on write, peek's survey flag, an undeletable leftover repair file."""

from __future__ import annotations

import json
import multiprocessing
import os
import stat

import pytest

from tests.support.helpers import dispatched_line, lines_of, meta_line, msg_line, parsed_lines, read, write_raw
from llm_agent_session import (
    Message,
    Session,
    SessionBroken,
    SessionLocked,
    TranscriptConflict,
    assistant_message,
    tool_message,
    user_message,
)
from llm_agent_session.canonical import str_to_int
from llm_agent_session.messages import MESSAGE_KEYS

# ----------------------------------------------------------------- docs/FORMAT.md, `message`: extras


@pytest.mark.parametrize(
    "extra, check",
    [
        ({"name": "planner", "sticky": True}, lambda m: m.name is None and m.sticky is False),
        ({"depth": 0}, lambda m: m.depth is None and not m.is_sticky),
        ({"sysprompt": True}, lambda m: m.sysprompt is False),
        ({"content": "raw"}, lambda m: m.content == "hi"),
        ({"role": "system"}, lambda m: m.role == "user"),
        ({"tool_calls": []}, lambda m: m.tool_calls is None),
    ],
)
def test_extra_named_like_a_message_key_is_dropped(session, tpath, extra, check):
    msg = user_message("hi")
    session.append_message(msg, extra={**extra, "finish-reason": "stop"})
    assert session.messages[-1] == msg and check(session.messages[-1])
    payload = parsed_lines(tpath)[-1]["payload"]
    assert payload == {"role": "user", "content": "hi", "finish-reason": "stop"}
    session.close()
    with Session.load(tpath) as again:
        assert again.messages[-1] == msg
        assert session.messages == again.messages
        again.sync_messages(again.messages)  # the writer's own list is never a conflict


def test_extra_content_on_a_tool_call_message_gives_no_content(session, tpath):
    call = {"id": "c1", "type": "function", "function": {"name": "t", "arguments": "{}"}}
    session.append_message(assistant_message(None, [call]), extra={"content": "raw", "tool_call_id": "c1"})
    assert session.messages[-1].content is None
    assert "content" not in parsed_lines(tpath)[-1]["payload"]


def test_every_message_key_is_dropped_from_extras(session, tpath):
    session.append_message(user_message("x"), extra={k: "from-extra" for k in MESSAGE_KEYS})
    assert parsed_lines(tpath)[-1]["payload"] == {"role": "user", "content": "x"}


def test_extra_tool_call_id_does_not_record_a_result(session, tpath):
    """A crashed operation stays `dispatched` whatever a later non-tool message carries."""
    call = {"id": "c1", "type": "function", "function": {"name": "t", "arguments": "{}"}}
    session.append_message(assistant_message(None, [call]))
    session.append_tool_dispatched("c1", "t", {})
    session.append_message(user_message("later"), extra={"tool_call_id": "c1"})
    assert [op.state for op in session.pending_tool_operations()] == ["dispatched"]
    session.close()
    with Session.load(tpath) as again:
        assert [op.state for op in again.pending_tool_operations()] == ["dispatched"]
    survey = Session.peek(tpath, survey=True)["survey"]
    assert [op.state for op in survey["pending_tool_operations"]] == ["dispatched"]


def test_only_a_tool_message_records_a_result_on_read(tmp_path):
    """A line written by hand (or an older version) with `tool_call_id` on a user message."""
    path = tmp_path / "t.jsonl"
    write_raw(
        path,
        meta_line(),
        dispatched_line("op-1", call_id="c1"),
        msg_line("m-1", "user", "x", tool_call_id="c1"),
        dispatched_line("op-2", call_id="c2"),
        msg_line("m-2", "tool", "ok", tool_call_id="c2"),
    )
    states = {"op-1": "dispatched", "op-2": "result-recorded"}
    with Session.load(path) as s:
        assert {op.op_id: op.state for op in s.pending_tool_operations()} == states
    survey = Session.peek(path, survey=True)["survey"]
    assert {op.op_id: op.state for op in survey["pending_tool_operations"]} == states


# ----------------------------------------------------------------- docs/durability.md: fork


def _child_loads(path: str) -> str:
    """Runs in a fork-pool child, after the parent closed its session."""
    try:
        with Session.load(path) as s:
            return f"loaded {len(s.messages)}"
    except Exception as e:  # pragma: no cover - reported to the parent
        return f"{type(e).__name__}: {e}"


def _child_appends(_: int) -> str:
    try:
        _INHERITED[0].append_message(user_message("from the child"))
    except SessionBroken:
        _INHERITED[0].close()  # the child's close releases nothing of the parent's
        return "refused"
    except Exception as e:  # pragma: no cover - reported to the parent
        return f"{type(e).__name__}: {e}"
    return "appended"  # pragma: no cover


_INHERITED: list = []


@pytest.mark.skipif(not hasattr(os, "fork"), reason="needs fork")
def test_fork_pool_child_never_holds_the_lock(tpath):
    """A session used in a child after fork() refuses to append and the child's close
    releases nothing; the parent goes on appending, and once it closes, the lock is free
    though the children live on."""
    ctx = multiprocessing.get_context("fork")
    s = Session.create(tpath, {"agent": "pool"})
    s.append_message(user_message("parent"))
    _INHERITED[:] = [s]
    try:
        with ctx.Pool(2) as pool:  # forked while the session is open
            assert pool.map(_child_appends, range(2)) == ["refused", "refused"]
            assert len(lines_of(tpath)) == 2  # nothing of the children's reached the file
            with pytest.raises(SessionLocked):  # their closes left the parent's lock held
                Session.load(tpath)
            s.append_message(user_message("the parent still can"))
            s.close()
            # The pool's children are still alive: the lock must be free all the same.
            with Session.load(tpath) as again:
                assert [m.content for m in again.messages] == ["parent", "the parent still can"]
            assert pool.apply(_child_loads, (str(tpath),)) == "loaded 2"
    finally:
        _INHERITED.clear()
        s.close()
    assert len(lines_of(tpath)) == 3


# ----------------------------------------------------------------- docs/durability.md: exact equality


@pytest.mark.parametrize(
    "stored, given",
    [
        ({"flag": True, "n": 1}, {"flag": 1, "n": 1}),
        ({"flag": True, "n": 1}, {"flag": True, "n": 1.0}),
        ({"x": 0.0}, {"x": -0.0}),
        ({"x": False}, {"x": 0}),
    ],
)
def test_sync_messages_compares_json_values_exactly(session, tpath, stored, given):
    session.append_message(Message("user", [stored]))
    before = read(tpath)
    with pytest.raises(TranscriptConflict):
        session.sync_messages([Message("user", [given]), user_message("next")])
    assert read(tpath) == before


def test_sync_messages_accepts_equal_json(session):
    session.append_message(Message("user", [{"a": [1, 2]}]))
    # A new object (a tuple even) that serialises the same is the same message.
    assert len(session.sync_messages([{"role": "user", "content": [{"a": (1, 2)}]}, user_message("n")])) == 1


# ----------------------------------------------------------------- docs/FORMAT.md: big integers


def test_integers_past_the_digit_limit_write_and_read_back(session, tpath):
    big = 10**5000 + 7
    session.append_message(user_message("x"), extra={"n": big})
    digits = "9" * 5000
    number = str_to_int(digits)  # int(digits) itself is refused past 4,300 digits
    op_str = session.append_tool_dispatched("c1", "t", '{"n": ' + digits + "}")
    op_dict = session.append_tool_dispatched("c2", "t", {"n": number})
    ops = {op.op_id: op for op in session.pending_tool_operations()}
    assert ops[op_str].arguments == {"n": number}
    assert ops[op_str].arguments_digest == ops[op_dict].arguments_digest
    session.close()
    with Session.load(tpath) as again:
        assert again.events[1].payload["n"] == big
        assert {op.op_id: op.arguments for op in again.pending_tool_operations()}[op_str] == {"n": number}


# ----------------------------------------------------------------- docs/FORMAT.md's peek: survey flag


@pytest.mark.parametrize("flag", [1, "yes", [0]])
def test_peek_survey_takes_any_truthy_value(session, tpath, flag):
    session.append_message(user_message("x"))
    assert Session.peek(tpath, survey=flag)["survey"]["live_messages"] == 1
    assert "survey" not in Session.peek(tpath, survey=0)


# ----------------------------------------------------------------- docs/FORMAT.md's replay: leftover repair


@pytest.mark.skipif(os.geteuid() == 0 if hasattr(os, "geteuid") else True, reason="root ignores directory modes")
def test_undeletable_leftover_repair_is_explained(tmp_path):
    _undeletable_leftover(tmp_path)


def test_leftover_repair_that_is_a_directory_is_left_with_a_warning(tmp_path):
    """A directory under the leftover's name is not deleted: load says so and goes on."""
    d = tmp_path / "d"
    d.mkdir()
    path = d / "t.jsonl"
    write_raw(path, meta_line(), msg_line("m-1"))
    (d / "t.jsonl.repair").mkdir()
    with Session.load(path) as s:
        assert any("t.jsonl.repair" in w for w in s.warnings)


def _undeletable_leftover(tmp_path):
    d = tmp_path / "d"
    d.mkdir()
    path = d / "t.jsonl"
    write_raw(path, meta_line(), msg_line("m-1"))
    (d / "t.jsonl.repair").write_bytes(b"half a repair")
    os.chmod(d, stat.S_IRUSR | stat.S_IXUSR)
    try:
        with pytest.raises(PermissionError) as info:
            Session.load(path)
        text = str(info.value)
        assert "t.jsonl.repair" in text and "interrupted repair" in text and "Delete" in text
        assert read(path) == meta_line() + msg_line("m-1")
    finally:
        os.chmod(d, stat.S_IRWXU)


def test_json_helper_sanity():
    # The stored forms the equality tests rely on really are different JSON.
    assert json.dumps(True) != json.dumps(1) and json.dumps(1) != json.dumps(1.0)
