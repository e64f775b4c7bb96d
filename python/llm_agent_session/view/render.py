"""An envelope as the page shows it: a plain JSON description (docs/viewer.md, "Envelopes").

Every string from the transcript that reaches the page passes through the command line's
``visible`` (control, bidi and invisible characters shown as ``<U+202E>``, ``\\x1b``, ...)
or, for JSON values, ``json_text`` (the same characters as ``\\uXXXX``); the page sets
them as text, never as markup. The one exception is an assistant's Markdown, sent as
HTML that ``markdown.render`` made without any markup from the text.

An envelope becomes ``{"i", "id", "type", "ts", "title", "cls", "badges", "body",
"extras"}``: ``badges`` are ``{"text", "cls", "to"?}`` (``to``: an envelope id to jump to),
``body`` a list of blocks, each one of ``{"md": html}``, ``{"text": str}``, ``{"code":
str, "label"?}``, ``{"kv": [[key, value], ...]}``, ``{"link": label, "to": id}`` or
``{"call": {...}}`` (a tool call's card, once the history places it: ``cards.py``) or
``{"thinking": str, "chars"}`` (a model's thinking), plus ``{"more": chars}`` after a
value shortened to ``limit`` characters; ``extras`` is ``[[key, json text], ...]``
(collapsed by the page). A dispatch, result or settle whose card is another envelope has
``part``; an import checkpoint has ``run``, the checkpoints side by side it is one of.

What the secret rules find is masked before anything is rendered (the renderer's
``redactor``: the open transcript's, docs/secrets.md): a payload (a card's envelopes'
too), or a live message's content and calls, arrive here with
``«redacted:RULE:FINGERPRINT»`` in place of each secret, which the page turns into a span
with a "reveal" button.
"""

from __future__ import annotations

from typing import Any, Callable, Dict, List, Optional, Tuple

from ..history import History
from ..messages import MESSAGE_KEYS, Event, Message
from ..secrets import Redactor
from ..visible import json_text, visible
from . import markdown
from .cards import Cards, pretty_arguments

Block = Dict[str, Any]

_MESSAGE_KEYS = frozenset(MESSAGE_KEYS)

# What the page says for each state of a tool operation (History's states).
STATE_TEXT = {
    "dispatched": "pending: may or may not have run",
    "result-recorded": "pending: ran, result recorded, not settled",
    "completed": "completed",
    "failed": "failed",
    "outcome-unknown": "outcome unknown: may or may not have run",
}

#: Import checkpoints side by side fold into one line, at most this many a line (the line
#: a run starts on is found by looking at its neighbours, never further than this).
RUN = 50
#: Envelopes the tool writes for itself (bookkeeping, not the run's): folded in runs.
BOOKKEEPING = "import-checkpoint"


def _state_badge(state: str) -> Dict[str, Any]:
    """A tool operation's state (or a settle's outcome, as the line says it) as a badge. Its
    class comes from the known states only: a line's own text never becomes a class (an
    outcome of "failed x-spoof" would otherwise be styled as failed, plus a class of its
    choosing); any other state is shown, as text, with the neutral ``state-other``."""
    if state in STATE_TEXT:
        return {"text": STATE_TEXT[state], "cls": "state-" + state}
    return {"text": visible(state), "cls": "state-other"}


