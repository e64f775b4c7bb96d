"""``Session.peek(path, survey=True)``: lines and bytes by type, messages by role, how
many messages replay would give, and the tool operations left open with their state,
from the scan's own pass.

Beyond docs/FORMAT.md's peek (which the peek keys without ``survey`` still follow exactly): the
survey must agree with what ``Session.load`` of the same file gives wherever the load
succeeds, and read leniently (like peek) where it would not.
"""

from __future__ import annotations

import json
import os

import pytest

from llm_agent_session import (
    PendingToolOperation,
    Session,
    TranscriptError,
    assistant_message,
    tool_message,
    user_message,
)

from tests.support.helpers import (
    compaction_line,
    dispatched_line,
    env_line,
    meta_line,
    msg_line,
    read,
    settled_line,
    write_raw,
)

SPEC_KEYS = {"path", "size", "meta", "envelopes", "messages", "warnings", "end", "pending", "identity", "restarted"}
SURVEY_KEYS = {"counts", "bytes", "roles", "live_messages", "replay_problem", "pending_tool_operations", "rewound"}


def test_survey_agrees_with_load_on_a_run_with_every_state(session, tpath):
    session.append_message(user_message("task"))
    session.append_message({"role": "system", "content": "rules", "sysprompt": True})
    a = session.append_message(assistant_message(None, [{"id": "c1", "type": "function"}]))
    done = session.append_tool_dispatched("c1", "grep", {"q": "x"})
    session.append_message(tool_message("c1", "found"))
    session.append_tool_settled(done, "completed", duration=0.5)
    answered = session.append_tool_dispatched("c2", "ls", "[1, 2]", idempotency="k", run_id="r", round=3)
    session.append_message(tool_message("c2", "listing"))
    session.append_compaction("summary", a, 100, 10)
    session.append_grants({"fs": ["read"]})
    unanswered = session.append_tool_dispatched("c3", "rm", {"path": "/tmp/x"})
    session.append_elision([(session.message_ids[-1], "[elided]")])

    view = Session.peek(tpath, survey=True)
    assert set(view) == SPEC_KEYS | {"survey"}
    survey = view["survey"]
    assert set(survey) == SURVEY_KEYS
    assert survey["counts"] == {
        "session-meta": 1, "message": 5, "tool-dispatched": 3, "tool-settled": 1,
        "compaction": 1, "grants": 1, "elision": 1,
    }
    assert list(survey["counts"]) == [
        "session-meta", "message", "tool-dispatched", "tool-settled", "compaction", "grants", "elision"
    ]  # in the order each type first appears
    by_type: dict = {}
    for raw in read(tpath).splitlines(keepends=True):
        type_ = json.loads(raw)["type"]
        by_type[type_] = by_type.get(type_, 0) + len(raw)
    assert survey["bytes"] == by_type and sum(by_type.values()) == view["size"]
    assert survey["roles"] == {"user": 1, "system": 1, "assistant": 1, "tool": 2}
    # The sticky system message, the summary, then the two tool messages after the compaction point.
    assert survey["live_messages"] == len(session.messages) == 4
    assert survey["replay_problem"] is None
    assert survey["pending_tool_operations"] == session.pending_tool_operations()
    assert [(op.op_id, op.state) for op in survey["pending_tool_operations"]] == [
        (answered, "result-recorded"), (unanswered, "dispatched")
    ]
    assert all(isinstance(op, PendingToolOperation) for op in survey["pending_tool_operations"])
    assert survey["pending_tool_operations"][0].arguments == [1, 2]  # canonicalised, as load gives it


def test_without_survey_the_keys_are_exactly_the_specs(session, tpath):
    assert set(Session.peek(tpath)) == SPEC_KEYS


def test_a_compaction_naming_nothing_live_is_reported_with_its_line(tpath):
    write_raw(
        tpath,
        meta_line(),
        msg_line("a"),
        compaction_line("k1", "a"),
        compaction_line("k2", "a"),  # "a" was replaced by k1's summary
        msg_line("b"),
    )
    before = read(tpath)
    survey = Session.peek(tpath, survey=True)["survey"]
    assert survey["live_messages"] is None
    assert survey["replay_problem"] == (
        "line 4 (byte %d): compaction k2 replaces-through-id a names no message in the live conversation"
        % len(b"".join(before.splitlines(keepends=True)[:3]))
    )
    assert survey["counts"]["compaction"] == 2
    assert read(tpath) == before


def test_a_compaction_without_a_string_id_is_a_problem_too(tpath):
    write_raw(tpath, meta_line(), msg_line("a"), env_line("k", "compaction", {"replaces-through-id": ["a"]}))
    survey = Session.peek(tpath, survey=True)["survey"]
    assert survey["live_messages"] is None
    assert survey["replay_problem"].endswith("compaction k has no string replaces-through-id")


