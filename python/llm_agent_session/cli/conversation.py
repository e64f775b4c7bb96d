"""What the viewers need beyond ``Session.messages``: which message is a compaction summary,
which content is an elision stub, which extras a message line carried, which tool result
belongs to an operation that failed; and one-line summaries of envelopes (for ``tail``
and ``show --raw``).

Times are the envelopes' own ``ts`` (for an imported record, the source's time), never an
extra. A token count a compaction does not record is shown as unknown (``?``), never 0.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any, Callable, Dict, Iterable, List, Optional, Sequence, Tuple

from .. import Event, Message
from ..history import Removal
from ..messages import message_extras
from ..visible import json_text
from .output import count, human_seconds, shorten


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
    removed: Optional[Removal] = None  # the compaction or rewind that took it out of the conversation
    outcome: Optional[str] = None  # a tool result's: how the operation it answers settled
    # Set where the content shown is the original an elision replaced (the whole history):
    # the stub the model is sent instead.
    stub: Any = None
    shows_original: bool = False
    line: Optional[int] = None  # set in the whole history: its line in the file (from 1)

    @property
    def place(self) -> str:
        """``#12``, its index in the live conversation, or ``line 12`` in the whole history."""
        return f"#{self.index:,}" if self.line is None else f"line {self.line:,}"

    @property
    def failed(self) -> bool:
        """A tool result whose operation settled ``failed``."""
        return self.outcome == "failed"


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
        entry.removed = Removal(rewind_id, "rewind", group.ts)
        group.entries.append(entry)
    return list(groups.values())


def annotate(events: Sequence[Event], ids: List[str], messages: List[Message], start: int, stop: int) -> List[Entry]:
    """Entries for ``messages[start:stop]``.

    Walks the events backwards and stops once every shown id's own line has been met:
    an elision always comes after the line it names, so nothing affecting the shown
    messages lies before that, and ``--last N`` costs what the tail of the file costs.

    A tool result's ``outcome`` comes from its operation's settle, which is written after
    the result (dispatch, result, settle). Only settles that did not complete matter, so
    the walk notes those, the tool results met while one is open, and goes on (past the
    shown lines if need be) until each one's dispatch is met: the result it settles is
    the first tool message with the dispatch's call id after the dispatch.
    """
    entries = [Entry(i, ids[i], messages[i]) for i in range(start, stop)]
    wanted = {e.id: e for e in entries}
    found = 0
    unsettled: Dict[str, str] = {}  # op id -> outcome other than completed, dispatch not met yet
    results: Dict[str, List[str]] = {}  # call id -> tool message ids met while one was open, latest first
    for i in range(len(events) - 1, -1, -1):
        if found == len(wanted) and not unsettled:
            break
        event = events[i]
        type_ = event.type
        if type_ == "elision":
            for item in event.payload.get("items") or ():
                target = wanted.get(str(item.get("id"))) if isinstance(item, dict) else None
                if target is not None and target.elided_by is None:
                    target.elided_by = event.id  # the last elision naming it is the one in effect
        elif type_ == "tool-settled":
            p = event.payload
            if p.get("outcome") != "completed" and isinstance(p.get("op-id"), str):
                unsettled[p["op-id"]] = str(p.get("outcome"))
        elif type_ == "tool-dispatched" and event.id in unsettled:
            outcome = unsettled.pop(event.id)
            answers = results.get(str(event.payload.get("call-id")))
            target = wanted.get(answers[-1]) if answers else None
            if target is not None and target.outcome is None:
                target.outcome = outcome
        elif type_ == "message" and unsettled:
            p = event.payload
            if p.get("role") == "tool" and isinstance(p.get("tool_call_id"), str):
                results.setdefault(p["tool_call_id"], []).append(event.id)
        entry = wanted.get(event.id)
        if entry is not None and not entry.ts:
            found += 1
            entry.ts = event.ts
            if type_ == "compaction":
                entry.kind = "summary"
                entry.compaction = dict(event.payload)
            elif type_ == "message":
                entry.extras = message_extras(event.payload)
    return entries


