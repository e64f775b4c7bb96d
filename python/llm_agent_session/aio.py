"""``AsyncSession``: the ``Session`` API for asyncio runtimes (SPEC 10.4).

Every method is a coroutine whose blocking work (file reads and writes, fsync, the
lock, a repair, a replay) runs on a thread of the session's own, one call at a time
in the order the calls were awaited, so the event loop never waits on the disk.
Properties are plain attributes read from memory. Errors are ``Session``'s own classes.

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

T = TypeVar("T")

# create/load/peek/salvage/fork of no session yet: one shared thread pool (the default
# executor may be small or busy with the app's own work; these calls may take seconds).
_OPENERS = ThreadPoolExecutor(max_workers=4, thread_name_prefix="llm-agent-session-open")


async def _off_loop(fn: Callable[..., T], *args: Any, **kwargs: Any) -> T:
    loop = asyncio.get_running_loop()
    return await loop.run_in_executor(_OPENERS, functools.partial(fn, *args, **kwargs))


class AsyncSession:
    """A ``Session`` for asyncio: the same methods (coroutines here) and properties.

    Open one with ``await AsyncSession.create(...)`` or ``await AsyncSession.load(...)``;
    ``async with`` closes it. Calls on one session run one at a time, in the order they
    were awaited, on a thread of the session's own.
    """

    def __init__(self, session: Session) -> None:
        if not isinstance(session, Session):
            raise TypeError(f"AsyncSession wraps a Session, not {type(session).__name__}")
        self._session = session
        # One worker: calls on one session run in the order they were submitted, which
        # is the order they were awaited (a coroutine submits when it first runs).
        self._worker = ThreadPoolExecutor(max_workers=1, thread_name_prefix="llm-agent-session")
        self._stopped = False

    async def _run(self, fn: Callable[..., T], *args: Any, **kwargs: Any) -> T:
        if self._stopped:
            # Closed: the session answers from memory (SessionClosed for every append).
            return fn(*args, **kwargs)
        loop = asyncio.get_running_loop()
        return await loop.run_in_executor(self._worker, functools.partial(fn, *args, **kwargs))

    # -- the three ways in (and the two ways out) ---------------------------------------------

    @classmethod
    async def create(
        cls, path: Any, meta: Optional[Mapping[str, Any]] = None, *, fsync: bool = False
    ) -> "AsyncSession":
        """``Session.create`` off the event loop."""
        return cls(await _off_loop(Session.create, path, meta, fsync=fsync))

    @classmethod
    async def load(cls, path: Any, *, fsync: bool = False) -> "AsyncSession":
        """``Session.load`` (lock, repair, replay) off the event loop."""
        return cls(await _off_loop(Session.load, path, fsync=fsync))

    @staticmethod
    async def peek(
        path: Any, *, offset: int = 0, identity: Optional[Tuple[int, int]] = None, survey: bool = False
    ) -> Dict[str, Any]:
        """``Session.peek`` off the event loop."""
        return await _off_loop(Session.peek, path, offset=offset, identity=identity, survey=survey)

    @staticmethod
    async def salvage(path: Any, out: Any) -> Dict[str, Any]:
        """``Session.salvage`` off the event loop."""
        return await _off_loop(Session.salvage, path, out)

    @classmethod
    async def fork(
        cls, path: Any, out: Any, through_id: str, meta: Optional[Mapping[str, Any]] = None
    ) -> "AsyncSession":
        """``Session.fork`` off the event loop; the new transcript, open."""
        return cls(await _off_loop(Session.fork, path, out, through_id, meta))

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

    async def append_message(self, message: MessageLike, extra: Optional[Mapping[str, Any]] = None) -> str:
        return await self._run(self._session.append_message, message, extra)

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
        """Close the session (after every call awaited before it) and stop its thread."""
        try:
            await self._run(self._session.close)
        finally:
            self._stopped = True
            self._worker.shutdown(wait=False)

    async def __aenter__(self) -> "AsyncSession":
        return self

    async def __aexit__(self, *exc: Any) -> None:
        await self.close()

    def __repr__(self) -> str:
        return f"<AsyncSession over {self._session!r}>"
