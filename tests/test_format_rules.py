"""Three rules of the format that the README and docs/FORMAT.md state (issue #13), on both
cores: duplicate keys (the last wins, at every level, the envelope's `v` and `type`
included); a `session-meta` line anywhere but first changes nothing; a whole last line
without its `\\n` gets it appended by load, even when replay then refuses the file."""

from __future__ import annotations

import pytest

from llm_agent_session import CorruptTranscript, Session, UnsupportedVersion

TS = "2026-01-01T00:00:00.000000Z"
META = '{"id":"m","payload":{"agent":"a"},"ts":"%s","type":"session-meta","v":1}\n' % TS


def line(id_: str, type_: str, payload: str, tail: str = '"v":1') -> str:
    return '{"id":"%s","payload":%s,"ts":"%s","type":"%s",%s}\n' % (id_, payload, TS, type_, tail)


def load(tpath, text: str):
    tpath.write_bytes(text.encode())
    with Session.load(tpath) as s:
        return s.meta, [m.to_dict() for m in s.messages], s.message_ids, [e.type for e in s.events]


def test_last_duplicate_key_wins_inside_a_payload(tpath):
    text = META + line("u", "message", '{"role":"user","content":"first","content":"second","role":"assistant"}')
    _, messages, _, _ = load(tpath, text)
    assert messages == [{"role": "assistant", "content": "second"}]
    view = Session.peek(tpath)
    assert view["messages"][0].content == "second" and view["envelopes"][1].payload["role"] == "assistant"


def test_last_duplicate_key_wins_deeper_down(tpath):
    call = '{"id":"c1","id":"c2","type":"function","function":{"name":"f","name":"g","arguments":"{}"}}'
    text = META + line("a", "message", '{"role":"assistant","tool_calls":[%s]}' % call)
    _, messages, _, _ = load(tpath, text)
    assert messages[0]["tool_calls"] == [{"id": "c2", "type": "function", "function": {"name": "g", "arguments": "{}"}}]


def test_last_duplicate_v_wins(tpath):
    ok = META + line("u", "message", '{"role":"user"}', tail='"v":2,"v":1')
    assert load(tpath, ok)[1] == [{"role": "user"}]
    refused = META + line("u", "message", '{"role":"user"}', tail='"v":1,"v":2') + line("x", "message", '{"role":"user"}')
    tpath.write_bytes(refused.encode())
    with pytest.raises(UnsupportedVersion) as e:
        Session.load(tpath)
    assert e.value.line == 2


def test_last_duplicate_type_wins_and_can_make_a_second_session_meta(tpath):
    dup = '{"id":"d","payload":{"role":"user","content":"x"},"ts":"%s","type":"message","type":"session-meta","v":1}\n' % TS
    text = META + line("u", "message", '{"role":"user","content":"kept"}') + dup
    meta, messages, ids, types = load(tpath, text)
    assert types == ["session-meta", "message", "session-meta"]
    assert meta == {"agent": "a"}  # the first line's, never the later one's
    assert messages == [{"role": "user", "content": "kept"}] and ids == ["u"]


def test_a_later_session_meta_changes_nothing(tpath):
    second = line("m2", "session-meta", '{"agent":"b","role":"user","content":"not a message"}')
    text = META + line("u1", "message", '{"role":"user","content":"one"}') + second + line(
        "u2", "message", '{"role":"user","content":"two"}'
    )
    meta, messages, ids, types = load(tpath, text)
    assert meta == {"agent": "a"}
    assert [m["content"] for m in messages] == ["one", "two"] and ids == ["u1", "u2"]
    assert types == ["session-meta", "message", "session-meta", "message"]
    view = Session.peek(tpath)
    assert view["meta"] == {"agent": "a"} and view["warnings"] == []
    assert [e.type for e in view["envelopes"]] == types and len(view["messages"]) == 2
    survey = Session.peek(tpath, survey=True)["survey"]
    assert survey["counts"] == {"session-meta": 2, "message": 2} and survey["live_messages"] == 2
    # A compaction can still name the messages on either side of it.
    with Session.load(tpath) as s:
        s.append_compaction("summary", "u2", 10, 2)
        assert [m.content for m in s.messages] == ["summary"]


def test_a_session_meta_as_the_last_line_is_not_torn_and_changes_nothing(tpath):
    text = META + line("u1", "message", '{"role":"user"}') + line("m2", "session-meta", "{}")
    meta, messages, ids, types = load(tpath, text)
    assert (meta, ids, types[-1]) == ({"agent": "a"}, ["u1"], "session-meta")
    assert tpath.read_text() == text  # nothing repaired away


def test_a_whole_last_line_gets_its_newline_even_when_replay_refuses(tpath):
    bad = line("x", "compaction", '{"summary":"s","replaces-through-id":"nowhere","tokens-before":1,"tokens-after":1,"fallback":false}')
    text = META + bad.rstrip("\n")
    tpath.write_bytes(text.encode())
    with pytest.raises(CorruptTranscript) as e:
        Session.load(tpath)
    assert e.value.line == 2
    assert tpath.read_bytes() == (text + "\n").encode()  # the one change: its newline
    with pytest.raises(CorruptTranscript):
        Session.load(tpath)
    assert tpath.read_bytes() == (text + "\n").encode()  # and only once