def tokens(value: Any) -> str:
    """A token count: ``12,345``, or ``?`` where the record does not state it (never 0)."""
    return count(value) if isinstance(value, int) and not isinstance(value, bool) else "?"


def compaction_tokens(payload: Dict[str, Any]) -> str:
    """``5,200 → 310 tokens``; ``167,094 → ? tokens`` when tokens-after is not recorded."""
    return f"{tokens(payload.get('tokens-before'))} → {tokens(payload.get('tokens-after'))} tokens"


def time_span(times: Iterable[Optional[str]], code: Callable[[str], str] = str) -> str:
    """``from <earliest> to <latest>`` of envelope times; "" if there are none. `code`
    marks up a value taken from the file (Markdown: a code span)."""
    known = [t for t in times if t]
    if not known:
        return ""
    first, last = min(known), max(known)
    return f"from {code(first)} to {code(last)}" if first != last else f"at {code(first)}"


def removal_note(removed: Removal, code: Callable[[str], str] = str) -> str:
    """What took a message out of the conversation, for the viewers' marks (`code`: as in
    :func:`time_span`)."""
    if removed.kind == "compaction":
        return (f"Compacted by {code(removed.by)} at {code(removed.ts)}: folded into that compaction's summary, "
                "no longer sent to the model; the line stays in the transcript file")
    return (f"Rewound by {code(removed.by)} at {code(removed.ts)}: no longer in the conversation; "
            "the line stays in the transcript file")


def operation_seconds(dispatched_at: str, settled_at: str, settle: Dict[str, Any]) -> Optional[float]:
    """How long a tool operation took: its settle's ``duration`` where the writer recorded
    one, else the time from its dispatch to its settle (their envelopes' ``ts``); None when
    neither says (a time that does not parse, a settle dated before its dispatch: no order
    between lines is promised)."""
    duration = settle.get("duration")
    if isinstance(duration, (int, float)) and not isinstance(duration, bool):
        return float(duration)
    try:
        seconds = (_utc(settled_at) - _utc(dispatched_at)).total_seconds()
    except (TypeError, ValueError):
        return None
    return seconds if seconds >= 0 else None


def _utc(ts: str) -> datetime:
    # The line format's "...Z"; Python before 3.11 reads only "+00:00".
    return datetime.fromisoformat(ts[:-1] + "+00:00" if ts.endswith("Z") else ts)


def outcome_mark(outcome: Optional[str]) -> Optional[str]:
    """How a tool result is marked by its operation's outcome (None: not marked)."""
    return {"failed": "failed", "outcome-unknown": "outcome unknown"}.get(outcome or "")


def extras_text(extras: Dict[str, Any], limit: int, hint: str = "") -> str:
    """Each extra on a line of its own, ``key = <its JSON>``, shortened to `limit` chars
    as a tool result is (`hint` follows the count of chars cut): a long extra (the
    source's copy of a tool result, thinking, ...) never repeats in full what was shortened."""
    lines = []
    for key, value in sorted(extras.items()):
        text, cut = shorten(json_text(value, sort_keys=True), limit)
        lines.append(f"{key} = {text}" + (f" … {cut:,} more chars{hint}" if cut else ""))
    return "\n".join(lines)


def sticky_marks(message: Message) -> List[str]:
    """What makes `message` sticky (docs/FORMAT.md, messages), as the viewers label it: ``sysprompt``,
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
        return f"through {p.get('replaces-through-id')}: {compaction_tokens(p)}{fb}: {cut(str(p.get('summary', '')))}"
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
    """The envelope in the line format's serialisation (docs/FORMAT.md), without the newline."""
    text = json.dumps(
        {"id": e.id, "payload": e.payload, "ts": e.ts, "type": e.type, "v": e.v},
        sort_keys=True,
        separators=(",", ":"),
        ensure_ascii=False,
    )
    return text.replace("\u2028", "\\u2028").replace("\u2029", "\\u2029")
