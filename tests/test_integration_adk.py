"""Issue #36: what TranscriptSessionService promises beyond ADK's interface, on both cores:
a session reads back whole in a new process; a run killed with SIGKILL inside a tool
resumes with the call answered "outcome unknown", once; one writer per session across
processes; ``num_recent_events`` reads only the transcript's tail; an append a crash cut
short is finished by the next writer; the command line reads what it writes."""

from __future__ import annotations

import asyncio
import json
import os
import subprocess
import sys
import time

import pytest

try:
    from google.adk.agents import LlmAgent
    from google.adk.events.event import Event
    from google.adk.events.event_actions import EventActions
    from google.adk.models.base_llm import BaseLlm
    from google.adk.models.llm_response import LlmResponse
    from google.adk.runners import Runner
    from google.adk.sessions.base_session_service import GetSessionConfig
    from google.genai import types
except ImportError:
    pytest.skip("google-adk not installed: pip install 'llm-agent-session[adk]'", allow_module_level=True)

from tests.support.helpers import child_env, crash_view, kill_child_at, run_py, spawn_py
from llm_agent_session import Session, SessionLocked
from llm_agent_session.integrations._adk_files import UnreadableLine
from llm_agent_session.integrations.adk import INTERRUPTED_RESPONSE, SYNTHESIZED, TranscriptSessionService


def run(coro):
    return asyncio.run(coro)


def text(t, role="user"):
    return types.Content(role=role, parts=[types.Part(text=t)])


class Scripted(BaseLlm):
    """A model that answers from a script and keeps every request it was sent."""

    model: str = "scripted"
    script: list = []
    requests: list = []

    async def generate_content_async(self, llm_request, stream=False):
        self.requests.append(llm_request)
        yield self.script.pop(0)


def call(call_id, name, args):
    return LlmResponse(content=types.Content(role="model", parts=[types.Part(function_call=types.FunctionCall(id=call_id, name=name, args=args))]))


def say(t):
    return LlmResponse(content=text(t, "model"))


# --------------------------------------------------------------------------- round trip


def a_conversation(service):
    """Events of every shape ADK makes, appended through `service`."""

    async def go():
        made = await service.create_session(app_name="shop", user_id="ada", session_id="s1",
                                            state={"app:currency": "EUR", "user:name": "Ada", "cart": [], "temp:x": 1})
        events = [
            Event(invocation_id="inv-1", author="user", content=text("Buy the red shoes")),
            Event(invocation_id="inv-1", author="cashier", content=types.Content(role="model", parts=[
                types.Part(text="Let me check.", thought=True),
                types.Part(text="Checking stock."),
                types.Part(function_call=types.FunctionCall(id="c1", name="stock", args={"item": "red shoes"})),
                types.Part(function_call=types.FunctionCall(id="c2", name="price", args={"item": "red shoes"})),
            ]), long_running_tool_ids=set(), branch="cashier"),
            Event(invocation_id="inv-1", author="cashier", content=types.Content(role="user", parts=[
                types.Part(function_response=types.FunctionResponse(id="c1", name="stock", response={"left": 2})),
                types.Part(function_response=types.FunctionResponse(id="c2", name="price", response={"error": "no price list"})),
            ]), actions=EventActions(state_delta={"cart": ["red shoes"], "user:last": "shoes", "temp:t": 0})),
            Event(invocation_id="inv-1", author="cashier", content=types.Content(role="model", parts=[
                types.Part(text="Here they are."), types.Part.from_bytes(data=b"\x89PNG\r\n\x00\xff", mime_type="image/png"),
            ]), usage_metadata=types.GenerateContentResponseUsageMetadata(prompt_token_count=10, total_token_count=12),
                turn_complete=True, custom_metadata={"k": [1, None]}),
            Event(invocation_id="inv-2", author="cashier", actions=EventActions(
                state_delta={"app:sale": True}, transfer_to_agent="billing", escalate=False)),
            Event(invocation_id="inv-2", author="cashier", error_code="SAFETY", error_message="blocked"),
        ]
        for e in events:
            await service.append_event(made, e)
        return made

    return run(go())


