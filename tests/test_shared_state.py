"""Issue #24, item 2: nothing a caller gets from a session, or hands to it, is shared with
the session's state. Whatever the caller then edits in place, memory equals what
``Session.load`` reads from the file, on both cores."""

from __future__ import annotations

import random
from typing import Any, Dict, List

import pytest

from llm_agent_session import (
    Message,
    Session,
    TranscriptConflict,
    _backend,
    assistant_message,
    tool_message,
    user_message,
)

# --------------------------------------------------------------------------- what the issue saw


def test_editing_to_dict_of_messages_is_a_conflict_not_a_silent_change(session):
    session.append_message(Message("user", [{"type": "text", "text": "hi"}]))
    sent = [m.to_dict() for m in session.messages]
    sent[-1]["content"][-1]["cache_control"] = {"type": "ephemeral"}  # a prompt-caching marker
    assert session.messages[-1].content == [{"type": "text", "text": "hi"}]
    with pytest.raises(TranscriptConflict):
        session.sync_messages(sent)  # what the model is sent now differs from the transcript
    session.sync_messages(sent, allow_rewind=True)  # ...and is recorded as such
    assert session.messages[-1].content[-1]["cache_control"] == {"type": "ephemeral"}
    assert_memory_is_what_load_reads(session)


def test_a_sessions_messages_are_read_only(session):
    session.append_message(assistant_message(None, [{"id": "c1", "type": "function",
                                                      "function": {"name": "f", "arguments": "{}"}}]))
    m = session.messages[-1]
    with pytest.raises(TypeError, match="Message.to_dict"):
        m.tool_calls[0]["id"] = "other"
    with pytest.raises(TypeError):
        m.tool_calls.append({"id": "c2"})
    assert m.tool_calls == [{"id": "c1", "type": "function", "function": {"name": "f", "arguments": "{}"}}]
    mine = m.to_dict()["tool_calls"]  # plain lists and dicts, the caller's own
    mine[0]["function"]["name"] = "g"
    assert type(mine) is list and session.messages[-1].tool_calls[0]["function"]["name"] == "f"


def test_editing_an_event_payload_changes_nothing(session):
    session.append_message(Message("user", [{"type": "text", "text": "hi"}]), extra={"item": {"n": [1]}})
    session.append_tool_dispatched("c1", "t", {"path": ["a"]})
    for event in session.events:
        scribble(event.payload)
    assert session.messages[-1].content == [{"type": "text", "text": "hi"}]
    assert session.pending_tool_operations()[0].arguments == {"path": ["a"]}
    assert session.events[1].payload["item"] == {"n": [1]}
    assert_memory_is_what_load_reads(session)


def test_a_message_edited_after_its_sync_is_a_conflict(session):
    """sync_messages knows by identity only what cannot change: a Message whose content
    is a list is compared again, so an edit in place between two syncs is seen."""
    mine: List[Any] = [user_message("q"), Message("user", [{"type": "text", "text": "a"}])]
    session.sync_messages(mine)
    mine[1].content.append({"type": "text", "text": "added later"})
    with pytest.raises(TranscriptConflict):
        session.sync_messages(mine + [user_message("next")])
    assert_memory_is_what_load_reads(session)


def test_content_nested_as_deep_as_a_file_may_hold(tpath):
    """A message read from a file may nest 512 deep: kept read-only, copied by to_dict,
    compared by sync_messages and copied by events, none of it by recursion."""
    from tests.support.helpers import meta_line, write_raw

    depth = 510
    line = b'{"id":"m1","payload":{"content":' + b"[" * depth + b"]" * depth
    write_raw(tpath, meta_line(), line + b',"role":"user"},"ts":"2026-01-01T00:00:00.000000Z","type":"message","v":1}\n')
    with Session.load(tpath) as s:
        [m] = s.messages
        with pytest.raises(TypeError):
            m.content.append(1)
        assert s.sync_messages([m.to_dict()]) == [] and s.sync_messages([m]) == []
        assert s.events[1].payload["content"] == m.content


# --------------------------------------------------------------------------- any sequence


def scribble(value: Any) -> None:
    """Edit `value` in place everywhere it can be edited. The lists and dicts of a
    session's own Messages refuse (TypeError): that is the other half of the rule."""
    if isinstance(value, Message):
        for field in (value.content, value.tool_calls):
            scribble(field)
        return
    try:
        if isinstance(value, dict):
            for key in list(value):
                scribble(value[key])
                value[key] = ["scribbled"] if isinstance(value[key], str) else value[key]
            value["scribbled"] = True
        elif isinstance(value, list):
            for item in value:
                scribble(item)
            value.append("scribbled")
    except TypeError as e:
        assert "belongs to a session's Message" in str(e)


