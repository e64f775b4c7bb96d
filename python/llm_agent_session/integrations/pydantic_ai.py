"""pydantic-ai's message history and tool calls in a transcript (docs/integrations.md).

    transcript = TranscriptCapability("run.jsonl")
    agent = Agent(model, capabilities=[transcript])
    result = await agent.run("hi", message_history=await transcript.message_history())
    await transcript.close()

`TranscriptCapability` is a pydantic-ai capability. During a run it writes the history
as it grows: each `ModelRequest` before the model is asked, each `ModelResponse` before
its tool calls run, then `tool-dispatched` / `tool-settled` around every tool execution
(`failed` with the error when the tool raises), and the run's whole history when it
ends. Every `ModelMessage` is stored as pydantic-ai's own JSON (its
`ModelMessagesTypeAdapter`) in the extras of the last of the chat-completions messages it
becomes, so `message_history()` gives back equal `ModelMessage`s.

`message_history()` first answers every tool call that a crash left unanswered
(`Session.answer_interrupted_tool_calls`): pydantic-ai re-runs an unanswered call when a
run resumes, and a call that may already have acted must not run again unless the app
decides so. To decide, settle its operation
(`transcript.transcript.resolve_tool_operation(...)`, or append the tool's real result)
before calling `message_history()`.
"""

from __future__ import annotations

import asyncio
import time
from dataclasses import dataclass
from typing import Any, Dict, List, Mapping, Optional, Sequence, cast

try:
    from pydantic_ai.capabilities import AbstractCapability
    from pydantic_ai.exceptions import ApprovalRequired, CallDeferred, SkipToolExecution
    from pydantic_ai.messages import (
        ModelMessage,
        ModelMessagesTypeAdapter,
        ModelRequest,
        ModelResponse,
        RetryPromptPart,
        SystemPromptPart,
        TextPart,
        ToolCallPart,
        ToolReturnPart,
        UserPromptPart,
    )
except ImportError as e:  # pragma: no cover - exercised by a test in a bare interpreter
    raise ImportError(
        "llm_agent_session.integrations.pydantic_ai needs pydantic-ai: "
        "pip install 'llm-agent-session[pydantic-ai]'"
    ) from e

from .. import Message
from .._token_usage import TOKEN_USAGE, Usage, figure
from ..session import INTERRUPTED_TEXT
from ._mirror import (
    DEFERRED,
    LiveRecord,
    Mirror,
    PlannedUnit,
    Record,
    TranscriptOwner,
    adapter_thread,
    Unit,
    open_transcript,
    unanswered_calls_ran,
)

__all__ = ["TranscriptCapability", "MESSAGE_EXTRA", "PART_EXTRA"]

# The extra holding a ModelMessage's JSON, on the last message it projects to; the
# messages before it (a request with several parts) carry PART_EXTRA instead.
MESSAGE_EXTRA = "pydantic-ai-message"
PART_EXTRA = "pydantic-ai-part"

# Control flow, not failure: the call waits for approval or an external result.
_DEFERRALS = (CallDeferred, ApprovalRequired, SkipToolExecution)


def _interrupted(call: Any) -> ToolReturnPart:
    return ToolReturnPart(call.tool_name, INTERRUPTED_TEXT, tool_call_id=call.tool_call_id, outcome="interrupted")


def _dump(message: ModelMessage) -> Dict[str, Any]:
    return cast(Dict[str, Any], ModelMessagesTypeAdapter.dump_python([message], mode="json")[0])


def _load(data: Any) -> ModelMessage:
    return ModelMessagesTypeAdapter.validate_python([data])[0]


def _user_text(content: Any) -> str:
    if isinstance(content, str):
        return content
    pieces = []
    for item in content:
        pieces.append(item if isinstance(item, str) else f"[{getattr(item, 'kind', type(item).__name__)}]")
    return "\n".join(pieces)


