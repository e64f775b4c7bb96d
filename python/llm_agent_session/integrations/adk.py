"""Google's Agent Development Kit: a ``BaseSessionService`` on transcripts
(docs/integrations.md, "Google ADK").

    service = TranscriptSessionService("sessions")
    runner = Runner(app_name="app", agent=agent, session_service=service)
    ...
    await service.close()

Each ADK session is one transcript, ``<root>/<app>/<user>/<session>.jsonl`` (names
escaped: ``_adk_layout``). Every event is written before ``append_event`` returns: its
chat-shaped messages with the event itself, whole, in the last line's extras
(``_adk_events``). A model event's ``function_call`` parts become ``tool-dispatched``
operations and the ``function_response`` parts settle them, so after a crash between
the two the transcript says which calls may have run; the next ``get_session`` answers
each such call with a ``function_response`` saying that its outcome is unknown.

One writer per session: the service that appends to a session (or creates it) holds
its transcript's lock until ``close()``, ``release()`` or until it has more than
``max_open`` sessions open; any other writer, in this or another process, gets
``SessionLocked`` (or waits ``lock_timeout`` seconds for it). Reading takes no lock:
``get_session`` and ``list_sessions`` read the sidecar beside each transcript, the line
holding the session's state and, for ``num_recent_events=k``, the last k events from
the transcript's end (``_adk_files``).
"""

from __future__ import annotations

import json
import os
import time
import uuid
from collections import OrderedDict
from dataclasses import dataclass, field
from typing import Any, Dict, Iterator, List, Optional, Tuple

try:
    from google.adk.errors.already_exists_error import AlreadyExistsError
    from google.adk.errors.session_not_found_error import SessionNotFoundError
    from google.adk.events.event import Event
    from google.adk.sessions.base_session_service import BaseSessionService, GetSessionConfig, ListSessionsResponse
    from google.adk.sessions.session import Session as AdkSession
    from google.adk.sessions.state import State
    from google.genai import types
    from pydantic_core import to_jsonable_python
except ImportError as e:  # pragma: no cover - exercised by a test in a bare interpreter
    raise ImportError(
        "llm_agent_session.integrations.adk needs Google's Agent Development Kit: "
        "pip install 'llm-agent-session[adk]'"
    ) from e
try:
    from google.adk.errors._stale_session_error import StaleSessionError
except ImportError:  # ADK before 2.13 has no class of its own for it

    class StaleSessionError(ValueError):  # type: ignore[no-redef]
        """The Session object is older than the stored session."""

from .. import Session, _files
from ..errors import SessionLocked
from ..session import INTERRUPTED_TEXT
from ._adk_events import (
    EVENT_EXTRA,
    SESSION_META,
    STATE_EXTRA,
    failure_of,
    function_calls,
    function_responses,
    is_client_side,
    project,
    session_state_of_meta,
)
from ._adk_files import (
    SharedState,
    Sidecar,
    UnreadableLine,
    envelope,
    line_at,
    lines_backward,
    lines_forward,
)
from ._adk_layout import USER_STATE, Layout, side_path
from ._mirror import adapter_thread

__all__ = ["TranscriptSessionService", "INTERRUPTED_RESPONSE", "SYNTHESIZED", "StaleSessionError"]

# The response of the function_response event that answers a call a crash cut off.
INTERRUPTED_RESPONSE: Dict[str, Any] = {"outcome": "unknown", "error": INTERRUPTED_TEXT}
# custom_metadata of that event: {SYNTHESIZED: "interrupted-call"}.
SYNTHESIZED = "llm-agent-session"

_Key = Tuple[str, str, str]


@dataclass
class _Writer:
    """A session this service holds open for writing (its transcript's lock taken)."""

    key: _Key
    transcript: Session
    side: str
    state: Dict[str, Any]  # the session-scoped state
    state_at: int
    updated: float
    marker: str
    side_fd: int = -1

    def close(self) -> None:
        try:
            if self.side_fd >= 0:
                os.close(self.side_fd)
                self.side_fd = -1
        finally:
            self.transcript.close()