READ_BACK = """
import asyncio
from llm_agent_session.integrations.adk import TranscriptSessionService
async def main():
    service = TranscriptSessionService(sys.argv[1])
    got = await service.get_session(app_name="shop", user_id="ada", session_id="s1")
    print(got.model_dump_json())
    print(json.dumps(await service.get_user_state(app_name="shop", user_id="ada")))
    await service.close()
asyncio.run(main())
"""


def test_a_session_reads_back_whole_in_a_new_process(tmp_path):
    service = TranscriptSessionService(tmp_path)
    made = a_conversation(service)
    run(service.close())
    out = run_py(READ_BACK, str(tmp_path)).stdout.splitlines()
    got = type(made).model_validate_json(out[0])
    assert got.model_dump() == made.model_dump() | {"state": got.state}
    assert [e.model_dump() for e in got.events] == [e.model_dump() for e in made.events]
    for mine, theirs in zip(made.events, got.events):
        assert (theirs.id, theirs.author, theirs.invocation_id) == (mine.id, mine.author, mine.invocation_id)
    assert got.events[3].content.parts[1].inline_data.data == b"\x89PNG\r\n\x00\xff"
    assert got.state == {"app:currency": "EUR", "app:sale": True, "user:name": "Ada", "user:last": "shoes", "cart": ["red shoes"]}
    assert made.state == got.state | {"temp:t": 0}  # the temp key lived in memory only
    assert json.loads(out[1]) == {"name": "Ada", "last": "shoes"}
    raw = (tmp_path / "shop" / "ada" / "s1.jsonl").read_text()
    assert "temp:" not in raw


def test_calls_are_dispatched_and_settled_and_shown_as_chat(tmp_path):
    service = TranscriptSessionService(tmp_path)
    a_conversation(service)
    run(service.close())
    path = tmp_path / "shop" / "ada" / "s1.jsonl"
    s = Session.load(path)
    try:
        kinds = [(e.type, e.payload.get("call-id") or e.payload.get("outcome")) for e in s.events
                 if e.type.startswith("tool-")]
        assert kinds == [("tool-dispatched", "c1"), ("tool-dispatched", "c2"), ("tool-settled", "completed"), ("tool-settled", "failed")]
        assert [(m.role, m.name) for m in s.messages] == [
            ("user", "user"), ("assistant", "cashier"), ("tool", "cashier"), ("tool", "cashier"),
            ("assistant", "cashier"), ("assistant", "cashier"), ("assistant", "cashier")]
        assert [c["id"] for c in s.messages[1].tool_calls] == ["c1", "c2"]
        assert s.messages[1].content == "Checking stock."  # the thought stays in the event only
        assert s.messages[4].content == "Here they are.\n[image/png, 8 bytes]"
        assert s.messages[6].content == "[error SAFETY: blocked]"
        extra = s.message_extra(s.message_ids[3])
        assert extra["adk-invocation"] == "inv-1" and extra["adk-state"] == {"cart": ["red shoes"]}
        assert s.pending_tool_operations() == []
    finally:
        s.close()


# --------------------------------------------------------------------------- SIGKILL mid-tool


KILLED = """
import asyncio, time
from google.adk.agents import LlmAgent
from google.adk.models.base_llm import BaseLlm
from google.adk.models.llm_response import LlmResponse
from google.adk.runners import Runner
from google.genai import types
from llm_agent_session.integrations.adk import TranscriptSessionService

class Scripted(BaseLlm):
    model: str = "scripted"
    async def generate_content_async(self, llm_request, stream=False):
        part = types.Part(function_call=types.FunctionCall(id="call_pay", name="charge_card", args={"amount": 42}))
        yield LlmResponse(content=types.Content(role="model", parts=[part]))

def charge_card(amount: int) -> dict:
    \"\"\"Charges the card.\"\"\"
    print("IN_TOOL", flush=True)
    time.sleep(60)
    return {"charged": amount}

async def main():
    service = TranscriptSessionService(sys.argv[1])
    runner = Runner(app_name="shop", agent=LlmAgent(name="cashier", model=Scripted(), tools=[charge_card]), session_service=service)
    await service.create_session(app_name="shop", user_id="ada", session_id="s1")
    message = types.Content(role="user", parts=[types.Part(text="pay 42")])
    async for _ in runner.run_async(user_id="ada", session_id="s1", new_message=message):
        pass

asyncio.run(main())
"""


