"""A transcript as one trace of GenAI spans: the mapping (``docs/otlp.md`` has it as a table).

* One trace per transcript. Its id and every span id are digests of the session's id (the
  ``session-meta`` envelope's id) and of the record each span comes from, so the same file
  always gives the same ids: a re-export replaces a trace in a backend, never duplicates it.
* The root span ``invoke_agent {agent}`` covers the whole run, from the earliest time the
  transcript records to the latest. Compactions, elisions, rewinds and grants are its events.
* A ``chat {model}`` span per assistant message, from the previous record (the request
  could not leave before it) to the message's own time; model, usage and finish reason from
  the meta, the latest run context and the message's extras, where they were recorded.
* An ``execute_tool {tool}`` span per tool operation, from ``tool-dispatched`` to
  ``tool-settled``; ``failed`` is an error (``error.type`` ``failed``). A call that has no
  outcome (never settled, or settled ``outcome-unknown``) is an error of type
  ``interrupted``: it ends at its settle, or, never settled, at the last time the transcript
  knows.
* Message content only with ``content=True``, each message once (see ``_Reading``).

Records are read leniently, as peek reads them: a line load would refuse is left out, and
what load would say about the file is on the root span (``problems``).
"""

from __future__ import annotations

import calendar
import hashlib
import re
from collections import Counter
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any, Dict, Iterable, Iterator, List, Mapping, Optional, Tuple

from .. import __version__
from ..canonical import dumps
from .._token_usage import TOKEN_USAGE, Usage, count_lines
from ..history import History, Operation
from ..messages import Event, message_extras
from . import content as parts
from . import names
from .encode import Span, SpanEvent, dumps as dump_line, request

#: Spans per ``ExportTraceServiceRequest`` (line): the OpenTelemetry SDK's default export batch.
BATCH = 512

_TS = re.compile(r"(\d{4})-(\d\d)-(\d\d)[Tt ](\d\d):(\d\d):(\d\d)(?:\.(\d{1,9}))?(?:([Zz])|([+-])(\d\d):?(\d\d))\Z")
_MAX_NANOS = (1 << 64) - 1


def nanos(ts: Any) -> Optional[int]:
    """An envelope's ``ts`` as Unix nanoseconds (``None``: not an RFC 3339 UTC time)."""
    m = _TS.match(ts) if isinstance(ts, str) else None
    if m is None:
        return None
    year, month, day, hour, minute, second, fraction, _, sign, oh, om = m.groups()
    try:
        datetime(int(year), int(month), int(day), int(hour), int(minute), min(int(second), 59))
    except ValueError:
        return None
    seconds = calendar.timegm((int(year), int(month), int(day), int(hour), int(minute), int(second)))
    if sign is not None:
        offset = int(oh) * 3600 + int(om) * 60
        seconds -= offset if sign == "+" else -offset
    n = seconds * 1_000_000_000 + int((fraction or "").ljust(9, "0"))
    return min(max(n, 0), _MAX_NANOS)


def _digest(*parts_: str) -> bytes:
    h = hashlib.sha256()
    for p in ("llm-agent-session otlp",) + parts_:
        h.update(p.encode("utf-8", "surrogatepass") + b"\0")
    return h.digest()


def _nonzero(raw: bytes) -> bytes:
    # An all-zero id is invalid in OTLP; a digest that starts with 8 zero bytes is not a worry
    # in practice, but the rule costs nothing.
    return raw if any(raw) else raw[:-1] + b"\1"


def trace_id(session_id: str) -> bytes:
    """The 16-byte trace id of the transcript whose ``session-meta`` envelope id is `session_id`."""
    return _nonzero(_digest("trace", session_id)[:16])


def span_id(session_id: str, operation: str, envelope_id: str) -> bytes:
    """The 8-byte id of the `operation` span that the record `envelope_id` makes."""
    return _nonzero(_digest("span", session_id, operation, envelope_id)[:8])


