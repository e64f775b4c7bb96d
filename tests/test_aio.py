"""the README's asyncio section: ``AsyncSession``: Session's API as coroutines, off the event loop, in order."""

from __future__ import annotations

import asyncio
import inspect
import sys
import threading

import pytest

from tests.support.helpers import parsed_lines, read
from llm_agent_session import (
    DanglingReference,
    Session,
    SessionClosed,
    SessionLocked,
    assistant_message,
    user_message,
)
from llm_agent_session.aio import AsyncSession


def run(coro):
    return asyncio.run(coro)


def test_same_methods_and_properties_as_session():
    public = {n for n in dir(Session) if not n.startswith("_")}
    missing = public - set(dir(AsyncSession))
    assert not missing, missing
    for name in public:
        attr = inspect.getattr_static(Session, name)
        mine = inspect.getattr_static(AsyncSession, name)
        if isinstance(attr, property):
            assert isinstance(mine, property), name
        else:
            assert inspect.iscoroutinefunction(getattr(AsyncSession, name)), name


def test_create_append_load_round_trip(tpath):
    async def main():
        async with await AsyncSession.create(tpath, {"agent": "async"}) as s:
            ids = [await s.append_message(user_message(str(i)), extra={"n": i}) for i in range(3)]
            await s.append_rewind(ids[1])
            assert [m.content for m in s.messages] == ["0", "1"] and s.message_ids == ids[:2]
            assert await s.message_extra(ids[2]) == {"n": 2}
            assert s.meta == {"agent": "async"} and not s.closed
        assert s.closed
        async with await AsyncSession.load(tpath) as again:
            assert [m.content for m in again.messages] == ["0", "1"]
            peeked = await AsyncSession.peek(tpath, survey=True)
            assert peeked["survey"]["live_messages"] == 2
            return ids

    ids = run(main())
    with Session.load(tpath) as s:
        assert s.message_ids == ids[:2]


def test_calls_run_in_the_order_they_were_awaited(tpath):
    async def main():
        async with await AsyncSession.create(tpath, {}, fsync=True) as s:
            # Started together: they must reach the file in the order they were made.
            await asyncio.gather(*(s.append_message(user_message(f"m{i}")) for i in range(60)))
            return [m.content for m in s.messages]

    contents = run(main())
    assert contents == [f"m{i}" for i in range(60)]
    assert [line["payload"]["content"] for line in parsed_lines(tpath)[1:]] == contents


def test_blocking_work_runs_off_the_loop_thread(tpath):
    async def main():
        loop_thread = threading.get_ident()
        async with await AsyncSession.create(tpath, {}) as s:
            worker = await s.run(threading.get_ident)
            return loop_thread, worker

    loop_thread, worker = run(main())
    assert loop_thread != worker


def test_the_loop_keeps_running_while_a_call_waits_on_the_disk(tpath):
    """While the session's thread is held inside a call, other tasks still run."""
    gate = threading.Event()

    async def main():
        async with await AsyncSession.create(tpath, {}) as s:
            blocked = asyncio.ensure_future(s.run(lambda: gate.wait(10)))
            ticks = 0
            for _ in range(5):
                await asyncio.sleep(0.001)
                ticks += 1
            assert not blocked.done()
            gate.set()
            assert await blocked is True
            return ticks

    assert run(main()) == 5


def test_errors_are_the_same_classes(tpath):
    async def main():
        s = await AsyncSession.create(tpath, {})
        with pytest.raises(SessionLocked):
            await AsyncSession.load(tpath)
        with pytest.raises(DanglingReference):
            await s.append_rewind("nope")
        with pytest.raises(FileExistsError):
            await AsyncSession.create(tpath, {})
        await s.close()
        with pytest.raises(SessionClosed):
            await s.append_message(user_message("late"))

    run(main())


def test_answer_interrupted_and_sync_through_async(tpath):
    call = {"id": "c1", "type": "function", "function": {"name": "t", "arguments": "{}"}}

    async def main():
        async with await AsyncSession.create(tpath, {}) as s:
            await s.append_message(assistant_message(None, [call]))
            await s.append_tool_dispatched("c1", "t", {})
            assert [op.state for op in await s.pending_tool_operations()] == ["dispatched"]
            new = await s.answer_interrupted_tool_calls()
            assert len(new) == 1 and await s.pending_tool_operations() == []
            added = await s.sync_messages([user_message("other")], allow_rewind=True)
            assert len(added) == 1 and [m.content for m in s.messages] == ["other"]

    run(main())
    assert parsed_lines(tpath)[-2]["type"] == "rewind"


def test_close_waits_for_calls_awaited_before_it(tpath):
    async def main():
        s = await AsyncSession.create(tpath, {})
        pending = [asyncio.ensure_future(s.append_message(user_message(str(i)))) for i in range(10)]
        await asyncio.sleep(0)  # let them start, so they are awaited before close
        await s.close()
        await asyncio.gather(*pending)

    run(main())
    assert len(parsed_lines(tpath)) == 11
    before = read(tpath)
    with Session.load(tpath):
        pass
    assert read(tpath) == before


# --------------------------------------------------------------------------- cancellation


