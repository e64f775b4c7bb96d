"""Issue #36: what ADK's BaseSessionService promises (its docstrings, and what its stock
services agree on), checked on TranscriptSessionService, on both cores. Written from the
base class's documentation; ADK's own contract tests live only in ADK's repository.

Where the stock services disagree, the service follows the base class's documentation:
events come back in the order they were appended (SQLite's service sorts them by
timestamp), ``after_timestamp`` keeps every event at or after the time (the in-memory
service stops at the last one before it), and a stale Session object is refused with
``StaleSessionError`` (the in-memory service appends it anyway).
"""

from __future__ import annotations

import asyncio
import time

import pytest

try:
    from google.adk.errors.already_exists_error import AlreadyExistsError
    from google.adk.errors.session_not_found_error import SessionNotFoundError
    from google.adk.events.event import Event
    from google.adk.events.event_actions import EventActions
    from google.adk.sessions.base_session_service import BaseSessionService, GetSessionConfig
    from google.genai import types
except ImportError:
    pytest.skip("google-adk not installed: pip install 'llm-agent-session[adk]'", allow_module_level=True)

from llm_agent_session.integrations.adk import StaleSessionError, TranscriptSessionService


def run(coro):
    return asyncio.run(coro)


def with_service(tmp_path, body):
    """Run `body(service)` on a fresh service over `tmp_path`, closing it after."""

    async def go():
        async with TranscriptSessionService(tmp_path / "sessions") as service:
            return await body(service)

    return run(go())


def event(**kw):
    kw.setdefault("invocation_id", "inv-1")
    kw.setdefault("author", "user")
    return Event(**kw)


def delta(**state):
    return EventActions(state_delta=state)


def test_is_a_base_session_service(tmp_path):
    assert isinstance(TranscriptSessionService(tmp_path), BaseSessionService)


def test_a_missing_session_is_none(tmp_path):
    async def body(s):
        return await s.get_session(app_name="a", user_id="u", session_id="nope")

    assert with_service(tmp_path, body) is None


def test_created_session_reads_back_equal_and_is_gone_after_delete(tmp_path):
    async def body(s):
        made = await s.create_session(app_name="a", user_id="u", state={"k": "v"})
        assert (made.app_name, made.user_id, made.state, made.events) == ("a", "u", {"k": "v"}, [])
        assert made.id and made.last_update_time <= time.time()
        got = await s.get_session(app_name="a", user_id="u", session_id=made.id)
        await s.delete_session(app_name="a", user_id="u", session_id=made.id)
        gone = await s.get_session(app_name="a", user_id="u", session_id=made.id)
        await s.delete_session(app_name="a", user_id="u", session_id=made.id)  # a second delete: nothing to do
        return made, got, gone

    made, got, gone = with_service(tmp_path, body)
    assert got == made
    assert gone is None


def test_an_id_given_twice_is_refused(tmp_path):
    async def body(s):
        await s.create_session(app_name="a", user_id="u", session_id="same")
        with pytest.raises(AlreadyExistsError):
            await s.create_session(app_name="a", user_id="u", session_id="same")
        # the same id under another user or app is another session
        await s.create_session(app_name="a", user_id="v", session_id="same")
        await s.create_session(app_name="b", user_id="u", session_id="same")

    with_service(tmp_path, body)


def test_listing_gives_each_users_sessions_with_merged_state_and_no_events(tmp_path):
    async def body(s):
        for user, sid in (("u1", "x"), ("u1", "y"), ("u2", "z")):
            made = await s.create_session(app_name="a", user_id=user, session_id=sid, state={"k": sid})
            await s.append_event(made, event(content=types.Content(role="user", parts=[types.Part(text="hi")])))
        await s.create_session(app_name="other", user_id="u1", session_id="elsewhere")
        one = (await s.list_sessions(app_name="a", user_id="u1")).sessions
        two = (await s.list_sessions(app_name="a", user_id="u2")).sessions
        every = (await s.list_sessions(app_name="a")).sessions
        none = (await s.list_sessions(app_name="a", user_id="nobody")).sessions
        return one, two, every, none

    one, two, every, none = with_service(tmp_path, body)
    assert [x.id for x in one] == ["x", "y"] and [x.id for x in two] == ["z"] and none == []
    assert {(x.user_id, x.id): x.state for x in every} == {("u1", "x"): {"k": "x"}, ("u1", "y"): {"k": "y"}, ("u2", "z"): {"k": "z"}}
    assert all(x.events == [] for x in every)
    # oldest update first, so the last is the most recently active
    assert [x.last_update_time for x in every] == sorted(x.last_update_time for x in every)
    assert [x.id for x in every] == ["x", "y", "z"]