def _text(mapping: Mapping[str, Any], *keys: str) -> Optional[str]:
    for key in keys:
        value = mapping.get(key)
        if isinstance(value, str) and value:
            return value
    return None


def _count(mapping: Any, key: str) -> Optional[int]:
    value = mapping.get(key) if isinstance(mapping, dict) else None
    return value if type(value) is int and value >= 0 else None


def _clean(attrs: Dict[str, Any]) -> Dict[str, Any]:
    """No empty attributes: None, "" and [] are left out (an unknown is absent, never 0)."""
    return {k: v for k, v in attrs.items() if v is not None and v != "" and v != []}


# -- the pure mappings (a mapping in, attributes out) ----------------------------------------------

def agent_attributes(meta: Mapping[str, Any], session_id: str) -> Dict[str, Any]:
    """The root span's attributes, from the transcript's meta: the agent's name (``agent``,
    or the tool an import came from), id and version, the provider, the model requested, and
    the conversation (the source's session id for an import, else this transcript's)."""
    return _clean({
        names.OPERATION_NAME: names.INVOKE_AGENT,
        names.PROVIDER_NAME: _text(meta, "provider", "model-provider"),
        names.AGENT_NAME: _text(meta, "agent", "agent-name", "imported-from"),
        names.AGENT_ID: _text(meta, "agent-id"),
        names.AGENT_VERSION: _text(meta, "agent-version", "version"),
        names.REQUEST_MODEL: _text(meta, "model"),
        names.CONVERSATION_ID: conversation_id(meta, session_id),
        names.SESSION_ID: session_id,
    })


def conversation_id(meta: Mapping[str, Any], session_id: str) -> str:
    return _text(meta, "session-id", "conversation-id") or session_id


def usage_attributes(usage: Any) -> Dict[str, Any]:
    """Token counts from a recorded ``usage`` extra, in the OpenAI shapes (``prompt_tokens``,
    ``completion_tokens``; ``input_tokens``, ``output_tokens``) or Anthropic's, whose
    ``input_tokens`` leave out the cache: the conventions' input count includes it, so the
    cache reads and writes are added. A count not recorded is absent, never 0."""
    if not isinstance(usage, dict):
        return {}
    given = _count(usage, "input_tokens")
    given = given if given is not None else _count(usage, "prompt_tokens")
    output = _count(usage, "output_tokens")
    output = output if output is not None else _count(usage, "completion_tokens")
    read, creation = _count(usage, "cache_read_input_tokens"), _count(usage, "cache_creation_input_tokens")
    if "cache_read_input_tokens" in usage or "cache_creation_input_tokens" in usage:  # Anthropic's shape
        if given is not None:
            given += (read or 0) + (creation or 0)
    else:
        details = usage.get("prompt_tokens_details", usage.get("input_tokens_details"))
        read = _count(details, "cached_tokens")
    return _clean({
        names.USAGE_INPUT_TOKENS: given,
        names.USAGE_OUTPUT_TOKENS: output,
        names.USAGE_CACHE_READ_INPUT_TOKENS: read,
        names.USAGE_CACHE_CREATION_INPUT_TOKENS: creation,
    })


def token_usage_attributes(tokens: Usage) -> Dict[str, Any]:
    """Token counts from the library's ``token-usage``: its ``input`` leaves the cache out,
    the conventions' input count includes it, so the cache reads and writes are added."""
    given = None if tokens.input is None else tokens.input + (tokens.cache_read or 0) + (tokens.cache_write or 0)
    return _clean({
        names.USAGE_INPUT_TOKENS: given,
        names.USAGE_OUTPUT_TOKENS: tokens.output,
        names.USAGE_CACHE_READ_INPUT_TOKENS: tokens.cache_read,
        names.USAGE_CACHE_CREATION_INPUT_TOKENS: tokens.cache_write,
    })


