"""docs/FORMAT.md, tool lines and replay: tool-dispatched / tool-settled, the three crash states,
pending_tool_operations, resolve_tool_operation, artifacts, argument canonicalisation."""

from __future__ import annotations

import json
import os

import pytest

from llm_agent_session import (
    CorruptTranscript,
    DanglingReference,
    Message,
    PendingToolOperation,
    Session,
    ToolOperationError,
    TranscriptError,
    assistant_message,
    tool_message,
    user_message,
)

from tests.support.helpers import (
    TS_RE,
    artifact,
    canon,
    digest_of,
    dispatched_line,
    env_line,
    lines_of,
    meta_line,
    msg_line,
    read,
    settled_line,
    sha,
    write_raw,
)

DISPATCH_KEYS = {"call-id", "tool", "arguments", "arguments-digest", "idempotency", "run-id", "round"}


def _last(tpath):
    return json.loads(lines_of(tpath)[-1])


def test_dispatched_payload(session, tpath):
    op = session.append_tool_dispatched("call_1", "read_file", {"path": "/etc/hosts", "lines": [1, 2]},
                                        idempotency="idem-1", run_id="run-7", round=3)
    obj = _last(tpath)
    assert obj["id"] == op and obj["type"] == "tool-dispatched"
    args = {"lines": [1, 2], "path": "/etc/hosts"}
    assert obj["payload"] == {"call-id": "call_1", "tool": "read_file", "arguments": args,
                              "arguments-digest": sha(b'{"lines":[1,2],"path":"/etc/hosts"}'),
                              "idempotency": "idem-1", "run-id": "run-7", "round": 3}


def test_dispatched_payload_defaults_are_null(session, tpath):
    session.append_tool_dispatched("c", "t", {})
    p = _last(tpath)["payload"]
    assert set(p) == DISPATCH_KEYS
    assert p["idempotency"] is None and p["run-id"] is None and p["round"] is None


@pytest.mark.parametrize("given,stored", [
    ('{"b": 1, "a": [1, 2]}', {"a": [1, 2], "b": 1}),
    ({"b": 1, "a": [1, 2]}, {"a": [1, 2], "b": 1}),
    ('  {"x":"y"}\n', {"x": "y"}),
    ("42", 42),
    ("[1,2]", [1, 2]),
    ("null", None),
    ('"quoted"', "quoted"),
    ("not json at all", "not json at all"),
    ("", ""),
    ("{broken", "{broken"),
    ("NaN", "NaN"),  # Python's json would accept it; it is not JSON
    ("Infinity", "Infinity"),
    ('{"a": NaN}', '{"a": NaN}'),
    (None, None),
    ([3, {"z": 1, "y": 2}], [3, {"y": 2, "z": 1}]),
    ('{"s": "a\\u2028b"}', {"s": "a\u2028b"}),
])
def test_arguments_canonicalised_and_digest(session, tpath, given, stored):
    op = session.append_tool_dispatched("c", "t", given)
    p = _last(tpath)["payload"]
    assert p["arguments"] == stored
    assert type(p["arguments"]) is type(stored)
    assert p["arguments-digest"] == sha(canon(stored).encode("utf-8"))
    (pending,) = session.pending_tool_operations()
    assert pending.arguments == stored
    assert pending.arguments_digest == p["arguments-digest"]
    assert pending.op_id == op


def test_digest_uses_line_format_escapes(session, tpath):
    session.append_tool_dispatched("c", "t", {"s": "x\u2028y", "é": 1})
    p = _last(tpath)["payload"]
    assert p["arguments-digest"] == sha('{"s":"x\\u2028y","é":1}'.encode("utf-8"))


def test_string_and_dict_arguments_same_digest(session):
    a = session.append_tool_dispatched("c1", "t", '{"q": [1, {"b": 2, "a": 1}]}')
    b = session.append_tool_dispatched("c2", "t", {"q": [1, {"a": 1, "b": 2}]})
    ops = {o.op_id: o for o in session.pending_tool_operations()}
    assert ops[a].arguments_digest == ops[b].arguments_digest == digest_of({"q": [1, {"a": 1, "b": 2}]})


def test_bad_arguments_refused(session, tpath):
    before = read(tpath)
    for bad in [{"x": float("nan")}, {"x": b"bytes"}, {"x": {1, 2}}, {"x": object()}]:
        with pytest.raises((TypeError, ValueError)):
            session.append_tool_dispatched("c", "t", bad)
    assert read(tpath) == before
    assert session.pending_tool_operations() == []