def test_sigkill_inside_a_tool_then_get_session_answers_the_call_once(tmp_path):
    kill_child_at(KILLED, str(tmp_path))
    path = tmp_path / "shop" / "ada" / "s1.jsonl"
    ops, messages = crash_view(path)
    assert ops == [["call_pay", "charge_card", "dispatched"]]  # it may have run
    assert messages == [["user", []], ["assistant", ["call_pay"]]]

    ran = []

    def charge_card(amount: int) -> dict:
        """Charges the card."""
        ran.append(amount)
        return {"charged": amount}

    async def resume():
        service = TranscriptSessionService(tmp_path)
        first = await service.get_session(app_name="shop", user_id="ada", session_id="s1")
        again = await service.get_session(app_name="shop", user_id="ada", session_id="s1")
        model = Scripted(script=[say("I could not confirm the payment; please check your statement.")], requests=[])
        runner = Runner(app_name="shop", agent=LlmAgent(name="cashier", model=model, tools=[charge_card]), session_service=service)
        async for _ in runner.run_async(user_id="ada", session_id="s1", new_message=text("did it work?")):
            pass
        await service.close()
        return first, again, model.requests

    first, again, requests = run(resume())
    answer = first.events[-1]
    assert [e.author for e in first.events] == ["user", "cashier", "cashier"]
    response = answer.content.parts[0].function_response
    assert (response.id, response.name, response.response) == ("call_pay", "charge_card", INTERRUPTED_RESPONSE)
    assert "may or may not have run" in response.response["error"]
    assert answer.custom_metadata == {SYNTHESIZED: "interrupted-call"}
    assert answer.invocation_id == first.events[1].invocation_id
    assert [e.id for e in again.events] == [e.id for e in first.events]  # no second answer
    assert ran == []  # nothing ran the tool again
    # the model's next request answers the call before the new question
    sent = [(c.role, [p.function_call.id if p.function_call else p.function_response.id if p.function_response else p.text
                      for p in c.parts]) for c in requests[0].contents]
    assert sent == [("user", ["pay 42"]), ("model", ["call_pay"]), ("user", ["call_pay"]), ("user", ["did it work?"])]
    s = Session.load(path)
    try:
        assert s.pending_tool_operations() == []
        settles = [(e.payload["outcome"], e.payload.get("reason")) for e in s.events if e.type == "tool-settled"]
        assert settles == [("outcome-unknown", "interrupted")]
    finally:
        s.close()


def test_a_call_waiting_for_the_user_is_left_for_adk(tmp_path):
    """ADK's own requests to the client (a confirmation, credentials) are never answered here."""

    async def go():
        service = TranscriptSessionService(tmp_path)
        made = await service.create_session(app_name="a", user_id="u", session_id="s")
        ask = types.FunctionCall(id="confirm-1", name="adk_request_confirmation", args={"hint": "sure?"})
        await service.append_event(made, Event(invocation_id="i", author="agent", long_running_tool_ids={"confirm-1"},
                                               content=types.Content(role="model", parts=[types.Part(function_call=ask)])))
        await service.close()
        again = TranscriptSessionService(tmp_path)
        got = await again.get_session(app_name="a", user_id="u", session_id="s")
        await again.close()
        return got

    got = run(go())
    assert len(got.events) == 1
    s = Session.load(tmp_path / "a" / "u" / "s.jsonl")
    try:
        assert [e.type for e in s.events] == ["session-meta", "message"]  # never dispatched
    finally:
        s.close()