def chat_attributes(extras: Mapping[str, Any], request_model: Optional[str], provider: Optional[str],
                    conversation: str, message_id: str, counted: Optional[bool] = None) -> Dict[str, Any]:
    """A chat span's attributes: the model requested (meta or run context), and what the
    assistant message's extras recorded of the response (model, id, finish reason, usage).
    Usage from ``token-usage`` where the message records it, on the span its response is
    counted at (`counted`: the last message of the response, ``usage.py``), so a response
    streamed over several messages is counted once by whoever adds the spans up; else
    from a provider-shaped ``usage``."""
    finish = _text(extras, "finish-reason", "stop-reason")
    tokens = Usage.from_json(extras.get(TOKEN_USAGE))
    usage = (token_usage_attributes(tokens) if counted else {}) if tokens is not None else usage_attributes(extras.get("usage"))
    return _clean({
        names.OPERATION_NAME: names.CHAT,
        names.PROVIDER_NAME: provider,
        names.REQUEST_MODEL: request_model,
        names.RESPONSE_MODEL: _text(extras, "model"),
        names.RESPONSE_ID: (tokens.response_id if tokens is not None else None) or _text(extras, "response-id", "message-id"),
        names.RESPONSE_FINISH_REASONS: [finish] if finish else None,
        **usage,
        names.CONVERSATION_ID: conversation,
        names.ENVELOPE_ID: message_id,
    })


def tool_attributes(op: Operation, conversation: str) -> Dict[str, Any]:
    """An execute_tool span's attributes, from the operation's two records."""
    settle, dispatch = op.settle, op.dispatch
    duration = settle.get("duration")
    seconds = None
    if isinstance(duration, (int, float)) and not isinstance(duration, bool):
        try:
            seconds = float(duration)
        except OverflowError:  # an integer past a double's range: not a duration anyone measured
            pass
    artifact = settle.get("artifact")
    artifact = artifact if isinstance(artifact, dict) else {}
    return _clean({
        names.OPERATION_NAME: names.EXECUTE_TOOL,
        names.TOOL_NAME: op.tool if isinstance(op.tool, str) else None,
        names.TOOL_CALL_ID: op.call_id if isinstance(op.call_id, str) else None,
        names.TOOL_TYPE: names.TOOL_TYPE_FUNCTION,
        names.CONVERSATION_ID: conversation,
        names.TOOL_OP_ID: op.op_id,
        names.TOOL_STATE: op.state,
        names.TOOL_IDEMPOTENCY: _text(dispatch, "idempotency"),
        names.TOOL_RUN_ID: _text(dispatch, "run-id"),
        names.TOOL_ROUND: _count(dispatch, "round"),
        names.TOOL_ARGUMENTS_DIGEST: _text(dispatch, "arguments-digest"),
        names.TOOL_DURATION: seconds,
        names.TOOL_REASON: _text(settle, "reason"),
        names.TOOL_RESULT_DIGEST: _text(settle, "result-digest"),
        names.TOOL_ARTIFACT_FILE: _text(artifact, "file"),
        names.TOOL_ARTIFACT_BYTES: _count(artifact, "bytes"),
        names.GRANTS_ID: op.grants_id,
    })


def tool_error(op: Operation) -> Tuple[Optional[str], str]:
    """(error.type, status message) of an operation: ``(None, "")`` when it completed."""
    if op.state == "completed":
        return None, ""
    if op.state == "failed":
        return names.ERROR_FAILED, _text(op.settle, "error", "reason") or ""
    if op.state == "outcome-unknown":
        return names.ERROR_INTERRUPTED, _text(op.settle, "reason") or "settled outcome-unknown"
    if op.state == "result-recorded":
        return names.ERROR_INTERRUPTED, "never settled; its result was recorded, so it ran"
    return names.ERROR_INTERRUPTED, "never settled; no result recorded: it may or may not have run"


