"""History: the whole transcript in file order with what became of each line, held to
``Session.load`` (its live list and pending operations) on generated transcripts."""

from __future__ import annotations

from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings

from llm_agent_session import Session, TranscriptError, assistant_message, tool_message, user_message
from llm_agent_session.history import History, Removal
from tests.test_native_replay_differential import transcripts


def call(id_: str) -> dict:
    return {"id": id_, "type": "function", "function": {"name": "bash", "arguments": "{}"}}


def test_what_became_of_each_line(tpath: Any) -> None:
    with Session.create(tpath, {"agent": "t"}) as s:
        first = s.append_message(user_message("first"))
        second = s.append_message(assistant_message("second"))
        grants = s.append_grants({"bash": "allow"})
        made = s.append_message(assistant_message(None, [call("call_0")]))
        done = s.append_tool_dispatched("call_0", "bash", {"cmd": "ls"})
        answer = s.append_message(tool_message("call_0", "a.txt"))
        s.append_tool_settled(done, "failed", error="exit 2")
        compaction = s.append_compaction("earlier turns", second, 100, 10)
        elision = s.append_elision([(answer, "[elided]")])
        late = s.append_message(user_message("late"))
        rewind = s.append_rewind(answer)
        open_op = s.append_tool_dispatched("call_0", "bash", {"cmd": "rm"})
        loaded_ids = list(s.message_ids)

    history = History.read(tpath)
    assert history.problems == []
    assert history.live_ids == loaded_ids == [compaction, made, answer]
    assert history.removed[first] == Removal(compaction, "compaction", history.removed[first].ts)
    assert history.removed[second].by == compaction
    assert history.removed[late] == Removal(rewind, "rewind", history.removed[late].ts)
    assert made not in history.removed and history.is_live(made) and not history.is_live(first)
    assert history.elided == {answer: [elision]}
    failed = history.operations[done]
    assert (failed.state, failed.outcome, failed.answered_by, failed.grants_id) == ("failed", "failed", answer, grants)
    assert failed.settle["error"] == "exit 2" and history.grants_for(failed) == {"bash": "allow"}
    events = {e.id: e for e in Session.peek(tpath)["envelopes"]}
    assert failed.answered_at == events[answer].ts and failed.dispatch == events[done].payload
    assert failed.dispatch["arguments"] == {"cmd": "ls"} and "idempotency" in failed.dispatch
    pending = history.operations[open_op]
    assert (pending.state, pending.pending, pending.answered_by) == ("dispatched", True, None)
    assert [op.op_id for op in history.pending()] == [open_op]
    assert history.answers == {answer: done} and history.calls == {"call_0": [done, open_op]}
    assert history.index_of(grants) == 3 and history.index_of("nothing") is None

    # Without payloads: the same facts, no tool values and no run-context texts kept.
    lean = History.read(tpath, keep_payloads=False)
    assert (lean.live_ids, lean.removed, lean.elided, lean.answers) == (
        history.live_ids, history.removed, history.elided, history.answers)
    assert [(op.op_id, op.state, op.answered_by, op.arguments, op.settle) for op in lean.operations.values()] == [
        (done, "failed", answer, None, {}), (open_op, "dispatched", None, None, {})]


def test_elided_keeps_each_entry_s_elisions_in_order_and_feed_adds_to_them(tpath: Any) -> None:
    # Entries first elided in an order that is not their own, some several times: the
    # keys come in the order each was first elided, each value in file order.
    with Session.create(tpath, {"agent": "t"}) as s:
        a, b, c = (s.append_message(user_message(text)) for text in "abc")
        first = s.append_elision([(c, "[c]"), (a, "[a]")])
        second = s.append_elision([(a, "[a2]")])
        third = s.append_elision([(b, "[b]"), (c, "[c2]"), (a, "[a3]")])
    history = History.read(tpath, keep_payloads=False)
    expected = {c: [first, third], a: [first, second, third], b: [third]}
    assert list(history.elided.items()) == list(expected.items())
    assert history.elided == expected and len(history.elided) == 3
    assert history.elided.get(c) == [first, third] and history.elided.get(first) is None
    assert list(history.elided) == [c, a, b] and first not in history.elided
    with Session.load(tpath) as s:
        fourth = s.append_elision([(b, "[b2]")])
        event = Session.peek(tpath)["envelopes"][-1]
    history.feed(event)
    assert history.elided[b] == [third, fourth] and history.elided[a] == [first, second, third]


