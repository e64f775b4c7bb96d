"""docs/FORMAT.md, `message`; the README's API: the Message value type, helpers, extras, stickiness, sync_messages."""

from __future__ import annotations

import dataclasses
import json

import pytest

from llm_agent_session import (
    Message,
    Session,
    TranscriptConflict,
    TranscriptError,
    assistant_message,
    system_message,
    tool_message,
    user_message,
)

from tests.support.helpers import lines_of, read


# --------------------------------------------------------------------------- value type


def test_message_is_frozen_and_equal_by_value():
    a = Message("user", "hi", name="x")
    b = Message("user", "hi", name="x")
    assert a == b
    assert a != Message("user", "hi")
    assert a != Message("assistant", "hi", name="x")
    with pytest.raises(dataclasses.FrozenInstanceError):
        a.content = "other"  # type: ignore[misc]
    assert dataclasses.is_dataclass(a)


def test_message_fields_after_content_are_keyword_only():
    with pytest.raises(TypeError):
        Message("user", "hi", None, "c1")  # type: ignore[misc]


def test_message_defaults():
    m = Message("user")
    assert (m.role, m.content, m.tool_calls, m.tool_call_id, m.name, m.sticky, m.sysprompt, m.depth) == (
        "user", None, None, None, None, False, False, None)


@pytest.mark.parametrize("kw,sticky", [
    ({}, False),
    ({"sticky": True}, True),
    ({"sysprompt": True}, True),
    ({"depth": 0}, True),  # depth *set*, even to 0
    ({"depth": 3}, True),
    ({"name": "n", "tool_call_id": "c"}, False),
])
def test_is_sticky(kw, sticky):
    assert Message("user", "x", **kw).is_sticky is sticky


def test_to_dict_leaves_unset_out():
    assert Message("user", "hi").to_dict() == {"role": "user", "content": "hi"}
    assert Message("assistant").to_dict() == {"role": "assistant"}
    full = Message("tool", [{"type": "text", "text": "t"}], tool_calls=[{"id": "a"}], tool_call_id="c",
                   name="n", sticky=True, sysprompt=True, depth=2)
    assert full.to_dict() == {"role": "tool", "content": [{"type": "text", "text": "t"}],
                              "tool_calls": [{"id": "a"}], "tool_call_id": "c", "name": "n",
                              "sticky": True, "sysprompt": True, "depth": 2}
    assert Message.from_dict(full.to_dict()) == full


def test_from_dict_ignores_unknown_keys():
    m = Message.from_dict({"role": "assistant", "content": "c", "finish-reason": "stop", "whatever": [1]})
    assert m == Message("assistant", "c")


def test_helpers():
    assert system_message("be nice") == Message("system", "be nice", sysprompt=True)
    assert system_message("x").is_sticky
    assert user_message("q") == Message("user", "q")
    assert user_message([{"type": "text", "text": "q"}]).content == [{"type": "text", "text": "q"}]
    calls = [{"id": "c1", "type": "function", "function": {"name": "f", "arguments": "{}"}}]
    assert assistant_message() == Message("assistant")
    assert assistant_message("a") == Message("assistant", "a")
    assert assistant_message(None, calls) == Message("assistant", None, tool_calls=calls)
    assert assistant_message(tool_calls=calls).tool_calls == calls
    assert tool_message("c1", "out") == Message("tool", "out", tool_call_id="c1")


# --------------------------------------------------------------------------- append / extras


def test_append_message_and_mapping_are_equivalent(tmp_path):
    a, b = tmp_path / "a.jsonl", tmp_path / "b.jsonl"
    msgs = [system_message("s"), user_message("u"), Message("assistant", "x", name="n", depth=1),
            tool_message("c", [{"type": "text", "text": "r"}])]
    with Session.create(a, {}) as sa, Session.create(b, {}) as sb:
        for m in msgs:
            sa.append_message(m)
            sb.append_message(m.to_dict())
        assert sa.messages == sb.messages == msgs
    pa = [json.loads(l)["payload"] for l in lines_of(a)]
    pb = [json.loads(l)["payload"] for l in lines_of(b)]
    assert pa == pb


def test_extras_visible_in_events_dropped_from_messages(session, tpath):
    mid = session.append_message(assistant_message("done"), extra={"finish-reason": "length", "usage": {"in": 3}})
    assert session.messages == [assistant_message("done")]
    assert session.events[-1].payload == {"role": "assistant", "content": "done", "finish-reason": "length",
                                          "usage": {"in": 3}}
    session.close()
    with Session.load(tpath) as s:
        assert s.messages == [assistant_message("done")]
        assert s.message_ids == [mid]
        assert s.events[-1].payload["finish-reason"] == "length"


def test_message_key_wins_over_extra(session, tpath):
    session.append_message(Message("user", "real", name="me"),
                           extra={"role": "system", "content": "forged", "name": "other", "finish-reason": "x"})
    payload = json.loads(lines_of(tpath)[-1])["payload"]
    assert payload == {"role": "user", "content": "real", "name": "me", "finish-reason": "x"}
    assert session.messages == [Message("user", "real", name="me")]
    session.close()
    with Session.load(tpath) as s:
        assert s.messages == [Message("user", "real", name="me")]


def test_extra_with_unset_message_key_live_equals_loaded(session, tpath):
    # The message leaves `name` and `sticky` unset, so the extras' values land in the payload;
    # whatever that means, the live state must be what load gives (docs/durability.md).
    session.append_message(user_message("x"), extra={"name": "from-extra", "sticky": True})
    session.append_message(user_message("y"))
    live = (session.messages, session.message_ids)
    session.close()
    with Session.load(tpath) as s:
        assert (s.messages, s.message_ids) == live