# -- the trace ------------------------------------------------------------------------------------

@dataclass
class Trace:
    """One transcript as one trace: the root span first, then the chat and execute_tool
    spans in file order."""

    trace_id: bytes
    resource: Dict[str, Any]
    spans: List[Span]
    problems: List[str] = field(default_factory=list)  # why a load would refuse the file
    unfinished_bytes: int = 0  # a torn last line, left out
    masked: int = 0  # secrets masked before it was made (``otlp.trace``; 0 when not redacted)

    def requests(self, batch: int = BATCH) -> Iterator[Dict[str, Any]]:
        """``ExportTraceServiceRequest``s of at most `batch` spans each, as JSON-ready dicts."""
        for start in range(0, len(self.spans), batch):
            yield request(self.trace_id, self.resource, __version__, self.spans[start: start + batch])

    def lines(self, batch: int = BATCH) -> Iterator[str]:
        """The OTLP/JSON file: one request per line, each ended by ``\\n``."""
        for r in self.requests(batch):
            yield dump_line(r) + "\n"


@dataclass
class _Chat:
    event: Event  # the assistant message
    index: int  # its position in the file
    start: int
    end: int
    request_model: Optional[str]
    inputs: List[Event]  # with content: the messages since the previous assistant message


def from_envelopes(envelopes: Iterable[Event], *, content: bool = False, warnings: Iterable[str] = (),
                   unfinished_bytes: int = 0) -> Trace:
    """The trace of a transcript's envelopes in file order (the first a ``session-meta``).
    `warnings` (what peek skipped) go on the root span with what the fold could not apply."""
    reading = _Reading(content)
    for index, event in enumerate(envelopes):
        reading.feed(index, event)
    return reading.trace(list(warnings), unfinished_bytes)