# --------------------------------------------------------------------------- one writer


HOLDER = """
import asyncio
from google.adk.events.event import Event
from llm_agent_session.integrations.adk import TranscriptSessionService
async def main():
    service = TranscriptSessionService(sys.argv[1])
    made = await service.create_session(app_name="a", user_id="u", session_id="s")
    await service.append_event(made, Event(invocation_id="held", author="user"))
    print("HELD", flush=True)
    await asyncio.get_running_loop().run_in_executor(None, sys.stdin.readline)
    await service.close()
    print("CLOSED", flush=True)
    await asyncio.get_running_loop().run_in_executor(None, sys.stdin.readline)
asyncio.run(main())
"""


def test_one_writer_per_session_across_processes(tmp_path):
    child = spawn_py(HOLDER, str(tmp_path), stdin=subprocess.PIPE)
    try:
        assert child.stdout.readline().strip() == "HELD", child.stderr.read()

        async def while_held():
            service = TranscriptSessionService(tmp_path)
            got = await service.get_session(app_name="a", user_id="u", session_id="s")  # reading locks nothing
            with pytest.raises(SessionLocked, match="held by another writer"):
                await service.append_event(got, Event(invocation_id="intruder", author="user"))
            with pytest.raises(SessionLocked, match="held by another writer"):
                await service.delete_session(app_name="a", user_id="u", session_id="s")
            return service, got

        service, got = run(while_held())
        child.stdin.write("\n")
        child.stdin.flush()
        assert child.stdout.readline().strip() == "CLOSED"

        async def after():
            await service.append_event(got, Event(invocation_id="next", author="user"))
            again = await service.get_session(app_name="a", user_id="u", session_id="s")
            await service.close()
            return again

        again = run(after())
        assert [e.invocation_id for e in again.events] == ["held", "next"]
    finally:
        child.stdin.close()
        child.wait(timeout=60)
        child.stdout.close()
        child.stderr.close()


RELEASES_SOON = """
import asyncio, time
from llm_agent_session.integrations.adk import TranscriptSessionService
async def main():
    service = TranscriptSessionService(sys.argv[1])
    await service.create_session(app_name="a", user_id="u", session_id="s")
    print("HELD", flush=True)
    time.sleep(0.5)
    await service.close()
asyncio.run(main())
"""


def test_a_writer_with_lock_timeout_waits_its_turn(tmp_path):
    child = spawn_py(RELEASES_SOON, str(tmp_path))
    try:
        assert child.stdout.readline().strip() == "HELD", child.stderr.read()

        async def go():
            service = TranscriptSessionService(tmp_path, lock_timeout=60)
            got = await service.get_session(app_name="a", user_id="u", session_id="s")
            await service.append_event(got, Event(invocation_id="waited", author="user"))
            await service.close()
            return got

        assert [e.invocation_id for e in run(go()).events] == ["waited"]
    finally:
        child.wait(timeout=60)
        child.stdout.close()
        child.stderr.close()


def test_two_services_in_one_process_exclude_each_other_until_released(tmp_path):
    async def go():
        one, two = TranscriptSessionService(tmp_path), TranscriptSessionService(tmp_path)
        made = await one.create_session(app_name="a", user_id="u", session_id="s")
        with pytest.raises(SessionLocked):
            await two.append_event(made, Event(invocation_id="x", author="user"))
        await one.release(app_name="a", user_id="u", session_id="s")
        await two.append_event(made, Event(invocation_id="y", author="user"))
        with pytest.raises(SessionLocked):
            await one.append_event(made, Event(invocation_id="z", author="user"))
        await one.close()
        await two.close()
        return made

    assert [e.invocation_id for e in run(go()).events] == ["y"]