@dataclass
class _View:
    """A session as its files say, read without a lock."""

    end: int
    state: Dict[str, Any]
    updated: float
    marker: str
    pending: Optional[int]  # None: not known (no current sidecar)
    last_event: Optional[Dict[str, Any]] = None
    meta: Optional[Dict[str, Any]] = field(default=None)


def _split(state: Dict[str, Any]) -> Tuple[Dict[str, Any], Dict[str, Any], Dict[str, Any]]:
    """(app, user, session) parts of a state or state delta; app and user keys unprefixed,
    temp keys dropped (ADK never stores them)."""
    app, user, own = {}, {}, {}
    for key, value in state.items():
        if key.startswith(State.APP_PREFIX):
            app[key[len(State.APP_PREFIX):]] = value
        elif key.startswith(State.USER_PREFIX):
            user[key[len(State.USER_PREFIX):]] = value
        elif not key.startswith(State.TEMP_PREFIX):
            own[key] = value
    return app, user, own


def _json_state(state: Optional[Dict[str, Any]]) -> Dict[str, Any]:
    """A state as JSON values (ADK's rich values as its own services store them)."""
    value = to_jsonable_python(state or {}, fallback=repr, inf_nan_mode="null")
    if not isinstance(value, dict):
        raise TypeError("an ADK state must be a dict")
    return value


def _event_json(event: Event) -> Dict[str, Any]:
    """The event as ADK's own dump gives it (what SQLite's service stores too)."""
    value = json.loads(event.model_dump_json(exclude_none=True))
    if not isinstance(value, dict):
        raise TypeError("an ADK event must dump to a JSON object")
    return value


def _event_of(value: Dict[str, Any]) -> Event:
    # Through JSON text: bytes (inline data) are base64 there, which only JSON-mode validation decodes.
    return Event.model_validate_json(json.dumps(value))


def _adk_session(app: str, user: str, sid: str, state: Dict[str, Any], events: List[Event], updated: float, marker: str) -> AdkSession:
    session = AdkSession(id=sid, app_name=app, user_id=user, state=state, events=events, last_update_time=updated)
    session._storage_update_marker = marker
    return session


