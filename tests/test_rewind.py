"""the README's rewind section: the `rewind` record, `append_rewind` and `sync_messages(allow_rewind=True)`."""

from __future__ import annotations

import pytest

from tests.support.helpers import (
    compaction_line,
    dispatched_line,
    elision_line,
    env_line,
    meta_line,
    msg_line,
    parsed_lines,
    read,
    reference_replay,
    write_raw,
)
from llm_agent_session import (
    CorruptTranscript,
    DanglingReference,
    Session,
    TranscriptConflict,
    assistant_message,
    system_message,
    tool_message,
    user_message,
)


def texts(s):
    return [m.content for m in s.messages]


def test_rewind_cuts_the_live_conversation_and_keeps_every_line(session, tpath):
    ids = [session.append_message(user_message(t)) for t in "abcd"]
    rid = session.append_rewind(ids[1])
    assert texts(session) == ["a", "b"] and session.message_ids == ids[:2]
    last = parsed_lines(tpath)[-1]
    assert (last["id"], last["type"], last["payload"]) == (rid, "rewind", {"to-id": ids[1]})
    session.append_message(user_message("e"))
    assert [e.type for e in session.events].count("message") == 5  # nothing left the file
    session.close()
    with Session.load(tpath) as again:
        assert texts(again) == ["a", "b", "e"]
        assert again.message_ids == session.message_ids
        assert reference_replay(again.events)["message_ids"] == again.message_ids
    p = Session.peek(tpath, survey=True)
    assert len(p["messages"]) == 5 and p["survey"]["live_messages"] == 3
    assert p["survey"]["counts"]["rewind"] == 1
    assert p["survey"]["rewound"] == {ids[2]: rid, ids[3]: rid}


def test_survey_names_what_each_rewind_cut(tmp_path):
    path = tmp_path / "t.jsonl"
    write_raw(
        path, meta_line(), msg_line("s", "system", "s", sysprompt=True), msg_line("m1"), msg_line("m2"),
        compaction_line("c1", "m1"), env_line("w1", "rewind", {"to-id": "c1"}), msg_line("m3"),
        env_line("w2", "rewind", {"to-id": None}),
    )
    survey = Session.peek(path, survey=True)["survey"]
    assert survey["rewound"] == {"m2": "w1", "s": "w2", "c1": "w2", "m3": "w2"}
    assert list(survey["rewound"]) == ["m2", "s", "c1", "m3"]  # in the order they were cut
    assert survey["live_messages"] == 0


def test_rewind_to_null_leaves_nothing_not_even_sticky(session, tpath):
    session.append_message(system_message("be careful"))
    session.append_message(user_message("x"))
    session.append_rewind(None)
    assert session.messages == [] and session.message_ids == []
    assert parsed_lines(tpath)[-1]["payload"] == {"to-id": None}
    session.close()
    with Session.load(tpath) as again:
        assert again.messages == []
    assert Session.peek(tpath, survey=True)["survey"]["live_messages"] == 0


def test_rewind_to_a_compaction_summary(session):
    ids = [session.append_message(user_message(t)) for t in "abc"]
    cid = session.append_compaction("sum", ids[1], 10, 2)
    session.append_message(user_message("d"))
    session.append_rewind(cid)
    assert texts(session) == ["sum"] and session.message_ids == [cid]


@pytest.mark.parametrize("target", ["never-written", "compacted", "rewound", "not-a-message"])
def test_rewind_naming_nothing_live_is_refused_before_writing(session, tpath, target):
    ids = [session.append_message(user_message(t)) for t in "abc"]
    op = session.append_tool_dispatched("c1", "t", {})
    if target == "compacted":
        session.append_compaction("sum", ids[1], 10, 2)
        to = ids[0]
    elif target == "rewound":
        session.append_rewind(ids[0])
        to = ids[2]
    elif target == "not-a-message":
        to = op
    else:
        to = "nope"
    before = read(tpath)
    with pytest.raises(DanglingReference) as info:
        session.append_rewind(to)
    assert "rewind" in str(info.value) and "nothing was written" in str(info.value)
    assert read(tpath) == before