def test_settled_payload_minimal_and_full(session, tpath):
    op1 = session.append_tool_dispatched("c1", "t", {})
    op2 = session.append_tool_dispatched("c2", "t", {})
    sid = session.append_tool_settled(op1, "completed")
    obj = _last(tpath)
    assert obj["id"] == sid and obj["type"] == "tool-settled"
    assert obj["payload"] == {"op-id": op1, "outcome": "completed"}
    art = artifact("result-0001.txt", sha(b"full"), 4, 4, 0)
    session.append_tool_settled(op2, "failed", reason="timeout", duration=1.5, result_digest=sha(b"ex"),
                                artifact=art, error="boom")
    assert _last(tpath)["payload"] == {"op-id": op2, "outcome": "failed", "reason": "timeout", "duration": 1.5,
                                       "result-digest": sha(b"ex"), "artifact": art, "error": "boom"}
    assert session.pending_tool_operations() == []


@pytest.mark.parametrize("outcome", ["completed", "failed", "outcome-unknown"])
def test_three_outcomes(session, tpath, outcome):
    op = session.append_tool_dispatched("c", "t", {})
    session.append_tool_settled(op, outcome)
    assert session.pending_tool_operations() == []
    session.close()
    with Session.load(tpath) as s:
        assert s.pending_tool_operations() == []


def test_settle_unknown_or_twice_refused(session, tpath):
    op = session.append_tool_dispatched("c", "t", {})
    mid = session.append_message(user_message("x"))
    session.append_tool_settled(op, "completed")
    before = read(tpath)
    for target in [op, "no-such-op", mid, session.events[0].id]:
        with pytest.raises(DanglingReference) as ei:
            session.append_tool_settled(target, "completed")
        assert isinstance(ei.value, ToolOperationError)
        assert isinstance(ei.value, TranscriptError)
    assert read(tpath) == before


@pytest.mark.parametrize("outcome", ["done", "", "Completed", None, 1])
def test_settle_invalid_outcome_refused(session, tpath, outcome):
    op = session.append_tool_dispatched("c", "t", {})
    before = read(tpath)
    with pytest.raises(ToolOperationError) as ei:
        session.append_tool_settled(op, outcome)
    assert isinstance(ei.value, ValueError)
    assert read(tpath) == before
    assert [o.op_id for o in session.pending_tool_operations()] == [op]


def test_three_crash_states(session, tpath):
    calls = [{"id": "c1", "type": "function", "function": {"name": "f", "arguments": "{}"}},
             {"id": "c2", "type": "function", "function": {"name": "f", "arguments": "{}"}},
             {"id": "c3", "type": "function", "function": {"name": "f", "arguments": "{}"}}]
    session.append_message(assistant_message(None, calls))
    op1 = session.append_tool_dispatched("c1", "f", "{}", idempotency="k1", run_id="r", round=1)
    op2 = session.append_tool_dispatched("c2", "f", "{}", round=1)
    op3 = session.append_tool_dispatched("c3", "f", "{}")
    session.append_message(tool_message("c2", "res2"))
    session.append_message(tool_message("c3", "res3"))
    session.append_tool_settled(op3, "completed")
    expect = [(op1, "c1", "dispatched"), (op2, "c2", "result-recorded")]
    assert [(o.op_id, o.call_id, o.state) for o in session.pending_tool_operations()] == expect
    live = session.pending_tool_operations()
    session.close()
    with Session.load(tpath) as s:
        assert s.pending_tool_operations() == live
        # replay does not repair the unanswered assistant turn
        assert len(s.messages) == 3


def test_pending_fields_and_dispatch_time(session, tpath):
    op = session.append_tool_dispatched("call-9", "bash", '{"cmd":"ls"}', idempotency="once", run_id="run-1",
                                        round=12)
    (p,) = session.pending_tool_operations()
    assert isinstance(p, PendingToolOperation)
    ev = session.events[-1]
    assert p == PendingToolOperation(op_id=op, call_id="call-9", tool="bash", arguments={"cmd": "ls"},
                                     arguments_digest=digest_of({"cmd": "ls"}), idempotency="once",
                                     run_id="run-1", round=12, dispatched_at=ev.ts, state="dispatched")
    assert TS_RE.match(p.dispatched_at)
    session.close()
    with Session.load(tpath) as s:
        assert s.pending_tool_operations() == [p]


def test_pending_in_file_order(session):
    ops = [session.append_tool_dispatched(f"c{i}", "t", {"i": i}) for i in range(6)]
    session.append_tool_settled(ops[2], "completed")
    session.append_tool_settled(ops[0], "failed")
    assert [o.op_id for o in session.pending_tool_operations()] == [ops[1], ops[3], ops[4], ops[5]]


