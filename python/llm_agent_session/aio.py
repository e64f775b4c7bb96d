"""``AsyncSession``: the ``Session`` API for asyncio runtimes (README, "For agent runtimes").

Every method is a coroutine whose blocking work (file reads and writes, fsync, the
lock, a repair, a replay) runs on a thread of the session's own, one call at a time
in the order the calls were awaited, so the event loop never waits on the disk.
Properties are plain attributes read from memory. Errors are ``Session``'s own classes.

Cancellation: a call runs to its end once it has started (its coroutine first ran:
at once when awaited, at the first step of a task that wraps it), whether or not the
task awaiting it is cancelled (``task.cancel()``, ``asyncio.wait_for``,
``asyncio.timeout``); the cancellation reaches that task when the call has ended. So a
call cancelled ran completely or not at all, and the session's memory always equals
its file: an append cancelled while awaited was written, unless it failed (its error
is then the ``CancelledError``'s ``__cause__``; on Python 3.9 and 3.10 a task awaited
hands on a new ``CancelledError``, whose ``__context__`` has that cause). Never retry a cancelled append
blindly. A cancelled ``close()`` still closes.

    async with await AsyncSession.load("run.jsonl") as s:
        await s.append_message(user_message("go on"))
"""

from __future__ import annotations

import asyncio
import functools
from concurrent.futures import ThreadPoolExecutor
from typing import Any, Callable, Dict, List, Mapping, Optional, Sequence, Tuple, TypeVar

from .messages import Message, MessageLike, PendingToolOperation
from .session import Session
from ._token_usage import Usage

T = TypeVar("T")

# create/load/peek/salvage/fork of no session yet, and the calls on a closed one: one
# shared thread pool (the default executor may be small or busy with the app's own
# work; these calls may take seconds).
_OPENERS = ThreadPoolExecutor(max_workers=4, thread_name_prefix="llm-agent-session-open")


async def _to_the_end(future: "asyncio.Future[T]") -> T:
    """The result of a call already handed to a thread, once it has ended. A cancellation
    of the awaiting task does not abandon the call: it is raised when the call is done
    (chained to the call's error, if it failed), so that the caller knows the call ran."""
    cancelled: Optional[BaseException] = None
    while not future.done():
        try:
            await asyncio.wait((future,))  # unlike `await future`, never cancels it
        except asyncio.CancelledError as e:
            cancelled = e
    if cancelled is not None:
        raise cancelled from (None if future.cancelled() else future.exception())
    return future.result()


async def _off_loop(fn: Callable[..., T], *args: Any, **kwargs: Any) -> T:
    """`fn` on the shared pool, to its end (see `_to_the_end`)."""
    return await _to_the_end(asyncio.wrap_future(_OPENERS.submit(functools.partial(fn, *args, **kwargs))))


A = TypeVar("A", bound="AsyncSession")


async def _open(cls: "type[A]", fn: Callable[..., Session], *args: Any, **kwargs: Any) -> A:
    """A `cls` over the new session that `fn` (create, load, fork) opens off the loop. If
    the awaiting task was cancelled meanwhile, that session is closed again (its lock
    released) before the cancellation is raised."""
    call = asyncio.wrap_future(_OPENERS.submit(functools.partial(fn, *args, **kwargs)))
    try:
        return cls(await _to_the_end(call))
    except asyncio.CancelledError:
        if call.done() and not call.cancelled() and call.exception() is None:
            await _off_loop(call.result().close)
        raise


