"""Messages in the GenAI conventions' message shape (``{"role", "parts": [...]}``, the input
and output messages JSON schemas of the pinned release), as pure functions.

Transcript messages are in the OpenAI chat shape: content is a string, a list of parts
(``text``, ``image_url``, anything else) or null; ``tool_calls`` carry a function name and
arguments as JSON text; a ``tool`` message answers one call. Each becomes the part the
conventions name for it: ``text``, ``uri`` or ``blob`` (an image), ``tool_call``,
``tool_call_response``; a part of a kind they have no name for is kept whole as a generic
part under its own ``type``.
"""

from __future__ import annotations

import json
from typing import Any, Dict, List, Mapping, Optional

from ..canonical import validate

# The output schema's finish reasons, from what providers record.
_FINISH_REASONS = {
    "tool_calls": "tool_call", "tool_use": "tool_call", "function_call": "tool_call",
    "end_turn": "stop", "stop_sequence": "stop", "max_tokens": "length",
}


def message(payload: Mapping[str, Any]) -> Dict[str, Any]:
    """A transcript message (a ``message`` payload) as a conventions ``ChatMessage``."""
    role = payload.get("role")
    parts: List[Any]
    if role == "tool":
        parts = [{"type": "tool_call_response", "id": _str_or_none(payload.get("tool_call_id")),
                  "response": payload.get("content")}]
    else:
        parts = content_parts(payload.get("content"))
    calls = payload.get("tool_calls")
    if isinstance(calls, list):
        parts.extend(tool_call_part(call) for call in calls)
    out: Dict[str, Any] = {"role": role, "parts": parts}
    if isinstance(payload.get("name"), str):
        out["name"] = payload["name"]
    return out


def output_message(payload: Mapping[str, Any], finish_reason: Optional[str]) -> Dict[str, Any]:
    """An assistant message as a conventions ``OutputMessage``: ``finish_reason`` is the
    recorded one (mapped onto the schema's names where it has one); when none is recorded,
    ``tool_call`` if the message calls tools, else left out rather than guessed."""
    out = message(payload)
    if finish_reason is not None:
        out["finish_reason"] = _FINISH_REASONS.get(finish_reason, finish_reason)
    elif isinstance(payload.get("tool_calls"), list) and payload["tool_calls"]:
        out["finish_reason"] = "tool_call"
    return out


def content_parts(content: Any) -> List[Any]:
    if content is None:
        return []
    if isinstance(content, str):
        return [{"type": "text", "content": content}]
    if isinstance(content, list):
        return [_part(p) for p in content]
    return [{"type": "unknown", "content": content}]


def _part(part: Any) -> Any:
    if not isinstance(part, dict) or not isinstance(part.get("type"), str):
        return {"type": "unknown", "content": part}
    kind = part["type"]
    if kind == "text" and isinstance(part.get("text"), str):
        return {"type": "text", "content": part["text"]}
    if kind == "image_url":
        image = part.get("image_url")
        url = image.get("url") if isinstance(image, dict) else image
        if isinstance(url, str):
            return _image(url)
    return dict(part)  # a generic part: every field kept


def _image(url: str) -> Dict[str, Any]:
    # A data: URL is inline data (the schema's blob part); anything else a reference.
    head, sep, data = url.partition(",")
    if url.startswith("data:") and sep and head.endswith(";base64"):
        mime = head[len("data:"): -len(";base64")]
        blob: Dict[str, Any] = {"type": "blob", "modality": "image", "content": data}
        if mime:
            blob["mime_type"] = mime
        return blob
    return {"type": "uri", "modality": "image", "uri": url}


def tool_call_part(call: Any) -> Any:
    if not isinstance(call, dict):
        return {"type": "unknown", "content": call}
    fn = call.get("function")
    fn = fn if isinstance(fn, dict) else {}
    name = fn.get("name")
    return {"type": "tool_call", "id": _str_or_none(call.get("id")), "name": name if isinstance(name, str) else "",
            "arguments": arguments(fn.get("arguments"))}


def arguments(value: Any) -> Any:
    """Tool arguments as a value: JSON text is parsed (the conventions want an object), any
    other text (or JSON the line format cannot carry: NaN, a lone surrogate) is kept as it is."""
    if isinstance(value, str):
        try:
            parsed = json.loads(value)
            validate(parsed)
        except (ValueError, TypeError, RecursionError):
            return value
        return parsed
    return value


def _str_or_none(value: Any) -> Optional[str]:
    return value if isinstance(value, str) else None
