"""Issue #15: the OpenAI Agents SDK's Session protocol and RunHooks on a transcript, run
offline with the SDK's own ScriptedModel, on both backends, with a real SIGKILL."""

from __future__ import annotations

import asyncio

import pytest

try:
    import agents
    from agents.testing import ScriptedModel, assistant_message, function_call
except ImportError:
    pytest.skip("openai-agents not installed: pip install 'llm-agent-session[openai-agents]'", allow_module_level=True)

from agents import Agent, Runner, function_tool
from agents.memory import Session as SDKSessionProtocol

from tests.support.helpers import crash_view, kill_child_at
from llm_agent_session import Session, SessionLocked
from llm_agent_session.integrations.openai_agents import ITEMS_EXTRA, TranscriptSession

agents.set_tracing_disabled(True)  # offline: no trace export


def run(coro):
    return asyncio.run(coro)


@function_tool
def add(a: int, b: int) -> int:
    """Add two integers."""
    return a + b


@function_tool
def boom(x: str) -> str:
    """Always fails."""
    raise RuntimeError("kaput " + x)


def two_calls_then_answer():
    return ScriptedModel(
        [
            [function_call("add", {"a": 1, "b": 2}, call_id="call_1"), function_call("boom", {"x": "y"}, call_id="call_2")],
            [assistant_message("3 it is")],
        ]
    )


class Spy(TranscriptSession):
    """Records what the SDK hands to add_items."""

    def __init__(self, *a, **kw):
        super().__init__(*a, **kw)
        self.received = []

    async def add_items(self, items):
        self.received.extend(items)
        await super().add_items(items)


def of_type(tpath, type_):
    return [e for e in Session.peek(tpath)["envelopes"] if e.type == type_]


def test_is_an_sdk_session(tpath):
    async def go():
        async with TranscriptSession(tpath) as ts:
            assert isinstance(ts, SDKSessionProtocol)  # structurally: the protocol is runtime-checkable
            assert not isinstance(ts, agents.memory.SessionABC)
            assert ts.session_id == Session.peek(tpath)["envelopes"][0].id  # the meta line's id
            assert ts.session_settings is not None and ts.session_settings.limit is None
        async with TranscriptSession(tpath, session_id="chat-7") as ts:
            assert ts.session_id == "chat-7"

    run(go())


def test_run_round_trips_losslessly_and_writes_nothing_twice(tpath):
    async def go():
        model = two_calls_then_answer()
        agent = Agent(name="calc", model=model, tools=[add, boom])
        async with Spy(tpath, meta={"app": "t"}) as ts:
            result = await Runner.run(agent, "what is 1+2", session=ts, hooks=ts.hooks)
            assert result.final_output == "3 it is"
            assert await ts.get_items() == ts.received
            received = ts.received
        async with TranscriptSession(tpath) as again:
            assert await again.get_items() == received  # after a reload, item for item
        return received

    received = run(go())
    assert [i.get("type", "message") for i in received] == [
        "message", "function_call", "function_call", "function_call_output", "function_call_output", "message",
    ]
    s = Session.load(tpath)
    try:
        assert s.meta == {"app": "t"}
        assert [m.role for m in s.messages] == ["user", "assistant", "tool", "tool", "assistant"]
        asked = s.messages[1]
        assert [c["id"] for c in asked.tool_calls] == ["call_1", "call_2"]
        assert asked.tool_calls[0]["function"] == {"name": "add", "arguments": '{"a":1,"b":2}'}
        assert s.messages[2].tool_call_id == "call_1" and s.messages[2].content == "3"
        assert s.messages[4].content == "3 it is"
        # the SDK's own items ride along in the extras, exactly
        extras = [s.message_extra(i)[ITEMS_EXTRA] for i in s.message_ids]
        assert [i for group in extras for i in group] == received
        assert s.pending_tool_operations() == []
    finally:
        s.close()
    # nothing written twice: the hooks wrote the calls, add_items recognised them
    assert of_type(tpath, "rewind") == []
    assert len(of_type(tpath, "message")) == 5
    settled = {e.payload["op-id"]: e.payload for e in of_type(tpath, "tool-settled")}
    dispatched = {e.payload["call-id"]: e.id for e in of_type(tpath, "tool-dispatched")}
    assert settled[dispatched["call_1"]]["outcome"] == "completed"
    failed = settled[dispatched["call_2"]]
    assert failed["outcome"] == "failed" and "RuntimeError: kaput y" in failed["error"]


