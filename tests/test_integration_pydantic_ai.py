"""Issue #15: pydantic-ai's message history and tool calls in a transcript, run offline with
pydantic-ai's FunctionModel/TestModel (model requests disallowed), on both backends, with a
real SIGKILL."""

from __future__ import annotations

import asyncio
import datetime

import pytest

try:
    import pydantic_ai.models
    from pydantic_ai import Agent
    from pydantic_ai.messages import ModelResponse, TextPart, ToolCallPart, ToolReturnPart
    from pydantic_ai.models.function import FunctionModel
    from pydantic_ai.models.test import TestModel
except ImportError:
    pytest.skip("pydantic-ai not installed: pip install 'llm-agent-session[pydantic-ai]'", allow_module_level=True)

from tests.support.helpers import crash_view, kill_child_at
from llm_agent_session import Session, SessionLocked, tool_message
from llm_agent_session.integrations.pydantic_ai import MESSAGE_EXTRA, TranscriptCapability

pydantic_ai.models.ALLOW_MODEL_REQUESTS = False  # offline: only the scripted models answer


def run(coro):
    return asyncio.run(coro)


def of_type(tpath, type_):
    return [e for e in Session.peek(tpath)["envelopes"] if e.type == type_]


def parallel_calls_then_text(messages, info):
    """Asks for two additions at once, then reports what came back."""
    last = messages[-1]
    returns = [p for p in last.parts if isinstance(p, ToolReturnPart)]
    if returns:
        return ModelResponse(parts=[TextPart(" and ".join(str(p.content) for p in returns))])
    return ModelResponse(parts=[
        ToolCallPart("add", {"a": 1, "b": 2}, tool_call_id="c1"),
        ToolCallPart("add", {"a": 3, "b": 4}, tool_call_id="c2"),
    ])


def calc_agent(capability, model=None):
    agent = Agent(model or FunctionModel(parallel_calls_then_text), capabilities=[capability],
                  instructions="Add.", system_prompt="You are a calculator.")

    @agent.tool_plain
    def add(a: int, b: int) -> int:
        """Add two integers."""
        return a + b

    return agent


def test_history_round_trips_losslessly(tpath):
    async def go():
        async with TranscriptCapability(tpath, meta={"app": "t"}) as cap:
            agent = calc_agent(cap)
            first = await agent.run("add things", message_history=await cap.message_history())
            assert first.output == "3 and 7"
            second = await agent.run("again", message_history=await cap.message_history())
            everything = second.all_messages()
            assert await cap.message_history() == everything
        async with TranscriptCapability(tpath) as cap:
            assert await cap.message_history() == everything  # after a reload, equal ModelMessages
        return everything

    everything = run(go())
    s = Session.load(tpath)
    try:
        assert s.meta == {"app": "t"}
        roles = [m.role for m in s.messages]
        # a request is a line per part: the first one's system prompt and user prompt
        assert roles == ["system"] + ["user", "assistant", "tool", "tool", "assistant"] * 2
        assert s.messages[0].content == "You are a calculator."
        assert [c["id"] for c in s.messages[2].tool_calls] == ["c1", "c2"]
        assert s.messages[2].tool_calls[0]["function"] == {"name": "add", "arguments": '{"a":1,"b":2}'}
        assert [(m.tool_call_id, m.content) for m in s.messages[3:5]] == [("c1", "3"), ("c2", "7")]
        # one ModelMessage per carrier line, in order
        carried = [s.message_extra(i).get(MESSAGE_EXTRA) for i in s.message_ids]
        assert [c["kind"] for c in carried if c is not None] == [m.kind for m in everything]
        assert s.pending_tool_operations() == []
    finally:
        s.close()
    assert of_type(tpath, "rewind") == []  # a normal run writes each message once
    outcomes = [e.payload["outcome"] for e in of_type(tpath, "tool-settled")]
    assert outcomes == ["completed"] * 4


