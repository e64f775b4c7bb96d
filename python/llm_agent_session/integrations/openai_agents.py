"""The OpenAI Agents SDK's conversation memory as a transcript (docs/integrations.md).

    ts = TranscriptSession("run.jsonl")
    result = await Runner.run(agent, "hi", session=ts, hooks=ts.hooks)
    await ts.close()

`TranscriptSession` implements the SDK's `Session` protocol structurally. Every item
the SDK hands to `add_items` is stored as it was given, in the extras of a `message`
line whose message is the item's chat-completions projection: the model's output
items of one response (text, reasoning, function calls) share one assistant message,
each tool output is a tool message, each input message its own message. `pop_item`
and `clear_session` are rewinds: nothing leaves the file.

`ts.hooks` records what the SDK itself saves only later: the model's output as soon as
the model answers (so a function call is on disk before its tool runs), then
`tool-dispatched` when a function tool starts and `tool-settled` when it ends.
Opening a transcript whose tool calls were cut off by a crash answers them first
(`Session.answer_interrupted_tool_calls`), so the model's next input says what happened
to each; calls that were never dispatched (waiting for an approval) are left for the SDK
to resume.
"""

from __future__ import annotations

import copy
import time
from typing import Any, Dict, List, Mapping, Optional, Sequence, Tuple, cast

try:
    from agents import RunHooks
    from agents.memory import SessionSettings
    from agents.tool_context import ToolContext
except ImportError as e:  # pragma: no cover - exercised by a test in a bare interpreter
    raise ImportError(
        "llm_agent_session.integrations.openai_agents needs the OpenAI Agents SDK: "
        "pip install 'llm-agent-session[openai-agents]'"
    ) from e

from .. import Message
from .._token_usage import TOKEN_USAGE, Usage, figure
from ._mirror import (
    LiveRecord,
    Mirror,
    PlannedUnit,
    TranscriptOwner,
    adapter_thread,
    Unit,
    canonical,
    open_transcript,
    unanswered_calls_ran,
)

__all__ = ["TranscriptSession", "TranscriptRunHooks", "ITEMS_EXTRA"]

# The extra that holds the SDK's own items, a list, on each message this module writes.
ITEMS_EXTRA = "openai-agents-items"

# What a settle says when the SDK's history moved on without a tool that never returned
# (it raised through the run, or the run was cancelled).
_NOT_RETURNED = "the tool did not return before the run's history moved on"

_TEXT_PARTS = ("input_text", "output_text", "text")


# --------------------------------------------------------------------------- item shapes


def _json_item(item: Any) -> Dict[str, Any]:
    """An item as the plain JSON object the transcript stores (the SDK's own dicts as given)."""
    if hasattr(item, "model_dump"):  # an SDK/OpenAI model object rather than its dict
        item = item.model_dump(mode="json", exclude_unset=True)
    if not isinstance(item, Mapping):
        raise TypeError(f"a session item must be a mapping (a TResponseInputItem), not {type(item).__name__}")
    item = copy.deepcopy(dict(item))
    canonical(item)  # refuse what JSON cannot carry before anything is written
    return cast(Dict[str, Any], item)


def _is_tool_output(item: Mapping[str, Any]) -> bool:
    kind = item.get("type")
    return isinstance(kind, str) and (kind.endswith("_output") or kind == "mcp_approval_response")


def _is_model_output(item: Mapping[str, Any]) -> bool:
    """Written by the model: an assistant message, a call, reasoning, ..."""
    role = item.get("role")
    if role is not None:
        return bool(role == "assistant")
    return not _is_tool_output(item)


