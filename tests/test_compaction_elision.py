"""Compaction, elision, their composition, and dangling references (docs/FORMAT.md)."""

from __future__ import annotations

import json

import pytest

from llm_agent_session import (
    CorruptTranscript,
    DanglingReference,
    Message,
    Session,
    TranscriptError,
    assistant_message,
    system_message,
    tool_message,
    user_message,
)

from tests.support.helpers import (
    compaction_line,
    elision_line,
    env_line,
    lines_of,
    meta_line,
    msg_line,
    read,
    write_raw,
)


def _roundtrip(session, tpath):
    live = (list(session.messages), list(session.message_ids))
    session.close()
    with Session.load(tpath) as s:
        assert (s.messages, s.message_ids) == live
        return s


@pytest.fixture
def conv(session):
    msgs = [system_message("sys"), user_message("u1"), assistant_message("a1"),
            Message("user", "pinned", sticky=True), assistant_message("a2"),
            Message("user", "deep", depth=0), user_message("u3"), assistant_message("a3")]
    ids = [session.append_message(m) for m in msgs]
    return msgs, ids


def test_compaction_payload_on_disk(session, tpath, conv):
    msgs, ids = conv
    cid = session.append_compaction("the summary", ids[2], 1234, 56)
    obj = json.loads(lines_of(tpath)[-1])
    assert obj["id"] == cid and obj["type"] == "compaction"
    assert obj["payload"] == {"summary": "the summary", "replaces-through-id": ids[2], "tokens-before": 1234,
                              "tokens-after": 56, "fallback": False}
    session.append_compaction("hard trim", ids[4], 10, 5, fallback=True)
    assert json.loads(lines_of(tpath)[-1])["payload"]["fallback"] is True


def test_compaction_keeps_sticky_prefix_and_splices_summary(session, tpath, conv):
    msgs, ids = conv
    cid = session.append_compaction("S", ids[5], 100, 10)
    assert session.messages == [msgs[0], msgs[3], msgs[5], Message("user", "S"), msgs[6], msgs[7]]
    assert session.message_ids == [ids[0], ids[3], ids[5], cid, ids[6], ids[7]]
    summary = session.messages[3]
    assert summary == Message(role="user", content="S")
    assert summary.to_dict() == {"role": "user", "content": "S"}
    assert not summary.is_sticky
    _roundtrip(session, tpath)


def test_compaction_of_last_message(session, tpath, conv):
    msgs, ids = conv
    cid = session.append_compaction("all", ids[-1], 100, 10)
    assert session.message_ids == [ids[0], ids[3], ids[5], cid]
    _roundtrip(session, tpath)


def test_compaction_of_first_message(session, tpath, conv):
    msgs, ids = conv
    cid = session.append_compaction("first", ids[1], 1, 1)
    assert session.message_ids == [ids[0], cid] + ids[2:]
    _roundtrip(session, tpath)


def test_compactions_compose_naming_earlier_summary(session, tpath, conv):
    msgs, ids = conv
    c1 = session.append_compaction("S1", ids[2], 100, 10)
    c2 = session.append_compaction("S2", c1, 100, 10)
    # c1 folded into c2: sticky ids kept, c1's summary gone
    assert session.message_ids == [ids[0], c2] + ids[3:]
    c3 = session.append_compaction("S3", ids[6], 100, 10)
    assert session.message_ids == [ids[0], ids[3], ids[5], c3, ids[7]]
    assert session.messages[3] == user_message("S3")
    _roundtrip(session, tpath)


def test_compaction_naming_removed_id_is_dangling_on_append(session, tpath, conv):
    msgs, ids = conv
    c1 = session.append_compaction("S1", ids[4], 100, 10)
    before = read(tpath)
    state = (session.messages, session.message_ids)
    for gone in [ids[1], ids[2], ids[4], "no-such-id", session.events[0].id]:
        with pytest.raises(DanglingReference) as ei:
            session.append_compaction("S2", gone, 1, 1)
        assert isinstance(ei.value, TranscriptError)
        assert isinstance(ei.value, CorruptTranscript)  # the lead's decision
    assert read(tpath) == before
    assert (session.messages, session.message_ids) == state
    # the compaction's own id is a live message id now
    session.append_compaction("S2", c1, 1, 1)


