"""Import Codex rollouts into transcripts.

Codex writes one JSONL rollout per session, ``~/.codex/sessions/YYYY/MM/DD/rollout-<time>-<uuid>.jsonl``
(older versions: ``~/.codex/sessions/rollout-*.jsonl``, in a flat layout whose lines are the
items themselves, without ``type``/``payload``; archived ones under ``~/.codex/archived_sessions``;
``.jsonl.zst`` is read when the ``zstandard`` module is installed). Each line is
``{"timestamp", "type", "payload"}``: ``session_meta``, ``turn_context``, ``response_item``
(what the model saw and said), ``compacted`` and ``event_msg`` (what the UI showed).

The conversation is the ``response_item`` lines; an ``event_msg`` user or agent message is
imported only when its turn has no ``response_item`` message of that role (then it is the
only record of it). ``thread_rolled_back`` becomes a ``rewind`` to just before the user
turn it drops (a call of a dropped turn still unanswered is settled ``outcome-unknown``).
Each envelope's ``ts`` is the source line's ``timestamp``. The rollout is read from its
first line on every import (``_plan``, ``_reconcile``), so an import that resumes gives what
one import of the whole file would.

    report = import_transcript("~/.codex/sessions/2026/11/30/rollout-....jsonl", "out/run.jsonl")
"""

from __future__ import annotations

import json
import os
from functools import partial
from typing import Any, Dict, List, Optional, Tuple, cast

from .._token_usage import TOKEN_USAGE, figure, stated
from ._driver import mirror_files, refuse_out_inside, run_files, run_import
from ._parts import as_dict, as_str, image_part, simplest, text_part
from ._plan import Planner
from ._report import ImportReport
from ._source import Line, json_text

FORMAT = "codex"
DEFAULT_SOURCE = "~/.codex/sessions"

_CALLS = ("function_call", "custom_tool_call", "local_shell_call")
_OUTPUTS = ("function_call_output", "custom_tool_call_output")
_ITEM_TYPES = ("message", "reasoning") + _CALLS + _OUTPUTS + ("web_search_call",)
# User messages Codex adds itself: context, not the start of a user turn.
_CONTEXT_PREFIXES = ("<environment_context>", "<user_instructions>", "# AGENTS.md instructions", "<INSTRUCTIONS>")
_TURN_EDGES = ("task_started", "task_complete", "turn_started", "turn_complete", "turn_aborted")
# The extra that keeps a token count's ``info`` as Codex wrote it, on the last message of its response.
TOKEN_COUNT = "token-count"


def import_transcript(src: Any, out: Any, *, redaction: Any = None) -> ImportReport:
    """Import one Codex rollout ``src`` into the transcript ``out`` (a new file, or one an
    earlier import made: then what brings it to what one import of the whole rollout
    gives is appended, usually just what the rollout gained since). ``redaction``: a
    ``secrets.Policy`` (docs/secrets.md) applied to everything written."""
    src, out = os.fspath(src), os.fspath(out)
    return run_import(src, out, FORMAT, lambda lines, rep, first: _Job(src, lines, rep), redaction)


def out_name(rel: str) -> str:
    """A rollout's name in the mirror: ``.jsonl.zst`` becomes ``.jsonl``."""
    return rel[: -len(".zst")] if rel.endswith(".jsonl.zst") else rel


def import_tree(src_dir: Any, out_dir: Any, on_file: Any = None, workers: int = 1, *,
                redaction: Any = None) -> List[ImportReport]:
    """Every rollout under ``src_dir`` into the same place under ``out_dir``;
    ``on_file(report, done, total)`` after each. ``workers`` > 1: that many processes
    import files side by side. ValueError if ``out_dir`` is inside ``src_dir``."""
    src_dir, out_dir = os.fspath(src_dir), os.fspath(out_dir)
    refuse_out_inside(src_dir, out_dir)
    files = mirror_files(src_dir, lambda rel: rel.endswith((".jsonl", ".jsonl.zst")))
    calls = [(partial(import_transcript, redaction=redaction), (os.path.join(src_dir, rel), os.path.join(out_dir, out_name(rel))))
             for rel in files]
    return run_files(calls, on_file, workers)