def test_app_state_is_shared_by_every_user_of_the_app_only(tmp_path):
    async def body(s):
        first = await s.create_session(app_name="a", user_id="u1", state={"app:theme": "dark"})
        await s.append_event(first, event(actions=delta(**{"app:lang": "fr"})))
        other_user = await s.create_session(app_name="a", user_id="u2")
        other_app = await s.create_session(app_name="b", user_id="u1")
        again = await s.get_session(app_name="a", user_id="u1", session_id=first.id)
        return other_user.state, other_app.state, again.state

    other_user, other_app, again = with_service(tmp_path, body)
    assert other_user == again == {"app:theme": "dark", "app:lang": "fr"}
    assert other_app == {}


def test_user_state_is_shared_by_that_users_sessions_only(tmp_path):
    async def body(s):
        first = await s.create_session(app_name="a", user_id="u1", state={"user:name": "Ada"})
        await s.append_event(first, event(actions=delta(**{"user:city": "Paris"})))
        second = await s.create_session(app_name="a", user_id="u1")
        stranger = await s.create_session(app_name="a", user_id="u2")
        direct = await s.get_user_state(app_name="a", user_id="u1")
        return second.state, stranger.state, direct

    second, stranger, direct = with_service(tmp_path, body)
    assert second == {"user:name": "Ada", "user:city": "Paris"}
    assert stranger == {}
    assert direct == {"name": "Ada", "city": "Paris"}  # without the prefix


def test_session_state_stays_in_its_session(tmp_path):
    async def body(s):
        first = await s.create_session(app_name="a", user_id="u", state={"step": 1})
        await s.append_event(first, event(actions=delta(step=2, done=False)))
        got = await s.get_session(app_name="a", user_id="u", session_id=first.id)
        sibling = await s.create_session(app_name="a", user_id="u")
        return got.state, sibling.state, first.state

    got, sibling, in_memory = with_service(tmp_path, body)
    assert got == in_memory == {"step": 2, "done": False}
    assert sibling == {}


def test_temp_state_is_seen_in_memory_and_never_stored(tmp_path):
    async def body(s):
        made = await s.create_session(app_name="a", user_id="u", state={"temp:scratch": 1, "kept": 1})
        ev = event(actions=delta(**{"temp:out": "x", "kept": 2}))
        await s.append_event(made, ev)
        got = await s.get_session(app_name="a", user_id="u", session_id=made.id)
        return made.state, ev.actions.state_delta, got

    in_memory, stored_delta, got = with_service(tmp_path, body)
    assert in_memory["temp:out"] == "x" and in_memory["kept"] == 2
    assert stored_delta == {"kept": 2}
    assert got.state == {"kept": 2}
    assert got.events[0].actions.state_delta == {"kept": 2}
    assert "temp:" not in (tmp_path / "sessions").joinpath("a", "u", got.id + ".jsonl").read_text()


def test_partial_events_are_not_stored(tmp_path):
    async def body(s):
        made = await s.create_session(app_name="a", user_id="u")
        await s.append_event(made, event(partial=True, content=types.Content(role="model", parts=[types.Part(text="th")])))
        got = await s.get_session(app_name="a", user_id="u", session_id=made.id)
        return made.events, got.events

    assert with_service(tmp_path, body) == ([], [])


def test_last_update_time_is_the_last_events_timestamp(tmp_path):
    async def body(s):
        made = await s.create_session(app_name="a", user_id="u")
        later = made.last_update_time + 10
        await s.append_event(made, event(timestamp=later))
        got = await s.get_session(app_name="a", user_id="u", session_id=made.id)
        return later, made.last_update_time, got.last_update_time

    later, in_memory, stored = with_service(tmp_path, body)
    assert in_memory == stored == later


def test_get_session_config_limits_and_filters_the_events(tmp_path):
    async def body(s):
        made = await s.create_session(app_name="a", user_id="u")
        for t in (1.0, 2.0, 3.0, 4.0, 5.0):
            await s.append_event(made, event(timestamp=t))

        async def stamps(**config):
            got = await s.get_session(app_name="a", user_id="u", session_id=made.id,
                                      config=GetSessionConfig(**config) if config else None)
            return [e.timestamp for e in got.events]

        return [await stamps(), await stamps(num_recent_events=0), await stamps(num_recent_events=3),
                await stamps(num_recent_events=99), await stamps(after_timestamp=4.0),
                await stamps(after_timestamp=50.0), await stamps(num_recent_events=3, after_timestamp=4.0)]

    assert with_service(tmp_path, body) == [
        [1.0, 2.0, 3.0, 4.0, 5.0], [], [3.0, 4.0, 5.0], [1.0, 2.0, 3.0, 4.0, 5.0], [4.0, 5.0], [], [4.0, 5.0],
    ]