class TranscriptSessionService(BaseSessionService):
    """ADK sessions as transcripts under `root` (see the module's docstring).

    `fsync`: flush every write to the disk before it returns (a power loss then loses
    nothing acknowledged; a killed process loses nothing either way). `max_open`: the
    most sessions held open for writing at once (the least recently used is released).
    `lock_timeout`: how long a write waits for a session that another writer holds
    before ``SessionLocked`` (0: not at all); the service's other calls wait meanwhile.
    """

    def __init__(self, root: Any, *, fsync: bool = False, max_open: int = 64, lock_timeout: float = 0.0) -> None:
        if max_open < 1:
            raise ValueError("max_open must be at least 1")
        self._layout = Layout(os.fspath(root))
        self._fsync = fsync
        self._max_open = max_open
        self._lock_timeout = lock_timeout
        self._writers: "OrderedDict[_Key, _Writer]" = OrderedDict()
        self._gate = adapter_thread()

    @property
    def root(self) -> str:
        return self._layout.root

    def transcript_path(self, *, app_name: str, user_id: str, session_id: str) -> str:
        """Where the session's transcript is (it may not exist)."""
        return self._layout.transcript(app_name, user_id, session_id)

    # -- BaseSessionService -------------------------------------------------------------

    async def create_session(
        self,
        *,
        app_name: str,
        user_id: str,
        state: Optional[Dict[str, Any]] = None,
        session_id: Optional[str] = None,
    ) -> AdkSession:
        return await self._gate.run(self._create, app_name, user_id, state, session_id)

    async def get_session(
        self,
        *,
        app_name: str,
        user_id: str,
        session_id: str,
        config: Optional[GetSessionConfig] = None,
    ) -> Optional[AdkSession]:
        return await self._gate.run(self._get, app_name, user_id, session_id, config)

    async def list_sessions(self, *, app_name: str, user_id: Optional[str] = None) -> ListSessionsResponse:
        return await self._gate.run(self._list, app_name, user_id)

    async def delete_session(self, *, app_name: str, user_id: str, session_id: str) -> None:
        await self._gate.run(self._delete, app_name, user_id, session_id)

    async def get_user_state(self, *, app_name: str, user_id: str) -> Dict[str, Any]:
        return await self._gate.run(lambda: self._shared(self._layout.user_state(app_name, user_id)).read()[0])

    async def append_event(self, session: AdkSession, event: Event) -> Event:
        if event.partial:
            return event
        # As ADK's base class does: temp keys reach the Session object, never the store.
        delta = event.actions.state_delta if event.actions else None
        if delta:
            for name, value in delta.items():
                if name.startswith(State.TEMP_PREFIX):
                    session.state[name] = value
            event.actions.state_delta = {k: v for k, v in delta.items() if not k.startswith(State.TEMP_PREFIX)}
        if not event.id:
            event.id = str(uuid.uuid4())
        key = (session.app_name, session.user_id, session.id)
        answers, marker = await self._gate.run(self._append, key, session._storage_update_marker, event)
        session.events.extend(answers)
        session.last_update_time = event.timestamp
        session._storage_update_marker = marker
        if event.actions and event.actions.state_delta:
            session.state.update(event.actions.state_delta)
        session.events.append(event)
        return event

    # -- beyond ADK's interface ------------------------------------------------------------

    async def release(self, *, app_name: str, user_id: str, session_id: str) -> None:
        """Stop holding the session open for writing: another writer may take it now."""
        await self._gate.run(self._release, (app_name, user_id, session_id.strip()))

    async def close(self) -> None:
        """Release every session this service holds (after every call awaited before this)."""
        await self._gate.run_last(self._close_all)

    async def __aenter__(self) -> "TranscriptSessionService":
        return self

    async def __aexit__(self, *exc: Any) -> None:
        await self.close()

    # -- blocking work, on the service's thread ----------------------------------------------

    def _shared(self, path: str) -> SharedState:
        return SharedState(path, fsync=self._fsync)

    def _create(self, app: str, user: str, state: Optional[Dict[str, Any]], session_id: Optional[str]) -> AdkSession:
        sid = (session_id.strip() if session_id else None) or str(uuid.uuid4())
        path = self._layout.transcript(app, user, sid)
        initial = {k: v for k, v in _json_state(state).items() if not k.startswith(State.TEMP_PREFIX)}
        now = time.time()
        meta = {"agent": app, SESSION_META: {"app": app, "user": user, "id": sid, "created": now, "state": initial}}
        try:
            transcript = Session.create(path, meta, fsync=self._fsync)
        except FileExistsError:
            raise AlreadyExistsError(f"Session with id {sid} already exists.") from None
        marker = transcript.events[0].id
        app_part, user_part, own = _split(initial)
        writer = _Writer((app, user, sid), transcript, side_path(path), own, 0, now, marker)
        try:
            self._write_shared(app, user, app_part, user_part, (now, marker), redo=False)
            writer.side_fd = Sidecar.open(writer.side)
            self._write_side(writer, pending=0)
        except BaseException:
            writer.close()
            raise
        self._hold(writer)
        return _adk_session(app, user, sid, self._merged(app, user, own), [], now, marker)

    def _get(self, app: str, user: str, session_id: str, config: Optional[GetSessionConfig]) -> Optional[AdkSession]:
        sid = session_id.strip()
        key = (app, user, sid)
        path = self._layout.transcript(app, user, sid)
        if not os.path.exists(path):
            return None
        if key not in self._writers:
            view = self._view_if_current(path)
            if view is None or view.pending:
                # A writer died mid-append or mid-tool, or one elsewhere is at work: if no
                # one holds the session, finish what the dead one left, then let it go.
                try:
                    self._release_after(self._open_writer(key, path))
                except SessionLocked:
                    pass
        fd = _files.open_to_read(path)
        try:
            view = self._view(path, fd, key)
            events = self._events(path, fd, view.end, config)
        finally:
            os.close(fd)
        return _adk_session(app, user, sid, self._merged(app, user, view.state), events, view.updated, view.marker)

    def _list(self, app: str, user: Optional[str]) -> ListSessionsResponse:
        app_state = self._shared(self._layout.app_state(app)).read()[0]
        dirs: List[Tuple[Optional[str], str]]
        if user is not None:
            dirs = [(user, self._layout.user_dir(app, user))]
        else:
            dirs = list(self._layout.user_dirs(app))
        sessions = []
        for uid, user_dir in dirs:
            user_state = self._shared(os.path.join(user_dir, USER_STATE)).read()[0]
            for sid, path in self._layout.transcripts(user_dir):
                try:
                    fd = _files.open_to_read(path)
                except FileNotFoundError:
                    continue  # deleted meanwhile
                try:
                    names: Tuple[Optional[str], Optional[str]] = (uid, sid)
                    if uid is None or sid is None:  # a name too long for a file name: the file says it
                        names = self._names(path, fd)
                    key = (app, names[0] or "", names[1] or "")
                    view = self._view(path, fd, key)
                finally:
                    os.close(fd)
                state = self._merge(app_state, user_state, view.state)
                sessions.append(_adk_session(app, key[1], key[2], state, [], view.updated, view.marker))
        sessions.sort(key=lambda s: (s.last_update_time, s.user_id, s.id))
        return ListSessionsResponse(sessions=sessions)

    def _delete(self, app: str, user: str, session_id: str) -> None:
        key = (app, user, session_id.strip())
        self._release(key)
        path = self._layout.transcript(*key)
        try:
            fd = _files.open_to_read(path)
        except FileNotFoundError:
            return
        try:
            try:
                _files.try_lock(fd, path)
            except SessionLocked:
                raise SessionLocked(
                    f"{path}: session {key[2]!r} is held by another writer (another service, in this "
                    "or another process); it can be deleted once that one closes or releases it"
                ) from None
            for name in (side_path(path), path):
                try:
                    os.unlink(name)
                except FileNotFoundError:
                    pass
        finally:
            os.close(fd)

    def _append(self, key: _Key, marker: Optional[str], event: Event) -> Tuple[List[Event], str]:
        path = self._layout.transcript(*key)
        writer = self._writers.get(key)
        answers: List[Event] = []
        before = writer.marker if writer is not None else None
        if writer is None:
            if not os.path.exists(path):
                raise SessionNotFoundError(f"Session {key[2]} not found.")
            writer, answers, before = self._open_writer(key, path)
            self._hold(writer)
        else:
            self._writers.move_to_end(key)
        if marker is not None and marker not in (before, writer.marker):
            raise StaleSessionError(
                f"session {key[2]!r} of user {key[1]!r} in app {key[0]!r} was modified in storage since "
                "this Session object was read (another writer appended to it); get_session again"
            )
        if marker is not None and marker == writer.marker:
            answers = []  # the caller read them already
        self._write_event(writer, _event_json(event))
        return answers, writer.marker

    def _release(self, key: _Key) -> None:
        writer = self._writers.pop(key, None)
        if writer is not None:
            writer.close()

    def _close_all(self) -> None:
        while self._writers:
            _, writer = self._writers.popitem(last=False)
            writer.close()

    # -- holding sessions -------------------------------------------------------------------

    def _hold(self, writer: _Writer) -> None:
        self._writers[writer.key] = writer
        self._writers.move_to_end(writer.key)
        while len(self._writers) > self._max_open:
            _, oldest = self._writers.popitem(last=False)
            oldest.close()

    @staticmethod
    def _release_after(opened: Tuple[_Writer, List[Event], str]) -> None:
        opened[0].close()

    def _open_writer(self, key: _Key, path: str) -> Tuple[_Writer, List[Event], str]:
        """Load the session for writing (its lock taken, a torn tail repaired) and finish
        what a writer that died left: (the writer, the answers written to calls it left
        unanswered, the last envelope id before them)."""
        deadline = time.monotonic() + self._lock_timeout
        while True:
            try:
                transcript = Session.load(path, fsync=self._fsync)
                break
            except SessionLocked:
                if time.monotonic() >= deadline:
                    raise SessionLocked(
                        f"{path}: session {key[2]!r} of user {key[1]!r} in app {key[0]!r} is held by "
                        "another writer (a TranscriptSessionService in this or another process): one "
                        "writer per session. It is free once that service closes or releases it; "
                        "reading it (get_session, list_sessions) needs no lock"
                    ) from None
                time.sleep(0.02)
            except FileNotFoundError:
                raise SessionNotFoundError(f"Session {key[2]} not found.") from None
        try:
            return self._recover(key, path, transcript)
        except BaseException:
            transcript.close()
            raise

    def _recover(self, key: _Key, path: str, transcript: Session) -> Tuple[_Writer, List[Event], str]:
        st = os.stat(path)
        side = Sidecar.read(side_path(path))
        fd = _files.open_to_read(path)
        try:
            if side is not None and side.describes(st):
                view = _View(side.size, self._state_line(path, fd, side.state_at, side.size), side.updated, side.marker, side.pending)
                state_at = side.state_at
            else:
                view, state_at = self._scan(path, fd, st.st_size)
        finally:
            os.close(fd)
        writer = _Writer(key, transcript, side_path(path), view.state, state_at, view.updated, view.marker)
        before = writer.marker
        writer.side_fd = Sidecar.open(writer.side)
        try:
            if view.pending == 0:
                return writer, [], before
            if view.pending is None:  # the last append may have stopped half way: finish it
                self._redo(writer, view)
            answers = self._answer_interrupted(writer)
            self._write_side(writer)
        except BaseException:
            os.close(writer.side_fd)
            writer.side_fd = -1
            raise
        return writer, answers, before

    def _redo(self, writer: _Writer, view: _View) -> None:
        """Finish the last append of a writer that died: its app and user state (unless a
        later write superseded them) and the settles of calls whose answers it wrote."""
        app, user, _ = writer.key
        if view.last_event is not None:
            delta = (view.last_event.get("actions") or {}).get("state_delta") or {}
            stamp = (float(view.last_event.get("timestamp") or 0.0), str(view.last_event.get("id")))
        else:
            info = (view.meta or {}).get(SESSION_META) or {}
            delta = info.get("state") or {}
            stamp = (float(info.get("created") or 0.0), writer.marker)
        app_part, user_part, _ = _split(delta)
        self._write_shared(app, user, app_part, user_part, stamp, redo=True)
        responses = {r["id"]: r for r in function_responses(view.last_event or {})}
        for op in writer.transcript.pending_tool_operations():
            if op.state == "result-recorded":
                failure = failure_of(responses.get(op.call_id, {}))
                outcome = "failed" if failure is not None else "completed"
                writer.marker = writer.transcript.append_tool_settled(op.op_id, outcome, error=failure)

    def _answer_interrupted(self, writer: _Writer) -> List[Event]:
        """Answer each call that no response answers (a crash cut it off), one event per
        model event, saying the outcome is unknown; settle its operations so."""
        transcript = writer.transcript
        calls = transcript._unanswered_tool_calls()
        pending = {op.op_id for op in transcript.pending_tool_operations() if op.state == "dispatched"}
        by_message: "OrderedDict[str, List[Any]]" = OrderedDict()
        for call in calls:
            by_message.setdefault(call.message_id, []).append(call)
        answers = []
        for message_id, group in by_message.items():
            model_event = transcript.message_extra(message_id).get(EVENT_EXTRA)
            if not isinstance(model_event, dict):
                continue  # not a line of this service's: not its to answer
            made = {c["id"]: c for c in function_calls(model_event)}
            todo = [c for c in group if not is_client_side(made.get(c.call_id, {}))]
            if not todo:
                continue  # waiting for the user (a confirmation, credentials): ADK resumes it
            parts = [
                types.Part(function_response=types.FunctionResponse(
                    id=c.call_id, name=str(made.get(c.call_id, {}).get("name") or ""), response=dict(INTERRUPTED_RESPONSE),
                ))
                for c in todo
            ]
            answer = Event(
                invocation_id=str(model_event.get("invocation_id") or ""),
                author=str(model_event.get("author") or "user"),
                branch=model_event.get("branch"),
                content=types.Content(role="user", parts=parts),
                custom_metadata={SYNTHESIZED: "interrupted-call"},
            )
            if isinstance(model_event.get("node_info"), dict):
                answer.node_info = type(answer.node_info).model_validate(model_event["node_info"])
            settle = [op.op_id for c in todo for op in c.operations if op.op_id in pending]
            self._write_event(writer, _event_json(answer), interrupted=settle)
            answers.append(answer)
        return answers

    # -- writing ------------------------------------------------------------------------------

    def _write_event(self, writer: _Writer, event: Dict[str, Any], interrupted: Optional[List[str]] = None) -> None:
        """Write one event: its lines, its calls' dispatches, its responses' settles, the
        app and user state it changes, then the sidecar."""
        transcript = writer.transcript
        delta = (event.get("actions") or {}).get("state_delta") or {}
        app_part, user_part, own = _split(delta)
        state = {**writer.state, **own} if own else None
        records = project(event, state)
        for i, (message, extra) in enumerate(records):
            if state is not None and i == len(records) - 1:
                writer.state_at = os.stat(transcript.path).st_size  # the line holding the state
            writer.marker = transcript.append_message(message, extra=extra or None)
        for call in function_calls(event):
            if not is_client_side(call):
                writer.marker = transcript.append_tool_dispatched(
                    call["id"], str(call.get("name") or ""), call.get("args"),
                    run_id=event.get("invocation_id") or None,
                )
        if interrupted is not None:
            for op_id in interrupted:
                writer.marker = transcript.append_tool_settled(op_id, "outcome-unknown", reason="interrupted")
        else:
            for response in function_responses(event):
                op = self._recorded_operation(transcript, response["id"])
                if op is not None:
                    failure = failure_of(response)
                    writer.marker = transcript.append_tool_settled(
                        op, "failed" if failure is not None else "completed", error=failure
                    )
        if state is not None:
            writer.state = state
        writer.updated = float(event.get("timestamp") or 0.0)
        app, user, _ = writer.key
        self._write_shared(app, user, app_part, user_part, (writer.updated, str(event.get("id"))), redo=False)
        self._write_side(writer)

    @staticmethod
    def _recorded_operation(transcript: Session, call_id: str) -> Optional[str]:
        """The operation a response just recorded settles: the last one pending for the call."""
        found = None
        for op in transcript.pending_tool_operations():
            if op.call_id == call_id and op.state == "result-recorded":
                found = op.op_id
        return found

    def _write_shared(self, app: str, user: str, app_part: Dict[str, Any], user_part: Dict[str, Any],
                      stamp: Tuple[float, str], *, redo: bool) -> None:
        if app_part:
            self._shared(self._layout.app_state(app)).update(app_part, stamp, only_if_newer=redo)
        if user_part:
            self._shared(self._layout.user_state(app, user)).update(user_part, stamp, only_if_newer=redo)

    def _write_side(self, writer: _Writer, pending: Optional[int] = None) -> None:
        st = os.stat(writer.transcript.path)
        if pending is None:
            pending = sum(op.state == "dispatched" for op in writer.transcript.pending_tool_operations())
        # Not flushed even with fsync: a sidecar is checked against the transcript it describes.
        Sidecar(st.st_size, st.st_dev, st.st_ino, writer.state_at, writer.updated, writer.marker, pending).write(writer.side_fd)

    # -- reading ------------------------------------------------------------------------------

    def _merged(self, app: str, user: str, own: Dict[str, Any]) -> Dict[str, Any]:
        return self._merge(
            self._shared(self._layout.app_state(app)).read()[0],
            self._shared(self._layout.user_state(app, user)).read()[0],
            own,
        )

    @staticmethod
    def _merge(app_state: Dict[str, Any], user_state: Dict[str, Any], own: Dict[str, Any]) -> Dict[str, Any]:
        merged: Dict[str, Any] = json.loads(json.dumps(own))  # a copy nothing else holds
        merged.update({State.APP_PREFIX + k: v for k, v in app_state.items()})
        merged.update({State.USER_PREFIX + k: v for k, v in user_state.items()})
        return merged

    def _view_if_current(self, path: str) -> Optional[_View]:
        """The session from its sidecar alone, if the sidecar describes the transcript now."""
        side = Sidecar.read(side_path(path))
        try:
            st = os.stat(path)
        except FileNotFoundError:
            return None
        if side is None or not side.describes(st):
            return None
        return _View(side.size, {}, side.updated, side.marker, side.pending)

    def _view(self, path: str, fd: int, key: _Key) -> _View:
        """The session as it is now: from this service's memory when it holds it, from the
        sidecar and the line it names when that is current, else from the transcript's end."""
        writer = self._writers.get(key)
        st = os.fstat(fd)
        if writer is not None:
            return _View(st.st_size, writer.state, writer.updated, writer.marker, None)
        side = Sidecar.read(side_path(path))
        if side is not None and side.describes(st):
            return _View(side.size, self._state_line(path, fd, side.state_at, side.size), side.updated, side.marker, side.pending)
        return self._scan(path, fd, st.st_size)[0]

    @staticmethod
    def _state_line(path: str, fd: int, offset: int, end: int) -> Dict[str, Any]:
        env = envelope(line_at(fd, offset, end), path, offset)
        if env is None:
            raise UnreadableLine(f"{path}: the line at byte {offset} is blank, not the session's state")
        if env["type"] == "session-meta":
            return session_state_of_meta(env["payload"])
        state = env["payload"].get(STATE_EXTRA)
        if not isinstance(state, dict):
            raise UnreadableLine(f"{path}: the line at byte {offset} holds no session state")
        return state

    @staticmethod
    def _scan(path: str, fd: int, end: int) -> Tuple[_View, int]:
        """The session from the transcript's end, read back only as far as needed: the last
        envelope (the marker), the last event (the update time) and the last line holding
        the session's state (or the session-meta line). Returns the view and that line's offset."""
        marker: Optional[str] = None
        last_event: Optional[Dict[str, Any]] = None
        complete_end: Optional[int] = None
        for offset, line in lines_backward(fd, end):
            env = envelope(line, path, offset)
            if env is None:
                continue
            if complete_end is None:
                complete_end = offset + len(line) + 1
            if marker is None:
                marker = str(env.get("id"))
            payload = env["payload"]
            if env["type"] == "session-meta" and offset == 0:
                info = payload.get(SESSION_META) or {}
                updated = float(last_event["timestamp"]) if last_event else float(info.get("created") or 0.0)
                view = _View(complete_end, session_state_of_meta(payload), updated, marker, None, last_event, payload)
                return view, 0
            if env["type"] != "message":
                continue
            if last_event is None and isinstance(payload.get(EVENT_EXTRA), dict):
                last_event = payload[EVENT_EXTRA]
            if isinstance(payload.get(STATE_EXTRA), dict):
                updated = float(last_event["timestamp"]) if last_event else 0.0
                state: Dict[str, Any] = payload[STATE_EXTRA]
                return _View(complete_end, state, updated, marker, None, last_event), offset
        raise UnreadableLine(f"{path}: no session-meta line of an ADK session at its start")

    @staticmethod
    def _names(path: str, fd: int) -> Tuple[Optional[str], Optional[str]]:
        """(user id, session id) from the transcript's session-meta line."""
        env = envelope(line_at(fd, 0, os.fstat(fd).st_size), path, 0)
        info = (env or {}).get("payload", {}).get(SESSION_META) or {}
        user, sid = info.get("user"), info.get("id")
        return (user if isinstance(user, str) else None, sid if isinstance(sid, str) else None)

    @staticmethod
    def _events(path: str, fd: int, end: int, config: Optional[GetSessionConfig]) -> List[Event]:
        """The events `config` asks for: the last k read from the end; all, from the start."""
        limit = config.num_recent_events if config is not None else None
        after = config.after_timestamp if config is not None else None
        if limit == 0:
            return []
        found: List[Dict[str, Any]] = []
        lines: Iterator[Tuple[int, bytes]] = lines_backward(fd, end) if limit is not None else lines_forward(fd, end)
        for offset, line in lines:
            env = envelope(line, path, offset)
            if env is None or env["type"] != "message" or not isinstance(env["payload"].get(EVENT_EXTRA), dict):
                continue
            found.append(env["payload"][EVENT_EXTRA])
            if limit is not None and len(found) == limit:
                break
        if limit is not None:
            found.reverse()
        events = [_event_of(e) for e in found]
        if after is not None:
            events = [e for e in events if e.timestamp >= after]
        return events
