"""What the viewers need beyond ``Session.messages``: which message is a compaction summary,
which content is an elision stub, which extras a message line carried; and, from a peek
(no replay), pending tool operations and how many messages the model would be sent.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from typing import Any, Dict, Iterator, List, Optional, Sequence, Tuple

from .. import Event, Message

MESSAGE_KEYS = ("role", "content", "tool_calls", "tool_call_id", "name", "sticky", "sysprompt", "depth")


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
                entry.extras = {k: v for k, v in event.payload.items() if k not in MESSAGE_KEYS}
    return entries


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


# --------------------------------------------------------------------------- from a peek


class Survey:
    """One pass over a peek's envelopes (no replay): counts by type, pending tool operations
    with their state (SPEC 2.6), and how many messages replay would give (compactions folded).

    Message envelopes are read through the peek's ``messages`` (roles and flags, the
    content never built), so surveying a big transcript costs about what iterating its
    envelopes costs; the payloads read are those of the small envelope types.
    """

    def __init__(self, envelopes: Sequence[Event], messages: Sequence[Message]) -> None:
        # `messages` holds the message envelopes with a string role, in order; when some
        # message envelope has none (peek warned of it), each message payload is read.
        if not self._survey(envelopes, iter(messages), len(messages)):
            self._survey(envelopes, None, 0)

    def _survey(self, envelopes: Sequence[Event], messages: Optional[Iterator[Message]], expected: int) -> bool:
        self.counts: Dict[str, int] = {}
        self.replay_problem: Optional[str] = None
        open_ops: Dict[str, Tuple[int, Event]] = {}  # op id -> (position, its envelope)
        last_result: Dict[str, int] = {}  # tool_call_id -> position of the last tool message
        live: List[Tuple[str, bool]] = []
        where: Dict[str, int] = {}
        counts = self.counts
        seen_messages = 0
        role: Any
        for n, e in enumerate(envelopes):
            type_ = e.type
            counts[type_] = counts.get(type_, 0) + 1
            if type_ == "message":
                if messages is not None:
                    m = next(messages, None)
                    if m is None:
                        return False
                    role, sticky, call_id = m.role, m.is_sticky, m.tool_call_id
                else:
                    p = e.payload
                    role = p.get("role")
                    if not isinstance(role, str):
                        continue
                    sticky = p.get("sticky") is True or p.get("sysprompt") is True or p.get("depth") is not None
                    call_id = p.get("tool_call_id")
                seen_messages += 1
                where[e.id] = len(live)
                live.append((e.id, sticky))
                if role == "tool":
                    last_result[str(call_id)] = n
            elif type_ == "tool-dispatched":
                open_ops[e.id] = (n, e)  # its payload is read only if it stays open
            elif type_ == "tool-settled":
                open_ops.pop(e.payload.get("op-id"), None)  # type: ignore[arg-type]
            elif type_ == "compaction" and self.replay_problem is None:
                through = e.payload.get("replaces-through-id")
                i = where.get(through) if isinstance(through, str) else None
                if i is None:
                    self.replay_problem = (
                        f"compaction {e.id} names {through!r}, which the live conversation does not hold"
                    )
                    continue
                live = [x for x in live[: i + 1] if x[1]] + [(e.id, False)] + live[i + 1 :]
                where = {id_: k for k, (id_, _) in enumerate(live)}
        if messages is not None and seen_messages != expected:
            return False
        self.pending = []
        for at, e in open_ops.values():
            p = e.payload
            # SPEC 2.6: a tool message with the call id after the dispatch: only the settle is missing.
            recorded = last_result.get(str(p.get("call-id")), -1) > at
            self.pending.append({
                "op-id": e.id,
                "call-id": p.get("call-id"),
                "tool": p.get("tool"),
                "arguments": p.get("arguments"),
                "idempotency": p.get("idempotency"),
                "dispatched-at": e.ts,
                "state": "result-recorded" if recorded else "dispatched",
            })
        self.live_messages: Optional[int] = None if self.replay_problem else len(live)
        return True


def envelope_summary(e: Event, width: int = 100) -> str:
    """One line saying what an envelope is about (for tail and show --raw)."""
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
        if "duration" in p:
            bits.append(f"{p['duration']}s")
        if p.get("reason"):
            bits.append(cut(str(p["reason"])))
        return " ".join(bits)
    if e.type == "compaction":
        fb = ", fallback" if p.get("fallback") else ""
        return (
            f"through {p.get('replaces-through-id')}: {p.get('tokens-before')} → {p.get('tokens-after')} tokens{fb}: "
            f"{cut(str(p.get('summary', '')))}"
        )
    if e.type == "elision":
        items = p.get("items") or []
        return f"{len(items)} item(s): " + ", ".join(str(i.get("id")) for i in items[:5] if isinstance(i, dict))
    if e.type == "grants":
        return cut(json.dumps(p.get("grants"), ensure_ascii=False, sort_keys=True))
    if e.type == "run-context":
        names = [str(s.get("name")) for s in p.get("sections") or () if isinstance(s, dict)]
        return f"sections {', '.join(names)}; {len(p.get('facts') or [])} fact(s)"
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