def _text(content: Any) -> Optional[str]:
    """The readable text of a message's content (a string or a list of content parts)."""
    if content is None or isinstance(content, str):
        return content
    if not isinstance(content, list):
        return canonical(content)
    pieces = []
    for part in content:
        if isinstance(part, Mapping) and part.get("type") in _TEXT_PARTS and isinstance(part.get("text"), str):
            pieces.append(part["text"])
        elif isinstance(part, Mapping) and part.get("type") == "refusal":
            pieces.append(str(part.get("refusal", "")))
        elif isinstance(part, Mapping):
            pieces.append(f"[{part.get('type', 'part')}]")
        else:
            pieces.append(str(part))
    return "".join(pieces)


def _tool_call(item: Mapping[str, Any]) -> Dict[str, Any]:
    """A call item as a chat-completions tool call."""
    kind = item.get("type")
    if kind == "function_call":
        name, arguments = item.get("name"), item.get("arguments", "")
    elif kind == "custom_tool_call":
        name, arguments = item.get("name"), item.get("input", "")
    else:  # computer, shell, apply_patch ... calls: their action as JSON arguments
        name = kind
        arguments = {k: v for k, v in item.items() if k not in ("type", "id", "call_id", "status")}
    if not isinstance(arguments, str):
        arguments = canonical(arguments)
    return {"id": item["call_id"], "type": "function", "function": {"name": str(name), "arguments": arguments}}


def _project(items: Sequence[Mapping[str, Any]]) -> Dict[str, Any]:
    """The chat-completions message that a unit's items become."""
    first = items[0]
    if _is_model_output(first):
        texts = [_text(i.get("content")) for i in items if i.get("role") == "assistant"]
        content = "\n".join(t for t in texts if t) or None
        calls = [_tool_call(i) for i in items if isinstance(i.get("call_id"), str)]
        return Message("assistant", content, tool_calls=calls or None).to_dict()
    if _is_tool_output(first):
        output = first.get("output")
        text = output if isinstance(output, str) else _text(output) if isinstance(output, list) else None
        if text is None:
            text = canonical({k: v for k, v in first.items() if k not in ("type", "call_id")})
        call_id = first.get("call_id")
        if isinstance(call_id, str):
            return Message("tool", text, tool_call_id=call_id).to_dict()
        return Message("user", text).to_dict()
    return Message(str(first.get("role")), _text(first.get("content")) or "").to_dict()


def _item_key(item: Mapping[str, Any]) -> str:
    """What tells an output item from another, in the hooks' copy and the SDK's alike: its
    id or call id, else its JSON."""
    for key in ("id", "call_id"):
        if isinstance(item.get(key), str) and item[key]:
            return f"{item.get('type')}:{key}:{item[key]}"
    return canonical(item)


def _token_usage(response: Any) -> Dict[str, Any]:
    """A model response's usage (``ModelResponse.usage``, the SDK's ``Usage`` of that one
    request) as the transcript's ``token-usage``, under the response's id. The SDK's
    ``input_tokens`` includes the cached tokens and those written to the cache, so
    ``input`` is the rest. The SDK reads a count the provider omits as 0; a usage of no
    input and no output tokens is one the provider did not report (no response reads
    nothing): no count is stated then."""
    rid = getattr(response, "response_id", None)
    rid = rid if isinstance(rid, str) and rid else None
    u = getattr(response, "usage", None)
    given, output = figure(getattr(u, "input_tokens", None)), figure(getattr(u, "output_tokens", None))
    if u is None or not (given or output):
        return Usage(response_id=rid).to_json()
    details = getattr(u, "input_tokens_details", None)
    read = figure(getattr(details, "cached_tokens", None))
    write = figure(getattr(details, "cache_write_tokens", None))
    rest = given - (read or 0) - (write or 0) if given is not None else None
    return Usage(rest if rest is not None and rest >= 0 else None, output, read, write, rid).to_json()