def test_rewind_argument_types(session):
    with pytest.raises(TypeError):
        session.append_rewind(3)  # type: ignore[arg-type]


def test_rewind_leaves_tool_operations_grants_and_run_context(session, tpath):
    session.append_message(user_message("a"))
    call = {"id": "c1", "type": "function", "function": {"name": "t", "arguments": "{}"}}
    a = session.append_message(assistant_message(None, [call]))
    op = session.append_tool_dispatched("c1", "t", {})
    session.append_message(tool_message("c1", "ran"))
    session.append_grants({"fs": "rw"})
    session.append_run_context([("id", "hello")])
    session.append_rewind(a)
    assert [(p.op_id, p.state) for p in session.pending_tool_operations()] == [(op, "result-recorded")]
    assert session.grants == {"fs": "rw"}
    session.append_tool_settled(op, "completed")  # the call that ran stays run
    session.close()
    with Session.load(tpath) as again:
        assert again.pending_tool_operations() == [] and again.grants == {"fs": "rw"}
        assert texts(again) == ["a", None]


def test_elision_of_a_rewound_message_is_dangling(session):
    ids = [session.append_message(user_message(t)) for t in "abc"]
    session.append_rewind(ids[0])
    with pytest.raises(DanglingReference):
        session.append_elision([(ids[2], "[gone]")])
    session.append_elision([(ids[0], "[stub]")])
    assert texts(session) == ["[stub]"]


# --------------------------------------------------------------------------- on load


def _load_error(path):
    with pytest.raises(CorruptTranscript) as info:
        Session.load(path)
    return info.value


def test_dangling_rewind_is_fatal_on_load_with_line_and_offset(tmp_path):
    path = tmp_path / "t.jsonl"
    lines = [meta_line(), msg_line("m1"), msg_line("m2"), env_line("w1", "rewind", {"to-id": "m1"}),
             env_line("w2", "rewind", {"to-id": "m2"}), msg_line("m3")]
    data = write_raw(path, *lines)
    e = _load_error(path)
    assert isinstance(e, DanglingReference)
    assert (e.line, e.offset) == (5, sum(len(x) for x in lines[:4]))
    assert "rewind to-id m2 names no message in the live conversation" in e.reason
    assert read(path) == data
    survey = Session.peek(path, survey=True)["survey"]
    assert survey["live_messages"] is None and "line 5" in survey["replay_problem"]


@pytest.mark.parametrize(
    "payload, reason",
    [({}, "rewind has no to-id"), ({"to-id": 7}, "rewind to-id is neither a string nor null"),
     ({"to-id": ["m1"]}, "rewind to-id is neither a string nor null")],
)
def test_malformed_rewind_is_corrupt_on_load(tmp_path, payload, reason):
    path = tmp_path / "t.jsonl"
    write_raw(path, meta_line(), msg_line("m1"), env_line("w1", "rewind", payload), msg_line("m2"))
    e = _load_error(path)
    assert not isinstance(e, DanglingReference)
    assert (e.line, e.reason) == (3, reason)
    assert Session.peek(path, survey=True)["survey"]["live_messages"] is None


def test_compaction_and_elision_after_a_rewind_see_the_cut_list(tmp_path):
    path = tmp_path / "t.jsonl"
    write_raw(
        path, meta_line(), msg_line("m1", "system", "s", sysprompt=True), msg_line("m2"), msg_line("m3"),
        env_line("w1", "rewind", {"to-id": "m2"}), msg_line("m4"), compaction_line("c1", "m4"),
        elision_line("l1", [("c1", "[summary elided]")]),
    )
    with Session.load(path) as s:
        assert s.message_ids == ["m1", "c1"] and texts(s) == ["s", "[summary elided]"]
        assert reference_replay(s.events)["message_ids"] == s.message_ids
    write_raw(path, meta_line(), msg_line("m1"), msg_line("m2"), env_line("w1", "rewind", {"to-id": "m1"}),
              compaction_line("c1", "m2"))
    assert isinstance(_load_error(path), DanglingReference)