class Renderer:
    """Renders envelopes with what a ``History`` knows of them (``None``: not read yet)."""

    def __init__(self, history: Optional[History], removals: Dict[str, Tuple[int, str]], limit: int,
                 envelope_at: Optional[Callable[[int], Event]] = None, homes: Optional[Dict[str, int]] = None,
                 redactor: Optional[Redactor] = None) -> None:
        self.history = history
        self.removals = removals  # compaction/rewind id -> (messages it removed, the first one)
        self.limit = limit
        self.redactor = redactor if redactor is not None else Redactor(enabled=False)
        if envelope_at is not None and self.redactor.enabled:
            envelope_at = self._masked(envelope_at)
        # With the envelopes around (the history view): tool calls as cards, bookkeeping in runs.
        self.envelope_at = envelope_at
        self.cards = Cards(history, envelope_at, {} if homes is None else homes) if envelope_at is not None else None

    def _masked(self, envelope_at: Callable[[int], Event]) -> Callable[[int], Event]:
        """`envelope_at` whose envelopes come with their payloads masked (a card shows its
        dispatch's arguments and its result's text from envelopes of their own)."""

        def at(index: int) -> Event:
            event = envelope_at(index)
            payload = event.payload
            masked = self.redactor.payload(event.type, payload) if isinstance(payload, dict) else payload
            return event if masked is payload else Event(event.id, event.type, event.ts, event.v, masked)

        return at

    # -- pieces ---------------------------------------------------------------------------

    def _text(self, value: str, kind: str = "text") -> List[Block]:
        shown = visible(value, multiline=True)
        if self.limit and len(shown) > self.limit:
            return [{kind: shown[: self.limit]}, {"more": len(shown)}]
        return [{kind: shown}]

    def _markdown(self, value: str) -> List[Block]:
        if self.limit and len(value) > self.limit:
            return [{"md": markdown.render(value[: self.limit])}, {"more": len(value)}]
        return [{"md": markdown.render(value)}]

    def _json(self, value: Any, label: Optional[str] = None) -> List[Block]:
        text = json_text(value, indent=2, sort_keys=True)
        blocks = self._text(text, "code")
        if label is not None:
            blocks[0]["label"] = visible(label)
        return blocks

    def _content(self, content: Any, markdown_text: bool, kind: str = "text") -> List[Block]:
        """A message's content: a string, or a list of parts (text, image_url, anything)."""
        if content is None:
            return []
        if isinstance(content, str):
            return self._markdown(content) if markdown_text else self._text(content, kind)
        if not isinstance(content, list):
            return self._json(content)
        blocks: List[Block] = []
        for part in content:
            if isinstance(part, dict) and part.get("type") == "text" and isinstance(part.get("text"), str):
                blocks.extend(self._markdown(part["text"]) if markdown_text else self._text(part["text"], kind))
            elif isinstance(part, dict) and part.get("type") == "image_url":
                url = part.get("image_url", {}).get("url") if isinstance(part.get("image_url"), dict) else None
                shown = f"{url[:60]}… ({len(url):,} chars)" if isinstance(url, str) and len(url) > 80 else url
                blocks.append({"text": visible(f"[image: {shown}]")})  # never loaded
            else:
                blocks.extend(self._json(part))
        return blocks

    def _extras(self, extras: Dict[str, Any]) -> List[List[str]]:
        out = []
        for key in sorted(extras):
            text = json_text(extras[key], indent=2, sort_keys=True)
            if self.limit and len(text) > self.limit:
                text = text[: self.limit] + f"\n… ({len(text):,} chars; the whole envelope: raw)"
            out.append([visible(key), text])
        return out

    def _op_badges(self, op_id: str, with_links: bool = True) -> List[Dict[str, Any]]:
        if self.history is None:
            return []
        op = self.history.operations.get(op_id)
        if op is None:
            return []
        badges: List[Dict[str, Any]] = [_state_badge(op.state)]
        if with_links:
            if op.answered_by is not None:
                badges.append({"text": "result", "cls": "link", "to": op.answered_by})
            if op.settled_id is not None:
                badges.append({"text": "settled", "cls": "link", "to": op.settled_id})
        return badges

    def _fate(self, id_: str) -> List[Dict[str, Any]]:
        """What became of a message (or a compaction's summary): removed, elided."""
        if self.history is None:
            return []
        badges: List[Dict[str, Any]] = []
        removal = self.history.removed.get(id_)
        if removal is not None:
            text = "compacted" if removal.kind == "compaction" else "rewound"
            badges.append({"text": f"{text} (not sent any more)", "cls": "removed", "to": removal.by})
        for elision in self.history.elided.get(id_, ()):
            badges.append({"text": "elided: the model sees a stub", "cls": "elided", "to": elision})
        return badges

    def _calls(self, calls: List[Any], index: Optional[int], message_id: str = "") -> List[Block]:
        """A message's calls: each a card where its dispatch is known (`index`: the
        message's position, in the history view), else the call with its badges."""
        blocks: List[Block] = []
        for call in calls:
            ops = self.cards.of_message(index, call.get("id")) if self.cards is not None and index is not None \
                and isinstance(call, dict) else []
            if not ops:
                blocks.append(self._call(call))
            for op in ops:
                block = self._call(call, op.op_id)
                block["call"].update(self.cards.facts(op) if self.cards is not None else {})
                block["call"]["parts"].insert(0, ["call", visible(message_id), index])
                blocks.append(block)
        return blocks

    def _call(self, call: Any, op_id: Optional[str] = None) -> Block:
        if not isinstance(call, dict):
            return {"code": json_text(call)}
        function: Dict[str, Any] = call["function"] if isinstance(call.get("function"), dict) else {}
        name, arguments = function.get("name"), function.get("arguments")
        block = self._call_block(name, call.get("id"), pretty_arguments(arguments))
        call_id = call.get("id")
        if op_id is None and self.history is not None and isinstance(call_id, str):
            ops = self.history.calls.get(call_id, [])
            op_id = ops[-1] if ops else None
        if op_id is not None:
            block["call"]["badges"] = [{"text": "dispatched", "cls": "link", "to": visible(op_id)}] + self._op_badges(op_id)
        return block

    def _call_block(self, name: Any, call_id: Any, shown: str) -> Block:
        return {"call": {
            "name": visible(name if isinstance(name, str) else json_text(name)),
            "id": visible(call_id) if isinstance(call_id, str) else None,
            "arguments": shown[: self.limit] if self.limit else shown,
            "more": len(shown) if self.limit and len(shown) > self.limit else None,
            "badges": [],
        }}

    def _thinking(self, payload: Dict[str, Any]) -> Tuple[List[Block], List[str]]:
        """A model's thinking, shown with its message (folded by the page): Claude Code's
        ``thinking`` blocks, Codex's ``reasoning`` items; and the extras it came from."""
        blocks: List[Block] = []
        shown: List[str] = []
        for key in ("thinking", "reasoning"):
            texts = _thinking_texts(payload.get(key))
            if texts is None:
                continue
            shown.append(key)
            text = "\n\n".join(texts)
            for block in self._text(text, "thinking"):
                block.setdefault("chars", len(text))
                blocks.append(block)
        return blocks, shown

    # -- envelopes ------------------------------------------------------------------------

    def envelope(self, index: int, event: Event) -> Dict[str, Any]:
        payload = event.payload if isinstance(event.payload, dict) else {}
        masked = self.redactor.payload(event.type, payload)
        if masked is not payload:  # the methods below read the event's payload too
            event, payload = Event(event.id, event.type, event.ts, event.v, masked), masked
        out: Dict[str, Any] = {
            "i": index, "id": visible(event.id), "type": visible(event.type), "ts": visible(event.ts),
            "badges": [], "body": [], "extras": [],
        }
        method = getattr(self, "_" + event.type.replace("-", "_"), None)
        if self.cards is not None:
            part = self.cards.home_of_part(event, payload)
            if part is not None:
                out["part"] = part
        if event.type in KNOWN and method is not None:
            method(event, payload, out)
        else:
            out.update(title=visible(event.type), cls="unknown")
            out["badges"].append({"text": "a type this version does not know", "cls": "note"})
            out["body"] = self._json(payload)
        return out

    def _session_meta(self, event: Event, payload: Dict[str, Any], out: Dict[str, Any]) -> None:
        out.update(title="session", cls="meta")
        rows = [[visible(k), visible(v) if isinstance(v, str) else json_text(v, sort_keys=True)]
                for k, v in sorted(payload.items())]
        out["body"] = [{"kv": rows}]

    def _message(self, event: Event, payload: Dict[str, Any], out: Dict[str, Any]) -> None:
        role = payload.get("role")
        role_text = visible(role) if isinstance(role, str) else "(no role)"
        out.update(title=role_text, cls="message role-" + (role if role in ("system", "user", "assistant", "tool") else "other"))
        badges = out["badges"]
        if isinstance(payload.get("name"), str):
            badges.append({"text": "name: " + visible(payload["name"]), "cls": "note"})
        if payload.get("sysprompt") is True:
            badges.append({"text": "system prompt", "cls": "note"})
        elif payload.get("sticky") is True or payload.get("depth") is not None:
            badges.append({"text": "sticky (kept by compaction)", "cls": "note"})
        if role == "tool":
            call_id = payload.get("tool_call_id")
            op_id = self.history.answers.get(event.id) if self.history is not None else None
            failed_extra = payload.get("is-error") is True or payload.get("is_error") is True
            if op_id is not None:
                badges.extend(self._op_badges(op_id, with_links=False))
                badges.append({"text": "the call", "cls": "link", "to": op_id})
            elif failed_extra:
                badges.append({"text": "failed", "cls": "state-failed"})
            if isinstance(call_id, str):
                badges.append({"text": "answers " + visible(call_id), "cls": "note"})
        badges.extend(self._fate(event.id))
        thinking, shown = self._thinking(payload) if role == "assistant" else ([], [])
        out["body"] = thinking + self._content(payload.get("content"), markdown_text=role == "assistant",
                                               kind="code" if role == "tool" else "text")
        calls = payload.get("tool_calls")
        if isinstance(calls, list):
            out["body"].extend(self._calls(calls, out["i"], event.id))
        elif calls is not None:
            out["body"].extend(self._json(calls, "tool_calls"))
        out["extras"] = self._extras({k: v for k, v in payload.items() if k not in _MESSAGE_KEYS and k not in shown})

    def _tool_dispatched(self, event: Event, payload: Dict[str, Any], out: Dict[str, Any]) -> None:
        tool = payload.get("tool")
        out.update(title="tool call: " + (visible(tool) if isinstance(tool, str) else "?"), cls="op")
        out["badges"] = self._op_badges(event.id)
        op = self.cards.operation(event.id) if self.cards is not None else None
        if op is not None:
            # The card: here, where no message names the call; else shown when this line is
            # unfolded (a jump to a tool call lands on its dispatch: the card is there).
            block = self._call_block(tool, payload.get("call-id"), pretty_arguments(payload.get("arguments")))
            block["call"].update(self.cards.facts(op) if self.cards is not None else {})
            if "part" in out:
                block["call"]["parts"].insert(0, ["call", out["part"]["of"], out["part"]["i"]])
            out["body"] = [block]
        else:
            out["body"] = self._json(payload.get("arguments"), "arguments")
        out["extras"] = self._extras({k: v for k, v in payload.items() if k not in ("tool", "arguments")})

    def _tool_settled(self, event: Event, payload: Dict[str, Any], out: Dict[str, Any]) -> None:
        outcome = payload.get("outcome")
        out.update(title="tool settled: " + (visible(outcome) if isinstance(outcome, str) else "?"), cls="op")
        op_id = payload.get("op-id")
        if isinstance(outcome, str):
            out["badges"].append(_state_badge(outcome))
        if isinstance(op_id, str):
            out["badges"].append({"text": "the call", "cls": "link", "to": op_id})
        body: List[Block] = []
        if "duration" in payload:
            body.append({"kv": [["duration", f"{payload['duration']} s" if isinstance(payload["duration"], (int, float)) else json_text(payload["duration"])]]})
        for key in ("error", "reason"):
            if isinstance(payload.get(key), str):
                for block in self._text(payload[key], "code"):
                    block.setdefault("label", key)
                    body.append(block)
        if "artifact" in payload:
            body.extend(self._json(payload["artifact"], "artifact"))
        out["body"] = body
        out["extras"] = self._extras({k: v for k, v in payload.items()
                                      if k not in ("outcome", "op-id", "duration", "error", "reason", "artifact")})

    def _compaction(self, event: Event, payload: Dict[str, Any], out: Dict[str, Any]) -> None:
        out.update(title="compaction", cls="fold")
        count, first = self.removals.get(event.id, (0, ""))
        if self.history is not None:
            out["badges"].append({"text": f"replaced {count:,} message(s)", "cls": "link" if first else "note", **({"to": first} if first else {})})
        if payload.get("fallback") is True:
            out["badges"].append({"text": "fallback: hard-trimmed, no summary model", "cls": "state-failed"})
        out["badges"].extend(self._fate(event.id))
        through = payload.get("replaces-through-id")
        body: List[Block] = []
        if isinstance(through, str):
            body.append({"link": "replaces everything through " + visible(through), "to": visible(through)})
        body.append({"kv": [["tokens", f"{_tokens(payload.get('tokens-before'))} → {_tokens(payload.get('tokens-after'))}"]]})
        summary = payload.get("summary")
        body.extend(self._markdown(summary) if isinstance(summary, str) else self._json(summary, "summary"))
        out["body"] = body
        out["extras"] = self._extras({k: v for k, v in payload.items()
                                      if k not in ("summary", "replaces-through-id", "tokens-before", "tokens-after", "fallback")})

    def _rewind(self, event: Event, payload: Dict[str, Any], out: Dict[str, Any]) -> None:
        out.update(title="rewind", cls="fold")
        count, first = self.removals.get(event.id, (0, ""))
        if self.history is not None:
            out["badges"].append({"text": f"removed {count:,} message(s)", "cls": "link" if first else "note", **({"to": first} if first else {})})
        to = payload.get("to-id")
        out["body"] = ([{"link": "back to " + visible(to), "to": visible(to)}] if isinstance(to, str)
                       else [{"text": "back to the start: no message kept"}])
        out["extras"] = self._extras({k: v for k, v in payload.items() if k != "to-id"})

    def _elision(self, event: Event, payload: Dict[str, Any], out: Dict[str, Any]) -> None:
        out.update(title="elision", cls="fold")
        body: List[Block] = []
        items = payload.get("items")
        for item in items if isinstance(items, list) else []:
            if isinstance(item, dict) and isinstance(item.get("id"), str):
                body.append({"link": "the original: " + visible(item["id"]), "to": visible(item["id"])})
                stub = item.get("stub")
                body.extend(self._content(stub, markdown_text=False) if stub is not None else [{"text": "(null stub)"}])
        out["body"] = body
        out["extras"] = self._extras({k: v for k, v in payload.items() if k != "items"})

    def _grants(self, event: Event, payload: Dict[str, Any], out: Dict[str, Any]) -> None:
        out.update(title="grants", cls="grants")
        out["body"] = self._json(payload.get("grants"), "the whole permission snapshot")
        out["extras"] = self._extras({k: v for k, v in payload.items() if k != "grants"})

    def _run_context(self, event: Event, payload: Dict[str, Any], out: Dict[str, Any]) -> None:
        out.update(title="run context", cls="context")
        body: List[Block] = []
        sections = payload.get("sections")
        for section in sections if isinstance(sections, list) else []:
            if not isinstance(section, dict):
                continue
            name = visible(section["name"]) if isinstance(section.get("name"), str) else "?"
            if isinstance(section.get("text"), str):
                for block in self._text(section["text"]):
                    block.setdefault("label", "section " + name)
                    body.append(block)
            elif isinstance(section.get("rendered-in"), str):
                body.append({"link": f"section {name}: as in {visible(section['rendered-in'])}", "to": visible(section["rendered-in"])})
        facts = payload.get("facts")
        if isinstance(facts, list):
            body.append({"kv": [[visible(f[0]) if isinstance(f[0], str) else json_text(f[0]), json_text(f[1], sort_keys=True)]
                                for f in facts if isinstance(f, list) and len(f) == 2]})
        out["body"] = body
        out["extras"] = self._extras({k: v for k, v in payload.items() if k not in ("sections", "facts")})

    def _import_checkpoint(self, event: Event, payload: Dict[str, Any], out: Dict[str, Any]) -> None:
        out.update(title="import checkpoint", cls="meta")
        if self.envelope_at is not None:
            out["run"] = self._run(out["i"])
        out["body"] = [{"kv": [[visible(k), visible(v) if isinstance(v, str) else json_text(v, sort_keys=True)]
                               for k, v in sorted(payload.items())]}]

    def _run(self, index: int) -> Dict[str, int]:
        """The run of bookkeeping envelopes side by side that `index` is in, cut every RUN
        positions: ``{"start", "count"}`` (the page shows it as one line)."""
        block = index - index % RUN
        start = index
        while start > block and self._type_at(start - 1) == BOOKKEEPING:
            start -= 1
        stop = index + 1
        while stop < block + RUN and self._type_at(stop) == BOOKKEEPING:
            stop += 1
        return {"start": start, "count": stop - start}

    def _type_at(self, index: int) -> Optional[str]:
        assert self.envelope_at is not None
        try:
            return self.envelope_at(index).type
        except IndexError:
            return None

    def live(self, position: int, entry_id: str, message: Message, summary: bool) -> Dict[str, Any]:
        """One message of the live conversation (what the model would be sent next); a
        compaction's `summary` stands under the compaction's id."""
        out: Dict[str, Any] = {"i": position, "id": visible(entry_id), "type": "message", "ts": "",
                               "badges": [{"text": "in the history", "cls": "link", "to": visible(entry_id)}],
                               "body": [], "extras": []}
        role = message.role
        out.update(title=visible(role), cls="message role-" + (role if role in ("system", "user", "assistant", "tool") else "other"))
        if summary:
            out["badges"].append({"text": "a compaction's summary", "cls": "note"})
        if self.history is not None and entry_id in self.history.elided:
            out["badges"].append({"text": "elided: the model sees this stub", "cls": "elided", "to": self.history.elided[entry_id][-1]})
        shown = self.redactor.value({"content": message.content, "tool_calls": message.tool_calls})
        out["body"] = self._content(shown["content"], markdown_text=role == "assistant",
                                    kind="code" if role == "tool" else "text")
        if isinstance(shown["tool_calls"], list):
            out["body"].extend(self._calls(shown["tool_calls"], None))
        return out