def _plan(items: Sequence[Any], _before: Sequence[Unit], tokens: Mapping[str, Dict[str, Any]]) -> List[PlannedUnit]:
    """One message per input message and per tool output; a model's consecutive output
    items (one response) share one assistant message, which carries the response's token
    usage where the hooks saw it (`tokens`: by `_item_key` of its items)."""
    units: List[List[Any]] = []
    for item in items:
        if units and _is_model_output(item) and _is_model_output(units[-1][-1]):
            units[-1].append(item)
        else:
            units.append([item])
    planned = []
    for group in units:
        extra: Dict[str, Any] = {ITEMS_EXTRA: group}
        usage = next((tokens[k] for k in map(_item_key, group) if k in tokens), None)
        if usage is not None and _is_model_output(group[0]):
            extra[TOKEN_USAGE] = usage
        planned.append(PlannedUnit(group, [(_project(group), extra)]))
    return planned


def _items_of_message(message: Message, call_types: Mapping[str, str]) -> List[Dict[str, Any]]:
    """SDK items for a message that carries none (one written by someone else, such as
    the answer to an interrupted call)."""
    content = message.content if isinstance(message.content, str) or message.content is None else _text(message.content)
    if message.role == "tool":
        kind = "custom_tool_call_output" if call_types.get(message.tool_call_id or "") == "custom_tool_call" else "function_call_output"
        return [{"type": kind, "call_id": message.tool_call_id or "", "output": content or ""}]
    if message.role == "assistant":
        items: List[Dict[str, Any]] = []
        if content:
            items.append({"role": "assistant", "content": content})
        for call in message.tool_calls or []:
            function = call.get("function") or {}
            items.append({"type": "function_call", "call_id": call.get("id", ""),
                          "name": function.get("name", ""), "arguments": function.get("arguments", "")})
        return items or [{"role": "assistant", "content": ""}]
    return [{"role": message.role, "content": content or ""}]


def _read(records: Sequence[LiveRecord], before: Sequence[Unit]) -> List[Unit]:
    call_types = {n["call_id"]: n.get("type") for u in before for n in u.natives if isinstance(n.get("call_id"), str)}
    units = []
    for id_, message, extra in records:
        items = extra.get(ITEMS_EXTRA)
        if not (isinstance(items, list) and items and all(isinstance(i, dict) for i in items)):
            items = _items_of_message(message, call_types)
        for item in items:
            if _is_model_output(item) and isinstance(item.get("call_id"), str):
                call_types[item["call_id"]] = item.get("type")
        units.append(Unit(items, [id_]))
    return units


def _same_item(a: Mapping[str, Any], b: Mapping[str, Any]) -> bool:
    """Is `a` the SDK's copy of the item `b` that the hooks wrote? Same call, or same id."""
    if a.get("type") != b.get("type"):
        return False
    for key in ("call_id", "id"):
        if isinstance(a.get(key), str) and a.get(key) == b.get(key):
            return True
    return canonical(a) == canonical(b)


# --------------------------------------------------------------------------- the session