def _project(message: ModelMessage) -> List[Dict[str, Any]]:
    """The chat-completions messages that one ModelMessage becomes."""
    if isinstance(message, ModelResponse):
        text = "".join(p.content for p in message.parts if isinstance(p, TextPart))
        calls = [
            {"id": p.tool_call_id, "type": "function", "function": {"name": p.tool_name, "arguments": p.args_as_json_str()}}
            for p in message.parts
            if isinstance(p, ToolCallPart)
        ]
        return [Message("assistant", text or None, tool_calls=calls or None).to_dict()]
    out = []
    for part in message.parts:
        if isinstance(part, SystemPromptPart):
            out.append(Message("system", part.content))
        elif isinstance(part, UserPromptPart):
            out.append(Message("user", _user_text(part.content)))
        elif isinstance(part, ToolReturnPart):
            out.append(Message("tool", part.model_response_str(), tool_call_id=part.tool_call_id))
        elif isinstance(part, RetryPromptPart):
            if part.tool_name is not None:
                out.append(Message("tool", part.model_response(), tool_call_id=part.tool_call_id))
            else:
                out.append(Message("user", part.model_response()))
    if not out:  # a request of instructions only: it still needs a line of its own
        out.append(Message("user", ""))
    return [m.to_dict() for m in out]


def _token_usage(data: Dict[str, Any]) -> Optional[Dict[str, Any]]:
    """A ModelResponse's usage (its ``RequestUsage``, as the JSON the adapter keeps) as the
    transcript's ``token-usage``: pydantic-ai's ``input_tokens`` includes the cache reads and
    writes, so ``input`` is the rest. A response whose usage pydantic-ai did not measure
    (``unmeasured_requests``, or no tokens at all) states no count. The response's id is the
    provider's (``provider_response_id``), else the run's id and the response's time,
    the same on every line written of it, so a response written again counts once."""
    if data.get("kind") != "response":
        return None
    found = data.get("usage")
    raw: Dict[str, Any] = found if isinstance(found, dict) else {}
    rid = data.get("provider_response_id")
    if not (isinstance(rid, str) and rid) and isinstance(data.get("run_id"), str) and isinstance(data.get("timestamp"), str):
        rid = f"pydantic-ai:{data['run_id']}@{data['timestamp']}"
    counted = (figure(raw.get("input_tokens")), figure(raw.get("output_tokens")),
               figure(raw.get("cache_read_tokens")), figure(raw.get("cache_write_tokens")))
    given, output, read, write = counted
    if raw.get("unmeasured_requests") or not (given or output):
        return Usage(response_id=rid if isinstance(rid, str) and rid else None).to_json()
    rest = given - (read or 0) - (write or 0) if given is not None else None
    return Usage(rest if rest is not None and rest >= 0 else None, output, read, write,
                 rid if isinstance(rid, str) and rid else None).to_json()


def _records(data: Dict[str, Any]) -> List[Record]:
    projected = _project(_load(data))
    records: List[Record] = [(m, {PART_EXTRA: True}) for m in projected[:-1]]
    last: Dict[str, Any] = {MESSAGE_EXTRA: data}
    tokens = _token_usage(data)
    if tokens:
        last[TOKEN_USAGE] = tokens
    records.append((projected[-1], last))
    return records


def _plan(natives: Sequence[Any], _before: Sequence[Unit]) -> List[PlannedUnit]:
    return [PlannedUnit([data], _records(data)) for data in natives]