def test_the_apps_own_tool_error_formatter_still_speaks_to_the_model(tpath):
    from agents import RunConfig

    config = RunConfig(tool_error_formatter=lambda args: f"sorry: {args.error}")

    async def go():
        model = two_calls_then_answer()
        async with TranscriptSession(tpath) as ts:
            await Runner.run(Agent(name="calc", model=model, tools=[add, boom]), "1+2", session=ts,
                             hooks=ts.hooks, run_config=config)
        return model

    model = run(go())
    said = {i["call_id"]: i["output"] for i in model.last_call.input if i.get("type") == "function_call_output"}
    assert said == {"call_1": "3", "call_2": "sorry: kaput y"}
    assert sorted(e.payload["outcome"] for e in of_type(tpath, "tool-settled")) == ["completed", "failed"]


def test_call_is_on_disk_before_the_tool_runs(tpath):
    seen = {}

    @function_tool
    def look() -> str:
        """Looks at the transcript from inside the tool."""
        p = Session.peek(tpath)
        seen["messages"] = [(m.role, [c["id"] for c in (m.tool_calls or [])]) for m in p["messages"]]
        seen["types"] = [e.type for e in p["envelopes"]]
        return "looked"

    async def go():
        model = ScriptedModel([[function_call("look", {}, call_id="call_look")], [assistant_message("ok")]])
        async with TranscriptSession(tpath) as ts:
            await Runner.run(Agent(name="a", model=model, tools=[look]), "look", session=ts, hooks=ts.hooks)

    run(go())
    assert seen["messages"] == [("user", []), ("assistant", ["call_look"])]
    assert seen["types"][-1] == "tool-dispatched"
    dispatched = of_type(tpath, "tool-dispatched")
    assert [e.payload["call-id"] for e in dispatched] == ["call_look"]
    assert dispatched[0].payload["tool"] == "look"


def test_without_hooks_the_session_alone_still_round_trips(tpath):
    async def go():
        agent = Agent(name="calc", model=two_calls_then_answer(), tools=[add, boom])
        async with Spy(tpath) as ts:
            await Runner.run(agent, "what is 1+2", session=ts)
            received = ts.received
        async with TranscriptSession(tpath) as again:
            assert await again.get_items() == received

    run(go())
    assert of_type(tpath, "tool-dispatched") == []


def test_streamed_run_round_trips_without_rewinds(tpath):
    async def go():
        model = ScriptedModel([[function_call("add", {"a": 2, "b": 2}, call_id="call_s")], [assistant_message("4")]])
        async with Spy(tpath) as ts:
            streamed = Runner.run_streamed(Agent(name="a", model=model, tools=[add]), "2+2", session=ts, hooks=ts.hooks)
            async for _ in streamed.stream_events():
                pass
            assert streamed.final_output == "4"
            received = ts.received
        async with TranscriptSession(tpath) as again:
            assert await again.get_items() == received

    run(go())
    assert of_type(tpath, "rewind") == []
    assert [e.payload["outcome"] for e in of_type(tpath, "tool-settled")] == ["completed"]


def _sdk_usage(given, cached, output, written=0):
    from agents.usage import Usage as SDKUsage
    from openai.types.responses.response_usage import InputTokensDetails, OutputTokensDetails

    return SDKUsage(requests=1, input_tokens=given, output_tokens=output, total_tokens=given + output,
                    input_tokens_details=InputTokensDetails(cached_tokens=cached, cache_write_tokens=written),
                    output_tokens_details=OutputTokensDetails(reasoning_tokens=0))