def test_each_responses_token_usage_is_recorded_once(tpath):
    """Each ModelResponse's usage, as pydantic-ai reports it, on its assistant message
    (pydantic-ai's input includes the cache reads and writes: input is the rest), under
    the provider's response id, or the run's id and the response's time where the provider
    gives none; the run's whole history written again at its end adds nothing. A response
    whose usage was not measured states no count. The totals are the run's own."""
    from pydantic_ai.usage import RequestUsage

    from llm_agent_session import UsageTotals, usage

    answers = iter([
        ModelResponse(parts=[ToolCallPart("add", {"a": 1, "b": 2}, tool_call_id="c1")], provider_response_id="resp_1",
                      usage=RequestUsage(input_tokens=900, cache_read_tokens=600, cache_write_tokens=200, output_tokens=20)),
        ModelResponse(parts=[TextPart("3")], usage=RequestUsage(input_tokens=950, cache_read_tokens=800, output_tokens=4)),
        ModelResponse(parts=[TextPart("3 again")], usage=RequestUsage(unmeasured_requests=1)),
    ])

    async def go():
        async with TranscriptCapability(tpath) as t:
            agent = calc_agent(t, FunctionModel(lambda messages, info: next(answers)))
            runs = []
            for prompt in ("1 + 2?", "again"):
                runs.append(await agent.run(prompt, message_history=await t.message_history()))
            return runs

    first, second = run(go())
    assistants = [e.payload for e in of_type(tpath, "message") if e.payload["role"] == "assistant"]
    tokens = [a["token-usage"] for a in assistants]
    assert len(tokens) == 3  # each response written once
    assert tokens[0] == {"input": 100, "output": 20, "cache-read": 600, "cache-write": 200, "response-id": "resp_1"}
    assert {k: v for k, v in tokens[1].items() if k != "response-id"} == {
        "input": 150, "output": 4, "cache-read": 800, "cache-write": 0}
    assert tokens[1]["response-id"].startswith("pydantic-ai:" + first.run_id + "@")
    assert set(tokens[2]) == {"response-id"}  # not measured: no count
    totals = usage.of_transcript(tpath)
    assert totals == UsageTotals(input=250, output=24, cache_read=1400, cache_write=200, responses=3, unmeasured=1)
    # `usage` is a method before pydantic-ai 2.6x, a property after.
    one, two = (r.usage if isinstance(getattr(type(r), "usage", None), property) else r.usage() for r in (first, second))
    assert totals.input + totals.cache_read + totals.cache_write == one.input_tokens + two.input_tokens
    assert totals.output == one.output_tokens + two.output_tokens


def test_editing_the_history_handed_out_changes_nothing(tpath):
    """Issue #24, item 2, for the adapter: message_history() shares nothing with it."""
    async def go():
        async with TranscriptCapability(tpath) as cap:
            agent = Agent(TestModel(), capabilities=[cap])

            @agent.tool_plain
            def look(where: dict) -> str:
                """Looks somewhere."""
                return "seen"

            await agent.run("look", message_history=await cap.message_history())
            first = await cap.message_history()
            call = next(p for m in first for p in m.parts if isinstance(p, ToolCallPart))
            next(iter(call.args.values()))["scribbled"] = True  # a nested dict of the arguments
            again = await cap.message_history()
            assert again != first
        async with TranscriptCapability(tpath) as cap:
            assert await cap.message_history() == again

    run(go())


def test_call_is_on_disk_before_the_tool_runs(tpath):
    seen = {}

    async def go():
        async with TranscriptCapability(tpath) as cap:
            agent = Agent(TestModel(), capabilities=[cap])

            @agent.tool_plain
            def look() -> str:
                """Looks at the transcript from inside the tool."""
                p = Session.peek(tpath)
                seen["messages"] = [(m.role, len(m.tool_calls or [])) for m in p["messages"]]
                seen["last"] = p["envelopes"][-1].type
                return "looked"

            await agent.run("look", message_history=await cap.message_history())

    run(go())
    assert seen["messages"] == [("user", 0), ("assistant", 1)]
    assert seen["last"] == "tool-dispatched"
    assert [e.payload["tool"] for e in of_type(tpath, "tool-dispatched")] == ["look"]