def test_a_cancelled_close_still_closes_and_nothing_runs_out_of_order(tpath):
    """Issue #24, item 5: close() cancelled while queued behind another call still closes
    (the lock is free once the cancellation arrives); a call awaited after it never runs
    before what was queued ahead, nor on the loop's thread."""
    gate = threading.Event()

    async def main():
        loop_thread = threading.get_ident()
        s = await AsyncSession.create(tpath, {})
        blocker = asyncio.ensure_future(s.run(lambda: gate.wait(10)))
        first = asyncio.ensure_future(s.append_message(user_message("queued before close")))
        closing = asyncio.ensure_future(s.close())
        await asyncio.sleep(0.01)
        closing.cancel()
        late = asyncio.ensure_future(s.append_message(user_message("after close")))
        where = asyncio.ensure_future(s.run(threading.get_ident))
        await asyncio.sleep(0.01)
        assert not s.closed  # still queued behind the blocker
        gate.set()
        with pytest.raises(asyncio.CancelledError):
            await closing
        assert s.closed  # the cancellation arrived once the close had run
        with Session.load(tpath):  # the lock is free
            pass
        assert await blocker is True and isinstance(await first, str)
        with pytest.raises(SessionClosed):
            await late
        assert await where != loop_thread
        assert await s.run(threading.get_ident) != loop_thread  # and so after the thread ended

    run(main())
    assert [line["payload"].get("content") for line in parsed_lines(tpath)[1:]] == ["queued before close"]


@pytest.mark.parametrize("how", ["queued", "running"])
def test_a_cancelled_append_was_written_when_the_cancellation_arrives(tpath, how):
    """Issue #24, item 12, the rule: a call runs to its end once awaited, and a cancellation
    (task.cancel(), a wait_for timeout) reaches its task only then. So a cancelled append
    is in memory and in the file, and a retry would be a second copy."""
    gate, inside, blocking = threading.Event(), threading.Event(), threading.Event()

    def block():
        blocking.set()
        return gate.wait(10)

    async def main():
        async with await AsyncSession.create(tpath, {}) as s:
            if how == "queued":  # not started yet when cancelled
                blocker = asyncio.ensure_future(s.run(block))
                # The blocker must hold the session's thread first. On Python >= 3.12
                # wait_for awaits a coroutine in the calling task, so the append would
                # otherwise be submitted before the blocker's task has run at all.
                while not blocking.is_set():
                    await asyncio.sleep(0.001)
                append = s.append_message(user_message("cancelled"))
            else:  # inside the write when cancelled: a message whose serialisation waits
                blocker = None

                class Slow(dict):
                    def items(self):
                        inside.set()
                        gate.wait(10)
                        return super().items()

                append = s.append_message({"role": "user", "content": "cancelled"}, extra=Slow(k=1))
            threading.Timer(0.2, gate.set).start()
            with pytest.raises(asyncio.TimeoutError):
                await asyncio.wait_for(append, 0.05)
            assert gate.is_set()  # the timeout was raised only once the call had run
            if blocker is not None:
                await blocker
            else:
                assert inside.is_set()
            assert [m.content for m in s.messages] == ["cancelled"]
        return [line["payload"]["content"] for line in parsed_lines(tpath)[1:]]

    assert run(main()) == ["cancelled"]


def test_a_cancelled_failing_call_carries_its_error(tpath):
    gate = threading.Event()

    async def main():
        async with await AsyncSession.create(tpath, {}) as s:
            blocker = asyncio.ensure_future(s.run(lambda: gate.wait(10)))
            bad = asyncio.ensure_future(s.append_rewind("no-such-message"))
            await asyncio.sleep(0.01)
            bad.cancel()
            gate.set()
            with pytest.raises(asyncio.CancelledError) as caught:
                await bad
            # Python 3.9 and 3.10 hand the awaiting task a new CancelledError, the task's own as its context.
            error = caught.value if sys.version_info >= (3, 11) else caught.value.__context__
            assert isinstance(error.__cause__, DanglingReference)  # nothing was written
            await blocker

    run(main())
    assert len(parsed_lines(tpath)) == 1


def test_a_cancelled_load_releases_the_lock(tpath):
    Session.create(tpath, {}).close()

    async def main():
        opening = asyncio.ensure_future(AsyncSession.load(tpath))
        await asyncio.sleep(0)
        opening.cancel()
        with pytest.raises(asyncio.CancelledError):
            await opening
        async with await AsyncSession.load(tpath):  # not SessionLocked: the cancelled one closed
            pass

    run(main())


def test_a_task_cancelled_before_its_first_step_never_started_its_call(tpath):
    """The other half of the rule: such a call did not run at all, and memory says so."""

    async def main():
        async with await AsyncSession.create(tpath, {}) as s:
            task = asyncio.ensure_future(s.append_message(user_message("never")))
            task.cancel()
            with pytest.raises(asyncio.CancelledError):
                await task
            assert s.messages == []

    run(main())
    assert len(parsed_lines(tpath)) == 1


def test_load_and_peek_through_the_side_index(tpath, monkeypatch):
    """AsyncSession.load and peek take index= as Session's do, and give what they give."""
    from llm_agent_session import _index

    monkeypatch.setattr(_index, "AUTO_MIN_BYTES", 0)

    async def main():
        async with await AsyncSession.create(tpath, {"agent": "async"}) as s:
            for i in range(3):
                await s.append_message(user_message(str(i)))
        _index.flush()  # the session's close brought its index up to date, off its thread
        assert _index.update(str(tpath))[0] == _index.UP_TO_DATE
        views = []
        for index in (True, False):
            async with await AsyncSession.load(tpath, index=index) as s:
                views.append((s.messages, s.message_ids, s._session._index_used))
            views.append(await AsyncSession.peek(tpath, survey=True, index=index))
        return views

    (m1, ids1, used1), p1, (m2, ids2, used2), p2 = run(main())
    assert (m1, ids1) == (m2, ids2) and (used1, used2) == ("used", "none")
    lists = ("envelopes", "messages")
    assert {k: v for k, v in p1.items() if k not in lists} == {k: v for k, v in p2.items() if k not in lists}
    assert list(p1["envelopes"]) == list(p2["envelopes"])