@pytest.mark.parametrize("streamed", [False, True])
def test_each_responses_token_usage_is_recorded_once(tpath, streamed):
    """The hooks record each model response's usage, as the SDK reports it, on its assistant
    message (the SDK's input includes the cached and written tokens: input is the rest),
    under the response's id; the SDK's copy of the items, saved later, adds nothing. A
    response whose usage the model did not report (the scripted model's default: no
    tokens at all) records its id and no count. The totals are the run's own."""
    from agents.testing import ModelStep

    from llm_agent_session import UsageTotals, usage

    model = ScriptedModel([
        ModelStep(output=[function_call("add", {"a": 1, "b": 2}, call_id="call_1")], usage=_sdk_usage(1200, 1024, 30, 64),
                  response_id="resp_a"),
        ModelStep(output=[assistant_message("3 it is")], usage=_sdk_usage(1300, 1152, 9), response_id="resp_b"),
        ModelStep(output=[assistant_message("still 3")], response_id="resp_c"),  # usage not reported
    ])

    async def go():
        usages = []
        async with TranscriptSession(tpath) as ts:
            agent = Agent(name="adder", model=model, tools=[add])
            for prompt in ("1 + 2?", "again?"):
                if streamed:
                    result = Runner.run_streamed(agent, prompt, session=ts, hooks=ts.hooks)
                    async for _ in result.stream_events():
                        pass
                else:
                    result = await Runner.run(agent, prompt, session=ts, hooks=ts.hooks)
                usages.append(result.context_wrapper.usage)
        return usages

    one, two = run(go())
    assistants = [e.payload for e in of_type(tpath, "message") if e.payload["role"] == "assistant"]
    assert [a["token-usage"] for a in assistants] == [
        {"input": 1200 - 1024 - 64, "output": 30, "cache-read": 1024, "cache-write": 64, "response-id": "resp_a"},
        {"input": 1300 - 1152, "output": 9, "cache-read": 1152, "cache-write": 0, "response-id": "resp_b"},
        {"response-id": "resp_c"}]
    totals = usage.of_transcript(tpath)
    assert totals == UsageTotals(input=112 + 148, output=39, cache_read=2176, cache_write=64, responses=3, unmeasured=1)
    assert totals.input + totals.cache_read + totals.cache_write == one.input_tokens + two.input_tokens
    assert totals.output == one.output_tokens + two.output_tokens


def test_approval_pause_and_resume_in_one_process(tpath):
    @function_tool(needs_approval=True)
    def pay(amount: int) -> str:
        """Pays."""
        return f"paid {amount}"

    async def go():
        model = ScriptedModel([[function_call("pay", {"amount": 5}, call_id="call_p")], [assistant_message("done")]])
        agent = Agent(name="a", model=model, tools=[pay])
        async with Spy(tpath) as ts:
            paused = await Runner.run(agent, "pay 5", session=ts, hooks=ts.hooks)
            assert len(paused.interruptions) == 1
            assert of_type(tpath, "tool-dispatched") == []  # nothing ran while waiting
            state = paused.to_state()
            state.approve(paused.interruptions[0])
            resumed = await Runner.run(agent, state, session=ts, hooks=ts.hooks)
            assert resumed.final_output == "done"
            assert await ts.get_items() == ts.received
            received = ts.received
        async with TranscriptSession(tpath) as again:
            assert await again.get_items() == received

    run(go())
    outputs = [i for group in (e.payload.get(ITEMS_EXTRA, []) for e in of_type(tpath, "message")) for i in group
               if i.get("type") == "function_call_output"]
    assert [o["output"] for o in outputs] == ["paid 5"]


def test_approval_pause_survives_reopening(tpath):
    from agents import RunState

    ran = []

    @function_tool(needs_approval=True)
    def refund(amount: int) -> str:
        """Refunds."""
        ran.append(amount)
        return f"refunded {amount}"

    def shop(*steps):
        return Agent(name="shop", model=ScriptedModel(steps), tools=[refund])

    async def pause():
        async with TranscriptSession(tpath) as ts:
            agent = shop([function_call("refund", {"amount": 7}, call_id="call_r")])
            paused = await Runner.run(agent, "refund 7", session=ts, hooks=ts.hooks)
            assert len(paused.interruptions) == 1
            return paused.to_state().to_string()

    async def resume(saved):
        agent = shop([assistant_message("done")])
        async with TranscriptSession(tpath) as ts:  # another process, later
            items = await ts.get_items()
            assert items[-1]["type"] == "function_call"  # left waiting, not answered
            state = await RunState.from_string(agent, saved)
            state.approve(state.get_interruptions()[0])
            done = await Runner.run(agent, state, session=ts, hooks=ts.hooks)
            assert done.final_output == "done"
            return await ts.get_items()

    saved = run(pause())
    items = run(resume(saved))
    assert ran == [7]
    outputs = [i for i in items if i.get("type") == "function_call_output"]
    assert [o["output"] for o in outputs] == ["refunded 7"]