class _Reading:
    """One pass over the envelopes (the fold by ``History``, each record's time, the chats
    and the root's events), then the spans.

    Content, each message once: a chat span carries the messages that arrived since the
    previous assistant message (the conventions' ``input.messages`` would repeat the whole
    conversation on every chat span, which makes a trace grow with the square of the
    conversation) and its own assistant message as output; a tool message that answers an
    operation is that execute_tool span's result instead; messages that no assistant
    message followed are the root span's input."""

    def __init__(self, content: bool) -> None:
        self.content = content
        self.history = History()
        self.meta_event: Optional[Event] = None
        self.times: Dict[str, int] = {}  # envelope id -> time, for the records a tool span reads
        self.chats: List[_Chat] = []
        self.root_events: List[Tuple[Event, int]] = []
        self.inputs: List[Event] = []  # with content: messages since the last assistant message
        self.last: Optional[int] = None  # the time of the previous record of the run
        self.low: Optional[int] = None  # the earliest time recorded
        self.high: Optional[int] = None  # the latest, but for the meta's (an import's is its own time)
        self.request_model: Optional[str] = None
        # Set by trace(), once the whole file is read:
        self.session = ""
        self.conversation = ""
        self.provider: Optional[str] = None
        self.root_id = b""
        self.answered: Dict[str, Any] = {}  # with content: tool message id -> its payload

    def feed(self, index: int, event: Event) -> None:
        refused = len(self.history.problems)
        self.history.feed(event)
        if len(self.history.problems) > refused:
            return  # a record load would refuse: left out, and listed on the root span
        if index == 0:
            if event.type != "session-meta":
                raise ValueError(f"the first envelope is a {event.type!r}, not a session-meta: not a transcript")
            self.meta_event = event
            self.request_model = _text(self.history.meta, "model")
        if event.type == "import-checkpoint":
            return  # the import's own time, not the run's
        t = nanos(event.ts)
        t = t if t is not None else (self.last if self.last is not None else 0)  # unknown: the time before
        self.low = t if self.low is None else min(self.low, t)
        if index > 0:
            self.high = t if self.high is None else max(self.high, t)
        kind, payload = event.type, event.payload
        if kind == "message":
            role = payload.get("role")
            if role == "assistant":
                start = self.last if self.last is not None else t
                self.chats.append(_Chat(event, index, min(start, t), t, self.request_model, self.inputs))
                self.inputs = []
            else:
                if self.content:  # kept only to be written: without content, no message stays in memory
                    self.inputs.append(event)
                if role == "tool":
                    self.times[event.id] = t
        elif kind in ("tool-dispatched", "tool-settled"):
            self.times[event.id] = t
        elif kind in ("compaction", "elision", "rewind", "grants"):
            self.root_events.append((event, t))
        elif kind == "run-context":
            self.request_model = _model_fact(payload) or self.request_model
        self.last = t

    def trace(self, warnings: List[str], unfinished_bytes: int) -> Trace:
        if self.meta_event is None:
            raise ValueError("no session-meta envelope: not a transcript")
        self.session = self.meta_event.id
        self.low = self.low if self.low is not None else 0
        self.high = self.high if self.high is not None else self.low
        meta = self.history.meta
        self.conversation = conversation_id(meta, self.session)
        self.provider = _text(meta, "provider", "model-provider")
        self.root_id = span_id(self.session, names.INVOKE_AGENT, self.session)
        if self.content:  # each tool message that answers an operation, for that span's result
            by_id = {e.id: e for c in self.chats for e in c.inputs}
            by_id.update((e.id, e) for e in self.inputs)
            self.answered = {op.answered_by: by_id[op.answered_by].payload
                             for op in self.history.operations.values() if op.answered_by in by_id}
        problems = warnings + [f"{p.type} {p.id}: {p.reason}" for p in self.history.problems]
        root = self._root(meta, problems, unfinished_bytes)
        counted, _ = count_lines([(Usage.from_json(c.event.payload.get(TOKEN_USAGE)), True) for c in self.chats])
        children = [(c.index, self._chat(c, flag)) for c, flag in zip(self.chats, counted)]
        children += [(op.index, self._tool(op)) for op in self.history.operations.values()]
        children.sort(key=lambda pair: pair[0])
        agent = root.attributes.get(names.AGENT_NAME)
        resource = {names.SERVICE_NAME: agent if isinstance(agent, str) else names.DEFAULT_SERVICE_NAME}
        return Trace(trace_id(self.session), resource, [root] + [span for _, span in children], problems,
                     unfinished_bytes)

    def _messages(self, events: List[Event]) -> Optional[str]:
        """With content: `events` as the conventions' messages (JSON text), tool results left to their spans."""
        if not self.content:
            return None
        messages = [parts.message(e.payload) for e in events if e.id not in self.answered]
        return dumps(messages) if messages else None

    def _root(self, meta: Mapping[str, Any], problems: List[str], unfinished_bytes: int) -> Span:
        attrs = agent_attributes(meta, self.session)
        attrs.update(_clean({names.TRANSCRIPT_PROBLEMS: problems,
                             names.TRANSCRIPT_UNFINISHED_BYTES: unfinished_bytes or None,
                             names.INPUT_MESSAGES: self._messages(self.inputs)}))
        removed = Counter(r.by for r in self.history.removed.values())
        events = [_record_event(e, t, removed, self.content) for e, t in self.root_events]
        assert self.low is not None and self.high is not None
        return Span(self.root_id, None, _named(names.INVOKE_AGENT, attrs.get(names.AGENT_NAME)), names.KIND_INTERNAL,
                    self.low, self.high, attrs, events)

    def _chat(self, chat: _Chat, counted: Optional[bool]) -> Span:
        extras = message_extras(chat.event.payload)
        attrs = chat_attributes(extras, chat.request_model, self.provider, self.conversation, chat.event.id, counted)
        if self.content:
            output = parts.output_message(chat.event.payload, _text(extras, "finish-reason", "stop-reason"))
            attrs.update(_clean({names.INPUT_MESSAGES: self._messages(chat.inputs),
                                 names.OUTPUT_MESSAGES: dumps([output])}))
        model = attrs.get(names.REQUEST_MODEL) or attrs.get(names.RESPONSE_MODEL)
        return Span(span_id(self.session, names.CHAT, chat.event.id), self.root_id, _named(names.CHAT, model),
                    names.KIND_CLIENT, chat.start, chat.end, attrs)

    def _tool(self, op: Operation) -> Span:
        start = self.times[op.op_id]
        # Never settled: open as far as the transcript knows, so it ends with the run.
        end = self.times[op.settled_id] if op.settled_id is not None else self.high
        assert end is not None
        attrs = tool_attributes(op, self.conversation)
        error_type, message = tool_error(op)
        if error_type is not None:
            attrs[names.ERROR_TYPE] = error_type
        events = []
        if op.answered_by is not None:
            events.append(SpanEvent(names.EVENT_TOOL_RESULT, self.times[op.answered_by],
                                    {names.ENVELOPE_ID: op.answered_by}))
        if self.content:
            result = self.answered.get(op.answered_by or "", {}).get("content")
            attrs.update(_clean({names.TOOL_CALL_ARGUMENTS: _as_text(op.arguments),
                                 names.TOOL_CALL_RESULT: _as_text(result)}))
        return Span(span_id(self.session, names.EXECUTE_TOOL, op.op_id), self.root_id,
                    _named(names.EXECUTE_TOOL, attrs.get(names.TOOL_NAME)), names.KIND_INTERNAL, start,
                    max(end, start), attrs, events, None if error_type is None else message)