def test_extra_must_be_a_mapping_of_json(session, tpath):
    before = read(tpath)
    with pytest.raises((TypeError, ValueError)):
        session.append_message(user_message("x"), extra={"k": {1, 2}})
    assert read(tpath) == before


@pytest.mark.parametrize("bad", [{"content": "no role"}, {"role": 5, "content": "x"}, {"role": None}])
def test_message_without_string_role_refused(session, tpath, bad):
    before = read(tpath)
    with pytest.raises((TypeError, ValueError)):
        session.append_message(bad)
    assert read(tpath) == before
    assert session.messages == []


def test_messages_and_ids_returned_as_lists(session):
    ids = [session.append_message(user_message(str(i))) for i in range(3)]
    assert list(session.message_ids) == ids
    assert [m.content for m in session.messages] == ["0", "1", "2"]
    # mutating what the caller got must not change the session
    got = session.messages
    try:
        got.append(user_message("intruder"))
    except (AttributeError, TypeError):
        pass
    assert len(session.messages) == 3


def test_sticky_flags_round_trip(session, tpath):
    msgs = [system_message("s"), Message("user", "a", sticky=True), Message("user", "b", depth=0),
            Message("user", "c")]
    for m in msgs:
        session.append_message(m)
    session.close()
    with Session.load(tpath) as s:
        assert s.messages == msgs
        assert [m.is_sticky for m in s.messages] == [True, True, True, False]


# --------------------------------------------------------------------------- sync_messages


def test_sync_messages_appends_only_the_new_tail(session, tpath):
    conv = [system_message("s"), user_message("u1")]
    ids = session.sync_messages(conv)
    assert len(ids) == 2 and session.message_ids == ids
    assert session.sync_messages(conv) == []
    before = read(tpath)
    conv2 = conv + [assistant_message("a1"), {"role": "user", "content": "u2"}]
    new = session.sync_messages(conv2)
    assert len(new) == 2
    assert session.message_ids == ids + new
    assert session.messages == conv + [assistant_message("a1"), user_message("u2")]
    assert read(tpath).startswith(before)
    assert len(lines_of(tpath)) == 5
    session.close()
    with Session.load(tpath) as s:
        assert s.messages == conv + [assistant_message("a1"), user_message("u2")]


@pytest.mark.parametrize("variant", ["changed", "shorter", "reordered", "empty", "role"])
def test_sync_messages_conflict_writes_nothing(session, tpath, variant):
    conv = [system_message("s"), user_message("u1"), assistant_message("a1")]
    session.sync_messages(conv)
    before = read(tpath)
    other = {
        "changed": [system_message("s"), user_message("DIFFERENT"), assistant_message("a1"), user_message("n")],
        "shorter": [system_message("s"), user_message("u1")],
        "reordered": [user_message("u1"), system_message("s"), assistant_message("a1"), user_message("n")],
        "empty": [],
        "role": [system_message("s"), Message("assistant", "u1"), assistant_message("a1"), user_message("n")],
    }[variant]
    with pytest.raises(TranscriptConflict):
        session.sync_messages(other)
    assert read(tpath) == before
    assert session.messages == conv
    assert issubclass(TranscriptConflict, TranscriptError)


def test_sync_messages_after_compaction_and_elision(session, tpath):
    ids = session.sync_messages([system_message("s"), user_message("u1"), assistant_message("a1"),
                                 user_message("u2")])
    cid = session.append_compaction("summary of u1 a1", ids[2], 100, 10)
    session.append_elision([(ids[3], "[elided]")])
    current = [system_message("s"), user_message("summary of u1 a1"), user_message("[elided]")]
    assert session.messages == current
    with pytest.raises(TranscriptConflict):
        session.sync_messages([system_message("s"), user_message("u1"), assistant_message("a1"),
                               user_message("u2"), user_message("u3")])
    new = session.sync_messages(current + [assistant_message("a2")])
    assert len(new) == 1
    assert session.message_ids == [ids[0], cid, ids[3], new[0]]
    live = (session.messages, session.message_ids)
    session.close()
    with Session.load(tpath) as s:
        assert (s.messages, s.message_ids) == live


def test_sync_messages_on_resume(session, tpath):
    conv = [system_message("s"), user_message("u1")]
    session.sync_messages(conv)
    session.close()
    with Session.load(tpath) as s:
        assert s.sync_messages(conv) == []
        assert len(s.sync_messages(conv + [assistant_message("a")])) == 1
    with Session.load(tpath) as s:
        assert s.messages == conv + [assistant_message("a")]


def test_sync_messages_bad_value_writes_nothing(session, tpath):
    session.sync_messages([user_message("u1")])
    before = read(tpath)
    with pytest.raises((TypeError, ValueError)):
        session.sync_messages([user_message("u1"), user_message("ok"), user_message(float("nan"))])
    # serialise first: nothing of the batch may be written when one of its messages is bad
    assert read(tpath) == before
    assert session.messages == [user_message("u1")]


def test_tuples_and_mapping_types_live_equals_loaded(session, tpath):
    from collections import OrderedDict
    from types import MappingProxyType
    session.append_message(Message("user", ("a", ("b", 1))), extra=MappingProxyType({"k": (1, 2)}))
    session.append_message(Message("assistant", None, tool_calls=({"id": "c", "args": (1,)},)))
    session.append_message(OrderedDict([("content", "od"), ("role", "user")]))
    session.append_grants(MappingProxyType({"g": OrderedDict(b=1, a=2)}))
    live = (session.messages, session.message_ids, session.grants, list(session.events))
    session.close()
    with Session.load(tpath) as s:
        assert (s.messages, s.message_ids, s.grants, list(s.events)) == live
    assert live[0][0].content == ["a", ["b", 1]]
