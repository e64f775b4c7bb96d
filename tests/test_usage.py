"""Token usage (``llm_agent_session._token_usage``, docs/FORMAT.md's ``token-usage``): what a writer
may record (``Usage``, checked: a bool is no count, 0 is never made up), how a runtime
records it (``append_message(usage=...)`` or the extra, on ``Session`` and
``AsyncSession``), and the counting rule every reader follows: the lines naming one
response id are one response, counted at the last; a figure is an int from 0 to 2**63 - 1,
anything else is not stated; totals are None where nothing states them."""

from __future__ import annotations

import asyncio
import json
import os
from typing import Any, Dict, List

import pytest

from llm_agent_session import Session, Usage, UsageTotals, assistant_message, user_message
from llm_agent_session import _token_usage as usage
from llm_agent_session.aio import AsyncSession


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
    assert _lines(tpath)[1]["payload"]["token-usage"] == {"output": 4}


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