def test_events_come_back_in_the_order_appended_whatever_their_timestamps(tmp_path):
    async def body(s):
        made = await s.create_session(app_name="a", user_id="u")
        for t in (3.0, 1.0, 2.0):
            await s.append_event(made, event(timestamp=t))
        whole = await s.get_session(app_name="a", user_id="u", session_id=made.id)
        tail = await s.get_session(app_name="a", user_id="u", session_id=made.id, config=GetSessionConfig(num_recent_events=2))
        after = await s.get_session(app_name="a", user_id="u", session_id=made.id, config=GetSessionConfig(after_timestamp=2.0))
        return [[e.timestamp for e in x.events] for x in (whole, tail, after)]

    assert with_service(tmp_path, body) == [[3.0, 1.0, 2.0], [1.0, 2.0], [3.0, 2.0]]


def test_user_state_is_empty_then_the_latest_write_and_kept_per_app_and_user(tmp_path):
    async def body(s):
        before = await s.get_user_state(app_name="a", user_id="u")
        made = await s.create_session(app_name="a", user_id="u")
        await s.append_event(made, event(actions=delta(**{"user:n": 1, "own": 1})))
        await s.append_event(made, event(actions=delta(**{"user:n": 2})))
        return (before, await s.get_user_state(app_name="a", user_id="u"),
                await s.get_user_state(app_name="a", user_id="v"), await s.get_user_state(app_name="b", user_id="u"))

    assert with_service(tmp_path, body) == ({}, {"n": 2}, {}, {})


def test_inline_bytes_and_every_event_field_read_back_equal(tmp_path):
    async def body(s):
        made = await s.create_session(app_name="a", user_id="u")
        rich = event(
            content=types.Content(role="user", parts=[
                types.Part(text="look"), types.Part.from_bytes(data=bytes(range(256)), mime_type="image/png"),
            ]),
            grounding_metadata=types.GroundingMetadata(search_entry_point=types.SearchEntryPoint(sdk_blob=b"\x00blob")),
            turn_complete=True, interrupted=True, error_code="E1", error_message="bad",
            actions=EventActions(artifact_delta={"f": 1}, transfer_to_agent="other", escalate=True,
                                 state_delta={"k": None, "nested": {"a": [1, 2.5, None]}}),
            long_running_tool_ids={"t1", "t2"}, custom_metadata={"why": None},
            usage_metadata=types.GenerateContentResponseUsageMetadata(prompt_token_count=3, total_token_count=5),
            input_transcription=types.Transcription(text="in", finished=True),
            timestamp=1700000000.123, branch="root.child",
        )
        await s.append_event(made, rich)
        got = await s.get_session(app_name="a", user_id="u", session_id=made.id)
        return made, got

    made, got = with_service(tmp_path, body)
    assert got == made
    assert got.events[0].content.parts[1].inline_data.data == bytes(range(256))


def test_a_stale_session_object_is_refused_and_nothing_is_written(tmp_path):
    async def body(s):
        made = await s.create_session(app_name="a", user_id="u")
        fresh = await s.get_session(app_name="a", user_id="u", session_id=made.id)
        await s.append_event(fresh, event(invocation_id="inv-1", actions=delta(k=1)))
        with pytest.raises(StaleSessionError, match="modified in storage"):
            await s.append_event(made, event(invocation_id="inv-2", actions=delta(k=2)))
        await s.append_event(fresh, event(invocation_id="inv-3"))  # the current one goes on
        return await s.get_session(app_name="a", user_id="u", session_id=made.id)

    got = with_service(tmp_path, body)
    assert [e.invocation_id for e in got.events] == ["inv-1", "inv-3"]
    assert got.state == {"k": 1}


def test_appending_to_a_deleted_session_is_session_not_found(tmp_path):
    async def body(s):
        made = await s.create_session(app_name="a", user_id="u")
        await s.delete_session(app_name="a", user_id="u", session_id=made.id)
        with pytest.raises(SessionNotFoundError):
            await s.append_event(made, event())

    with_service(tmp_path, body)