def test_compaction_naming_non_message_envelope_is_dangling(session, tpath, conv):
    msgs, ids = conv
    g = session.append_grants({"a": True})
    op = session.append_tool_dispatched("c1", "t", {})
    before = read(tpath)
    for other in [g, op]:
        with pytest.raises(DanglingReference):
            session.append_compaction("S", other, 1, 1)
        with pytest.raises(DanglingReference):
            session.append_elision([(other, "stub")])
    assert read(tpath) == before


def test_elision_payload_and_effect(session, tpath, conv):
    msgs, ids = conv
    eid = session.append_elision([(ids[2], "[a1 elided]"), (ids[3], [{"type": "text", "text": "stub"}])])
    obj = json.loads(lines_of(tpath)[-1])
    assert obj["id"] == eid and obj["type"] == "elision"
    assert obj["payload"] == {"items": [{"id": ids[2], "stub": "[a1 elided]"},
                                        {"id": ids[3], "stub": [{"type": "text", "text": "stub"}]}]}
    assert session.message_ids == ids  # same ids, same order, same length
    expected = list(msgs)
    expected[2] = assistant_message("[a1 elided]")
    expected[3] = Message("user", [{"type": "text", "text": "stub"}], sticky=True)
    assert session.messages == expected
    assert eid not in session.message_ids
    _roundtrip(session, tpath)


def test_elision_keeps_role_tool_call_id_and_stickiness(session, tpath):
    calls = [{"id": "c1", "type": "function", "function": {"name": "f", "arguments": "{}"}}]
    a = session.append_message(assistant_message("calling", calls))
    t = session.append_message(Message("tool", "huge output " * 50, tool_call_id="c1", name="f", depth=2))
    session.append_elision([(t, "[output elided]"), (a, None)])
    assert session.messages == [Message("assistant", None, tool_calls=calls),
                                Message("tool", "[output elided]", tool_call_id="c1", name="f", depth=2)]
    # the original content stays in the file on its own line
    assert b"huge output" in read(tpath)
    s = _roundtrip(session, tpath)
    assert s.messages[1].is_sticky


def test_elision_then_compaction(session, tpath, conv):
    msgs, ids = conv
    session.append_elision([(ids[3], "pinned-stub"), (ids[2], "a1-stub")])
    cid = session.append_compaction("S", ids[4], 1, 1)
    # the kept sticky entry keeps its stub
    assert session.messages[:3] == [msgs[0], Message("user", "pinned-stub", sticky=True), user_message("S")]
    assert session.message_ids[:3] == [ids[0], ids[3], cid]
    _roundtrip(session, tpath)


def test_compaction_then_elision_of_kept_and_of_summary(session, tpath, conv):
    msgs, ids = conv
    cid = session.append_compaction("S", ids[4], 1, 1)
    session.append_elision([(cid, "summary-stub"), (ids[3], "kept-stub"), (ids[7], "tail-stub")])
    assert session.messages == [msgs[0], Message("user", "kept-stub", sticky=True), user_message("summary-stub"),
                                msgs[5], msgs[6], assistant_message("tail-stub")]
    _roundtrip(session, tpath)


def test_elision_of_compacted_away_id_is_dangling(session, tpath, conv):
    msgs, ids = conv
    session.append_compaction("S", ids[4], 1, 1)
    before = read(tpath)
    with pytest.raises(DanglingReference):
        session.append_elision([(ids[6], "ok"), (ids[2], "gone")])
    with pytest.raises(DanglingReference):
        session.append_elision([("nope", "x")])
    assert read(tpath) == before
    assert session.messages[-2] == msgs[6]  # nothing of the refused elision applied


@pytest.mark.parametrize("stub", [7, {"type": "text"}, True, 1.5])
def test_a_stub_that_is_not_message_content_is_refused_before_writing(session, tpath, conv, stub):
    """Issue #24, item 13: a stub becomes the message's content, so it is what content may
    be (a str, a list of content parts, or None), checked like append_message's."""
    msgs, ids = conv
    before = read(tpath)
    with pytest.raises(TypeError, match=r"elision item 1 stub .* must be a str, a list of content parts or None"):
        session.append_elision([(ids[1], "fine"), (ids[2], stub)])
    assert read(tpath) == before and session.messages == msgs
    session.append_elision([(ids[1], None), (ids[2], [{"type": "text", "text": "t"}]), (ids[3], ("a",))])
    _roundtrip(session, tpath)


