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
