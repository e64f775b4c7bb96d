"""An ADK event, as the JSON of ADK's own model dump, made into transcript lines: the
chat-shaped messages that ``show``, ``view`` and ``stats`` read, the event itself kept
whole in the last line's extras. Independent of ADK: it reads the dump's keys only.

An event becomes, in order:

* one message for its text and calls (``assistant`` when the model wrote it, else
  ``user``): the text parts joined, other parts as a short bracketed note (``[image/png,
  12 bytes]``), thoughts left out, ``function_call`` parts as ``tool_calls``; an event
  without content (a state change, an escalation) is such a message with no content;
* one ``tool`` message per ``function_response`` part (``tool_call_id``: the call's id;
  content: the response as JSON).

Every message's ``name`` is the event's author. The last line carries the extras
``adk-event`` (the event) and ``adk-invocation`` (its invocation id), and
``adk-state`` (the session's state after it) when the event changed that state.
"""

from __future__ import annotations

from typing import Any, Dict, List, Optional, Tuple

from ..canonical import dumps, validate

EVENT_EXTRA = "adk-event"
INVOCATION_EXTRA = "adk-invocation"
STATE_EXTRA = "adk-state"
SESSION_META = "adk-session"

# Function calls that ADK answers from the client, not by running a tool: asking the user
# to confirm a call, for credentials, or for input. Never dispatched, never answered here.
CLIENT_SIDE_PREFIX = "adk_request_"

Record = Tuple[Dict[str, Any], Dict[str, Any]]


def parts_of(event: Dict[str, Any]) -> List[Dict[str, Any]]:
    content = event.get("content")
    parts = content.get("parts") if isinstance(content, dict) else None
    return [p for p in parts if isinstance(p, dict)] if isinstance(parts, list) else []


def function_calls(event: Dict[str, Any]) -> List[Dict[str, Any]]:
    """The event's ``function_call`` parts' values that have a string id."""
    calls = [p.get("function_call") for p in parts_of(event)]
    return [c for c in calls if isinstance(c, dict) and isinstance(c.get("id"), str)]


def function_responses(event: Dict[str, Any]) -> List[Dict[str, Any]]:
    """The event's ``function_response`` parts' values that have a string id."""
    responses = [p.get("function_response") for p in parts_of(event)]
    return [r for r in responses if isinstance(r, dict) and isinstance(r.get("id"), str)]


def is_client_side(call: Dict[str, Any]) -> bool:
    name = call.get("name")
    return isinstance(name, str) and name.startswith(CLIENT_SIDE_PREFIX)


def failure_of(response: Dict[str, Any]) -> Optional[str]:
    """The error a tool's response reports (ADK's convention: an ``error`` key), if any."""
    value = response.get("response")
    error = value.get("error") if isinstance(value, dict) else None
    if error is None or error == "" or error is False:
        return None
    return error if isinstance(error, str) else dumps(error)


def _note(part: Dict[str, Any]) -> Optional[str]:
    """A non-text part as a short note (None: nothing to show)."""
    blob = part.get("inline_data")
    if isinstance(blob, dict):
        data = blob.get("data")
        size = ""
        if isinstance(data, str):
            size = f", {len(data) * 3 // 4 - data[-2:].count('='):,} bytes"
        return f"[{blob.get('mime_type') or 'data'}{size}]"
    file = part.get("file_data")
    if isinstance(file, dict):
        return f"[file {file.get('file_uri') or ''}]".replace(" ]", "]")
    code = part.get("executable_code")
    text = code.get("code") if isinstance(code, dict) else None
    if isinstance(text, str):
        return text
    result = part.get("code_execution_result")
    if isinstance(result, dict):
        output = result.get("output")
        return output if isinstance(output, str) else None
    known = [k for k in part if k not in ("thought", "thought_signature", "text", "part_metadata")]
    return f"[{known[0]}]" if known else None


def project(event: Dict[str, Any], state: Optional[Dict[str, Any]] = None) -> List[Record]:
    """The (message, extras) of every line the event becomes (see the module's docstring).
    `state`: the session's state after the event, when the event changed it."""
    author = event.get("author") if isinstance(event.get("author"), str) else ""
    content = event.get("content")
    role = content.get("role") if isinstance(content, dict) else None
    if role not in ("user", "model"):
        role = "user" if author == "user" else "model"
    texts: List[str] = []
    calls: List[Dict[str, Any]] = []
    answers: List[Dict[str, Any]] = []
    for part in parts_of(event):
        call, response = part.get("function_call"), part.get("function_response")
        if isinstance(call, dict):
            arguments = call.get("args")
            calls.append({
                "id": call.get("id") if isinstance(call.get("id"), str) else "",
                "type": "function",
                "function": {"name": str(call.get("name") or ""), "arguments": dumps(arguments if arguments is not None else {})},
            })
        elif isinstance(response, dict):
            answer: Dict[str, Any] = {"role": "tool", "content": dumps(response.get("response"))}
            if isinstance(response.get("id"), str):
                answer["tool_call_id"] = response["id"]
            answers.append(answer)
        elif isinstance(part.get("text"), str):
            if not part.get("thought"):
                texts.append(part["text"])
        else:
            note = _note(part)
            if note is not None:
                texts.append(note)
    error = event.get("error_message") or event.get("error_code")
    if error:
        texts.append(f"[error {event.get('error_code') or ''}: {event.get('error_message') or ''}]".replace(" :", ":"))
    messages: List[Dict[str, Any]] = []
    if texts or calls or not answers:
        message: Dict[str, Any] = {"role": "assistant" if role == "model" else "user", "content": "\n".join(texts) if texts else None}
        if calls:
            message["tool_calls"] = calls
        messages.append(message)
    messages.extend(answers)
    for message in messages:
        if author:
            message["name"] = author
    extras: Dict[str, Any] = {EVENT_EXTRA: event}
    if isinstance(event.get("invocation_id"), str):
        extras[INVOCATION_EXTRA] = event["invocation_id"]
    if state is not None:
        extras[STATE_EXTRA] = state
    validate(extras, "ADK event")
    return [(m, {}) for m in messages[:-1]] + [(messages[-1], extras)]


def session_state_of_meta(meta: Dict[str, Any]) -> Dict[str, Any]:
    """The session-scoped part of the state a session was created with."""
    info = meta.get(SESSION_META)
    state = info.get("state") if isinstance(info, dict) else None
    if not isinstance(state, dict):
        return {}
    return {k: v for k, v in state.items() if not k.startswith(("app:", "user:", "temp:"))}