def test_a_result_lost_after_the_tool_ran_is_answered(tpath):
    from llm_agent_session import assistant_message, user_message
    from llm_agent_session.session import NEVER_RUN_TEXT, RESULT_LOST_TEXT

    calls = [{"id": c, "type": "function", "function": {"name": "add", "arguments": "{}"}} for c in ("c1", "c2")]
    with Session.create(tpath) as s:  # a crash after c1 settled, before the SDK saved its output
        s.append_message(user_message("add"))
        s.append_message(assistant_message(None, calls))
        s.append_tool_settled(s.append_tool_dispatched("c1", "add", "{}"), "completed")

    async def go():
        async with TranscriptSession(tpath) as ts:
            return await ts.get_items()

    items = run(go())
    assert items[-2:] == [
        {"type": "function_call_output", "call_id": "c1", "output": RESULT_LOST_TEXT},
        {"type": "function_call_output", "call_id": "c2", "output": NEVER_RUN_TEXT},
    ]


def test_second_run_sees_the_first_and_limit(tpath):
    async def go():
        model = ScriptedModel([[assistant_message("one")], [assistant_message("two")]])
        agent = Agent(name="a", model=model)
        async with TranscriptSession(tpath) as ts:
            await Runner.run(agent, "first", session=ts, hooks=ts.hooks)
        async with TranscriptSession(tpath) as ts:
            await Runner.run(agent, "second", session=ts, hooks=ts.hooks)
            assert model.last_call.input[0] == {"content": "first", "role": "user"}
            assert len(await ts.get_items()) == 4
            last_two = await ts.get_items(limit=2)
            assert last_two[0] == {"content": "second", "role": "user"}
            assert await ts.get_items(limit=0) == []

    run(go())


def test_pop_and_clear_are_rewinds(tpath):
    items = [
        {"role": "user", "content": "hi"},
        {"type": "function_call", "call_id": "c1", "name": "f", "arguments": "{}", "id": "fc_1"},
        {"type": "function_call", "call_id": "c2", "name": "g", "arguments": "{\"n\":1}", "id": "fc_2"},
        {"type": "function_call_output", "call_id": "c1", "output": "one"},
    ]

    async def go():
        async with TranscriptSession(tpath) as ts:
            await ts.add_items(items)
            assert await ts.pop_item() == items[3]
            assert await ts.pop_item() == items[2]  # one of two items sharing an assistant message
            assert await ts.get_items() == items[:2]
            await ts.clear_session()
            assert await ts.get_items() == []
            assert await ts.pop_item() is None
        async with TranscriptSession(tpath) as ts:
            assert await ts.get_items() == []
            await ts.add_items([items[0]])
        async with TranscriptSession(tpath) as ts:
            assert await ts.get_items() == [items[0]]

    run(go())
    # nothing was removed from the file: every item ever added is still on its line
    lines = [e.payload for e in of_type(tpath, "message")]
    assert any(p.get(ITEMS_EXTRA) == [items[1], items[2]] for p in lines)
    assert any(p.get(ITEMS_EXTRA) == [items[3]] for p in lines)
    assert len(of_type(tpath, "rewind")) >= 3


def test_items_that_json_cannot_carry_are_refused_before_writing(tpath):
    async def go():
        async with TranscriptSession(tpath) as ts:
            with pytest.raises((TypeError, ValueError), match="item"):
                await ts.add_items([{"role": "user", "content": float("nan")}])
            assert await ts.get_items() == []

    run(go())
    assert of_type(tpath, "message") == []


