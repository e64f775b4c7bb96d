"""The adapters under a write-time policy: a scripted run whose tool reads seeded secrets
and whose model passes one in a call's arguments leaves none of them on disk, and the
history loads again (markers in place of the secrets)."""

from __future__ import annotations

import asyncio
import json
import random

import pytest

from llm_agent_session.secrets import MARKER, Policy
from tests.secrets.test_policy import on_disk


def _secrets():
    import secret_corpus

    seeds = secret_corpus.seeds(random.Random(9))
    return seeds, "\n".join(s.text for s in seeds)


def test_openai_agents_session_under_a_policy(tmp_path):
    agents = pytest.importorskip("agents")
    from agents import Agent, Runner, function_tool
    from agents.testing import ScriptedModel, assistant_message, function_call

    from llm_agent_session.integrations.openai_agents import TranscriptSession

    agents.set_tracing_disabled(True)
    seeds, env_file = _secrets()

    @function_tool
    def read_env(path: str) -> str:
        """Read a file."""
        return env_file

    model = ScriptedModel([[function_call("read_env", {"path": seeds[1].text}, call_id="c1")],
                           [assistant_message("the key is " + seeds[2].text)]])
    path = tmp_path / "run.jsonl"

    async def go():
        async with TranscriptSession(path, redaction=Policy()) as ts:
            await Runner.run(Agent(name="a", model=model, tools=[read_env]), "read .env", session=ts, hooks=ts.hooks)
            live = json.dumps(await ts.get_items())
        async with TranscriptSession(path) as again:
            return live, json.dumps(await again.get_items(), ensure_ascii=False)

    live, reloaded = asyncio.run(go())
    assert seeds[2].secret in live  # the run's own items: as given
    assert on_disk(tmp_path, {s.secret for s in seeds}) == set()
    assert len(MARKER.findall(reloaded)) >= len(seeds)


def test_pydantic_ai_capability_under_a_policy(tmp_path):
    pytest.importorskip("pydantic_ai")
    import pydantic_ai.models
    from pydantic_ai import Agent
    from pydantic_ai.messages import ModelResponse, TextPart, ToolCallPart, ToolReturnPart
    from pydantic_ai.models.function import FunctionModel

    from llm_agent_session.integrations.pydantic_ai import TranscriptCapability

    pydantic_ai.models.ALLOW_MODEL_REQUESTS = False
    seeds, env_file = _secrets()

    def script(messages, info):
        if any(isinstance(p, ToolReturnPart) for p in messages[-1].parts):
            return ModelResponse(parts=[TextPart("the key is " + seeds[2].text)])
        return ModelResponse(parts=[ToolCallPart("read_env", {"path": seeds[1].text}, tool_call_id="c1")])

    path = tmp_path / "run.jsonl"

    async def go():
        async with TranscriptCapability(path, redaction=Policy()) as cap:
            agent = Agent(FunctionModel(script), capabilities=[cap])

            @agent.tool_plain
            def read_env(path: str) -> str:
                """Read a file."""
                return env_file

            await agent.run("read .env", message_history=await cap.message_history())
        async with TranscriptCapability(path) as cap:
            return repr(await cap.message_history())

    reloaded = asyncio.run(go())
    assert on_disk(tmp_path, {s.secret for s in seeds}) == set()
    assert "redacted:" in reloaded