def test_tool_lines_are_not_messages(session):
    session.append_message(user_message("u"))
    op = session.append_tool_dispatched("c", "t", {})
    session.append_tool_settled(op, "completed")
    assert session.messages == [user_message("u")]
    assert len(session.message_ids) == 1


def test_resolve_tool_operation(session, tpath):
    op1 = session.append_tool_dispatched("c1", "t", {})
    op2 = session.append_tool_dispatched("c2", "t", {})
    session.close()
    with Session.load(tpath) as s:
        sid = s.resolve_tool_operation(op1)
        obj = _last(tpath)
        assert obj["id"] == sid and obj["type"] == "tool-settled"
        assert obj["payload"] == {"op-id": op1, "outcome": "outcome-unknown"}
        s.resolve_tool_operation(op2, "failed", reason="process died")
        assert _last(tpath)["payload"] == {"op-id": op2, "outcome": "failed", "reason": "process died"}
        assert s.pending_tool_operations() == []
        before = read(tpath)
        with pytest.raises(ToolOperationError):
            s.resolve_tool_operation(op1)
        with pytest.raises(ToolOperationError):
            s.resolve_tool_operation("unknown")
        assert read(tpath) == before
    with Session.load(tpath) as s:
        assert s.pending_tool_operations() == []


def test_resolve_invalid_outcome(session, tpath):
    op = session.append_tool_dispatched("c1", "t", {})
    before = read(tpath)
    with pytest.raises(ToolOperationError) as ei:
        session.resolve_tool_operation(op, "maybe")
    assert isinstance(ei.value, ValueError)
    assert read(tpath) == before


# --------------------------------------------------------------------------- artifacts


@pytest.mark.parametrize("name", ["a/b", "/abs", "..", ".", "a\\b", "x\x00y", "../up", "dir/", ""])
def test_artifact_file_must_be_basename_on_write(session, tpath, name):
    op = session.append_tool_dispatched("c", "t", {})
    before = read(tpath)
    with pytest.raises((ValueError, TypeError, TranscriptError)):
        session.append_tool_settled(op, "completed", artifact=artifact(name))
    assert read(tpath) == before
    assert len(session.pending_tool_operations()) == 1
    with pytest.raises((ValueError, TypeError, TranscriptError)):
        session.artifact_path(name)


@pytest.mark.parametrize("name", ["result.txt", "...", ".hidden", "a..b", "日本.bin", "x y"])
def test_artifact_plain_basenames_accepted(session, tpath, name):
    op = session.append_tool_dispatched("c", "t", {})
    session.append_tool_settled(op, "completed", artifact=artifact(name))
    assert os.fspath(session.artifact_path(name)) == os.path.join(os.fspath(session.artifacts_dir), name)
    session.close()
    with Session.load(tpath) as s:
        assert s.events[-1].payload["artifact"]["file"] == name


@pytest.mark.parametrize("fname,stem", [("run.jsonl", "run"), ("run.2026.jsonl", "run.2026"),
                                        ("noext", "noext")])
def test_artifacts_dir_beside_transcript(tmp_path, fname, stem):
    with Session.create(tmp_path / fname, {}) as s:
        assert os.fspath(s.artifacts_dir) == os.path.join(os.fspath(tmp_path), stem + ".artifacts")
        assert os.fspath(s.artifact_path("r.txt")) == os.path.join(os.fspath(tmp_path), stem + ".artifacts", "r.txt")


@pytest.mark.parametrize("name", ["../../etc/passwd", "a/b", "..", ".", "a\\b", "x\u0000y"])
def test_artifact_bad_basename_fatal_on_load(tpath, name):
    data = write_raw(tpath, meta_line(), dispatched_line("op1"),
                     settled_line("s1", "op1", "completed", artifact=artifact(name)), msg_line("m1"))
    with pytest.raises(CorruptTranscript) as ei:
        Session.load(tpath)
    assert ei.value.line == 3
    assert read(tpath) == data


# --------------------------------------------------------------------------- on load