def test_second_transcript_session_on_a_locked_file_is_refused(tpath):
    async def go():
        async with TranscriptSession(tpath):
            with pytest.raises(SessionLocked):
                TranscriptSession(tpath)
        async with TranscriptSession(tpath):  # released on close
            pass

    run(go())


def test_tool_raising_through_the_run_leaves_a_valid_history(tpath):
    @function_tool(failure_error_function=None)
    def fragile() -> str:
        """Raises out of the run."""
        raise ValueError("no")

    async def go():
        model = ScriptedModel([[function_call("fragile", {}, call_id="call_f")], [assistant_message("fine")]])
        agent = Agent(name="a", model=model, tools=[fragile])
        async with TranscriptSession(tpath) as ts:
            with pytest.raises(Exception):
                await Runner.run(agent, "go", session=ts, hooks=ts.hooks)
            await Runner.run(agent, "again", session=ts, hooks=ts.hooks)
            history = await ts.get_items()
        return model, history

    model, history = run(go())
    # the model never sees a call without its answer
    calls = {i["call_id"] for i in model.last_call.input if i.get("type") == "function_call"}
    outputs = {i["call_id"] for i in model.last_call.input if i.get("type") == "function_call_output"}
    assert calls <= outputs
    s = Session.load(tpath)
    try:
        assert s.pending_tool_operations() == []
    finally:
        s.close()


CHILD = """
import asyncio, sys
import agents
from agents import Agent, Runner, function_tool
from agents.testing import ScriptedModel, function_call, assistant_message
from llm_agent_session.integrations.openai_agents import TranscriptSession
agents.set_tracing_disabled(True)

@function_tool
def charge_card(amount: int) -> str:
    \"\"\"Charges the card.\"\"\"
    print("IN_TOOL", flush=True)
    import time
    time.sleep(60)
    return "charged"

async def main():
    model = ScriptedModel([[function_call("charge_card", {"amount": 42}, call_id="call_pay")], [assistant_message("done")]])
    ts = TranscriptSession(sys.argv[1])
    await Runner.run(Agent(name="shop", model=model, tools=[charge_card]), "pay 42", session=ts, hooks=ts.hooks)

asyncio.run(main())
"""


def test_sigkill_inside_a_tool_then_resume_answers_the_call(tpath):
    kill_child_at(CHILD, str(tpath))
    # A new process sees the call dispatched, and the message asking for it.
    ops, messages = crash_view(tpath)
    assert ops == [["call_pay", "charge_card", "dispatched"]]
    assert messages == [["user", []], ["assistant", ["call_pay"]]]

    async def resume():
        model = ScriptedModel([[assistant_message("I could not confirm the payment.")]])
        async with TranscriptSession(tpath) as ts:
            await Runner.run(Agent(name="shop", model=model, tools=[]), "did it work?", session=ts, hooks=ts.hooks)
        return model.first_call.input

    sent = run(resume())
    answers = [i for i in sent if i.get("type") == "function_call_output" and i.get("call_id") == "call_pay"]
    assert len(answers) == 1
    text = answers[0]["output"].lower()
    assert "interrupted" in text and "may or may not" in text
    assert sent.index(answers[0]) < len(sent) - 1  # answered before the new user turn
    settles = of_type(tpath, "tool-settled")
    assert [(e.payload["outcome"], e.payload.get("reason")) for e in settles] == [("outcome-unknown", "interrupted")]
    s = Session.load(tpath)
    try:
        assert s.pending_tool_operations() == []
    finally:
        s.close()


def test_one_session_across_event_loops(tpath):
    """Runner.run_sync brings a new event loop each time; the session serves them all."""
    ts = TranscriptSession(tpath)
    try:
        for question in ("1+2", "again"):
            agent = Agent(name="calc", model=two_calls_then_answer(), tools=[add, boom])
            assert Runner.run_sync(agent, question, session=ts, hooks=ts.hooks).final_output == "3 it is"
        for _ in range(2):  # concurrent calls in two loops: the gate's lock is bound to each
            async def together():
                return await asyncio.gather(*(ts.get_items() for _ in range(3)))
            assert [len(h) for h in run(together())] == [12, 12, 12]
    finally:
        run(ts.close())
    assert of_type(tpath, "rewind") == []
