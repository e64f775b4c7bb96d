"""Google's Agent Development Kit on transcripts: an agent killed with SIGKILL inside a
tool call, then resumed in a new process.

    pip install 'llm-agent-session[adk]'
    python examples/adk_resume.py [DIR]

Offline: the model is a scripted ``BaseLlm``. A child process runs the agent, which asks
for ``charge_card``; the tool starts, and the child is killed with SIGKILL right there.
The parent then opens the same sessions directory with a new service: ``get_session``
answers the call with a ``function_response`` saying its outcome is unknown (the card
may or may not have been charged), and the agent's next model request is valid again.
"""

from __future__ import annotations

import asyncio
import json
import os
import signal
import subprocess
import sys
import tempfile
import time
from typing import Any, AsyncGenerator, List

from google.adk.agents import LlmAgent
from google.adk.models.base_llm import BaseLlm
from google.adk.models.llm_request import LlmRequest
from google.adk.models.llm_response import LlmResponse
from google.adk.runners import Runner
from google.genai import types

from llm_agent_session import Session
from llm_agent_session.integrations.adk import TranscriptSessionService

APP, USER, SESSION = "shop", "ada", "order-42"
IN_TOOL = "charging the card..."


class ScriptedModel(BaseLlm):
    """A stand-in for Gemini: answers from a script, and keeps what it was sent."""

    model: str = "scripted"
    script: List[LlmResponse] = []
    sent: List[LlmRequest] = []

    async def generate_content_async(self, llm_request: LlmRequest, stream: bool = False) -> AsyncGenerator[LlmResponse, None]:
        self.sent.append(llm_request)
        yield self.script.pop(0)


def charge_card(amount: int) -> dict:
    """Charges the customer's card."""
    print(IN_TOOL, flush=True)
    time.sleep(3600)  # the payment provider is slow; the process is killed meanwhile
    return {"charged": amount}


def model_turn(part: types.Part) -> LlmResponse:
    return LlmResponse(content=types.Content(role="model", parts=[part]))


async def first_run(root: str) -> None:
    """In the child: a run that never comes back from its tool."""
    pay = types.Part(function_call=types.FunctionCall(id="call_pay", name="charge_card", args={"amount": 42}))
    agent = LlmAgent(name="cashier", model=ScriptedModel(script=[model_turn(pay)]), tools=[charge_card])
    service = TranscriptSessionService(root)
    runner = Runner(app_name=APP, agent=agent, session_service=service)
    await service.create_session(app_name=APP, user_id=USER, session_id=SESSION)
    question = types.Content(role="user", parts=[types.Part(text="Pay 42 euros for order 42.")])
    async for _ in runner.run_async(user_id=USER, session_id=SESSION, new_message=question):
        pass


def summary(content: types.Content) -> Any:
    out = []
    for part in content.parts or []:
        if part.function_call:
            out.append(f"function_call {part.function_call.name}({json.dumps(part.function_call.args)}) id={part.function_call.id}")
        elif part.function_response:
            out.append(f"function_response id={part.function_response.id} {json.dumps(part.function_response.response)}")
        elif part.text:
            out.append(part.text)
    return f"{content.role}: " + "; ".join(out)


async def resume(root: str) -> None:
    """In the parent, after the kill: a new service on the same directory."""
    service = TranscriptSessionService(root)
    path = service.transcript_path(app_name=APP, user_id=USER, session_id=SESSION)
    print("transcript:", path)
    pending = Session.peek(path, survey=True)["survey"]["pending_tool_operations"]
    print("left by the crash:", [(op.call_id, op.tool, op.state) for op in pending])

    session = await service.get_session(app_name=APP, user_id=USER, session_id=SESSION)
    assert session is not None
    answer = session.events[-1]
    print("get_session answered it:", summary(answer.content))

    model = ScriptedModel(script=[model_turn(types.Part(text="I could not confirm the payment. Please check your statement before we try again."))])
    agent = LlmAgent(name="cashier", model=model, tools=[charge_card])
    runner = Runner(app_name=APP, agent=agent, session_service=service)
    question = types.Content(role="user", parts=[types.Part(text="Did it go through?")])
    async for event in runner.run_async(user_id=USER, session_id=SESSION, new_message=question):
        if event.content and event.content.parts and event.content.parts[0].text:
            print("agent:", event.content.parts[0].text)
    print("the model was sent:")
    for content in model.sent[0].contents:
        print("   ", summary(content))
    await service.close()


def main() -> None:
    if sys.argv[1:2] == ["--child"]:
        asyncio.run(first_run(sys.argv[2]))
        return
    root = sys.argv[1] if len(sys.argv) > 1 else tempfile.mkdtemp(prefix="adk-sessions-")
    child = subprocess.Popen([sys.executable, os.path.abspath(__file__), "--child", root],
                             stdout=subprocess.PIPE, text=True)
    assert child.stdout is not None
    for line in child.stdout:
        if line.strip() == IN_TOOL:
            break
    os.kill(child.pid, signal.SIGKILL)  # kill -9 while the tool runs
    child.wait()
    print(f"killed the agent with SIGKILL inside charge_card (exit {child.returncode})")
    asyncio.run(resume(root))


if __name__ == "__main__":
    main()