class SerialThread:
    """A thread of its own that runs one owner's blocking calls one at a time, in the
    order they were submitted: the order they were awaited, since a coroutine submits
    when it first runs. An ``AsyncSession`` has one, and so has each adapter of
    ``llm_agent_session.integrations``.

    Every call submitted runs, to its end, whether or not the task awaiting it is
    cancelled; the cancellation reaches that task when the call has ended (see the
    module's docstring). A coroutine submits its call when it first runs. ``run_last`` runs the owner's close: the thread ends after it,
    and the calls submitted later (which find the session closed: they raise
    ``SessionClosed`` or read memory) run on a shared pool, never on the loop's thread.
    """

    def __init__(self, name: str) -> None:
        self._pool = ThreadPoolExecutor(max_workers=1, thread_name_prefix=name)

    async def run(self, fn: Callable[..., T], *args: Any, **kwargs: Any) -> T:
        call = functools.partial(fn, *args, **kwargs)
        try:
            submitted = self._pool.submit(call)
        except RuntimeError:  # the thread has ended: the close ran, nothing is left to order
            submitted = _OPENERS.submit(call)
        return await _to_the_end(asyncio.wrap_future(submitted))

    async def run_last(self, close: Callable[[], T]) -> T:
        """Run `close` after every call submitted before it, then end the thread."""

        def last() -> T:
            try:
                return close()
            finally:
                self._pool.shutdown(wait=False)  # the calls queued meanwhile still run

        return await self.run(last)