def test_a_reference_to_nothing_live_is_a_problem_and_the_rest_is_read(tpath: Any) -> None:
    with Session.create(tpath, {"agent": "t"}) as s:
        kept = s.append_message(user_message("kept"))
        s.append_rewind(None)
    with open(tpath, "ab") as f:  # a compaction naming what the rewind removed: load refuses it
        f.write(b'{"id":"c1","payload":{"fallback":false,"replaces-through-id":"' + kept.encode()
                + b'","summary":"s","tokens-after":1,"tokens-before":2},"ts":"2026-01-01T00:00:00.000000Z",'
                b'"type":"compaction","v":1}\n'
                b'{"id":"m9","payload":{"content":"after","role":"user"},"ts":"2026-01-01T00:00:00.000000Z",'
                b'"type":"message","v":1}\n')
    history = History.read(tpath)
    assert [(p.index, p.id, p.type) for p in history.problems] == [(3, "c1", "compaction")]
    assert "names no message in the live conversation" in history.problems[0].reason
    assert history.live_ids == ["m9"]


@pytest.mark.slow
@settings(max_examples=150, deadline=None, suppress_health_check=list(HealthCheck))
@given(data=transcripts())
def test_history_agrees_with_load(tmp_path_factory: Any, data: bytes) -> None:
    path = tmp_path_factory.mktemp("h") / "t.jsonl"
    path.write_bytes(data)
    history = History.read(path)
    try:
        with Session.load(path) as s:
            ids, pending = list(s.message_ids), s.pending_tool_operations()
    except TranscriptError:
        return
    assert history.problems == []
    assert history.live_ids == ids
    assert history.pending() == pending
    # every entry that ever joined the live list is either live now or was removed by one record
    entries = {e.id for e in Session.peek(path)["envelopes"] if e.type in ("message", "compaction")}
    assert entries == set(ids) | set(history.removed)
    assert not set(ids) & set(history.removed)
    assert history.removal_counts() == _counted_one_by_one(history)


def _counted_one_by_one(history: History) -> Any:
    counted: Any = {}
    for entry_id, removal in history.removed.items():
        n, first = counted.get(removal.by, (0, entry_id))
        counted[removal.by] = (n + 1, first)
    return counted


def test_removal_counts_are_what_a_look_at_every_entry_finds_also_after_feed(tpath: Any) -> None:
    """Per compaction and rewind, how many entries it took out and the first: on a native
    read, counted by the core without making every entry's id; then with what ``feed``
    adds (and after an entry of the read was looked at, the plain way)."""
    with Session.create(tpath, {}) as s:
        ids = [s.append_message(user_message(f"m{n}")) for n in range(6)]
        compaction = s.append_compaction("the first four", ids[3], 500, 50)
        more = [s.append_message(user_message(f"n{n}")) for n in range(3)]
        rewind = s.append_rewind(more[0])
    history = History.read(tpath)
    counted = history.removal_counts()
    assert counted == _counted_one_by_one(history)
    assert counted[compaction][0] >= 4 and counted[rewind] == (2, more[1])
    with Session.load(tpath) as s:
        later = s.append_message(user_message("later"))
        again = s.append_rewind(more[0])
    for event in Session.peek(tpath)["envelopes"][history.count:]:
        history.feed(event)
    assert history.removal_counts() == _counted_one_by_one(history)
    assert history.removal_counts()[again] == (1, later)
    history.removed[ids[0]]  # an entry of the read looked at: counted the plain way from then on
    assert history.removal_counts() == _counted_one_by_one(history)