def test_a_stub_that_is_not_message_content_on_disk_loads_as_it_is(tpath):
    """Written by another writer: both cores read it as the message's content, and the
    session's own messages sync back as they are (nothing written, nothing raised)."""
    write_raw(tpath, meta_line(), msg_line("m1", "user", "x"), elision_line("e1", [("m1", 7)]))
    with Session.load(tpath) as s:
        assert s.messages == [Message("user", 7)]
        assert s.sync_messages(s.messages) == []
        assert s.sync_messages([m.to_dict() for m in s.messages]) == []
    assert read(tpath).count(b"\n") == 3


def test_elision_twice_and_summary_folded_again(session, tpath, conv):
    msgs, ids = conv
    session.append_elision([(ids[1], "one")])
    session.append_elision([(ids[1], "two")])
    assert session.messages[1] == user_message("two")
    c1 = session.append_compaction("S1", ids[2], 1, 1)
    session.append_elision([(c1, "S1-stub")])
    c2 = session.append_compaction("S2", c1, 1, 1)
    assert session.message_ids[:2] == [ids[0], c2]
    _roundtrip(session, tpath)


# --------------------------------------------------------------------------- on load


def _expect_corrupt(tpath, data, line):
    with pytest.raises(CorruptTranscript) as ei:
        Session.load(tpath)
    e = ei.value
    offset = sum(len(l) + 1 for l in data.split(b"\n")[: line - 1])
    assert e.line == line
    assert e.offset == offset
    msg = str(e)
    assert str(tpath) in msg and f"line {line}" in msg and f"byte {offset}" in msg
    assert e.path is not None and e.reason
    assert read(tpath) == data  # nothing changed
    return e


@pytest.mark.parametrize("last", [False, True])
def test_dangling_compaction_on_load(tpath, last):
    lines = [meta_line(), msg_line("m1"), msg_line("m2"), compaction_line("c1", "m1"),
             compaction_line("c2", "m1")]
    if not last:
        lines.append(msg_line("m3"))
    data = write_raw(tpath, *lines)
    _expect_corrupt(tpath, data, 5)


@pytest.mark.parametrize("target", ["meta-0", "g1", "nothing"])
def test_compaction_naming_non_message_on_load(tpath, target):
    data = write_raw(tpath, meta_line(), msg_line("m1"), env_line("g1", "grants", {"grants": {}}),
                     compaction_line("c1", target), msg_line("m2"))
    _expect_corrupt(tpath, data, 4)


def test_dangling_elision_on_load(tpath):
    data = write_raw(tpath, meta_line(), msg_line("m1"), msg_line("m2"), compaction_line("c1", "m2"),
                     elision_line("e1", [("c1", "ok"), ("m1", "gone")]), msg_line("m3"))
    _expect_corrupt(tpath, data, 5)


def test_elision_forward_reference_is_dangling_on_load(tpath):
    # "as it stands at that point": an id written later does not count
    data = write_raw(tpath, meta_line(), msg_line("m1"), elision_line("e1", [("m2", "x")]), msg_line("m2"))
    _expect_corrupt(tpath, data, 3)


def test_load_applies_fold_in_file_order(tpath):
    write_raw(tpath, meta_line(),
              msg_line("s", "system", "sys", sysprompt=True),
              msg_line("m1", "user", "u1"),
              msg_line("m2", "assistant", "a1"),
              elision_line("e1", [("m2", "a1-stub")]),
              msg_line("m3", "user", "u2", sticky=True),
              compaction_line("c1", "m3", summary="S1"),
              msg_line("m4", "assistant", "a2", depth=1),
              elision_line("e2", [("c1", "S1-stub")]),
              compaction_line("c2", "c1", summary="S2"),
              env_line("g", "grants", {"grants": {"x": 1}}),
              msg_line("m5", "user", "u3"))
    with Session.load(tpath) as s:
        assert s.message_ids == ["s", "m3", "c2", "m4", "m5"]
        assert s.messages == [system_message("sys"), Message("user", "u2", sticky=True), user_message("S2"),
                              Message("assistant", "a2", depth=1), user_message("u3")]
        assert s.grants == {"x": 1}


def test_compaction_not_a_message_in_events(session, conv):
    msgs, ids = conv
    cid = session.append_compaction("S", ids[1], 1, 1)
    assert session.events[-1].type == "compaction" and session.events[-1].id == cid
    assert [e.id for e in session.events if e.type == "message"] == ids
