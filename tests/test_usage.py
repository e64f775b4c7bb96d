"""Token usage (``llm_agent_session.usage``, docs/FORMAT.md's ``token-usage``): what a writer
may record (``Usage``, checked: a bool is no count, 0 is never made up), how a runtime
records it (``append_message(usage=...)`` or the extra, on ``Session`` and
``AsyncSession``), and the counting rule every reader follows: the lines naming one
response id are one response, counted at the last; a figure is an int from 0 to 2**63 - 1,
anything else is not stated; totals are None where nothing states them. The core's pass
(``usage.of_transcript``, what ``stats`` and ``dataset`` show) is held to the rule read
from the payloads (``usage.of_events``) on lines written by hand in every odd spelling."""

from __future__ import annotations

import asyncio
import json
import os
from typing import Any, Dict, List

import pytest

from llm_agent_session import Session, Usage, UsageTotals, assistant_message, user_message
from llm_agent_session import usage
from llm_agent_session.aio import AsyncSession
from llm_agent_session.canonical import dumps, envelope_line


def test_a_usage_holds_non_negative_ints_or_none_and_a_non_empty_id() -> None:
    u = Usage(input=3, output=211, cache_read=61608, cache_write=0, response_id="msg_1")
    assert u.figures == (3, 211, 61608, 0)
    assert u.to_json() == {"input": 3, "output": 211, "cache-read": 61608, "cache-write": 0, "response-id": "msg_1"}
    assert Usage().to_json() == {} and Usage(output=5).to_json() == {"output": 5}  # absent stays absent
    for bad, error in (({"input": True}, TypeError), ({"output": 1.0}, TypeError), ({"cache_read": "7"}, TypeError),
                       ({"cache_write": -1}, ValueError), ({"input": 1 << 63}, ValueError),
                       ({"response_id": ""}, ValueError), ({"response_id": 7}, TypeError)):
        with pytest.raises(error):
            Usage(**bad)


def test_an_importers_quick_usage_is_what_the_readers_read() -> None:
    """``stated`` (what the importers build, without a Usage each) keeps exactly what a
    reader keeps of the same values."""
    import itertools

    from llm_agent_session._token_usage import stated

    values = [None, 0, 5, -1, True, False, 1.0, "3", 1 << 63, (1 << 63) - 1, [1]]
    for given, output in itertools.product(values, repeat=2):
        for rid in (None, "", "r", 7):
            raw = {"input": given, "output": output, "cache-write": 7, "response-id": rid}
            assert stated(given, output, None, 7, rid) == Usage.from_json(raw).to_json(), raw  # type: ignore[union-attr]


def _lines(path: str) -> List[Dict[str, Any]]:
    with open(path, encoding="utf-8") as f:
        return [json.loads(line) for line in f]


def test_append_message_records_usage_as_its_extra(tpath: str) -> None:
    with Session.create(tpath, {"agent": "a"}) as s:
        first = s.append_message(assistant_message("one"), usage=Usage(10, 5, response_id="r1"))
        second = s.append_message(assistant_message("two"), extra={"model": "m", "token-usage": {"output": 7}})
        assert s.message_extra(first) == {"token-usage": {"input": 10, "output": 5, "response-id": "r1"}}
        assert s.message_extra(second) == {"model": "m", "token-usage": {"output": 7}}
        before = os.path.getsize(tpath)
        refused = [
            (lambda: s.append_message(assistant_message("x"), usage={"input": 1}), TypeError, "Usage"),  # type: ignore[arg-type]
            (lambda: s.append_message(assistant_message("x"), usage=Usage(1), extra={"token-usage": {"input": 1}}),
             ValueError, "given twice"),
            (lambda: s.append_message(assistant_message("x"), extra={"token-usage": {"input": 1, "tokens": 2}}),
             ValueError, "tokens"),
            (lambda: s.append_message(assistant_message("x"), extra={"token-usage": {"output": False}}),
             TypeError, "token-usage"),
            (lambda: s.append_message(assistant_message("x"), extra={"token-usage": {"output": -3}}),
             ValueError, "token-usage"),
            (lambda: s.append_message(assistant_message("x"), extra={"token-usage": [1, 2]}), TypeError, "token-usage"),
        ]
        for call, error, words in refused:
            with pytest.raises(error, match=words):
                call()
        assert os.path.getsize(tpath) == before  # nothing written
    with Session.load(tpath) as s:
        assert s.message_extra(first)["token-usage"] == {"input": 10, "output": 5, "response-id": "r1"}
    assert _lines(tpath)[1]["payload"]["token-usage"] == {"input": 10, "output": 5, "response-id": "r1"}