def _fallback(records: Sequence[LiveRecord], tool_names: Mapping[str, str]) -> List[Unit]:
    """ModelMessages for messages that carry none: the answers to interrupted calls, or lines that
    another writer added. Consecutive non-assistant messages make one request."""
    units: List[Unit] = []
    parts: List[Any] = []
    ids: List[str] = []

    def flush() -> None:
        if parts:
            units.append(Unit([_dump(ModelRequest(parts=list(parts)))], list(ids)))
            parts.clear()
            ids.clear()

    for id_, message, _ in records:
        text = message.content if isinstance(message.content, str) else "" if message.content is None else str(message.content)
        if message.role == "assistant":
            flush()
            response_parts: List[Any] = [TextPart(text)] if text else []
            for call in message.tool_calls or []:
                function = call.get("function") or {}
                response_parts.append(
                    ToolCallPart(function.get("name", ""), function.get("arguments", ""), tool_call_id=call.get("id", ""))
                )
            units.append(Unit([_dump(ModelResponse(parts=response_parts))], [id_]))
            continue
        if message.role == "tool":
            call_id = message.tool_call_id or ""
            parts.append(ToolReturnPart(tool_names.get(call_id, ""), text, tool_call_id=call_id))
        elif message.role == "system":
            parts.append(SystemPromptPart(text))
        else:
            parts.append(UserPromptPart(text))
        ids.append(id_)
    flush()
    return units


def _read(records: Sequence[LiveRecord], before: Sequence[Unit]) -> List[Unit]:
    tool_names: Dict[str, str] = {}

    def note_calls(data: Any) -> None:
        if isinstance(data, dict) and data.get("kind") == "response":
            for part in data.get("parts", []):
                if isinstance(part, dict) and part.get("part_kind") == "tool-call":
                    tool_names[part.get("tool_call_id", "")] = part.get("tool_name", "")

    for unit in before:
        for data in unit.natives:
            note_calls(data)
    units: List[Unit] = []
    loose: List[LiveRecord] = []  # messages not (yet) known to belong to a ModelMessage
    for record in records:
        data = record[2].get(MESSAGE_EXTRA)
        if data is None:
            loose.append(record)
            continue
        # Its other parts are the lines just before it (fewer if a rewind cut some off).
        cut = max(len(loose) - (len(_project(_load(data))) - 1), 0)
        units.extend(_fallback(loose[:cut], tool_names))
        units.append(Unit([data], [r[0] for r in loose[cut:]] + [record[0]]))
        loose = []
        note_calls(data)
    units.extend(_fallback(loose, tool_names))
    return units