def test_max_open_releases_the_least_recently_used(tmp_path):
    async def go():
        one, two = TranscriptSessionService(tmp_path, max_open=2), TranscriptSessionService(tmp_path)
        a = await one.create_session(app_name="a", user_id="u", session_id="first")
        await one.create_session(app_name="a", user_id="u", session_id="second")
        await one.create_session(app_name="a", user_id="u", session_id="third")  # releases "first"
        await two.append_event(a, Event(invocation_id="taken", author="user"))
        await one.close()
        await two.close()
        return a

    assert [e.invocation_id for e in run(go()).events] == ["taken"]


# --------------------------------------------------------------------------- reading only the tail


def many_events(tmp_path, n):
    async def go():
        service = TranscriptSessionService(tmp_path)
        made = await service.create_session(app_name="a", user_id="u", session_id="s", state={"k": 0})
        for i in range(n):
            await service.append_event(made, Event(invocation_id=f"inv-{i}", author="user", content=text(f"m{i}"),
                                                   actions=EventActions(state_delta={"k": i} if i == 3 else {})))
        await service.close()

    run(go())
    return tmp_path / "a" / "u" / "s.jsonl"


def damage_line_containing(path, needle):
    """Overwrite, in place, one byte of the line holding `needle` so it no longer parses."""
    data = path.read_bytes()
    at = data.index(needle.encode())
    start = data.rindex(b"\n", 0, at) + 1
    with open(path, "r+b") as f:
        f.seek(start)
        f.write(b"#")


def test_recent_events_and_listing_read_only_the_tail(tmp_path):
    path = many_events(tmp_path, 40)
    damage_line_containing(path, '"m10"')  # a line well before the last five and the state's

    async def go():
        service = TranscriptSessionService(tmp_path)
        recent = await service.get_session(app_name="a", user_id="u", session_id="s", config=GetSessionConfig(num_recent_events=5))
        listed = await service.list_sessions(app_name="a")
        with pytest.raises(UnreadableLine, match="is not JSON"):
            await service.get_session(app_name="a", user_id="u", session_id="s")  # the whole history: reads it
        await service.close()
        return recent, listed

    recent, listed = run(go())
    assert [e.invocation_id for e in recent.events] == [f"inv-{i}" for i in range(35, 40)]
    assert recent.state == {"k": 3}
    assert [(s.id, s.state) for s in listed.sessions] == [("s", {"k": 3})]


# --------------------------------------------------------------------------- an append cut short


def test_an_append_cut_short_is_finished_by_the_next_reader(tmp_path):
    """A crash after an event's line but before its user state and sidecar: the files are
    left as that crash leaves them, and the next get_session finishes the append."""

    async def first():
        service = TranscriptSessionService(tmp_path)
        made = await service.create_session(app_name="a", user_id="u", session_id="s")
        await service.append_event(made, Event(invocation_id="i", author="user", timestamp=100.0,
                                               actions=EventActions(state_delta={"user:plan": "pro", "user:seats": 1})))
        other = await service.create_session(app_name="a", user_id="u", session_id="t")
        await service.append_event(other, Event(invocation_id="j", author="user", timestamp=200.0,
                                                actions=EventActions(state_delta={"user:seats": 5})))
        await service.close()

    run(first())
    user_state = tmp_path / "a" / "u" / ".user-state.json"
    kept = json.loads(user_state.read_text())
    del kept["state"]["plan"], kept["stamps"]["plan"]  # never written: the crash came first
    user_state.write_text(json.dumps(kept))
    (tmp_path / "a" / "u" / ".s.adk.json").unlink()

    async def then():
        service = TranscriptSessionService(tmp_path)
        got = await service.get_session(app_name="a", user_id="u", session_id="s")
        await service.close()
        return got

    got = run(then())
    # redone, except where a later write (the other session's, at 200) superseded it
    assert got.state == {"user:plan": "pro", "user:seats": 5}
    assert (tmp_path / "a" / "u" / ".s.adk.json").exists()