def _named(operation: str, what: Any) -> str:
    return f"{operation} {what}" if isinstance(what, str) and what else operation


def _as_text(value: Any) -> Optional[str]:
    """A content attribute: text as it is, any other JSON value as JSON text."""
    if value is None or isinstance(value, str):
        return value
    return dumps(value)


def _model_fact(payload: Mapping[str, Any]) -> Optional[str]:
    """The ``model`` fact of a run-context record (Codex's turn context records one)."""
    facts = payload.get("facts")
    for fact in facts if isinstance(facts, list) else ():
        if isinstance(fact, list) and len(fact) == 2 and fact[0] == "model" and isinstance(fact[1], str) and fact[1]:
            return fact[1]
    return None


def _record_event(event: Event, t: int, removed: Mapping[str, int], content: bool) -> SpanEvent:
    """A compaction, elision, rewind or grants record as an event of the root span."""
    p = event.payload
    attrs: Dict[str, Any] = {names.ENVELOPE_ID: event.id}
    if event.type == "compaction":
        name = names.EVENT_COMPACTION
        attrs.update({
            names.COMPACTION_REPLACES_THROUGH_ID: p.get("replaces-through-id"),
            names.COMPACTION_TOKENS_BEFORE: _count(p, "tokens-before"),
            names.COMPACTION_TOKENS_AFTER: _count(p, "tokens-after"),
            names.COMPACTION_FALLBACK: p.get("fallback") if isinstance(p.get("fallback"), bool) else None,
            names.REMOVED_MESSAGES: removed.get(event.id, 0),
            names.COMPACTION_SUMMARY: _text(p, "summary") if content else None,
        })
    elif event.type == "elision":
        name = names.EVENT_ELISION
        attrs[names.ELISION_IDS] = [item["id"] for item in p["items"]]
    elif event.type == "rewind":
        name = names.EVENT_REWIND
        attrs.update({names.REWIND_TO_ID: p.get("to-id"), names.REMOVED_MESSAGES: removed.get(event.id, 0)})
    else:
        name = names.EVENT_GRANTS
        attrs[names.GRANTS_SNAPSHOT] = dumps(p.get("grants"))
    return SpanEvent(name, t, _clean(attrs))
