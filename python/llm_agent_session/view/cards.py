"""A tool call as one card: which envelope holds it, and what it says.

A call is up to four envelopes: the assistant message that makes it (its ``tool_calls``),
the ``tool-dispatched`` operation, the ``tool`` message with its result and the
``tool-settled`` outcome. The page shows them as one card at the first of them: the
assistant message where it names the call (the nearest message before the dispatch,
past the other calls' dispatches, results and settles), else the dispatch itself. The
card says the tool, its arguments, the outcome, how long it took and the result (its
start: the whole is the result's own envelope). The other envelopes stay in the list,
each a line that says it is part of the card above: positions, deep links, jumps and
search hits land on them as before, and they unfold to show themselves.

What History knows (without payloads) places them; the values are read from the lines.
"""

from __future__ import annotations

import json
from datetime import datetime, timezone
from typing import Any, Callable, Dict, List, Optional, Tuple

from ..history import History, Operation
from ..messages import Event
from ..visible import json_text, visible

#: Envelopes looked back over, from a dispatch, for the message that made its call.
LOOKBACK = 64
#: Characters of a result shown on its card (the whole: the result's own envelope).
RESULT_CHARS = 4000
#: Envelope types between a call's message and its dispatch that do not part them.
_BETWEEN = frozenset({"tool-dispatched", "tool-settled", "grants", "run-context", "import-checkpoint", "elision"})
#: Where a card's places are kept at most (a transcript's; cleared past it).
_KEPT = 100_000


class Cards:
    """The cards of one open transcript: `history` (None: not read yet, no cards),
    `envelope_at` the envelope at a position, `homes` a cache kept with the transcript."""

    def __init__(self, history: Optional[History], envelope_at: Callable[[int], Event],
                 homes: Dict[str, int]) -> None:
        self.history = history
        self.envelope_at = envelope_at
        self.homes = homes

    def operation(self, op_id: Any) -> Optional[Operation]:
        if self.history is None or not isinstance(op_id, str):
            return None
        return self.history.operations.get(op_id)

    def home(self, op: Operation) -> int:
        """The position of the envelope that holds `op`'s card."""
        found = self.homes.get(op.op_id)
        if found is None:
            found = self._look_back(op)
            if len(self.homes) >= _KEPT:
                self.homes.clear()
            self.homes[op.op_id] = found
        return found

    def _look_back(self, op: Operation) -> int:
        j = op.index - 1
        while j >= 0 and op.index - j <= LOOKBACK:
            event = self.envelope_at(j)
            if event.type in _BETWEEN:
                j -= 1
                continue
            payload = event.payload if event.type == "message" and isinstance(event.payload, dict) else None
            if payload is None:
                break
            if payload.get("role") == "tool":
                j -= 1
                continue
            if payload.get("role") == "assistant" and op.call_id in _call_ids(payload.get("tool_calls")):
                return j
            break
        return op.index

    def of_message(self, index: int, call_id: Any) -> List[Operation]:
        """The operations whose card is the call `call_id` of the message at `index`."""
        if self.history is None or not isinstance(call_id, str):
            return []
        found = []
        for op_id in self.history.calls.get(call_id, ()):
            op = self.operation(op_id)
            if op is not None and op.index > index and self.home(op) == index:
                found.append(op)
        return found

    def home_of_part(self, event: Event, payload: Dict[str, Any]) -> Optional[Dict[str, Any]]:
        """For a dispatch, result or settle whose card is another envelope: ``{"of": that
        envelope's id, "i": its position, "what": which part this is}``; else None."""
        if self.history is None:
            return None
        if event.type == "tool-dispatched":
            op, what = self.operation(event.id), "dispatch"
        elif event.type == "tool-settled":
            op, what = self.operation(payload.get("op-id")), "settle"
            if op is not None and op.settled_id != event.id:
                op = None
        elif event.type == "message" and payload.get("role") == "tool":
            op, what = self.operation(self.history.answers.get(event.id)), "result"
        else:
            return None
        if op is None:
            return None
        home = self.home(op)
        if what == "dispatch" and home == op.index:
            return None  # the dispatch is the card
        return {"of": visible(self.envelope_at(home).id), "i": home, "what": what}

    def facts(self, op: Operation) -> Dict[str, Any]:
        """What a card says beyond its call: the duration, the result's start, the settle's
        error or reason, and the envelopes it is made of (for *raw*)."""
        out: Dict[str, Any] = {"op": visible(op.op_id), "duration": None, "result": None, "note": None,
                               "parts": [["dispatch", visible(op.op_id), op.index]]}
        settle: Dict[str, Any] = {}
        settled_at = self._position(op.settled_id)
        if settled_at is not None:
            payload = self.envelope_at(settled_at).payload
            settle = payload if isinstance(payload, dict) else {}
        reported = None
        answered_at = self._position(op.answered_by)
        if answered_at is not None and op.answered_by is not None:
            out["result"], reported = self._result(op.answered_by, answered_at)
            out["parts"].append(["result", visible(op.answered_by), answered_at])
        if settled_at is not None and op.settled_id is not None:
            out["parts"].append(["settle", visible(op.settled_id), settled_at])
        out["duration"] = _duration(op, settle, reported)
        for key in ("error", "reason"):
            if isinstance(settle.get(key), str) and settle[key]:
                out["note"] = [key, visible(settle[key][:RESULT_CHARS], multiline=True)]
                break
        return out

    def _position(self, envelope_id: Optional[str]) -> Optional[int]:
        if envelope_id is None or self.history is None:
            return None
        return self.history.index_of(envelope_id)

    def _result(self, message_id: str, at: int) -> Tuple[Optional[Dict[str, Any]], Optional[float]]:
        """The start of a result, and the duration it reports (Codex's ``metadata``)."""
        payload = self.envelope_at(at).payload
        text = "\n".join(_texts(payload.get("content") if isinstance(payload, dict) else None))
        text, reported, exit_code = _unwrapped(text)
        shown = visible(text[:RESULT_CHARS], multiline=True)
        result = {"text": shown, "chars": len(text), "shortened": len(text) > RESULT_CHARS, "to": visible(message_id),
                  "i": at, "exit_code": exit_code}
        return result, reported