def _content(items: Any) -> Any:
    """Response-item content (input_text, output_text, input_image ...) as chat content."""
    if isinstance(items, str):
        return items
    if not isinstance(items, list):
        return None if items is None else json_text(items)
    parts: List[Any] = []
    for item in items:
        if isinstance(item, dict) and isinstance(item.get("text"), str) and item.get("type") in (
            "input_text", "output_text", "text", "summary_text", "reasoning_text"
        ):
            parts.append(text_part(item["text"]))
        elif isinstance(item, dict) and item.get("type") == "input_image" and isinstance(item.get("image_url"), str):
            parts.append(image_part(item["image_url"]))
        else:
            parts.append(item)
    return simplest(parts)


def _text_of(content: Any) -> str:
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        return "\n".join(p.get("text", "") for p in content if isinstance(p, dict) and isinstance(p.get("text"), str))
    return ""


def _history_text(history: Any) -> str:
    """A compaction without a summary (done by the server): the text of the history that replaced it."""
    if not isinstance(history, list):
        return ""
    texts = [_text_of(_content(item.get("content"))) for item in history
             if isinstance(item, dict) and item.get("type") == "message"]
    return "\n\n".join(t for t in texts if t)


def _output(output: Any) -> Tuple[Any, bool]:
    """A call's output as tool message content, and whether the call failed (``success``
    false, or a non-zero exit code in the output's own JSON)."""
    failed = False
    if isinstance(output, dict):
        failed = output.get("success") is False
        output = output.get("content", output.get("output", output))
    if isinstance(output, str):
        code = _exit_code(output)
        failed = failed or (code is not None and code != 0)
        return output, failed
    content = _content(output)
    return ("" if content is None else content), failed


def _exit_code(output: str) -> Optional[int]:
    """The exit code of a shell output ``{"output": ..., "metadata": {"exit_code": N, ...}}``.

    Codex writes ``metadata`` last, so only the tail after its key is parsed, not the
    whole output again (the output is most of the bytes of a rollout)."""
    at = output.rfind('"metadata":')
    if at < 0 or not output.startswith("{") or not output.endswith("}"):
        return None
    try:
        metadata = json.loads(output[at + len('"metadata":'): -1])
    except ValueError:
        return None
    code = metadata.get("exit_code") if isinstance(metadata, dict) else None
    return code if isinstance(code, int) and not isinstance(code, bool) else None