@dataclass(init=False, eq=False)  # one transcript each: equal only to itself
class TranscriptCapability(TranscriptOwner, AbstractCapability[Any]):
    """A pydantic-ai capability that keeps a run's history and tool calls in a transcript.

    Opening creates `path` with `meta` as its session-meta, or loads it and takes its
    lock (`SessionLocked` when another session holds it). Pass it to `Agent(...,
    capabilities=[...])` and hand `await message_history()` to each run. `redaction`: a
    ``secrets.Policy``; what it finds is masked in every line written (docs/secrets.md).
    """

    def __init__(self, path: Any, *, meta: Optional[Mapping[str, Any]] = None, redaction: Any = None) -> None:
        transcript = open_transcript(path, meta, redaction)
        try:
            self._mirror = Mirror(transcript, _read, _plan)
        except BaseException:
            transcript.close()
            raise
        self._transcript = transcript
        self._gate = adapter_thread()
        # call id -> the answer for a call whose tool ended in this run (see wrap_run)
        self._returns: Dict[str, ToolReturnPart] = {}
        # the history list of the run in progress, as the hooks see it
        self._live: Optional[List[ModelMessage]] = None

    async def message_history(self) -> List[ModelMessage]:
        """The conversation so far, as pydantic-ai's messages. When a tool call that a
        crash left unanswered was dispatched, the calls are answered first, so
        no such call runs again; calls never dispatched (deferred) are left as they are."""
        return cast(List[ModelMessage], await self._gate.run(self._answered_history))

    def __repr__(self) -> str:
        return f"TranscriptCapability({self._transcript.path!r})"

    # -- blocking work, run through the gate ---------------------------------------------------

    def _answered_history(self) -> List[ModelMessage]:
        self._mirror.read_tail()  # what the app appended itself, such as a call's real result
        if unanswered_calls_ran(self._transcript) and self._transcript.answer_interrupted_tool_calls():
            self._mirror.read_tail()
        # Parsed from their texts: ModelMessages share nothing with the mirror's items
        # (validating the items themselves would hand out their nested dicts and lists).
        return ModelMessagesTypeAdapter.validate_json("[" + ",".join(self._mirror.native_texts()) + "]")

    def _sync(self, messages: Sequence[ModelMessage]) -> None:
        self._mirror.sync([_dump(m) for m in messages])

    def _sync_stopped_run(self, messages: List[ModelMessage]) -> None:
        answered = {
            p.tool_call_id for m in messages if isinstance(m, ModelRequest) for p in m.parts
            if isinstance(p, (ToolReturnPart, RetryPromptPart))
        }
        # pydantic-ai may already have closed the history with an empty, interrupted request
        last = next((m for m in reversed(messages) if isinstance(m, ModelResponse)), None)
        calls = [p for p in last.parts if isinstance(p, ToolCallPart)] if last is not None else []
        returns = [self._returns[c.tool_call_id] for c in calls if c.tool_call_id not in answered and c.tool_call_id in self._returns]
        if returns:
            messages = messages + [ModelRequest(parts=returns)]
        self._sync(messages)

    def _dispatch(self, messages: Sequence[ModelMessage], call: ToolCallPart, ctx: Any) -> str:
        self._sync(messages)
        # The arguments as the model sent them (always JSON), not the validated objects.
        return self._transcript.append_tool_dispatched(
            call.tool_call_id, call.tool_name, call.args_as_json_str(),
            run_id=getattr(ctx, "run_id", None), round=getattr(ctx, "run_step", None),
        )

    # -- the capability's hooks ----------------------------------------------------------------

    async def before_model_request(self, ctx: Any, request_context: Any) -> Any:
        self._live = ctx.messages
        await self._gate.run(self._sync, list(ctx.messages))
        return request_context

    async def wrap_tool_execute(self, ctx: Any, *, call: Any, tool_def: Any, args: Any, handler: Any) -> Any:
        # The response asking for this call is on disk before the call crosses over.
        self._live = ctx.messages
        op_id = await self._gate.run(self._dispatch, list(ctx.messages), call, ctx)
        started = time.monotonic()
        try:
            result = await handler(args)
        except _DEFERRALS as e:
            await self._settle(op_id, started, "outcome-unknown", reason=f"{DEFERRED}: {type(e).__name__}")
            raise
        except asyncio.CancelledError:
            self._returns[call.tool_call_id] = _interrupted(call)
            await self._settle(op_id, started, "outcome-unknown", reason="cancelled")
            raise
        except Exception as e:
            error = f"{type(e).__name__}: {e}"
            self._returns[call.tool_call_id] = ToolReturnPart(
                call.tool_name, f"The tool call failed: {error}", tool_call_id=call.tool_call_id, outcome="failed"
            )
            await self._settle(op_id, started, "failed", error=error)
            raise
        self._returns[call.tool_call_id] = ToolReturnPart(call.tool_name, result, tool_call_id=call.tool_call_id)
        await self._settle(op_id, started, "completed")
        return result

    async def wrap_run(self, ctx: Any, *, handler: Any) -> Any:
        try:
            result = await handler()
        except (Exception, asyncio.CancelledError):
            # What the run got to (wrap_run's own context still holds the messages the run
            # started with), and an answer for each call whose tool this run saw end:
            # pydantic-ai drops them when a tool's exception ends the run, or the run is
            # cancelled (asyncio.wait_for) while a tool runs: that call's answer says it
            # may or may not have run, and its operation was settled outcome-unknown.
            live = self._live if self._live is not None else ctx.messages
            await self._gate.run(self._sync_stopped_run, list(live))
            raise
        finally:
            self._returns.clear()
            self._live = None
        await self._gate.run(self._sync, result.all_messages())
        return result

    async def _settle(self, op_id: str, started: float, outcome: str, **how: Any) -> None:
        duration = round(time.monotonic() - started, 6)
        await self._gate.run(lambda: self._transcript.append_tool_settled(op_id, outcome, duration=duration, **how))