def test_sticky_is_what_replay_keeps(tpath):
    write_raw(
        tpath,
        meta_line(),
        msg_line("s1", sticky=True),
        msg_line("s2", sysprompt=True),
        msg_line("s3", depth=0),
        msg_line("n1", depth=None),  # null depth is unset
        msg_line("n2", sticky=1),  # only JSON true counts
        msg_line("n3", sticky=False),
        compaction_line("k", "n3"),
        msg_line("after"),
    )
    survey = Session.peek(tpath, survey=True)["survey"]
    with Session.load(tpath) as s:
        assert survey["live_messages"] == len(s.messages) == 5  # s1 s2 s3, summary, after


def test_lenient_where_load_refuses(tpath):
    write_raw(
        tpath,
        meta_line(),
        msg_line("a"),
        env_line("x", "message", {"role": 7}),  # no string role: counted, not live
        b"not json\n",
        env_line("d", "tool-dispatched", {"call-id": ["c"], "tool": 1}),  # odd values are passed on
        settled_line("s", "never-dispatched"),
        env_line("q", "tool-settled", {"op-id": {"a": 1}}),
        msg_line("t", role="tool", tool_call_id=["c"]),
    )
    with pytest.raises(TranscriptError):
        Session.load(tpath)
    view = Session.peek(tpath, survey=True)
    survey = view["survey"]
    assert survey["counts"] == {"session-meta": 1, "message": 3, "tool-dispatched": 1, "tool-settled": 2}
    assert survey["roles"] == {"user": 1, "tool": 1}
    # the malformed line is no envelope's: its bytes are in no type
    assert sum(survey["bytes"].values()) == view["size"] - len(b"not json\n")
    assert survey["live_messages"] == 2
    [op] = survey["pending_tool_operations"]
    assert (op.op_id, op.call_id, op.tool, op.state) == ("d", ["c"], 1, "dispatched")
    assert len(view["warnings"]) == 2


def test_an_operation_is_answered_only_by_a_message_after_it(tpath):
    write_raw(
        tpath,
        meta_line(),
        msg_line("early", role="tool", tool_call_id="c1"),
        dispatched_line("d1", "c1"),
        dispatched_line("d2", "c2"),
        msg_line("x2", role="assistant", tool_call_id="c2"),  # not a tool message: answers nothing
        msg_line("r2", role="tool", tool_call_id="c2"),
        dispatched_line("d3", "c2"),  # a second operation for the same call: not answered yet
    )
    survey = Session.peek(tpath, survey=True)["survey"]
    assert [(op.op_id, op.state) for op in survey["pending_tool_operations"]] == [
        ("d1", "dispatched"), ("d2", "result-recorded"), ("d3", "dispatched")
    ]
    with Session.load(tpath) as s:
        assert survey["pending_tool_operations"] == s.pending_tool_operations()


def test_a_repeated_dispatch_id_keeps_its_place_and_forgets_its_answer(tpath):
    write_raw(
        tpath,
        meta_line(),
        dispatched_line("d", "c"),
        dispatched_line("e", "c"),
        msg_line("r", role="tool", tool_call_id="c"),
        dispatched_line("d", "c2"),
        settled_line("s", "e"),
        dispatched_line("e", "c"),
    )
    ops = Session.peek(tpath, survey=True)["survey"]["pending_tool_operations"]
    assert [(op.op_id, op.call_id, op.state) for op in ops] == [("d", "c2", "dispatched"), ("e", "c", "dispatched")]


def test_the_unfinished_last_line_is_not_surveyed(session, tpath):
    session.append_message(user_message("u"))
    with open(tpath, "ab") as f:
        f.write(dispatched_line("d", "c")[:-9])
    view = Session.peek(tpath, survey=True)
    assert view["pending"] > 0
    assert view["survey"]["counts"] == {"session-meta": 1, "message": 1}
    assert sum(view["survey"]["bytes"].values()) == view["end"]
    assert view["survey"]["pending_tool_operations"] == []


@pytest.mark.parametrize("content", [None, b"", b"\n\n", msg_line("a")])
def test_nothing_to_read_gives_an_empty_survey(tmp_path, content):
    path = tmp_path / "x.jsonl"
    if content is not None:
        path.write_bytes(content)
    view = Session.peek(path, survey=True)
    assert "error" in view
    assert view["survey"] == {
        "counts": {}, "bytes": {}, "roles": {},
        "live_messages": None, "replay_problem": None, "pending_tool_operations": [], "rewound": {},
    }


def test_survey_needs_the_whole_file(session, tpath):
    end = os.path.getsize(tpath)
    with pytest.raises(ValueError, match="offset=0"):
        Session.peek(tpath, offset=end, survey=True)