class TranscriptSession(TranscriptOwner):
    """A transcript as the Agents SDK's `Session` (the protocol, structurally).

    Opening creates `path` with `meta` as its session-meta, or loads it and takes its
    lock (`SessionLocked` when another session holds it) and answers the tool calls
    that a crash left unanswered, if any of them was dispatched. `session_id` defaults to
    the id of the transcript's session-meta line, the same every time the file is opened.
    `redaction`: a ``secrets.Policy``; what it finds is masked in every line written
    (docs/secrets.md), while this run's items stay as they were given.
    """

    def __init__(
        self,
        path: Any,
        *,
        meta: Optional[Mapping[str, Any]] = None,
        session_id: Optional[str] = None,
        session_settings: Optional[SessionSettings] = None,
        redaction: Any = None,
    ) -> None:
        transcript = open_transcript(path, meta, redaction)
        # The token usage of each response the hooks saw, by its output items (`_item_key`).
        self._tokens: Dict[str, Dict[str, Any]] = {}
        try:
            if unanswered_calls_ran(transcript):
                transcript.answer_interrupted_tool_calls()
            self._mirror = Mirror(transcript, _read, lambda items, before: _plan(items, before, self._tokens))
        except BaseException:
            transcript.close()
            raise
        self._transcript = transcript
        self.session_id: str = session_id if session_id is not None else transcript.events[0].id
        self.session_settings: Optional[SessionSettings] = session_settings or SessionSettings()
        self.hooks = TranscriptRunHooks(self)
        self._gate = adapter_thread()
        # Items at the end of the transcript that the hooks wrote ahead of `add_items`.
        self._ahead = 0
        # call id -> (op id, monotonic start) for function tools started and not yet ended.
        self._running: Dict[str, Tuple[str, float]] = {}

    # -- the Session protocol ------------------------------------------------------------

    async def get_items(self, limit: Optional[int] = None) -> List[Dict[str, Any]]:
        """The history, oldest first; with `limit`, only the latest `limit` items."""
        if limit is None and self.session_settings is not None:
            limit = self.session_settings.limit
        known = await self._gate.run(self._known)
        if limit is not None:
            known = known[-limit:] if limit > 0 else []
        return copy.deepcopy(known)

    async def add_items(self, items: List[Any]) -> None:
        """Store `items` after the history (an item the hooks already wrote is not written twice)."""
        given = [_json_item(i) for i in items]
        if given:
            await self._gate.run(self._add, given)

    async def pop_item(self) -> Optional[Dict[str, Any]]:
        """Remove the last item from the history (a rewind) and return it; None when empty."""
        return cast(Optional[Dict[str, Any]], await self._gate.run(self._pop))

    async def clear_session(self) -> None:
        """Empty the history (a rewind to nothing; the file keeps every line)."""
        await self._gate.run(self._settle_to, [])

    def __repr__(self) -> str:
        return f"TranscriptSession({self._transcript.path!r}, session_id={self.session_id!r})"

    # -- blocking work, run through the gate ---------------------------------------------------

    def _known(self) -> List[Any]:
        natives = self._mirror.natives()
        return natives[: len(natives) - self._ahead]

    def _add(self, given: List[Dict[str, Any]]) -> None:
        natives = self._mirror.natives()
        known, ahead = natives[: len(natives) - self._ahead], natives[len(natives) - self._ahead :]
        matched = 0
        while matched < min(len(given), len(ahead)) and _same_item(given[matched], ahead[matched]):
            matched += 1
        # The SDK's history is the truth: what the hooks wrote and it did not take is rewound.
        still_ahead = ahead[matched:] if matched == len(given) else []
        self._settle_to(known + given + still_ahead, still_ahead)

    def _pop(self) -> Optional[Dict[str, Any]]:
        known = self._known()
        if not known:
            return None
        self._settle_to(known[:-1])
        return cast(Dict[str, Any], copy.deepcopy(known[-1]))

    def _settle_to(self, desired: List[Any], ahead: Sequence[Any] = ()) -> None:
        """Sync the transcript to `desired` (ending with `ahead`, the hooks' items that the
        SDK has not taken yet) and close the books on tools whose calls left the history."""
        self._mirror.sync(desired)
        self._ahead = len(ahead)
        live_calls = {n.get("call_id") for n in desired if _is_model_output(n)}
        for call_id in [c for c in self._running if c not in live_calls]:
            op_id, _ = self._running.pop(call_id)
            if any(op.op_id == op_id for op in self._transcript.pending_tool_operations()):
                self._transcript.resolve_tool_operation(op_id, "outcome-unknown", reason=_NOT_RETURNED)

    def _write_ahead(self, items: List[Dict[str, Any]]) -> None:
        self._mirror.sync(self._mirror.natives() + items)
        self._ahead += len(items)

    def _dispatch(self, context: Any, call_item: Optional[Dict[str, Any]]) -> None:
        call_id = context.tool_call_id
        calls = {n.get("call_id") for n in self._mirror.natives() if _is_model_output(n)}
        if call_id not in calls and call_item is not None:
            self._write_ahead([call_item])  # a call the hooks did not see the model make
        op_id = self._transcript.append_tool_dispatched(call_id, context.tool_name, context.tool_arguments)
        self._running[call_id] = (op_id, time.monotonic())

    def _settle(self, call_id: str, error: Optional[BaseException]) -> None:
        running = self._running.pop(call_id, None)
        if running is None:
            return
        op_id, started = running
        duration = round(time.monotonic() - started, 6)
        if error is None:
            self._transcript.append_tool_settled(op_id, "completed", duration=duration)
        else:
            self._transcript.append_tool_settled(
                op_id, "failed", duration=duration, error=f"{type(error).__name__}: {error}"
            )

    # -- what the hooks call -------------------------------------------------------------------

    async def _model_answered(self, output_items: List[Any], tokens: Optional[Dict[str, Any]] = None) -> None:
        items = [_json_item(i) for i in output_items]
        if items:
            if tokens is not None:
                for item in items:
                    self._tokens[_item_key(item)] = tokens
            await self._gate.run(self._write_ahead, items)

    async def _tool_started(self, context: Any) -> None:
        if not isinstance(context, ToolContext):
            return  # hosted and local non-function tools carry no call id to record
        _watch_failures(context)
        call = context.tool_call
        call_item = _json_item(call) if call is not None else None
        await self._gate.run(self._dispatch, context, call_item)

    async def _tool_ended(self, context: Any) -> None:
        if not isinstance(context, ToolContext):
            return
        error = _take_failure(context)
        await self._gate.run(self._settle, context.tool_call_id, error)


