"""One row of the shelf: what a transcript is, said from its file alone.

``describe(path, name)`` reads the file once (``Session.peek(survey=True)``) and load's
read-only verdict, and says: the title (the meta's, the first of its summaries, else the
first prompt a person typed, trimmed), the project (the working directory the meta or the
run context names, else the folder Claude Code kept the source in), a short session id,
the parent of a subagent (the transcript it was imported beside), the agent and model,
the times of the first and last event of the source (an import's checkpoint carries the
time of the import, not of the session: it is left out), the size, the counts, the tokens
its responses used (``usage``'s rule, over the lines the peek read: each response once),
and what a load would do. Every string is made visible.
"""

from __future__ import annotations

import posixpath
import re
from typing import Any, Dict, Iterable, Optional, Tuple

from ..messages import model_named
from ..session import Session
from ..usage import TOKEN_USAGE, UsageTotals, count_lines, of_message
from ..verdict import Verdict, verdict
from ..visible import visible

#: How many messages and run contexts a row looks at for the model and the first prompt.
LOOK = 64
#: The characters of a first prompt kept as a title.
TITLE_CHARS = 120
#: Envelopes the tool writes for itself, not the session's events: no time of theirs is
#: the session's (an import's checkpoint carries the time of the import).
BOOKKEEPING = frozenset({"import-checkpoint"})

# A prompt the agent wrote for the person, not one they typed: Codex's environment
# context and instructions, Claude Code's slash commands and their output.
_WRAPPED = re.compile(r"\s*<[A-Za-z][A-Za-z0-9_-]*>")
_SPACES = re.compile(r"\s+")


def verdict_words(judged: Verdict) -> Tuple[str, str]:
    """The words for load's verdict, and why (the error, or the torn tail a load cuts)."""
    why = ""
    if judged.error is not None:
        why = str(judged.error)
    elif judged.torn is not None:
        why = f"line {judged.torn.line}: {judged.torn.removed:,} bytes a load would cut"
    return judged.kind.label, visible(why)


def describe(path: str, name: Optional[str] = None) -> Dict[str, Any]:
    """One shelf row for the transcript at `path`, listed as `name` (its parent is named
    relative to it)."""
    found = Session.peek(path, survey=True)
    survey = found["survey"]
    meta = found["meta"] if isinstance(found["meta"], dict) else {}
    envelopes = found["envelopes"]
    looked = _Look(meta)
    first = last = None
    failed = 0
    stated = []  # each message line's usage, and whether it is an assistant's (usage.count_lines)
    for event in envelopes:
        if event.type not in BOOKKEEPING:
            ts = event.ts
            if first is None or ts < first:
                first = ts
            if last is None or ts > last:
                last = ts
        if event.type == "tool-settled" and isinstance(event.payload, dict) and event.payload.get("outcome") == "failed":
            failed += 1
        elif event.type in ("message", "run-context"):
            looked.see(event.type, event.payload)
            if event.type == "message" and isinstance(event.payload, dict):
                said = of_message(event.payload) if TOKEN_USAGE in event.payload else None
                stated.append((said, event.payload.get("role") == "assistant"))
    verdict_text, why = verdict_words(verdict(path))
    counts = survey["counts"]
    session_id, short = short_session_id(meta, envelopes[0].id if len(envelopes) else None)
    parent = parent_name(name, meta.get("parent")) if name is not None else None
    return {
        "title": _text(meta.get("title")) or _text(_first_summary(meta)) or looked.prompt,
        "project": _text(looked.project or source_folder(meta)),
        "session": _text(short),
        "session_id": _text(session_id),
        "parent": visible(parent) if parent is not None else None,
        "subagent": _subagent_kind(meta),
        "agent": _text(meta.get("agent") or meta.get("imported-from")),
        "model": looked.model,
        "source": _text(meta.get("source-path") or meta.get("source")),
        "first": visible(first) if first else None,
        "last": visible(last) if last else None,
        "size": found["size"],
        "envelopes": len(envelopes),
        "messages": counts.get("message", 0),
        "live": survey["live_messages"],
        "tool_calls": counts.get("tool-dispatched", 0),
        "failed": failed,
        "pending": len(survey["pending_tool_operations"]),
        **tokens_fields(count_lines(stated)[1]),
        "verdict": verdict_text,
        "why": why,
        "error": visible(found["error"]) if found.get("error") else None,
    }


def tokens_fields(totals: UsageTotals) -> Dict[str, Any]:
    """A row's tokens: ``tokens`` (all four figures together, what the column shows and
    sorts by; None where no response states one) and ``usage`` (each figure, None where
    none states it, with the responses counted and those that state nothing)."""
    stated = [n for n in totals.figures if n is not None]
    return {"tokens": sum(stated) if stated else None, "usage": totals.to_json()}


def title_of(meta: Dict[str, Any], events: Iterable[Any]) -> Optional[str]:
    """A transcript's title as its shelf row says it, from its meta and its first `events`
    (the first prompt among the first LOOK messages, where the meta has no title)."""
    found = _text(meta.get("title")) or _text(_first_summary(meta))
    if found:
        return found
    looked = 0
    for event in events:
        if event.type != "message":
            continue
        looked += 1
        prompt = first_prompt(event.payload) if isinstance(event.payload, dict) else None
        if prompt or looked >= LOOK:
            return prompt
    return None


