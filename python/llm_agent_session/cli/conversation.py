"""What the viewers need beyond ``Session.messages``: which message is a compaction summary,
which content is an elision stub, which extras a message line carried; and one-line
summaries of envelopes (for ``tail`` and ``show --raw``).
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from typing import Any, Dict, List, Optional, Sequence, Tuple

from .. import Event, Message
from ..messages import message_extras
from .output import count, human_seconds



@dataclass
class Entry:
    """One message of the live conversation, with where it came from."""

    index: int
    id: str
    message: Message
    kind: str = "message"  # "message" or "summary" (a compaction's synthetic user message)
    ts: str = ""
    compaction: Dict[str, Any] = field(default_factory=dict)  # the compaction payload, for summaries
    elided_by: Optional[str] = None  # the elision envelope whose stub is the content now
    extras: Dict[str, Any] = field(default_factory=dict)  # e.g. finish-reason
    rewound_by: Optional[str] = None  # the rewind that cut it from the conversation (SPEC 10.1)


@dataclass
class RewoundGroup:
    """The messages one rewind cut from the conversation, as they were written."""

    rewind_id: str
    ts: str
    to_id: Optional[str]  # the live message the conversation went back to; None: to the start
    entries: List[Entry]


def rewound_groups(envelopes: Sequence[Event], rewound: Dict[str, str]) -> List[RewoundGroup]:
    """Group peek's ``survey["rewound"]`` (message id -> rewind id) by rewind, each message
    built from its own line. Only headers are read to find them, then the few lines named."""
    if not rewound:
        return []
    wanted = set(rewound) | set(rewound.values())
    at: Dict[str, int] = {}
    for i in range(len(envelopes)):
        id_ = envelopes[i].id
        if id_ in wanted:
            at[id_] = i
    groups: Dict[str, RewoundGroup] = {}
    for message_id, rewind_id in rewound.items():
        group = groups.get(rewind_id)
        if group is None:
            r = envelopes[at[rewind_id]]
            to = r.payload.get("to-id")
            group = groups[rewind_id] = RewoundGroup(rewind_id, r.ts, to if isinstance(to, str) else None, [])
        e = envelopes[at[message_id]]
        p = e.payload
        if e.type == "compaction":
            entry = Entry(at[message_id], e.id, Message("user", p.get("summary")), "summary", e.ts, dict(p))
        else:
            entry = Entry(at[message_id], e.id, Message.from_dict(p), ts=e.ts,
                          extras=message_extras(p))
        entry.rewound_by = rewind_id
        group.entries.append(entry)
    return list(groups.values())


def annotate(events: Sequence[Event], ids: List[str], messages: List[Message], start: int, stop: int) -> List[Entry]:
    """Entries for ``messages[start:stop]``.

    Walks the events backwards and stops once every shown id's own line has been met:
    an elision always comes after the line it names, so nothing affecting the shown
    messages lies before that, and ``--last N`` costs what the tail of the file costs.
    """
    entries = [Entry(i, ids[i], messages[i]) for i in range(start, stop)]
    wanted = {e.id: e for e in entries}
    found = 0
    for i in range(len(events) - 1, -1, -1):
        if found == len(wanted):
            break
        event = events[i]
        if event.type == "elision":
            for item in event.payload.get("items") or ():
                target = wanted.get(str(item.get("id"))) if isinstance(item, dict) else None
                if target is not None and target.elided_by is None:
                    target.elided_by = event.id  # the last elision naming it is the one in effect
        entry = wanted.get(event.id)
        if entry is not None and not entry.ts:
            found += 1
            entry.ts = event.ts
            if event.type == "compaction":
                entry.kind = "summary"
                entry.compaction = dict(event.payload)
            elif event.type == "message":
                entry.extras = message_extras(event.payload)
    return entries


def sticky_marks(message: Message) -> List[str]:
    """What makes `message` sticky (SPEC 2.2), as the viewers label it: ``sysprompt``,
    ``sticky``, ``depth N``."""
    marks = [k for k, on in (("sysprompt", message.sysprompt), ("sticky", message.sticky)) if on]
    if message.depth is not None:
        marks.append(f"depth {count(message.depth)}")
    return marks


def content_text(content: Any) -> str:
    """Message content as text: strings as they are, content parts by their text, else JSON."""
    if content is None:
        return ""
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        pieces = []
        for part in content:
            if isinstance(part, dict) and part.get("type") == "text" and isinstance(part.get("text"), str):
                pieces.append(part["text"])
            elif isinstance(part, dict) and part.get("type") == "image_url":
                url = part.get("image_url")
                url = url.get("url") if isinstance(url, dict) else url
                pieces.append(f"[image: {str(url)[:80]}]")
            else:
                pieces.append(json.dumps(part, ensure_ascii=False, sort_keys=True))
        return "\n".join(pieces)
    return json.dumps(content, ensure_ascii=False, sort_keys=True)


def tool_call_parts(call: Any) -> Tuple[str, str, str]:
    """(id, function name, arguments as text) of one OpenAI-shaped tool call."""
    if not isinstance(call, dict):
        return "", "?", json.dumps(call, ensure_ascii=False)
    fn: Dict[str, Any] = call["function"] if isinstance(call.get("function"), dict) else {}
    args = fn.get("arguments", "")
    if not isinstance(args, str):
        args = json.dumps(args, ensure_ascii=False, sort_keys=True)
    return str(call.get("id", "")), str(fn.get("name", call.get("type", "?"))), args


def pretty_arguments(args: str) -> str:
    """Tool-call arguments, as given, or pretty JSON when they are a JSON object."""
    try:
        value = json.loads(args)
    except ValueError:
        return args
    if isinstance(value, dict):
        return json.dumps(value, ensure_ascii=False, indent=2, sort_keys=True)
    return args


def envelope_summary(e: Event, width: int = 100) -> str:
    """One line saying what an envelope is about (for tail and show --raw)."""
    try:
        return _summary(e, width)
    except (TypeError, AttributeError, ValueError):  # a payload of an unexpected shape
        text = " ".join(json.dumps(e.payload, ensure_ascii=False, sort_keys=True).split())
        return text if len(text) <= width else text[: width - 1] + "…"


def _summary(e: Event, width: int) -> str:
    p = e.payload

    def cut(text: str) -> str:
        text = " ".join(text.split())
        return text if len(text) <= width else text[: width - 1] + "…"

    if e.type == "message":
        role = p.get("role", "?")
        text = content_text(p.get("content"))
        calls = [tool_call_parts(c)[1] for c in p.get("tool_calls") or ()]
        suffix = f" → {', '.join(calls)}" if calls else ""
        tid = f" [{p['tool_call_id']}]" if p.get("tool_call_id") else ""
        size = f" ({len(text):,} chars)" if len(text) > width else ""  # the full size of a shortened text
        return f"{role}{tid}: {cut(text)}{size}{suffix}"
    if e.type == "session-meta":
        return cut(json.dumps(p, ensure_ascii=False, sort_keys=True))
    if e.type == "tool-dispatched":
        args = p.get("arguments")
        return f"{p.get('tool')} [{p.get('call-id')}] {cut(json.dumps(args, ensure_ascii=False, sort_keys=True))}"
    if e.type == "tool-settled":
        bits = [str(p.get("outcome")), f"op {p.get('op-id')}"]
        if isinstance(p.get("duration"), (int, float)) and not isinstance(p.get("duration"), bool):
            bits.append(human_seconds(p["duration"]))
        if p.get("reason"):
            bits.append(cut(str(p["reason"])))
        return " ".join(bits)
    if e.type == "compaction":
        fb = ", fallback" if p.get("fallback") else ""
        return (
            f"through {p.get('replaces-through-id')}: {count(p.get('tokens-before'))} → {count(p.get('tokens-after'))} tokens{fb}: "
            f"{cut(str(p.get('summary', '')))}"
        )
    if e.type == "elision":
        items = p.get("items") or []
        return f"{len(items):,} item(s): " + ", ".join(str(i.get("id")) for i in items[:5] if isinstance(i, dict))
    if e.type == "grants":
        return cut(json.dumps(p.get("grants"), ensure_ascii=False, sort_keys=True))
    if e.type == "rewind":
        to = p.get("to-id")
        return "back to the start: no message is left in the conversation" if to is None else (
            f"back to {to}: the messages after it leave the conversation (they stay in the file)")
    if e.type == "run-context":
        names = [str(s.get("name")) for s in p.get("sections") or () if isinstance(s, dict)]
        return f"sections {', '.join(names)}; {len(p.get('facts') or []):,} fact(s)"
    return cut(json.dumps(p, ensure_ascii=False, sort_keys=True))


def canonical_line(e: Event) -> str:
    """The envelope in the line format's serialisation (SPEC 2), without the newline."""
    text = json.dumps(
        {"id": e.id, "payload": e.payload, "ts": e.ts, "type": e.type, "v": e.v},
        sort_keys=True,
        separators=(",", ":"),
        ensure_ascii=False,
    )
    return text.replace("\u2028", "\\u2028").replace("\u2029", "\\u2029")