def test_failing_tool_is_settled_failed_and_the_history_answers_it(tpath):
    def model(messages, info):
        last = messages[-1]
        if any(isinstance(p, ToolReturnPart) for p in last.parts):
            return ModelResponse(parts=[TextPart("saw: " + "; ".join(str(p.content) for p in last.parts if isinstance(p, ToolReturnPart)))])
        return ModelResponse(parts=[ToolCallPart("explode", {"why": "test"}, tool_call_id="c9")])

    async def go():
        async with TranscriptCapability(tpath) as cap:
            agent = Agent(FunctionModel(model), capabilities=[cap])
            runs = []

            @agent.tool_plain
            def explode(why: str) -> str:
                """Fails."""
                runs.append(why)
                raise RuntimeError("kaput: " + why)

            with pytest.raises(RuntimeError, match="kaput"):
                await agent.run("go", message_history=await cap.message_history())
            history = await cap.message_history()
            answer = history[-1].parts[-1]
            assert isinstance(answer, ToolReturnPart) and answer.tool_call_id == "c9"
            assert answer.outcome == "failed" and "RuntimeError: kaput: test" in answer.content
            result = await agent.run("what happened?", message_history=history)
            assert result.output.startswith("saw: The tool call failed")
            assert runs == ["test"]  # never run again
            everything = result.all_messages()
        async with TranscriptCapability(tpath) as cap:
            assert await cap.message_history() == everything

    run(go())
    settled = of_type(tpath, "tool-settled")
    assert [(e.payload["outcome"], e.payload.get("error")) for e in settled] == [("failed", "RuntimeError: kaput: test")]


def test_a_run_cancelled_mid_tool_is_answered_may_or_may_not_have_run(tpath):
    """Issue #24, item 4: the run is cancelled while a tool awaits (a wait_for timing
    out, a task cancelled); the call is settled outcome-unknown, and its answer never
    says it ran."""
    from llm_agent_session.session import INTERRUPTED_TEXT, RESULT_GONE_TEXT, RESULT_LOST_TEXT

    def model(messages, info):
        if any(isinstance(p, ToolReturnPart) for p in messages[-1].parts):
            return ModelResponse(parts=[TextPart("noted")])
        return ModelResponse(parts=[ToolCallPart("slow", {"n": 1}, tool_call_id="c1")])

    async def go():
        async with TranscriptCapability(tpath) as cap:
            agent = Agent(FunctionModel(model), capabilities=[cap])
            started = asyncio.Event()

            @agent.tool_plain
            async def slow(n: int) -> str:
                """Takes its time."""
                started.set()
                await asyncio.sleep(30)
                return "done"

            history = await cap.message_history()
            running = asyncio.ensure_future(asyncio.wait_for(agent.run("go", message_history=history), 60))
            await started.wait()
            running.cancel()  # as wait_for's timeout does: the run is cancelled inside the tool
            with pytest.raises(asyncio.CancelledError):
                await running
            answer = (await cap.message_history())[-1].parts[-1]
            assert isinstance(answer, ToolReturnPart) and answer.tool_call_id == "c1"
            assert answer.content == INTERRUPTED_TEXT
            assert "may or may not have run" in answer.content
        async with TranscriptCapability(tpath) as cap:  # and so after a reload
            assert (await cap.message_history())[-1].parts[-1].content == INTERRUPTED_TEXT

    run(go())
    [settled] = of_type(tpath, "tool-settled")
    assert (settled.payload["outcome"], settled.payload["reason"]) == ("outcome-unknown", "cancelled")
    tool_texts = [m.content for m in Session.peek(tpath)["messages"] if m.role == "tool"]
    assert tool_texts and not {RESULT_GONE_TEXT, RESULT_LOST_TEXT} & set(tool_texts)


def test_retry_and_non_json_arguments(tpath):
    from pydantic_ai import ModelRetry

    def model(messages, info):
        last = messages[-1]
        kinds = [p.part_kind for p in last.parts]
        # a ModelRetry comes back as a retry prompt or, in newer versions, a "retried" return
        if "retry-prompt" in kinds or any(getattr(p, "outcome", None) == "retried" for p in last.parts):
            return ModelResponse(parts=[ToolCallPart("weekday", {"day": "2026-11-30", "strict": False}, tool_call_id="w2")])
        if "tool-return" in kinds:
            return ModelResponse(parts=[TextPart("it is " + str(last.parts[0].content))])
        return ModelResponse(parts=[ToolCallPart("weekday", {"day": "2026-11-30", "strict": True}, tool_call_id="w1")])

    async def go():
        async with TranscriptCapability(tpath) as cap:
            agent = Agent(FunctionModel(model), capabilities=[cap])

            @agent.tool_plain
            def weekday(day: datetime.date, strict: bool) -> str:
                """The weekday of a date."""
                if strict:
                    raise ModelRetry("be lenient")
                return day.strftime("%A")

            result = await agent.run("which day?", message_history=await cap.message_history())
            assert result.output == "it is Monday"
            everything = result.all_messages()
        async with TranscriptCapability(tpath) as cap:
            assert await cap.message_history() == everything

    run(go())
    dispatched = of_type(tpath, "tool-dispatched")
    assert [e.payload["arguments"] for e in dispatched] == [{"day": "2026-11-30", "strict": True}, {"day": "2026-11-30", "strict": False}]
    settled = [(e.payload["outcome"], e.payload.get("error")) for e in of_type(tpath, "tool-settled")]
    assert settled[1] == ("completed", None)
    assert settled[0][0] == "failed" and "be lenient" in settled[0][1]
    assert of_type(tpath, "rewind") == []