class _Job:
    """One rollout's lines, read in order into a plan of what one import writes."""

    def __init__(self, src: str, lines: List[Line], report: ImportReport) -> None:
        self.report = report
        self.writer = Planner(report)
        self.reasoning: List[Any] = []  # reasoning items waiting for the assistant message they belong to
        self.turn = {"user": False, "assistant": False}  # response_item messages seen this turn
        self.events: List[Dict[str, Any]] = []  # event_msg messages waiting for the end of their turn
        self.turn_starts: List[int] = []  # the messages that began each user turn (for rollbacks)
        self.context: Optional[str] = None  # the last turn_context written, as JSON text
        self.tokens: Optional[int] = None  # the last input token count (a compaction's tokens-before)
        self.meta_seen = False
        self.meta: Dict[str, Any] = {"imported-from": FORMAT, "source-path": os.path.abspath(src)}
        self.meta_time: Any = None
        self.checkpoint: Dict[str, Any] = {}
        for line in lines[:5]:
            payload = self._meta_payload(line.obj)
            if payload is not None:
                self._fill_meta(payload)
                self.meta_time = line.obj.get("timestamp")
                break
        self.open: Optional[Dict[str, Any]] = None  # the assistant message being gathered
        self.source = os.path.basename(src)
        self.at = 0  # the line being read
        # The response being read: the model's output items since the last token count,
        # tool output or turn edge. Its messages carry its id (the rollout's session id and
        # the line of its first item: Codex records no response id), and its token count's
        # figures once that comes (after the items).
        self.response: Optional[Dict[str, Any]] = None
        self.last_total: Any = None  # the last token count's cumulative total (a repeat adds nothing)
        self.orphans = 0  # token counts of a response with no assistant message
        for line in lines:
            self.at = line.number
            self._line(line)
        self._flush()
        self._end_turn()
        if self.orphans:
            report.warn(f"{self.orphans} token count(s) came after no assistant message of their response (a "
                        "request that wrote no conversation item, such as a compaction's); their usage is not "
                        "recorded")
        self.records = self.writer.finish()

    @staticmethod
    def _meta_payload(obj: Dict[str, Any]) -> Optional[Dict[str, Any]]:
        if obj.get("type") == "session_meta" and isinstance(obj.get("payload"), dict):
            payload = obj["payload"]
            meta = payload.get("meta")
            return cast(Dict[str, Any], meta if isinstance(meta, dict) else payload)
        if "type" not in obj and "payload" not in obj and isinstance(obj.get("id"), str) and "timestamp" in obj:
            return obj  # the legacy layout's first line
        return None

    def _fill_meta(self, payload: Dict[str, Any]) -> None:
        for key, name in (("id", "session-id"), ("cwd", "cwd"), ("cli_version", "version"),
                          ("originator", "originator"), ("model_provider", "model-provider"),
                          ("timestamp", "started")):
            if isinstance(payload.get(key), (str, int)) and not isinstance(payload.get(key), bool):
                self.meta[name] = payload[key]
        git = payload.get("git")
        if isinstance(git, dict):
            if isinstance(git.get("branch"), str):
                self.meta["git-branch"] = git["branch"]
            if isinstance(git.get("commit_hash"), str):
                self.meta["git-commit"] = git["commit_hash"]
            if isinstance(git.get("repository_url"), str):
                self.meta["git-repository"] = git["repository_url"]
        self.meta_seen = True

    # -- reading ---------------------------------------------------------------------------------

    def _line(self, line: Line) -> None:
        obj = line.obj
        rtype, payload = obj.get("type"), obj.get("payload")
        ts = obj.get("timestamp")
        if "payload" not in obj and "record_type" in obj:
            self.report.skipped("legacy/state", "a legacy state record, not part of the conversation")
        elif "payload" not in obj and rtype in _ITEM_TYPES:
            self._item("legacy/" + rtype, obj, ts)
        elif "payload" not in obj and self._meta_payload(obj) is not None:
            self._session_meta("legacy/session_meta", obj, ts)
        elif not isinstance(payload, dict):
            kind = f"{as_str(rtype)[:60] or '(no type)'}"
            self.report.skipped(kind, "unknown record type" if rtype not in (
                "session_meta", "response_item", "event_msg", "turn_context", "compacted") else "no payload object")
        elif rtype == "response_item":
            ptype = as_str(payload.get("type"))
            self._item(f"response_item/{ptype[:60] or '(no type)'}", payload, ts)
        elif rtype == "event_msg":
            self._event(f"event_msg/{as_str(payload.get('type'))[:60] or '(no type)'}", payload, ts)
        elif rtype == "session_meta":
            self._session_meta("session_meta", payload.get("meta", payload) if isinstance(payload.get("meta"), dict) else payload, ts)
        elif rtype == "turn_context":
            self._turn_context(payload, ts)
        elif rtype == "compacted":
            self._flush()
            self.response = None
            summary = as_str(payload.get("message")) or _history_text(payload.get("replacement_history"))
            # Codex records no count after a compaction: tokens-after is left out, never 0.
            if self.writer.compaction("compacted", summary, self.tokens, None, {}, ts) is not None:
                self.report.imported("compacted")
        else:
            self.report.skipped(as_str(rtype)[:60] or "(no type)", "unknown record type")

    def _item(self, kind: str, item: Dict[str, Any], ts: Any) -> None:
        itype = item.get("type")
        if itype in ("reasoning", "web_search_call") + _CALLS or (itype == "message" and item.get("role") == "assistant"):
            self._responding()
        if itype == "message":
            self._message(kind, item, ts)
        elif itype == "reasoning":
            if self.open is not None:
                self.open["extra"].setdefault("reasoning", []).append(item)
            else:
                self.reasoning.append(item)
            self.report.extras(kind)
        elif itype in _CALLS:
            call_id = item.get("call_id") if isinstance(item.get("call_id"), str) else item.get("id")
            if not isinstance(call_id, str) or not call_id:
                self.report.skipped(kind, "a tool call without a call_id")
                return
            if itype == "function_call":
                name = as_str(item.get("name")) or "unknown"
                args = item.get("arguments")
                arguments = args if isinstance(args, str) else json_text(args)
            elif itype == "custom_tool_call":
                name = as_str(item.get("name")) or "unknown"
                arguments = json_text({"input": item.get("input")})
            else:
                name = "local_shell"
                arguments = json_text(item.get("action"))
            host = self._open(ts)
            host["calls"].append((call_id, name, arguments, ts))
            host["kinds"].append(kind)
        elif itype in _OUTPUTS:
            self._flush()
            self.response = None  # the next response's input: its output is another response
            call_id = item.get("call_id")
            if not isinstance(call_id, str):
                self.report.skipped(kind, "a tool output without a call_id")
                return
            content, failed = _output(item.get("output"))
            if self.writer.tool_result(kind, call_id, content, failed, {}, ts) is not None:
                self.report.imported(kind)
        elif itype == "web_search_call":
            host = self._open(ts)
            host["extra"].setdefault("web-searches", []).append(item)
            self.report.extras(kind)
        elif itype == "ghost_snapshot":
            self.report.skipped(kind, "Codex's undo snapshot of the worktree, not part of the conversation")
        else:
            self.report.skipped(kind, "unknown response item type")

    def _open(self, ts: Any) -> Dict[str, Any]:
        if self.open is None:
            extra: Dict[str, Any] = {}
            if self.reasoning:
                extra["reasoning"] = self.reasoning
                self.reasoning = []
            if self.response is not None:
                extra[TOKEN_USAGE] = {"response-id": self.response["id"]}
            self.open = {"content": None, "calls": [], "extra": extra, "kinds": [], "ts": ts}
        return self.open

    def _flush(self) -> Optional[int]:
        """Write the assistant message gathered so far, then dispatch its calls."""
        host, self.open = self.open, None
        if host is None:
            return None
        at = self.writer.assistant(host["kinds"][0] if host["kinds"] else "response_item", host["content"],
                                   host["calls"], host["extra"], host["ts"])
        if at is not None:
            for kind in host["kinds"]:
                self.report.imported(kind)
            if self.response is not None and TOKEN_USAGE in host["extra"]:
                self.response["messages"].append(at)
        return at

    # -- token usage ------------------------------------------------------------------------------

    def _responding(self) -> None:
        """A model output item: the response it belongs to (a new one after a token count,
        a tool output or a turn edge)."""
        if self.response is None:
            session = self.meta.get("session-id")
            self.response = {"id": f"{session if isinstance(session, str) and session else self.source}:{self.at}",
                             "messages": []}

    def _token_count(self, kind: str, info: Dict[str, Any]) -> None:
        """A response's token count (Codex writes it after the response's items): its
        ``last_token_usage`` on every assistant message of the response, as ``token-usage``
        (Codex's ``input_tokens`` includes the cached ones, so ``input`` is the
        difference and ``cache-read`` the cached; ``output_tokens`` includes reasoning, as
        ``output`` does; Codex states no cache writes), and ``info`` itself on the last of
        them. A count whose cumulative total equals the last one's (Codex repeats a count
        when only its rate limits changed) is that response's again: not counted twice."""
        last = info.get("last_token_usage")
        total = info.get("total_token_usage")
        if not isinstance(last, dict) or (total is not None and total == self.last_total):
            self.report.skipped(kind, "a token count repeating the last one, or without a count" if last else
                                "a token count without a count (rate limits only)")
            return
        self.last_total = total
        response, self.response = self.response, None
        if response is None or not (response["messages"] or self.open is not None):
            self.orphans += 1
            self.report.skipped(kind, "a token count of a response that wrote no assistant message")
            return
        given, cached = figure(last.get("input_tokens")), figure(last.get("cached_input_tokens"))
        uncached = given - cached if given is not None and cached is not None and cached <= given else None
        tokens = stated(uncached, last.get("output_tokens"), cached, None, response["id"])
        for at in response["messages"]:
            self.writer.set_extra(at, TOKEN_USAGE, tokens)
        if self.open is not None:
            self.open["extra"][TOKEN_USAGE] = tokens
            self.open["extra"][TOKEN_COUNT] = info
        else:
            self.writer.set_extra(response["messages"][-1], TOKEN_COUNT, info)
        self.report.extras(kind)

    def _message(self, kind: str, item: Dict[str, Any], ts: Any) -> None:
        role = item.get("role")
        content = _content(item.get("content"))
        if role == "assistant":
            self._flush()
            host = self._open(ts)
            host["content"] = content
            host["kinds"].append(kind)
            self.turn["assistant"] = True
            return
        self._flush()
        self.response = None  # input to the next response
        if not isinstance(role, str):
            self.report.skipped(kind, "a message without a role")
            return
        msg: Dict[str, Any] = {"role": role, "content": content}
        extra: Dict[str, Any] = {}
        if role in ("developer", "system"):
            msg = {"role": "system", "content": content, "sysprompt": True}
            if role == "developer":
                extra["source-role"] = "developer"
        at = self.writer.message(kind, msg, extra, ts)
        if at is None:
            return
        self.report.imported(kind)
        if role == "user":
            self.turn["user"] = True
            if not _text_of(content).lstrip().startswith(_CONTEXT_PREFIXES):
                self.turn_starts.append(at)

    def _event(self, kind: str, ev: Dict[str, Any], ts: Any) -> None:
        etype = ev.get("type")
        if etype in ("user_message", "agent_message"):
            role = "user" if etype == "user_message" else "assistant"
            if self.turn[role]:
                self.report.skipped(kind, "duplicates a response_item message")
                return
            content: Any = as_str(ev.get("message"))
            images = ev.get("images")
            if role == "user" and isinstance(images, list) and images:
                content = [text_part(content)] + [image_part(u) for u in images if isinstance(u, str)]
            self.events.append({"kind": kind, "role": role, "content": content, "ts": ts})
        elif etype == "token_count":
            info = as_dict(ev.get("info"))
            tokens = as_dict(info.get("last_token_usage")).get("input_tokens")
            if isinstance(tokens, int) and not isinstance(tokens, bool):
                self.tokens = tokens  # the last count before a compaction is its tokens-before
            self._token_count(kind, info)
        elif etype == "thread_rolled_back":
            self._flush()
            self.response = None
            self._end_turn()
            self._rollback(kind, ev.get("num_turns"), ts)
        elif etype in _TURN_EDGES:
            self._flush()
            self.response = None
            self._end_turn()
            why = ("an interrupted turn: its unanswered calls stay pending" if etype == "turn_aborted"
                   else "a turn boundary")
            self.report.skipped(kind, why)
        elif etype == "agent_reasoning":
            self.report.skipped(kind, "duplicates a reasoning response_item")
        else:
            self.report.skipped(kind, "a UI event, not part of the conversation")

    def _end_turn(self) -> None:
        """Import the turn's event messages that no response_item message duplicated."""
        for ev in self.events:
            if self.turn.get(ev["role"]):
                self.report.skipped(ev["kind"], "duplicates a response_item message")
                continue
            at = self.writer.message(ev["kind"], {"role": ev["role"], "content": ev["content"]},
                                     {"from-event": True}, ev["ts"])
            if at is not None:
                self.report.imported(ev["kind"])
                if ev["role"] == "user":
                    self.turn_starts.append(at)
        self.events = []
        self.turn = {"user": False, "assistant": False}

    def _rollback(self, kind: str, num: Any, ts: Any) -> None:
        """Codex dropped the last ``num`` user turns: rewind to just before the first of them."""
        if not isinstance(num, int) or isinstance(num, bool) or num < 1:
            self.report.skipped(kind, "num_turns is not a whole number >= 1")
            return
        ids = self.writer.message_ids()
        live = set(ids)
        starts = [s for s in self.turn_starts if s in live]
        if not starts:
            self.report.skipped(kind, "no user turn of the live conversation to roll back")
            return
        first = starts[-num] if num <= len(starts) else starts[0]
        i = ids.index(first)
        if self.writer.rewind(kind, ids[i - 1] if i else None, ts) is not None:
            self.report.imported(kind)
        self.turn_starts = starts[: max(0, len(starts) - num)]

    def _session_meta(self, kind: str, payload: Dict[str, Any], ts: Any) -> None:
        if not self.meta_seen:
            self._fill_meta(payload)
        sections: List[Tuple[str, str]] = []
        for key in ("instructions", "base_instructions", "user_instructions"):
            value = payload.get(key)
            text = value.get("text") if isinstance(value, dict) else value
            if isinstance(text, str) and text:
                sections.append((key.replace("_", "-"), text))
        facts = [(k.replace("_", "-"), v) for k, v in sorted(payload.items())
                 if k not in ("instructions", "base_instructions", "user_instructions")]
        self._flush()
        self.writer.run_context(kind, sections, facts, ts)
        self.report.imported(kind)

    def _turn_context(self, payload: Dict[str, Any], ts: Any) -> None:
        kind = "turn_context"
        self._flush()
        self.response = None
        self._end_turn()
        text = json_text(payload, sort_keys=True, default=str)
        if text == self.context:
            self.report.skipped(kind, "the same as the previous turn's context")
            return
        self.context = text
        sections = [(k.replace("_", "-"), payload[k]) for k in ("user_instructions", "developer_instructions")
                    if isinstance(payload.get(k), str) and payload[k]]
        facts = [(k.replace("_", "-"), v) for k, v in sorted(payload.items())
                 if k not in ("user_instructions", "developer_instructions")]
        self.writer.run_context(kind, sections, facts, ts)
        self.report.imported(kind)