def test_async_sessions_record_usage_too(tpath: str) -> None:
    async def run() -> None:
        async with await AsyncSession.create(tpath, {"agent": "a"}) as s:
            await s.append_message(assistant_message("one"), usage=Usage(output=4))
    asyncio.run(run())
    assert usage.of_transcript(tpath) == UsageTotals(output=4, responses=1)


def test_a_streamed_response_counts_once_at_its_last_line() -> None:
    def line(rid: Any, **figures: int) -> Any:
        return (Usage(response_id=rid, **figures), True)

    flags, totals = usage.count_lines([
        (None, False),  # a user message: nothing
        line("a", input=10, output=1, cache_read=500),  # streamed: its count is not final yet
        line("a", input=10, output=1, cache_read=500),
        line(None, output=3),  # no id: a response of its own
        line("a", input=10, output=80, cache_read=500),  # the last line of "a": counted here
        line(None, output=3),  # the same figures, no id: another response
        (None, True),  # an assistant message that records none
        line("b"),  # a response stating no figure
    ])
    assert flags == [None, False, False, True, True, True, None, True]
    assert totals == UsageTotals(input=10, output=86, cache_read=500, cache_write=None, responses=4, unmeasured=2)
    assert usage.count_lines([])[1] == UsageTotals()
    big = usage.MAX_TOTAL
    assert usage.count_lines([line(None, output=big), line(None, output=big)])[1].output == big  # held, never wraps


# Lines written by hand, the way another writer might spell them; each reader reads them alike.
ODD: List[Any] = [
    {"role": "assistant", "content": "a", "token-usage": {"input": 5, "output": True, "cache-read": 2.0,
                                                          "cache-write": -4, "response-id": ""}},
    {"role": "assistant", "content": "b", "token-usage": {"input": 1 << 63, "output": (1 << 63) - 1, "response-id": 7}},
    {"role": "assistant", "content": "c", "token-usage": [1, 2]},
    {"role": "assistant", "content": "d", "token-usage": None},
    {"role": "user", "content": "e", "token-usage": {"output": 2, "response-id": "s"}},
    {"role": "assistant", "content": "f", "token-usage": {"output": 9, "response-id": "s", "cache-read": 0}},
    {"role": "tool", "tool_call_id": "x", "content": "g"},
    {"role": "assistant", "content": "h", "token-usage": {}},
    {"role": "assistant", "content": "i", "token-usage": {"input": 1e3, "output": 12, "response-id": "s2"}},
]
# Spelled in ways a dict does not show: a repeated key (the last wins), an escaped key.
RAW = [
    b'{"role":"assistant","content":"j","token-usage":{"output":1,"output":6,"response-id":"s3"}}',
    b'{"role":"assistant","content":"k","token-usage":{"\\u006fut\\u0070ut":4,"response-id":"s\\u0033"}}',
    b'{"role":"assistant","content":"l","token-usage":{"output":100},"token-usage":{"input":8}}',
    b'{"role":"assistant","content":"m","token-usage":{"input":-0,"output":12345678901234567890}}',
]


def test_every_reader_counts_odd_lines_alike(tpath: str) -> None:
    with Session.create(tpath, {"agent": "odd"}) as s:
        s.append_message(user_message("go"))
    with open(tpath, "ab") as f:
        for n, payload in enumerate(ODD):
            f.write(envelope_line(f"odd-{n}", "message", "2026-01-01T00:00:00.000000Z", dumps(payload)))
        for n, payload in enumerate(RAW):
            f.write(b'{"v":1,"id":"raw-%d","type":"message","ts":"2026-01-01T00:00:01.000000Z","payload":%s}\n'
                    % (n, payload))
    events = Session.peek(tpath)["envelopes"]
    reference = usage.of_events(events)
    assert usage.of_transcript(tpath) == reference == UsageTotals(
        input=5 + 8 + 0, output=(1 << 63) - 1, cache_read=0, cache_write=None, responses=8, unmeasured=3)
    stated = [usage.of_message(e.payload) for e in events if e.type == "message"]
    assert stated[1] == Usage(input=5) and stated[3] is stated[4] is None and stated[8] == Usage()
    assert stated[-4:] == [Usage(output=6, response_id="s3"), Usage(output=4, response_id="s3"), Usage(input=8),
                           Usage(input=0)]
    reading = usage.read(tpath)
    assert reading.totals == reference
    # Each response where it is counted: the message line, its figures, its id.
    ids = {e.payload["content"]: e.id for e in events if e.type == "message"}
    assert [(m, c.usage) for m, c in reading.counted.items()] == [
        (ids["a"], Usage(input=5)), (ids["b"], Usage(output=(1 << 63) - 1)),
        (ids["f"], Usage(output=9, cache_read=0, response_id="s")), (ids["h"], Usage()),
        (ids["i"], Usage(output=12, response_id="s2")), (ids["k"], Usage(output=4, response_id="s3")),
        (ids["l"], Usage(input=8)), (ids["m"], Usage(input=0))]
    assert all(m == c.message_id for m, c in reading.counted.items())
    assert reading.counted_at() == {"s": ids["f"], "s2": ids["i"], "s3": ids["k"]}
    assert ids["e"] not in reading.counted and ids["j"] not in reading.counted  # repeats, counted later