def test_a_call_waiting_for_approval_survives_reopening(tpath):
    from pydantic_ai import DeferredToolRequests, DeferredToolResults

    def model(messages, info):
        if any(isinstance(p, ToolReturnPart) for p in messages[-1].parts):
            return ModelResponse(parts=[TextPart("paid")])
        return ModelResponse(parts=[ToolCallPart("pay", {"amount": 5}, tool_call_id="p1")])

    runs = []

    def shop(cap):
        agent = Agent(FunctionModel(model), capabilities=[cap], output_type=[str, DeferredToolRequests])

        @agent.tool_plain(requires_approval=True)
        def pay(amount: int) -> str:
            """Pays."""
            runs.append(amount)
            return "done"

        return agent

    async def go():
        async with TranscriptCapability(tpath) as cap:
            paused = await shop(cap).run("pay 5", message_history=await cap.message_history())
            assert isinstance(paused.output, DeferredToolRequests)
        async with TranscriptCapability(tpath) as cap:  # another process, later
            history = await cap.message_history()
            assert isinstance(history[-1], ModelResponse)  # left waiting, not answered
            approved = DeferredToolResults(approvals={"p1": True})
            done = await shop(cap).run(message_history=history, deferred_tool_results=approved)
            assert done.output == "paid"

    run(go())
    assert runs == [5]
    assert [e.payload["outcome"] for e in of_type(tpath, "tool-settled")] == ["completed"]


def test_a_result_lost_after_the_tool_ran_is_answered_never_rerun(tpath):
    from llm_agent_session import assistant_message, user_message
    from llm_agent_session.session import RESULT_LOST_TEXT

    call = {"id": "c1", "type": "function", "function": {"name": "add", "arguments": '{"a":1,"b":2}'}}
    with Session.create(tpath) as s:  # what a crash between the settle and the next request leaves
        s.append_message(user_message("add"))
        s.append_message(assistant_message(None, [call]))
        op = s.append_tool_dispatched("c1", "add", call["function"]["arguments"])
        s.append_tool_settled(op, "completed")

    async def go():
        async with TranscriptCapability(tpath) as cap:
            return await cap.message_history()

    history = run(go())
    answer = history[-1].parts[-1]
    assert isinstance(answer, ToolReturnPart) and answer.tool_name == "add" and answer.content == RESULT_LOST_TEXT


def test_second_capability_on_a_locked_file_is_refused(tpath):
    async def go():
        async with TranscriptCapability(tpath):
            with pytest.raises(SessionLocked):
                TranscriptCapability(tpath)
        async with TranscriptCapability(tpath):
            pass

    run(go())


def test_a_cancelled_close_still_releases_the_lock(tpath):
    """Issue #24, item 5, for an adapter: close() cancelled while queued behind another
    call of the adapter still closes the transcript."""
    import threading

    async def go():
        cap = TranscriptCapability(tpath)
        gate = threading.Event()
        busy = asyncio.ensure_future(cap._gate.run(gate.wait, 10))  # a call of the adapter's
        closing = asyncio.ensure_future(cap.close())
        await asyncio.sleep(0.01)
        closing.cancel()
        gate.set()
        with pytest.raises(asyncio.CancelledError):
            await closing
        assert cap.transcript.closed and await busy
        async with TranscriptCapability(tpath):  # not SessionLocked
            pass

    run(go())


