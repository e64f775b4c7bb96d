"""``export --format openai``: the messages as a chat-completions ``messages`` array."""

from __future__ import annotations

import json
from typing import Any, Dict, List

from .. import Message
from ..visible import json_text


def openai_message(m: Message) -> Dict[str, Any]:
    """One message in the shape the chat-completions API accepts (our own keys left out)."""
    d: Dict[str, Any] = {"role": m.role}
    if m.tool_calls:
        calls = []
        for call in m.tool_calls:
            call = dict(call) if isinstance(call, dict) else call
            fn = call.get("function") if isinstance(call, dict) else None
            if isinstance(fn, dict) and not isinstance(fn.get("arguments"), str):
                # The API wants arguments as a JSON string.
                call["function"] = dict(fn, arguments=json.dumps(fn.get("arguments"), ensure_ascii=False))
            calls.append(call)
        d["content"] = m.content
        d["tool_calls"] = calls
    else:
        d["content"] = m.content if m.content is not None else ""
    if m.tool_call_id is not None:
        d["tool_call_id"] = m.tool_call_id
    if m.name is not None:
        d["name"] = m.name
    return d


def render(messages: List[Message]) -> str:
    # json_text: control, bidi and invisible characters as \\u escapes (the same JSON values).
    return json_text([openai_message(m) for m in messages], indent=2) + "\n"
