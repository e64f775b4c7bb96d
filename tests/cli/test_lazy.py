"""``show --last N`` on a long transcript touches only the tail of the events: the cost of
rendering is proportional to what is shown, not to the file."""

from __future__ import annotations

from typing import List

from llm_agent_session import Session
from llm_agent_session.cli.conversation import annotate


class CountingEvents:
    """A sequence that counts which items were looked at."""

    def __init__(self, events) -> None:
        self.events = events
        self.touched: List[int] = []

    def __len__(self) -> int:
        return len(self.events)

    def __getitem__(self, i: int):
        self.touched.append(i)
        return self.events[i]

    def __iter__(self):  # pragma: no cover - annotate must not iterate everything
        raise AssertionError("annotate iterated every event")


def test_annotate_last_n_reads_only_the_tail(tmp_path):
    path = tmp_path / "long.jsonl"
    with Session.create(path, {}) as s:
        s.sync_messages([{"role": "user", "content": f"m{i}"} for i in range(2000)])
        s.append_elision([(s.message_ids[-3], "[stub]")])
    with Session.load(path) as s:
        events = CountingEvents(s.events)
        entries = annotate(events, s.message_ids, s.messages, 1995, 2000)
    assert len(events.touched) <= 7
    assert [e.message.content for e in entries][-1] == "m1999"
    assert entries[2].elided_by is not None and entries[2].message.content == "[stub]"


def test_annotate_finds_a_failed_result_near_the_end_without_reading_back_further(tmp_path):
    path = tmp_path / "long.jsonl"
    call = {"id": "c9", "type": "function", "function": {"name": "bash", "arguments": "{}"}}
    with Session.create(path, {}) as s:
        s.sync_messages([{"role": "user", "content": f"m{i}"} for i in range(2000)])
        s.append_message({"role": "assistant", "content": None, "tool_calls": [call]})
        op = s.append_tool_dispatched("c9", "bash", {})
        s.append_message({"role": "tool", "tool_call_id": "c9", "content": "boom"})
        s.append_tool_settled(op, "failed")
        s.append_message({"role": "user", "content": "and now?"})
    with Session.load(path) as s:
        events = CountingEvents(s.events)
        n = len(s.message_ids)
        entries = annotate(events, s.message_ids, s.messages, n - 2, n)
    assert [e.outcome for e in entries] == ["failed", None]
    assert len(events.touched) <= 6  # back to the dispatch, not to the start