def test_a_torn_last_line_is_repaired_and_the_session_reads_as_before_it(tmp_path):
    path = many_events(tmp_path, 3)
    with open(path, "ab") as f:
        f.write(b'{"id":"torn","payload":{"role":"user","content":"half')

    async def go():
        service = TranscriptSessionService(tmp_path)
        got = await service.get_session(app_name="a", user_id="u", session_id="s")
        await service.append_event(got, Event(invocation_id="after", author="user"))
        again = await service.get_session(app_name="a", user_id="u", session_id="s")
        await service.close()
        return again

    got = run(go())
    assert [e.invocation_id for e in got.events] == ["inv-0", "inv-1", "inv-2", "after"]


# --------------------------------------------------------------------------- names and the command line


def test_names_a_file_system_refuses_map_to_distinct_files(tmp_path):
    names = ["../../etc", "Ada", "ada", ".hidden", "con", "", "a/b", "x" * 300, "y" * 300, "été"]

    async def go():
        service = TranscriptSessionService(tmp_path / "root")
        for name in names:
            made = await service.create_session(app_name=name, user_id=name, session_id=name or "empty", state={"who": name})
            await service.append_event(made, Event(invocation_id=name, author="user"))
        listed = {name: (await service.list_sessions(app_name=name)).sessions for name in names}
        await service.close()
        return listed

    listed = run(go())
    for name in names:
        assert [(s.user_id, s.id, s.state) for s in listed[name]] == [(name, name or "empty", {"who": name})]
    assert not (tmp_path / "etc").exists()
    files = [os.path.relpath(os.path.join(d, f), tmp_path / "root") for d, _, fs in os.walk(tmp_path / "root") for f in fs if f.endswith(".jsonl")]
    assert len(files) == len(names)
    assert os.path.join("!ada", "!ada", "!ada.jsonl") in files


def test_the_command_line_shows_authors_and_invocations(tmp_path):
    service = TranscriptSessionService(tmp_path)
    a_conversation(service)
    run(service.close())
    path = str(tmp_path / "shop" / "ada" / "s1.jsonl")

    def cli(*args):
        proc = subprocess.run([sys.executable, "-m", "llm_agent_session", *args], env=child_env(),
                              capture_output=True, text=True, timeout=120)
        assert proc.returncode == 0, proc.stderr
        return proc.stdout

    shown = cli("show", "--extras", path)
    assert "── assistant (cashier)" in shown and "adk-invocation" in shown and '"inv-2"' in shown
    assert "red shoes" in cli("export", "--format", "markdown", path)
    assert "tool" in cli("stats", path)
    exported = json.loads(cli("export", "--format", "openai", path))
    assert [m.get("name") for m in exported][:2] == ["user", "cashier"]