def _unwrapped(text: str) -> Tuple[str, Optional[float], Optional[int]]:
    """A result Codex wrote as ``{"output": ..., "metadata": {"exit_code", "duration_seconds"}}``:
    its output, the duration and the exit code it reports; any other text as it is."""
    if not text.startswith('{"output"'):
        return text, None, None
    try:
        found = json.loads(text)
    except ValueError:
        return text, None, None
    if not isinstance(found, dict) or not isinstance(found.get("output"), str):
        return text, None, None
    metadata = found.get("metadata")
    metadata = metadata if isinstance(metadata, dict) else {}
    code = metadata.get("exit_code")
    return (found["output"], _seconds(metadata.get("duration_seconds")),
            code if isinstance(code, int) and not isinstance(code, bool) else None)


def _seconds(value: Any) -> Optional[float]:
    """A duration in seconds a line states (a number, not negative), or None."""
    if isinstance(value, (int, float)) and not isinstance(value, bool) and 0 <= value < 1e12:
        return float(value)  # not inf, which a line may spell 1e999
    return None


def _call_ids(calls: Any) -> List[Any]:
    return [c.get("id") for c in calls if isinstance(c, dict)] if isinstance(calls, list) else []


def _texts(content: Any) -> List[str]:
    """A result's content as text: a string, a list's text parts (an image as a note)."""
    if content is None:
        return []
    if isinstance(content, str):
        return [content]
    if not isinstance(content, list):
        return [json_text(content)]
    out = []
    for part in content:
        if isinstance(part, dict) and part.get("type") == "text" and isinstance(part.get("text"), str):
            out.append(part["text"])
        elif isinstance(part, dict) and part.get("type") == "image_url":
            out.append("[an image]")
        else:
            out.append(json_text(part))
    return out


def _duration(op: Operation, settle: Dict[str, Any], reported: Optional[float]) -> Optional[Dict[str, str]]:
    """How long the call took: the settle's ``duration``, else the one its result reports,
    else from the times of the dispatch and the settle (the source's, for an import) where
    it completed or failed. None where none says (a pending call, an outcome unknown)."""
    seconds = _seconds(settle.get("duration"))
    if seconds is not None:
        return {"text": _seconds_text(seconds), "from": "the settle's duration"}
    if reported is not None:
        return {"text": _seconds_text(reported), "from": "the duration its result reports"}
    if op.state not in ("completed", "failed") or op.settled_at is None:
        return None
    start, end = _time(op.dispatched_at), _time(op.settled_at)
    if start is None or end is None or end < start:
        return None
    return {"text": _seconds_text((end - start).total_seconds()), "from": "the times of the dispatch and the settle"}


def _time(ts: Any) -> Optional[datetime]:
    if not isinstance(ts, str):
        return None
    try:
        return datetime.strptime(ts, "%Y-%m-%dT%H:%M:%S.%fZ").replace(tzinfo=timezone.utc)
    except ValueError:
        return None


def _seconds_text(seconds: float) -> str:
    if seconds < 1:
        return f"{seconds * 1000:.0f} ms"
    if seconds < 60:
        return f"{seconds:.3g} s"
    minutes, rest = divmod(round(seconds), 60)
    hours, minutes = divmod(minutes, 60)
    return (f"{hours} h " if hours else "") + f"{minutes} min {rest} s"


def pretty_arguments(arguments: Any) -> str:
    """Arguments as the card shows them: a JSON text parsed and indented, else as it is."""
    if isinstance(arguments, str):
        try:
            arguments = json.loads(arguments)
        except ValueError:
            return visible(arguments, multiline=True)
    return visible(json_text(arguments, indent=2, sort_keys=True), multiline=True)