@pytest.mark.parametrize("case", ["unknown", "twice", "message-id", "bad-outcome"])
def test_bad_settle_on_load(tpath, case):
    settle = {
        "unknown": settled_line("s2", "nope"),
        "twice": settled_line("s2", "op1"),
        "message-id": settled_line("s2", "m1"),
        "bad-outcome": settled_line("s2", "op2", "done"),
    }[case]
    data = write_raw(tpath, meta_line(), msg_line("m1"), dispatched_line("op1"), dispatched_line("op2", "c2"),
                     settled_line("s1", "op1"), settle, msg_line("m2"))
    with pytest.raises(CorruptTranscript) as ei:
        Session.load(tpath)
    offset = len(meta_line() + msg_line("m1") + dispatched_line("op1") + dispatched_line("op2", "c2") +
                 settled_line("s1", "op1"))
    assert (ei.value.line, ei.value.offset) == (6, offset)
    assert "line 6" in str(ei.value) and f"byte {offset}" in str(ei.value)
    assert read(tpath) == data


def test_result_recorded_from_hand_written_file(tpath):
    write_raw(tpath, meta_line(),
              msg_line("a", "assistant", None, tool_calls=[{"id": "k1"}, {"id": "k2"}]),
              dispatched_line("op1", "k1", "fs", {"p": 1}),
              dispatched_line("op2", "k2", "fs"),
              msg_line("t2", "tool", "out", tool_call_id="k2"))
    with Session.load(tpath) as s:
        ops = s.pending_tool_operations()
        assert [(o.op_id, o.state) for o in ops] == [("op1", "dispatched"), ("op2", "result-recorded")]
        assert ops[0].arguments == {"p": 1} and ops[0].dispatched_at == "2026-08-09T13:10:08.542283Z"
        s.append_message(tool_message("k1", "late"))
        assert [o.state for o in s.pending_tool_operations()] == ["result-recorded", "result-recorded"]
        s.append_tool_settled("op2", "completed")
        assert [o.op_id for o in s.pending_tool_operations()] == ["op1"]


def test_tool_message_before_dispatch_does_not_count(session, tpath):
    # the order that makes the states distinguishable: dispatched, then the tool message
    session.append_message(tool_message("reused", "an old result"))
    op = session.append_tool_dispatched("reused", "t", {})
    assert [o.state for o in session.pending_tool_operations()] == ["dispatched"]
    session.append_message(tool_message("reused", "the new result"))
    assert [(o.op_id, o.state) for o in session.pending_tool_operations()] == [(op, "result-recorded")]
    live = session.pending_tool_operations()
    session.close()
    with Session.load(tpath) as s:
        assert s.pending_tool_operations() == live


def test_redispatch_after_crash(session, tpath):
    op1 = session.append_tool_dispatched("c1", "t", {"a": 1}, idempotency="k")
    session.close()
    with Session.load(tpath) as s:
        (p,) = s.pending_tool_operations()
        assert (p.op_id, p.state, p.idempotency) == (op1, "dispatched", "k")
        s.resolve_tool_operation(op1, reason="retrying")
        op2 = s.append_tool_dispatched("c1", "t", {"a": 1}, idempotency="k")
        s.append_message(tool_message("c1", "ok"))
        s.append_tool_settled(op2, "completed", duration=0.25)
        assert s.pending_tool_operations() == []
    with Session.load(tpath) as s:
        assert s.pending_tool_operations() == []


def test_settles_read_by_a_load_refuse_a_second_settle(session, tpath):
    # After a native load the settled op ids live in Rust (`_native.SettledIds`);
    # the verdicts must stay those of the pure core's set, before and after appends.
    done = session.append_tool_dispatched("c1", "t", {})
    session.append_tool_settled(done, "completed")
    waiting = session.append_tool_dispatched("c2", "t", {})
    session.close()
    with Session.load(tpath) as s:
        assert done in s._state.settled and waiting not in s._state.settled
        assert 1 not in s._state.settled and None not in s._state.settled
        with pytest.raises(DanglingReference, match="already settled"):
            s.append_tool_settled(done, "completed")
        s.append_tool_settled(waiting, "failed")  # dispatched before the load
        later = s.append_tool_dispatched("c3", "t", {})
        s.append_tool_settled(later, "completed")  # dispatched after it
        before = read(tpath)
        for op in (done, waiting, later):
            with pytest.raises(DanglingReference, match="already settled"):
                s.append_tool_settled(op, "outcome-unknown")
        with pytest.raises(DanglingReference, match="never dispatched"):
            s.append_tool_settled("no-such-op", "completed")
        assert read(tpath) == before
        assert len(s._state.settled) == 3
        assert sorted(s._state.settled) == sorted([done, waiting, later])
    with Session.load(tpath) as s:
        assert sorted(s._state.settled) == sorted([done, waiting, later])
        with pytest.raises(DanglingReference, match="already settled"):
            s.append_tool_settled(later, "completed")