def test_the_example_kills_and_resumes(tmp_path):
    example = os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "examples", "adk_resume.py")
    proc = subprocess.run([sys.executable, example, str(tmp_path)], env=child_env(), capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0, proc.stderr
    out = proc.stdout
    assert "killed the agent with SIGKILL inside charge_card (exit -9)" in out
    assert "left by the crash: [('call_pay', 'charge_card', 'dispatched')]" in out
    assert 'get_session answered it: user: function_response id=call_pay {"error": "This tool call was interrupted' in out
    sent = out.split("the model was sent:\n", 1)[1].splitlines()
    assert [line.split(":")[0].strip() for line in sent] == ["user", "model", "user", "user"]
    assert "id=call_pay" in sent[2] and "may or may not have run" in sent[2]


def test_the_viewer_and_the_dataset_read_it(tmp_path):
    root = tmp_path / "sessions"
    service = TranscriptSessionService(root)
    a_conversation(service)
    run(service.close())
    from tests.support.view import client_for

    client = client_for([str(root)])
    for _ in range(500):
        shelf = client.get("/api/shelf").json()
        if shelf["done"]:
            break
        time.sleep(0.02)
    rows = {row["name"]: row for row in shelf["rows"]}
    assert sorted(rows) == ["sessions/shop/ada/s1.jsonl"]  # the service's own files are not transcripts
    assert rows["sessions/shop/ada/s1.jsonl"]["agent"] == "shop"
    items = client.get("/api/window", params={"t": "sessions/shop/ada/s1.jsonl", "from": 0, "count": 200}).json()["items"]
    messages = [i for i in items if i["type"] == "message"]
    assert any({"text": "name: cashier", "cls": "note"} in i["badges"] for i in messages)
    assert any(key == "adk-invocation" and value == '"inv-2"' for i in messages for key, value in i["extras"])

    pytest.importorskip("pyarrow")
    import pyarrow.parquet as pq

    proc = subprocess.run([sys.executable, "-m", "llm_agent_session", "dataset", str(root), str(tmp_path / "ds")],
                          env=child_env(), capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0, proc.stderr
    def table(name):
        top = tmp_path / "ds" / name  # the table as readers see it (not its versions)
        return [row for d, _, fs in os.walk(top) for f in fs if f.endswith(".parquet") for row in pq.read_table(os.path.join(d, f)).to_pylist()]

    assert {"user", "cashier"} <= {row.get("name") for row in table("messages")}
    assert sorted(row["outcome"] for row in table("tool_calls")) == ["completed", "failed"]


def leave_only(path, keep):
    """Truncate the transcript to its first `keep` lines, as a kill between two writes of
    one append leaves it (an append is several whole-line writes), and drop the sidecar."""
    lines = path.read_bytes().split(b"\n")[:keep]
    path.write_bytes(b"\n".join(lines) + b"\n")
    path.with_name("." + path.name[: -len(".jsonl")] + ".adk.json").unlink()


def model_call_then(tmp_path, respond):
    async def go():
        service = TranscriptSessionService(tmp_path)
        made = await service.create_session(app_name="a", user_id="u", session_id="s")
        ask = types.FunctionCall(id="c1", name="refund", args={"order": 7})
        await service.append_event(made, Event(invocation_id="i", author="agent",
                                               content=types.Content(role="model", parts=[types.Part(function_call=ask)])))
        if respond:
            answer = types.FunctionResponse(id="c1", name="refund", response={"refunded": True})
            await service.append_event(made, Event(invocation_id="i", author="agent",
                                                   content=types.Content(role="user", parts=[types.Part(function_response=answer)])))
        await service.close()

    run(go())
    return tmp_path / "a" / "u" / "s.jsonl"


def types_of(path):
    return [json.loads(line)["type"] for line in path.read_bytes().splitlines()]


def get_twice(tmp_path):
    async def go():
        service = TranscriptSessionService(tmp_path)
        got = [await service.get_session(app_name="a", user_id="u", session_id="s") for _ in range(2)]
        await service.close()
        return got

    return run(go())


def test_a_kill_between_a_call_and_its_dispatch_still_gets_an_answer(tmp_path):
    path = model_call_then(tmp_path, respond=False)
    assert types_of(path) == ["session-meta", "message", "tool-dispatched"]
    leave_only(path, 2)  # the model's event is on disk, its dispatch never was
    first, again = get_twice(tmp_path)
    response = first.events[-1].content.parts[0].function_response
    assert (response.id, response.response) == ("c1", INTERRUPTED_RESPONSE)
    assert len(again.events) == len(first.events) == 2


def test_a_kill_between_a_response_and_its_settle_is_settled_after(tmp_path):
    path = model_call_then(tmp_path, respond=True)
    assert types_of(path) == ["session-meta", "message", "tool-dispatched", "message", "tool-settled"]
    leave_only(path, 4)  # the response is on disk, its settle never was
    first, _ = get_twice(tmp_path)
    assert [e.author for e in first.events] == ["agent", "agent"]  # nothing synthesized: the call has its answer
    s = Session.load(path)
    try:
        assert s.pending_tool_operations() == []
        assert [e.payload["outcome"] for e in s.events if e.type == "tool-settled"] == ["completed"]
    finally:
        s.close()