def test_history_handed_to_another_run_is_followed_with_a_rewind(tpath):
    async def go():
        async with TranscriptCapability(tpath) as cap:
            agent = Agent(TestModel(custom_output_text="ok"), capabilities=[cap])
            first = await agent.run("one", message_history=await cap.message_history())
            await agent.run("two", message_history=first.all_messages())
            # the app goes back to the first run's history: the transcript follows it
            third = await agent.run("three instead", message_history=first.all_messages())
            assert await cap.message_history() == third.all_messages()
            return third.all_messages()

    expected = run(go())
    assert len(of_type(tpath, "rewind")) == 1
    contents = [e.payload.get("content") for e in of_type(tpath, "message")]
    assert "two" in contents  # nothing left the file
    async def reread():
        async with TranscriptCapability(tpath) as cap:
            return await cap.message_history()
    assert run(reread()) == expected


CHILD = """
import asyncio, sys
import pydantic_ai.models
from pydantic_ai import Agent
from pydantic_ai.messages import ModelResponse, ToolCallPart, TextPart
from pydantic_ai.models.function import FunctionModel
from llm_agent_session.integrations.pydantic_ai import TranscriptCapability
pydantic_ai.models.ALLOW_MODEL_REQUESTS = False

def model(messages, info):
    return ModelResponse(parts=[ToolCallPart("charge_card", {"amount": 42}, tool_call_id="call_pay")])

async def main():
    cap = TranscriptCapability(sys.argv[1])
    agent = Agent(FunctionModel(model), capabilities=[cap])

    @agent.tool_plain
    def charge_card(amount: int) -> str:
        \"\"\"Charges the card.\"\"\"
        print("IN_TOOL", flush=True)
        import time
        time.sleep(60)
        return "charged"

    await agent.run("pay 42", message_history=await cap.message_history())

asyncio.run(main())
"""


def resume_agent(cap, runs, seen):
    def model(messages, info):
        seen.append(messages)
        return ModelResponse(parts=[TextPart("checked")])

    agent = Agent(FunctionModel(model), capabilities=[cap])

    @agent.tool_plain
    def charge_card(amount: int) -> str:
        """Charges the card."""
        runs.append(amount)
        return "charged"

    return agent


def test_sigkill_inside_a_tool_is_never_silently_rerun(tpath):
    kill_child_at(CHILD, str(tpath))
    ops, messages = crash_view(tpath)
    assert ops == [["call_pay", "charge_card", "dispatched"]]
    assert messages == [["user", []], ["assistant", ["call_pay"]]]

    runs, seen = [], []

    async def resume():
        async with TranscriptCapability(tpath) as cap:
            history = await cap.message_history()
            # no new prompt: the form in which pydantic-ai would run an unanswered call again
            await resume_agent(cap, runs, seen).run(None, message_history=history)
            return history

    history = run(resume())
    assert runs == []  # the call that may have charged the card did not run again
    answer = history[-1].parts[-1]
    assert isinstance(answer, ToolReturnPart) and answer.tool_call_id == "call_pay"
    text = str(answer.content).lower()
    assert "interrupted" in text and "may or may not" in text
    assert any(isinstance(p, ToolReturnPart) and p.tool_call_id == "call_pay" for p in seen[0][-1].parts)
    settles = of_type(tpath, "tool-settled")
    assert [(e.payload["outcome"], e.payload.get("reason")) for e in settles] == [("outcome-unknown", "interrupted")]


def test_after_a_crash_the_app_may_settle_the_call_itself(tpath):
    kill_child_at(CHILD, str(tpath))
    runs, seen = [], []

    async def resume():
        async with TranscriptCapability(tpath) as cap:
            s = cap.transcript
            [op] = s.pending_tool_operations()
            # the app checked with the payment provider: it went through
            s.append_message(tool_message(op.call_id, "charged, receipt 7"))
            s.append_tool_settled(op.op_id, "completed", reason="confirmed with the provider")
            history = await cap.message_history()
            await resume_agent(cap, runs, seen).run(None, message_history=history)
            return history

    history = run(resume())
    assert runs == []
    answer = history[-1].parts[-1]
    assert isinstance(answer, ToolReturnPart) and answer.content == "charged, receipt 7"
    assert [e.payload.get("reason") for e in of_type(tpath, "tool-settled")] == ["confirmed with the provider"]