class AsyncSession:
    """A ``Session`` for asyncio: the same methods (coroutines here) and properties.

    Open one with ``await AsyncSession.create(...)`` or ``await AsyncSession.load(...)``;
    ``async with`` closes it. Calls on one session run one at a time, in the order they
    were awaited, on a thread of the session's own; each runs to its end once started,
    a cancellation of its task being raised when it has (the module's docstring).
    """

    def __init__(self, session: Session) -> None:
        if not isinstance(session, Session):
            raise TypeError(f"AsyncSession wraps a Session, not {type(session).__name__}")
        self._session = session
        self._thread = SerialThread("llm-agent-session")

    async def _run(self, fn: Callable[..., T], *args: Any, **kwargs: Any) -> T:
        return await self._thread.run(fn, *args, **kwargs)

    # -- the three ways in (and the two ways out) ---------------------------------------------

    @classmethod
    async def create(
        cls: "type[A]", path: Any, meta: Optional[Mapping[str, Any]] = None, *, fsync: bool = False
    ) -> A:
        """``Session.create`` off the event loop."""
        return await _open(cls, Session.create, path, meta, fsync=fsync)

    @classmethod
    async def load(cls: "type[A]", path: Any, *, fsync: bool = False, index: bool = True) -> A:
        """``Session.load`` (lock, repair, replay; through the side index unless
        ``index=False``) off the event loop."""
        return await _open(cls, Session.load, path, fsync=fsync, index=index)

    @staticmethod
    async def peek(
        path: Any,
        *,
        offset: int = 0,
        identity: Optional[Tuple[int, int]] = None,
        survey: bool = False,
        index: bool = True,
    ) -> Dict[str, Any]:
        """``Session.peek`` off the event loop."""
        return await _off_loop(Session.peek, path, offset=offset, identity=identity, survey=survey, index=index)

    @staticmethod
    async def salvage(path: Any, out: Any) -> Dict[str, Any]:
        """``Session.salvage`` off the event loop."""
        return await _off_loop(Session.salvage, path, out)

    @classmethod
    async def fork(
        cls: "type[A]", path: Any, out: Any, through_id: str, meta: Optional[Mapping[str, Any]] = None
    ) -> A:
        """``Session.fork`` off the event loop; the new transcript, open."""
        return await _open(cls, Session.fork, path, out, through_id, meta)

    # -- properties: memory only ------------------------------------------------------------

    @property
    def session(self) -> Session:
        """The synchronous ``Session`` underneath (its calls block: not for the event loop)."""
        return self._session

    @property
    def path(self) -> str:
        return self._session.path

    @property
    def meta(self) -> Dict[str, Any]:
        return self._session.meta

    @property
    def messages(self) -> List[Message]:
        return self._session.messages

    @property
    def message_ids(self) -> List[str]:
        return self._session.message_ids

    @property
    def grants(self) -> Dict[str, Any]:
        return self._session.grants

    @property
    def events(self) -> Any:
        """Every envelope in file order. On the native core an item is read from its line
        when first accessed (``len`` reads nothing); to read many in a coroutine, do it
        on the session's thread: ``await s.run(lambda: list(s.events))``."""
        return self._session.events

    @property
    def warnings(self) -> List[str]:
        return self._session.warnings

    @property
    def closed(self) -> bool:
        return self._session.closed

    @property
    def artifacts_dir(self) -> str:
        return self._session.artifacts_dir

    # -- methods: coroutines ------------------------------------------------------------------

    async def run(self, fn: Callable[[], T]) -> T:
        """Run `fn` on this session's thread, in turn with the other calls (for reads of
        lazy ``events`` or anything else that may touch the disk)."""
        return await self._run(fn)

    async def pending_tool_operations(self) -> List[PendingToolOperation]:
        return await self._run(self._session.pending_tool_operations)

    async def run_context_section(self, digest: str) -> Optional[str]:
        return await self._run(self._session.run_context_section, digest)

    async def artifact_path(self, file: str) -> str:
        return await self._run(self._session.artifact_path, file)

    async def message_extra(self, message_id: str) -> Dict[str, Any]:
        return await self._run(self._session.message_extra, message_id)

    async def append_message(
        self, message: MessageLike, extra: Optional[Mapping[str, Any]] = None, *, usage: Optional[Usage] = None
    ) -> str:
        return await self._run(self._session.append_message, message, extra, usage=usage)

    async def append_grants(self, grants: Mapping[str, Any]) -> str:
        return await self._run(self._session.append_grants, grants)

    async def append_compaction(
        self,
        summary: str,
        replaces_through_id: str,
        tokens_before: int,
        tokens_after: int,
        fallback: bool = False,
    ) -> str:
        return await self._run(
            self._session.append_compaction, summary, replaces_through_id, tokens_before, tokens_after, fallback
        )

    async def append_elision(self, items: Any) -> str:
        return await self._run(self._session.append_elision, items)

    async def append_rewind(self, to_id: Optional[str]) -> str:
        return await self._run(self._session.append_rewind, to_id)

    async def append_tool_dispatched(
        self,
        call_id: str,
        tool: str,
        arguments: Any,
        *,
        idempotency: Optional[str] = None,
        run_id: Optional[str] = None,
        round: Optional[int] = None,
    ) -> str:
        return await self._run(
            self._session.append_tool_dispatched,
            call_id,
            tool,
            arguments,
            idempotency=idempotency,
            run_id=run_id,
            round=round,
        )

    async def append_tool_settled(
        self,
        op_id: str,
        outcome: str,
        *,
        reason: Optional[str] = None,
        duration: Optional[float] = None,
        result_digest: Optional[str] = None,
        artifact: Optional[Mapping[str, Any]] = None,
        error: Optional[str] = None,
    ) -> str:
        return await self._run(
            self._session.append_tool_settled,
            op_id,
            outcome,
            reason=reason,
            duration=duration,
            result_digest=result_digest,
            artifact=artifact,
            error=error,
        )

    async def resolve_tool_operation(
        self, op_id: str, outcome: str = "outcome-unknown", *, reason: Optional[str] = None
    ) -> str:
        return await self._run(self._session.resolve_tool_operation, op_id, outcome, reason=reason)

    async def append_run_context(self, sections: Any, facts: Any = ()) -> str:
        return await self._run(self._session.append_run_context, sections, facts)

    async def sync_messages(self, messages: Sequence[MessageLike], *, allow_rewind: bool = False) -> List[str]:
        return await self._run(self._session.sync_messages, messages, allow_rewind=allow_rewind)

    async def answer_interrupted_tool_calls(self, content: Any = None) -> List[str]:
        return await self._run(self._session.answer_interrupted_tool_calls, content)

    async def close(self) -> None:
        """Close the session (after every call awaited before it) and end its thread.
        Cancelling the awaiting task does not stop it: the lock is released either way."""
        await self._thread.run_last(self._session.close)

    async def __aenter__(self) -> "AsyncSession":
        return self

    async def __aexit__(self, *exc: Any) -> None:
        await self.close()

    def __repr__(self) -> str:
        return f"<AsyncSession over {self._session!r}>"