class _Look:
    """What the first LOOK messages and run contexts say: the model (where the meta names
    none, the first one named, as the dataset's ``sessions`` table takes it), the first
    prompt a person typed, and the working directory (a run context's ``cwd`` fact)."""

    def __init__(self, meta: Dict[str, Any]) -> None:
        self.model = _text(meta.get("model"))
        self.project: Optional[str] = meta.get("cwd") if isinstance(meta.get("cwd"), str) and meta.get("cwd") else None
        self.prompt: Optional[str] = None
        self.seen = 0

    def see(self, type_: str, payload: Any) -> None:
        if self.seen >= LOOK or (self.model and self.prompt and self.project):
            return
        self.seen += 1
        if self.model is None:
            self.model = _text(model_named(type_, payload))
        if not isinstance(payload, dict):
            return
        if type_ == "run-context" and self.project is None:
            self.project = _fact(payload.get("facts"), "cwd")
        elif type_ == "message" and self.prompt is None:
            self.prompt = first_prompt(payload)


def first_prompt(payload: Dict[str, Any]) -> Optional[str]:
    """A user message's text as a title (whitespace collapsed, cut at TITLE_CHARS), or None
    for one that is not a prompt a person typed (a system prompt, a sticky message, an
    agent's wrapper such as ``<environment_context>`` or ``<command-name>``, Claude Code's
    ``isMeta`` lines) or has no text."""
    if payload.get("role") != "user" or payload.get("sysprompt") is True or payload.get("sticky") is True \
            or payload.get("is-meta") is True:
        return None
    text = " ".join(_texts(payload.get("content")))
    if not text.strip() or _WRAPPED.match(text):
        return None
    text = _SPACES.sub(" ", text).strip()
    if len(text) > TITLE_CHARS:
        text = text[: TITLE_CHARS - 1].rstrip() + "…"
    return visible(text)


def _texts(content: Any) -> Iterable[str]:
    if isinstance(content, str):
        yield content
    elif isinstance(content, list):
        for part in content:
            if isinstance(part, dict) and part.get("type") == "text" and isinstance(part.get("text"), str):
                yield part["text"]


def _fact(facts: Any, key: str) -> Optional[str]:
    for fact in facts if isinstance(facts, list) else ():
        if isinstance(fact, list) and len(fact) == 2 and fact[0] == key and isinstance(fact[1], str) and fact[1]:
            return fact[1]
    return None


def source_folder(meta: Dict[str, Any]) -> Optional[str]:
    """The folder Claude Code keeps a session in (``~/.claude/projects/<its cwd, encoded>``),
    from an import's source path: the project, where the meta names no working directory."""
    source = meta.get("source-path")
    if meta.get("imported-from") != "claude-code" or not isinstance(source, str):
        return None
    parts = source.replace("\\", "/").split("/")
    # <project>/<session>.jsonl, or <project>/<session>/subagents/agent-<id>.jsonl
    at = len(parts) - 4 if len(parts) >= 4 and parts[-2] == "subagents" else len(parts) - 2
    return parts[at] if at >= 0 and parts[at] else None


def short_session_id(meta: Dict[str, Any], meta_id: Optional[str]) -> Tuple[Optional[str], Optional[str]]:
    """The session id (the source's, else the meta envelope's id) and its short form: its
    first 8 characters, or its last 8 for a time-ordered UUID (version 7), whose first
    ones are its time and the same for every session of a minute."""
    session = meta.get("session-id")
    full = session if isinstance(session, str) and session else meta_id
    if not full:
        return None, None
    compact = full.replace("-", "")
    if len(compact) == 32 and len(full) == 36 and full[14] == "7":
        return full, compact[-8:]
    return full, full[:8]


def parent_name(name: str, parent: Any) -> Optional[str]:
    """The name of the transcript a subagent's was imported beside: the meta's ``parent``
    names it (``transcript``, a path relative to the subagent's file), or, for a sidechain,
    the layout does (``<stem>/sidechains/<root>.jsonl`` beside ``<stem>.jsonl``). None for a
    transcript that names no parent, or a parent outside the PATH it was listed under."""
    if not isinstance(parent, dict):
        return None
    label = name.split("/")[0]
    relative = parent.get("transcript")
    if isinstance(relative, str) and relative and not relative.startswith("/") and "\\" not in relative:
        found = posixpath.normpath(posixpath.join(posixpath.dirname(name), relative))
    else:
        parts = name.split("/")
        if len(parts) < 4 or parts[-2] not in ("sidechains", "subagents"):
            return None
        found = "/".join(parts[:-2]) + ".jsonl"
    if not found.startswith(label + "/") or not found.endswith(".jsonl") or found == name:
        return None
    return found


def _subagent_kind(meta: Dict[str, Any]) -> Optional[str]:
    parent = meta.get("parent")
    if not isinstance(parent, dict):
        return None
    return "sidechain" if "sidechain-root" in parent else "subagent"


def _first_summary(meta: Dict[str, Any]) -> Any:
    """The first of the meta's ``summaries`` (an import's title), where it is a list."""
    summaries = meta.get("summaries")
    return summaries[0] if isinstance(summaries, list) and summaries else None


def _text(value: Any) -> Optional[str]:
    return visible(value) if isinstance(value, str) else None