def observed(s: Session) -> Dict[str, Any]:
    """Everything a caller can read of a session's state, as plain values."""
    return {
        "meta": s.meta,
        "messages": [m.to_dict() for m in s.messages],
        "ids": s.message_ids,
        "grants": s.grants,
        "pending": [(op.op_id, op.call_id, op.arguments, op.state) for op in s.pending_tool_operations()],
        "events": [(e.id, e.type, e.payload) for e in s.events],
        "extras": {i: s.message_extra(i) for i in (e.id for e in s.events if e.type == "message")},
    }


def assert_memory_is_what_load_reads(s: Session) -> None:
    memory = observed(s)
    s.close()
    previous = _backend.core.name
    try:
        for core in _backend.available():  # what either core reads back
            _backend.use(core)
            with Session.load(s.path) as again:
                assert observed(again) == memory, core
    finally:
        _backend.use(previous)


def parts(rng: random.Random) -> List[Dict[str, Any]]:
    return [{"type": "text", "text": f"t{rng.randrange(9)}", "meta": {"n": [rng.randrange(9)]}}]


def a_message(rng: random.Random, calls: List[str]) -> Any:
    kind = rng.randrange(5)
    if kind == 0:
        return user_message(f"q{rng.randrange(99)}")
    if kind == 1:
        return Message("user", parts(rng))
    if kind == 2:
        call_id = f"call_{rng.randrange(3)}"  # reused, as providers do
        calls.append(call_id)
        args = {"path": [f"p{rng.randrange(9)}"], "opts": {"deep": [1, {"x": True}]}}
        return assistant_message(None, [{"id": call_id, "type": "function", "function": {"name": "f", "arguments": args}}])
    if kind == 3 and calls:
        return tool_message(rng.choice(calls), parts(rng))
    return {"role": "assistant", "content": parts(rng), "name": "n"}  # a plain mapping


def one_step(s: Session, rng: random.Random, calls: List[str], mine: List[Any]) -> None:
    """One call, chosen at random; what it was handed and what it gave back are then
    scribbled on."""
    live = s.message_ids
    handed: List[Any] = []
    op = rng.randrange(12)
    if op <= 2:
        m, extra = a_message(rng, calls), {"item": {"list": [1, {"deep": "x"}]}}
        handed += [m, extra]
        handed.append(s.append_message(m, extra=extra))
    elif op == 3:
        grants = {"fs": {"paths": ["/tmp"]}}
        handed += [grants]
        s.append_grants(grants)
    elif op == 4 and live:
        s.append_compaction("summary", rng.choice(live), 10, 2)
    elif op == 5 and live:
        stub = rng.choice(["[elided]", parts(rng), None])
        items = [(rng.choice(live), stub)]
        handed += [stub, items]
        s.append_elision(items)
    elif op == 6 and live:
        s.append_rewind(rng.choice(live + [None]))
    elif op == 7:
        args = {"path": ["a"], "opts": {"n": [1, 2]}}
        handed.append(args)
        s.append_tool_dispatched(rng.choice(calls or ["call_0"]), "f", args)
    elif op == 8 and s.pending_tool_operations():
        s.append_tool_settled(rng.choice(s.pending_tool_operations()).op_id, "completed")
    elif op == 9:
        facts = [("cwd", {"path": ["/w"]})]
        handed.append(facts)
        s.append_run_context([("rules", f"be brief {rng.randrange(3)}")], facts)
    elif op == 10:
        s.answer_interrupted_tool_calls()
    else:
        # A runtime's own list: the session's messages, plus new ones (sometimes edited).
        if rng.randrange(2) or not mine:
            mine[:] = s.messages
        mine.append(a_message(rng, calls))
        try:
            s.sync_messages(mine, allow_rewind=rng.randrange(2) == 0)
        except (TranscriptConflict, TypeError):  # an item edited earlier: it differs, or is no message
            mine[:] = s.messages
        handed.extend(mine)
    # Everything read back and handed in is edited in place.
    for got in (s.messages, [m.to_dict() for m in s.messages], s.grants, s.meta,
                [op.arguments for op in s.pending_tool_operations()],
                [e.payload for e in s.events],
                [s.message_extra(e.id) for e in s.events if e.type == "message"],
                *handed):
        scribble(got)


@pytest.mark.parametrize("seed", range(6))
def test_any_sequence_of_calls_and_edits_leaves_memory_equal_to_load(tpath, seed):
    rng = random.Random(seed)
    meta = {"agent": {"name": "a", "tags": ["x"]}}
    s = Session.create(tpath, meta)
    scribble(meta)
    calls: List[str] = []
    mine: List[Any] = []
    for _ in range(40):
        one_step(s, rng, calls, mine)
    assert_memory_is_what_load_reads(s)