KNOWN = {"session-meta", "message", "tool-dispatched", "tool-settled", "compaction", "rewind", "elision",
         "grants", "run-context", "import-checkpoint"}


def _tokens(value: Any) -> str:
    """A token count, or "unknown" where the record does not say (never 0 for unknown)."""
    if isinstance(value, int) and not isinstance(value, bool):
        return f"{value:,}"
    return "unknown"


def _thinking_texts(value: Any) -> Optional[List[str]]:
    """The texts of a ``thinking`` (Claude Code) or ``reasoning`` (Codex) extra, or None
    where it is not a list of such items (then it stays an extra, shown as JSON)."""
    if not isinstance(value, list) or not value or not all(isinstance(item, dict) for item in value):
        return None
    texts: List[str] = []
    for item in value:
        if isinstance(item.get("thinking"), str):
            texts.append(item["thinking"])
        elif item.get("type") == "redacted_thinking":
            texts.append("[redacted thinking]")
        elif "summary" in item or "content" in item or "encrypted_content" in item:
            found = [part["text"] for key in ("summary", "content") if isinstance(item.get(key), list)
                     for part in item[key] if isinstance(part, dict) and isinstance(part.get("text"), str)]
            texts.extend(found or (["[encrypted reasoning]"] if item.get("encrypted_content") else []))
        else:
            return None
    return texts
