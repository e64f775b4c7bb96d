"""sync_messages knows the objects it synced by identity (issue #17: the cost of a sync
follows what is new), and never lets that hide a contradiction: a dict mutated in place,
a compaction, an elision or a plain append in between are all seen."""

from __future__ import annotations

from typing import Any

import pytest

from llm_agent_session import Session, TranscriptConflict, assistant_message, user_message


def test_synced_objects_are_recognised_and_new_ones_appended(session: Session) -> None:
    msgs: list = [user_message(f"q{i}") for i in range(50)]
    assert len(session.sync_messages(msgs)) == 50
    for i in range(20):
        msgs.append(assistant_message(f"a{i}"))
        assert len(session.sync_messages(msgs)) == 1
    assert [m.content for m in session.messages] == [m.content for m in msgs]
    assert session.sync_messages(msgs) == []


def test_a_dict_mutated_in_place_is_a_conflict(session: Session) -> None:
    msgs: list = [{"role": "user", "content": "hello"}, {"role": "assistant", "content": "hi"}]
    session.sync_messages(msgs)
    msgs[0]["content"] = "changed"
    with pytest.raises(TranscriptConflict):
        session.sync_messages(msgs)


def test_a_replaced_message_is_a_conflict(session: Session) -> None:
    msgs: list = [user_message("a"), user_message("b"), user_message("c")]
    session.sync_messages(msgs)
    msgs[1] = user_message("B")
    with pytest.raises(TranscriptConflict):
        session.sync_messages(msgs)
    msgs[1] = user_message("b")  # equal by value again: accepted
    assert session.sync_messages(msgs + [user_message("d")])


def test_compaction_and_elision_between_syncs(session: Session) -> None:
    msgs: list = [user_message("a"), assistant_message("b"), user_message("c")]
    session.sync_messages(msgs)
    ids = session.message_ids
    session.append_elision([(ids[1], "[stub]")])
    with pytest.raises(TranscriptConflict):
        session.sync_messages(msgs)  # message 1 is now the stub
    msgs = list(session.messages)
    session.sync_messages(msgs + [user_message("d")])
    session.append_compaction("summary", session.message_ids[1], 10, 2)
    with pytest.raises(TranscriptConflict):
        session.sync_messages(msgs + [user_message("d")])
    again: Any = list(session.messages) + [user_message("e")]
    assert len(session.sync_messages(again)) == 1


def test_an_append_between_syncs(session: Session) -> None:
    msgs: list = [user_message("a")]
    session.sync_messages(msgs)
    session.append_message(user_message("by hand"))
    with pytest.raises(TranscriptConflict):
        session.sync_messages(msgs + [user_message("b")])
    assert session.sync_messages(list(session.messages) + [user_message("b")])


@pytest.mark.parametrize(
    "a, b, expected",
    [
        ([], [], 0),
        ([], ["x"], 0),
        (["same"], [], 0),
        # Equal is not identical: JSON keeps 1, 1.0 and True apart (docs/durability.md).
        ([1.5, True], [1.5, 1], 1),
        ([user_message("a")], [user_message("a")], 0),
    ],
)
def test_identical_prefix_counts_the_very_same_objects(a: list, b: list, expected: int) -> None:
    from llm_agent_session import _backend

    shared = [object() for _ in range(3)]
    assert _backend.core.identical_prefix(shared + a, shared + b) == len(shared) + expected
    assert _backend.core.identical_prefix(a, b) == expected


def test_identical_prefix_finds_a_replacement_anywhere() -> None:
    from llm_agent_session import _backend

    items = [user_message(str(i)) for i in range(3000)]
    for at in (0, 1, 1499, 2999):
        other = list(items)
        other[at] = user_message(str(at))  # equal by value, another object
        assert _backend.core.identical_prefix(items, other) == at
        assert _backend.core.identical_prefix(other, items) == at
    assert _backend.core.identical_prefix(items, items[:2000]) == 2000


@pytest.mark.parametrize("kind", [tuple, list, type("MyList", (list,), {})])
def test_any_sequence_syncs_and_a_list_is_read_as_it_is(session: Session, kind: Any) -> None:
    msgs: list = [user_message(f"q{i}") for i in range(5)]
    assert len(session.sync_messages(kind(msgs))) == 5
    msgs.append(assistant_message("a"))
    assert len(session.sync_messages(kind(msgs))) == 1
    msgs[2] = user_message("changed")
    with pytest.raises(TranscriptConflict):
        session.sync_messages(kind(msgs))


def test_an_appended_message_is_what_a_load_reads(session: Session) -> None:
    # A plain Message (text, no tool calls) is kept as the very object in the live list;
    # any other is built again from the line written. Either way a load agrees.
    from llm_agent_session import Message, Session as S

    Sub = type("Sub", (Message,), {})
    given = [
        user_message("plain"),
        Message("system", "sys", sysprompt=True),
        Message("user", "deep", depth=3),
        Message("tool", "out", tool_call_id="c1"),
        Message("assistant", None, tool_calls=[{"id": "c", "type": "function", "function": {"name": "f", "arguments": "{}"}}]),
        Sub("user", "subclass"),
    ]
    for m in given:
        session.append_message(m, extra={"finish-reason": "stop", "role": "ignored"})
    live = session.messages
    assert live[0] is given[0]
    assert type(live[-1]) is Message
    session.close()
    with S.load(session.path) as loaded:
        assert live == loaded.messages == [Message.from_dict(m.to_dict()) for m in given]