class TranscriptRunHooks(RunHooks):
    """`RunHooks` that write a `TranscriptSession`'s side of a run as it happens: the
    model's output at `on_llm_end`, `tool-dispatched` at `on_tool_start`, `tool-settled`
    at `on_tool_end` (`failed` when the tool raised). Subclass it to add your own hooks,
    calling `super()`."""

    def __init__(self, session: TranscriptSession) -> None:
        self._session = session

    async def on_llm_end(self, context: Any, agent: Any, response: Any) -> None:
        await self._session._model_answered(response.to_input_items(), _token_usage(response))

    async def on_tool_start(self, context: Any, agent: Any, tool: Any) -> None:
        await self._session._tool_started(context)

    async def on_tool_end(self, context: Any, agent: Any, tool: Any, result: Any) -> None:
        await self._session._tool_ended(context)


# --------------------------------------------------------------------------- failed tools
#
# By default the SDK turns a tool's exception into a string for the model, so on_tool_end
# cannot tell a failure from a result. The seam that can is RunConfig.tool_error_formatter:
# the SDK calls it with the call id and the exception whenever its default failure handler
# catches one. The hooks chain a recorder in front of the run's own formatter (which still
# decides what the model sees); a tool with its own failure_error_function handles its
# errors itself and is recorded as completed.


class _FailureRecorder:
    def __init__(self, inner: Any) -> None:
        self.inner = inner
        self.failures: Dict[str, BaseException] = {}

    def __call__(self, args: Any) -> Any:
        if getattr(args, "kind", None) == "tool_exception" and args.error is not None:
            self.failures[args.call_id] = args.error
        return self.inner(args) if self.inner is not None else None


def _watch_failures(context: Any) -> None:
    config = getattr(context, "run_config", None)
    if config is not None and not isinstance(config.tool_error_formatter, _FailureRecorder):
        config.tool_error_formatter = _FailureRecorder(config.tool_error_formatter)


def _take_failure(context: Any) -> Optional[BaseException]:
    recorder = getattr(getattr(context, "run_config", None), "tool_error_formatter", None)
    if isinstance(recorder, _FailureRecorder):
        return recorder.failures.pop(context.tool_call_id, None)
    return None