def test_a_torn_rewind_line_is_repaired_like_any_other(tmp_path):
    path = tmp_path / "t.jsonl"
    good = write_raw(path, meta_line(), msg_line("m1"), msg_line("m2"))
    with open(path, "ab") as f:
        f.write(env_line("w1", "rewind", {"to-id": "m1"})[:-9])
    with Session.load(path) as s:
        assert s.message_ids == ["m1", "m2"] and len(s.warnings) == 1
    assert read(path) == good


# --------------------------------------------------------------------------- sync, fork, salvage


def test_sync_messages_allow_rewind_records_a_divergence(session, tpath):
    a = session.append_message(user_message("a"))
    session.append_message(user_message("b"))
    session.append_message(user_message("c"))
    mine = [user_message("a"), user_message("B"), user_message("C")]
    with pytest.raises(TranscriptConflict):
        session.sync_messages(mine)
    new = session.sync_messages(mine, allow_rewind=True)
    assert len(new) == 2 and texts(session) == ["a", "B", "C"]
    types = [line["type"] for line in parsed_lines(tpath)]
    assert types[-3:] == ["rewind", "message", "message"]
    assert parsed_lines(tpath)[-3]["payload"] == {"to-id": a}
    session.close()
    with Session.load(tpath) as again:
        assert texts(again) == ["a", "B", "C"]


def test_sync_messages_allow_rewind_to_nothing_and_to_a_prefix(session, tpath):
    session.append_message(user_message("a"))
    session.append_message(user_message("b"))
    assert session.sync_messages([user_message("a")], allow_rewind=True) == []
    assert texts(session) == ["a"] and parsed_lines(tpath)[-1]["type"] == "rewind"
    assert len(session.sync_messages([user_message("z")], allow_rewind=True)) == 1
    assert texts(session) == ["z"]
    assert parsed_lines(tpath)[-2]["payload"] == {"to-id": None}
    before = read(tpath)
    assert session.sync_messages(session.messages, allow_rewind=True) == []  # nothing to do
    assert read(tpath) == before


def test_sync_messages_allow_rewind_checks_everything_before_writing(session, tpath):
    session.append_message(user_message("a"))
    before = read(tpath)
    with pytest.raises(TypeError):
        session.sync_messages([user_message("b"), {"role": "user", "content": {1, 2}}], allow_rewind=True)
    assert read(tpath) == before


def test_fork_through_an_id_a_later_rewind_cut(session, tpath, tmp_path):
    ids = [session.append_message(user_message(t)) for t in "abc"]
    session.append_rewind(ids[0])
    session.close()
    with Session.fork(tpath, tmp_path / "f.jsonl", ids[2]) as forked:
        assert texts(forked) == ["a", "b", "c"]


def test_salvage_keeps_rewinds(tmp_path):
    path = tmp_path / "t.jsonl"
    write_raw(path, meta_line(), msg_line("m1"), b"{broken\n", msg_line("m2"),
              env_line("w1", "rewind", {"to-id": "m1"}), msg_line("m3"))
    report = Session.salvage(path, tmp_path / "out.jsonl")
    assert report["dropped"] and len(report["dropped"]) == 1
    with Session.load(tmp_path / "out.jsonl") as s:
        assert s.message_ids == ["m1", "m3"]


def test_dispatched_rewound_call_stays_dispatched(tmp_path):
    path = tmp_path / "t.jsonl"
    write_raw(path, meta_line(), msg_line("m1"), dispatched_line("d1", "c1"), env_line("w1", "rewind", {"to-id": None}))
    with Session.load(path) as s:
        assert [(op.op_id, op.state) for op in s.pending_tool_operations()] == [("d1", "dispatched")]