def test_a_response_in_several_transcripts_counts_once(tmp_path: Any) -> None:
    """A continued session copies the lines of the one it continues: the same response ids."""
    first, second = str(tmp_path / "first.jsonl"), str(tmp_path / "second.jsonl")
    with Session.create(first, {}) as s:
        s.append_message(assistant_message("one"), usage=Usage(10, 1, response_id="r1"))
        s.append_message(assistant_message("two"), usage=Usage(20, 2, response_id="r2"))
        s.append_message(assistant_message("no usage"))
    with Session.create(second, {}) as s:
        s.append_message(assistant_message("one"), usage=Usage(10, 1, response_id="r1"))  # copied
        s.append_message(assistant_message("two"), usage=Usage(20, 2, response_id="r2"))
        s.append_message(assistant_message("three"), usage=Usage(30, 3, response_id="r3"))
        s.append_message(assistant_message("own"), usage=Usage(output=4))
        s.append_message(assistant_message("silent"), usage=Usage(response_id="r4"))
    assert usage.of_transcript(first) + usage.of_transcript(second) == UsageTotals(
        input=90, output=13, responses=7, unmeasured=2)
    assert usage.of_transcripts([first, second]) == UsageTotals(input=60, output=10, responses=5, unmeasured=2)
    assert usage.of_transcripts([second, first]) == usage.of_transcripts([first, second])
    assert usage.of_transcripts([]) == UsageTotals()
    assert usage.together([usage.read(second), usage.read(first)]) == usage.of_transcripts([second, first])


def test_a_transcript_big_enough_for_two_threads_agrees_on_its_usage(tpath: str) -> None:
    """``usage.read`` (the core's usage pass: two threads past 8 MB) counts what the dataset
    pass counts and what the payloads say (``of_events``): responses streamed over both
    halves, ids repeated (the first line wins), lines that are no envelope, a torn end."""
    from llm_agent_session import _backend

    with Session.create(tpath, {"agent": "big"}) as s:
        meta_id = s.events[0].id
    pad = "x" * 1500
    with open(tpath, "ab") as f:
        n = 0
        while f.tell() < 17 << 20:
            role = "user" if n % 3 == 0 else "assistant"
            stated = [{"input": n, "output": 1, "response-id": f"r{n % 4001}"}, {"output": 2}, None,
                      {"cache-read": n, "response-id": f"s{n // 3}"}][n % 4]
            payload = {"role": role, "content": pad, **({"token-usage": stated} if stated else {})}
            envelope_id = f"dup-{n % 89}" if n % 11 == 0 else f"m-{n}"
            f.write(envelope_line(envelope_id, "message", "2026-01-01T00:00:00.000000Z", dumps(payload)))
            if n % 13 == 0:
                f.write(b"not an envelope\n")
            n += 1
        f.write(b'{"v":1,"id":"torn","type":"mess')
    reading = usage.read(tpath)
    fd = os.open(tpath, os.O_RDONLY)
    try:
        found = _backend.core.dataset_pass(fd, os.fstat(fd).st_size, True, False, 8 << 20)
        assert reading.totals == found.summary.usage == usage.of_transcript(tpath)
        assert [(m, c.usage.response_id, *c.usage.figures) for m, c in reading.counted.items()] == found.responses()
    finally:
        os.close(fd)
    first: Dict[str, Any] = {}
    for event in Session.peek(tpath)["envelopes"]:
        first.setdefault(event.id, event)
    assert reading.totals == usage.of_events(first.values())
    assert meta_id in first and reading.totals.responses > 4001 and reading.totals.unmeasured > 0
