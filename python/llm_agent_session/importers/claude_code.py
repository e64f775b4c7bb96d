"""Import Claude Code session files into transcripts.

Claude Code keeps one JSONL file per session, ``~/.claude/projects/<project>/<session-uuid>.jsonl``
(subagents under ``<session-uuid>/subagents/agent-<id>.jsonl``; deleted after 30 days unless
``cleanupPeriodDays`` says otherwise). Its lines form a graph (``uuid``/``parentUuid``): a
rewind leaves the abandoned messages as siblings, so the conversation is the branch found
by walking back from the last user or assistant line (through ``logicalParentUuid`` across a
compaction). ``isSidechain`` lines (the subagents of older versions) form graphs of their
own and become transcripts of their own, in ``<out-stem>/sidechains/<first-uuid>.jsonl``
(see ``sidechain_path``). Each envelope's ``ts`` is the source line's ``timestamp``. The
graph is read whole on every import (``_plan``, ``_reconcile``), so an import that resumes
gives what one import of the whole file would, however the live branch moved meanwhile.

    report = import_transcript("~/.claude/projects/p/1234.jsonl", "out/1234.jsonl")
"""

from __future__ import annotations

import hashlib
import os
from functools import partial
from typing import Any, Dict, List, Optional, Set, cast

from .._token_usage import TOKEN_USAGE, stated
from ._driver import Plan, mirror_files, refuse_out_inside, run_files, run_import
from ._parts import as_dict, as_str, image_part, simplest, text_part
from ._plan import Call, Planner
from ._report import ImportReport
from ._source import Line, json_text

FORMAT = "claude-code"
DEFAULT_SOURCE = "~/.claude/projects"

# Lines that are not part of the conversation, and why they are not imported as messages.
_BOOKKEEPING = {
    "file-history-snapshot": "Claude Code's file-undo snapshot, not part of the conversation",
    "progress": "a progress update of a running tool or hook, not part of the conversation",
    "queue-operation": "a prompt queued while the agent was busy; imported when it is sent",
    "last-prompt": "Claude Code's prompt history, not part of the conversation",
    "attachment": "context Claude Code attached (a hook's output, a mentioned file), not a message of its own",
    "content-replacement": "Claude Code's record of content it shortened, not part of the conversation",
}
# Lines whose text names the session: kept in the meta of a new transcript.
_TITLES = {"summary": "summary", "ai-title": "aiTitle", "custom-title": "customTitle"}


def import_transcript(src: Any, out: Any, subagents: bool = True, *, redaction: Any = None) -> ImportReport:
    """Import one Claude Code session file ``src`` into the transcript ``out`` (a new file,
    or one an earlier import made: then what brings it to what one import of the whole
    file gives is appended, usually just what is new). Its sidechains and
    its ``subagents/`` files, when there are any, become transcripts beside ``out``; their
    reports are in ``report["transcripts"]``. ``subagents=False`` leaves the ``subagents/``
    files to the caller (``import_subagent`` each: the viewer imports only those that grew).
    ``redaction``: a ``secrets.Policy`` (docs/secrets.md) applied to everything written."""
    src, out = os.fspath(src), os.fspath(out)
    report = run_import(src, out, FORMAT, lambda lines, rep, first: _Job(src, lines, rep, first, None), redaction)
    roots = report.pop("_sidechains", None)  # from the plan, or (unchanged) from the checkpoint
    if report["status"] == "failed":
        return report
    if not isinstance(roots, list):
        roots = []
        side_dir = os.path.join(_stem_dir(out), "sidechains")
        if report["status"] == "unchanged" and os.path.isdir(side_dir):  # since a version that did not keep them
            roots = [n[: -len(".jsonl")] for n in sorted(os.listdir(side_dir)) if n.endswith(".jsonl")]
    for root in roots:
        if isinstance(root, str):
            path = sidechain_path(out, root)
            report["transcripts"].append(run_import(src, path, FORMAT, _sidechain_job(src, root), redaction))
    sub_dir = os.path.join(_stem_dir(src), "subagents")
    if subagents and os.path.isdir(sub_dir):
        for rel in mirror_files(sub_dir, lambda rel: rel.endswith(".jsonl")):
            child_out = os.path.join(_stem_dir(out), "subagents", rel)
            report["transcripts"].append(import_subagent(os.path.join(sub_dir, rel), child_out, parent_out=out,
                                                         redaction=redaction))
    return report


def _sidechain_job(src: str, root: str) -> Plan:
    return lambda lines, rep, first: _Job(src, lines, rep, first, root)


def import_subagent(src: Any, out: Any, parent_out: Optional[str] = None, *, redaction: Any = None) -> ImportReport:
    """A ``<session>/subagents/agent-<id>.jsonl`` file: a transcript whose meta names its parent."""
    src, out = os.fspath(src), os.fspath(out)
    parent_src = os.path.dirname(os.path.dirname(os.path.abspath(src))) + ".jsonl"
    parent = {"source-path": parent_src}
    if parent_out is not None:
        parent["transcript"] = os.path.relpath(os.path.abspath(parent_out), os.path.dirname(os.path.abspath(out)))
    return run_import(src, out, FORMAT, lambda lines, rep, first: _Job(src, lines, rep, first, None, parent),
                      redaction)


def import_tree(src_dir: Any, out_dir: Any, on_file: Any = None, workers: int = 1, *,
                redaction: Any = None) -> List[ImportReport]:
    """Every session file under ``src_dir`` into the same place under ``out_dir``.
    ``on_file(report, done, total)`` is called after each file. ``workers`` > 1: that many
    processes import files side by side. ValueError if ``out_dir`` is inside ``src_dir``."""
    src_dir, out_dir = os.fspath(src_dir), os.fspath(out_dir)
    refuse_out_inside(src_dir, out_dir)
    files = mirror_files(src_dir, lambda rel: rel.endswith(".jsonl"))
    mains = [rel for rel in files if "subagents" not in rel.split(os.sep)[:-1]]
    main_stems = {rel[: -len(".jsonl")] for rel in mains}
    # A subagent file is imported with its session; only one without a session file on its own.
    work = [rel for rel in files if rel in mains or _owner(rel) not in main_stems]
    calls = [(partial(import_transcript if rel in mains else import_subagent, redaction=redaction),
              (os.path.join(src_dir, rel), os.path.join(out_dir, rel))) for rel in work]
    return run_files(calls, on_file, workers)


def _owner(rel: str) -> str:
    parts = rel.split(os.sep)
    return os.sep.join(parts[: parts.index("subagents")])


def sidechain_path(out: str, root_uuid: str) -> str:
    """Where the sidechain starting at ``root_uuid`` goes: its uuid as the file name, or,
    where the uuid is not a plain name (characters other than letters, digits, ``-`` and
    ``_``, or more than 64 of them), what is left of it and a digest of the whole, so that
    two roots never share a file and a root gets the same file on every run."""
    safe = "".join(c for c in root_uuid if c.isalnum() or c in "-_")[:64] or "sidechain"
    if safe != root_uuid:  # (a plain name has no ".", so it is never taken for one of these)
        safe += "." + hashlib.sha256(root_uuid.encode("utf-8", "surrogatepass")).hexdigest()[:16]
    return os.path.join(_stem_dir(out), "sidechains", safe + ".jsonl")


def _stem_dir(path: str) -> str:
    return path[: -len(".jsonl")] if path.endswith(".jsonl") else path + ".d"


def _kind(obj: Dict[str, Any]) -> str:
    kind = obj.get("type")
    if not isinstance(kind, str):
        return "(no type)"
    if kind == "system" and isinstance(obj.get("subtype"), str):
        return f"system/{obj['subtype']}"
    return kind


def _uuid(obj: Dict[str, Any]) -> Optional[str]:
    u = obj.get("uuid")
    return u if isinstance(u, str) and u else None


def _parent(obj: Dict[str, Any]) -> Optional[str]:
    p = obj.get("parentUuid")
    if p is None and obj.get("type") == "system" and obj.get("subtype") == "compact_boundary":
        p = obj.get("logicalParentUuid")  # the chain goes on across a compaction
    return p if isinstance(p, str) and p else None


def _message(obj: Dict[str, Any]) -> Dict[str, Any]:
    m = obj.get("message")
    return m if isinstance(m, dict) else {}


def _has_tool_result(obj: Dict[str, Any]) -> bool:
    content = _message(obj).get("content")
    return isinstance(content, list) and any(isinstance(b, dict) and b.get("type") == "tool_result" for b in content)


def _is_conversation(obj: Dict[str, Any]) -> bool:
    return obj.get("type") in ("user", "assistant") and _uuid(obj) is not None


class _Graph:
    """The uuid graph of one file: live branches and the sidechain components."""

    def __init__(self, lines: List[Line], report: ImportReport) -> None:
        self.by_uuid: Dict[str, Line] = {}
        for line in lines:
            u = _uuid(line.obj)
            if u is not None:
                self.by_uuid[u] = line  # a uuid written twice: the later line stands
        self.lines = lines
        self.report = report
        self._roots: Dict[int, Line] = {}  # line number -> the root line of its sidechain
        # For the parallel-tool repair below: assistant lines by message.id, and the user
        # lines holding tool results by the assistant line they name as parent.
        self.by_message_id: Dict[str, List[Line]] = {}
        self.results_by_parent: Dict[str, List[Line]] = {}
        for line in lines:
            obj = line.obj
            if obj.get("type") == "assistant":
                mid = _message(obj).get("id")
                if isinstance(mid, str):
                    self.by_message_id.setdefault(mid, []).append(line)
            elif obj.get("type") == "user" and _has_tool_result(obj):
                parent = _parent(obj)
                if parent is not None:
                    self.results_by_parent.setdefault(parent, []).append(line)

    def branch(self, leaf: Optional[Line]) -> List[Line]:
        """From the root to ``leaf``, following parents (a cycle in a damaged file stops it)."""
        chain: List[Line] = []
        seen: Set[str] = set()
        cur = leaf
        while cur is not None:
            u = _uuid(cur.obj)
            if u is None or u in seen:
                break
            seen.add(u)
            chain.append(cur)
            p = _parent(cur.obj)
            if p is None:
                break
            nxt = self.by_uuid.get(p)
            if nxt is None:
                self.report.warn(f"line {cur.number}: its parent {p[:80]} is not in the file; the conversation starts there")
            cur = nxt
        chain.reverse()
        return self._recover_parallel_tools(chain)

    def _recover_parallel_tools(self, chain: List[Line]) -> List[Line]:
        """Put back what one walk up the parents misses, as Claude Code does when it resumes.

        Parallel tool calls are written one assistant line per call (same ``message.id``),
        and each result names its own call's line as parent: the walk keeps one of those
        branches. Older versions also forked a progress line off each call, which the walk
        followed instead of the result. So after each message on the branch come the other
        lines of that message and every result whose parent is one of them, in file order.
        """
        if not chain:
            return chain
        side = bool(chain[0].obj.get("isSidechain"))
        on = {ln.number for ln in chain}
        last_of: Dict[str, int] = {}
        for i, ln in enumerate(chain):
            mid = _message(ln.obj).get("id") if ln.obj.get("type") == "assistant" else None
            if isinstance(mid, str):
                last_of[mid] = i
        out: List[Line] = []
        for i, ln in enumerate(chain):
            out.append(ln)
            mid = _message(ln.obj).get("id") if ln.obj.get("type") == "assistant" else None
            if not isinstance(mid, str) or last_of.get(mid) != i:
                continue
            members = [m for m in self.by_message_id.get(mid, []) if bool(m.obj.get("isSidechain")) == side]
            found = [m for m in members if m.number not in on]
            for m in members:
                u = _uuid(m.obj)
                if u is not None:
                    found.extend(r for r in self.results_by_parent.get(u, []) if r.number not in on)
            for extra in sorted({m.number: m for m in found}.values(), key=lambda m: m.number):
                on.add(extra.number)
                out.append(extra)
        return out

    def sidechain_root(self, line: Line) -> Line:
        """The first line of the sidechain ``line`` is on (remembered for every line walked)."""
        path: List[int] = []
        seen: Set[int] = set()
        cur = line
        while cur.number not in seen:
            known = self._roots.get(cur.number)
            if known is not None:
                cur = known
                break
            seen.add(cur.number)
            path.append(cur.number)
            p = _parent(cur.obj)
            up = self.by_uuid.get(p) if p else None
            if up is None or not up.obj.get("isSidechain"):
                break
            cur = up
        for number in path:
            self._roots[number] = cur
        return cur

    def only_sidechains(self) -> bool:
        """A subagent's own file: every conversation line is marked ``isSidechain``."""
        talk = [ln for ln in self.lines if _is_conversation(ln.obj)]
        return bool(talk) and all(ln.obj.get("isSidechain") for ln in talk)

    def live_leaf(self, root: Optional[str], whole: bool = False) -> Optional[Line]:
        """The last user/assistant line of the main conversation (of any line when
        ``whole``), or of one sidechain."""
        candidate: Line
        for candidate in reversed(self.lines):
            obj = candidate.obj
            if not _is_conversation(obj):
                continue
            if root is None and (whole or not obj.get("isSidechain")):
                return candidate
            if root is not None and obj.get("isSidechain") and _uuid(self.sidechain_root(candidate).obj) == root:
                return candidate
        return None

    def sidechain_roots(self) -> List[str]:
        roots: List[str] = []
        for line in self.lines:
            if line.obj.get("isSidechain") and _is_conversation(line.obj):
                u = _uuid(self.sidechain_root(line).obj)
                if u is not None and u not in roots:
                    roots.append(u)
        return roots


class _Job:
    """One Claude Code file (or one sidechain of it) read into a plan of what one import writes."""

    def __init__(
        self,
        src: str,
        lines: List[Line],
        report: ImportReport,
        first: bool,
        sidechain: Optional[str],
        parent: Optional[Dict[str, Any]] = None,
    ) -> None:
        self.report = report
        self.sidechain = sidechain
        self.first = first
        self.graph = _Graph(lines, report)
        # A subagent's file (agent-<id>.jsonl) is one sidechain through and through: its own conversation.
        self.whole = sidechain is None and self.graph.only_sidechains()
        self.branch = self.graph.branch(self.graph.live_leaf(sidechain, self.whole))
        self.meta = self._meta(src, lines, parent)
        self.meta_time = self.branch[0].obj.get("timestamp") if self.branch else None
        self.checkpoint: Dict[str, Any] = {}
        if sidechain is None and not self.whole:
            roots = self.graph.sidechain_roots()
            report["_sidechains"] = roots
            self.checkpoint["sidechains"] = roots  # for a run that finds the file unchanged
        self.writer = Planner(report)
        self._count_the_rest()
        self._write_branch()
        self.records = self.writer.finish()

    def _meta(self, src: str, lines: List[Line], parent: Optional[Dict[str, Any]]) -> Dict[str, Any]:
        meta: Dict[str, Any] = {"imported-from": FORMAT, "source-path": os.path.abspath(src)}
        first = self.branch[0].obj if self.branch else (lines[0].obj if lines else {})
        for key, name in (("sessionId", "session-id"), ("cwd", "cwd"), ("gitBranch", "git-branch"),
                          ("version", "version"), ("agentId", "agent-id")):
            value = first.get(key)
            if isinstance(value, str) and value:
                meta[name] = value
        if self.sidechain is not None:
            meta["parent"] = {"source-path": os.path.abspath(src), "session-id": meta.get("session-id"),
                              "sidechain-root": self.sidechain}
        elif parent is not None:
            meta["parent"] = dict(parent, **({"session-id": meta["session-id"]} if "session-id" in meta else {}))
        summaries = [as_str(ln.obj.get("summary")) for ln in lines if ln.obj.get("type") == "summary"]
        if any(summaries):
            meta["summaries"] = [s for s in summaries if s]
        for ln in lines:
            field = _TITLES.get(as_str(ln.obj.get("type")))
            if field and field != "summary" and isinstance(ln.obj.get(field), str):
                meta["title"] = ln.obj[field]
        return meta

    def _count(self, line: Line, how: str, reason: str = "") -> None:
        kind = _kind(line.obj)
        if how == "imported":
            self.report.imported(kind)
        elif how == "extras":
            self.report.extras(kind)
        else:
            self.report.skipped(kind, reason)

    # -- writing --------------------------------------------------------------------------------

    def _count_the_rest(self) -> None:
        """Say why each line off the live branch is not imported."""
        on_branch = {ln.number for ln in self.branch}
        for line in self.graph.lines:
            if line.number in on_branch:
                continue
            obj = line.obj
            kind = as_str(obj.get("type"))
            if self.sidechain is None and not self.whole and obj.get("isSidechain"):
                self._count(line, "skipped", "a sidechain (subagent): imported into its own transcript")
            elif self.sidechain is not None and not obj.get("isSidechain"):
                continue  # the main conversation's line; counted in its own report
            elif kind in _TITLES:
                self._count(line, "extras" if self.first else "skipped",
                            "" if self.first else "a title or summary after the first import (meta is written once)")
            elif kind in _BOOKKEEPING:
                self._count(line, "skipped", _BOOKKEEPING[kind])
            elif _uuid(obj) is not None and kind in ("user", "assistant", "system", "attachment"):
                self._count(line, "skipped", "not on the live branch (rewound or abandoned)")
            elif kind in ("user", "assistant"):
                self._count(line, "skipped", "a message without a uuid (it cannot be placed in the conversation)")
            else:
                self._count(line, "skipped", f"unknown record type {kind[:60]!r}" if kind else "no record type")

    def _write_branch(self) -> None:
        groups: Dict[str, List[Line]] = {}
        for ln in self.branch:
            if ln.obj.get("type") == "assistant":
                mid = _message(ln.obj).get("id")
                if isinstance(mid, str):
                    groups.setdefault(mid, []).append(ln)
        compaction: Optional[Dict[str, Any]] = None
        done: Set[str] = set()
        for ln in self.branch:
            obj = ln.obj
            kind = as_str(obj.get("type"))
            if kind == "assistant":
                mid = _message(obj).get("id")
                if isinstance(mid, str):
                    if mid in done:
                        continue  # merged into the message written at its first line, counted there
                    done.add(mid)
                    self._assistant(groups[mid])
                else:
                    self._assistant([ln])
            elif kind == "user":
                compaction = self._user(ln, compaction)
            elif kind == "system" and obj.get("subtype") == "compact_boundary":
                pre = as_dict(obj.get("compactMetadata")).get("preTokens")
                compaction = {"tokens-before": pre if isinstance(pre, int) and not isinstance(pre, bool) else None}
                self._count(ln, "imported")
            elif kind == "system":
                self._count(ln, "skipped", "a Claude Code status line, never sent to the model")
            elif kind in _BOOKKEEPING:
                self._count(ln, "skipped", _BOOKKEEPING[kind])
            else:
                self._count(ln, "skipped", f"unknown record type {as_str(kind)[:60]!r}" if kind else "no record type")

    # -- one record -------------------------------------------------------------------------------

    @staticmethod
    def _extra(obj: Dict[str, Any]) -> Dict[str, Any]:
        return {"source-uuid": obj["uuid"]} if _uuid(obj) else {}

    def _assistant(self, group: List[Line]) -> Optional[int]:
        parts: List[Any] = []
        calls: List[Call] = []
        thinking: List[Any] = []
        other: List[Any] = []
        extra = self._extra(group[0].obj)
        extra["source-uuid"] = _uuid(group[-1].obj)
        if len(group) > 1:
            extra["source-uuids"] = [_uuid(ln.obj) for ln in group]
        requests: List[str] = []
        for ln in group:
            msg = _message(ln.obj)
            content = msg.get("content")
            blocks = [{"type": "text", "text": content}] if isinstance(content, str) else content
            for block in blocks if isinstance(blocks, list) else []:
                if not isinstance(block, dict):
                    other.append(block)
                    continue
                btype = block.get("type")
                if btype == "text" and isinstance(block.get("text"), str):
                    parts.append(text_part(block["text"]))
                elif btype in ("thinking", "redacted_thinking"):
                    thinking.append(block)
                elif btype == "tool_use" and isinstance(block.get("id"), str) and block["id"]:
                    name = as_str(block.get("name")) or "unknown"
                    calls.append((block["id"], name, json_text(block.get("input", {})), ln.obj.get("timestamp")))
                elif btype == "image":
                    parts.append(_image(block) or block)
                else:
                    other.append(block)
            for key, name in (("model", "model"), ("id", "message-id"), ("stop_reason", "stop-reason"),
                              ("usage", "usage")):
                if msg.get(key) is not None:
                    extra[name] = msg[key]
            if isinstance(ln.obj.get("requestId"), str) and ln.obj["requestId"] not in requests:
                requests.append(ln.obj["requestId"])
            if ln.obj.get("isApiErrorMessage"):
                extra["api-error"] = True
        if requests:
            extra["request-id"] = requests[0] if len(requests) == 1 else requests
        tokens = _token_usage(extra.get("usage"), extra.get("message-id"))
        if tokens:
            extra[TOKEN_USAGE] = tokens
        if thinking:
            extra["thinking"] = thinking
        if other:
            extra["other-blocks"] = other
        at = self.writer.assistant("assistant", simplest(parts), calls, extra, group[0].obj.get("timestamp"))
        for ln in group:
            self._count(ln, "imported" if at is not None else "skipped", "" if at is not None else "see the warnings")
        return at

    def _user(self, ln: Line, compaction: Optional[Dict[str, Any]]) -> Optional[Dict[str, Any]]:
        obj = ln.obj
        ts = obj.get("timestamp")
        msg = _message(obj)
        content = msg.get("content")
        extra = self._extra(obj)
        if obj.get("isMeta"):
            extra["is-meta"] = True
        if obj.get("isCompactSummary"):
            text = content if isinstance(content, str) else "\n\n".join(
                b.get("text", "") for b in content if isinstance(b, dict) and isinstance(b.get("text"), str)
            ) if isinstance(content, list) else ""
            # Claude Code states the count before a compaction (preTokens), never the one after.
            self.writer.compaction("user", text, (compaction or {}).get("tokens-before"), None, extra, ts)
            self._count(ln, "imported")
            return None
        blocks = [{"type": "text", "text": content}] if isinstance(content, str) else content
        if not isinstance(blocks, list):
            self._count(ln, "skipped", "a user line without message content")
            return compaction
        rest: List[Any] = []
        result_extra = dict(extra)
        if "toolUseResult" in obj:
            result_extra["tool-use-result"] = obj["toolUseResult"]
        wrote = False
        for block in blocks:
            if isinstance(block, dict) and block.get("type") == "tool_result" and isinstance(block.get("tool_use_id"), str):
                self.writer.tool_result("user", block["tool_use_id"], _result_content(block.get("content")),
                                        bool(block.get("is_error")), result_extra, ts)
                result_extra = dict(extra)  # toolUseResult belongs with the first result of the line
                wrote = True
            else:
                rest.append(_part(block))
        if rest:
            self.writer.message("user", {"role": "user", "content": simplest(rest)}, extra, ts)
            wrote = True
        self._count(ln, "imported" if wrote else "skipped", "" if wrote else "a user line with empty content")
        return compaction


def _token_usage(usage: Any, message_id: Any) -> Dict[str, Any]:
    """The library's ``token-usage`` of a response from Claude Code's ``message.usage`` (the
    last line's: a response streamed one block per line repeats its usage on each line, and
    only the last one's ``output_tokens`` is final) and ``message.id``, the response's id.
    Anthropic's ``input_tokens`` already leaves the cache out, as ``input`` does;
    ``cache_read_input_tokens`` is ``cache-read``, ``cache_creation_input_tokens``
    ``cache-write``; a count that is not a non-negative integer is left out."""
    get = as_dict(usage).get
    return stated(get("input_tokens"), get("output_tokens"), get("cache_read_input_tokens"),
                  get("cache_creation_input_tokens"), message_id)


def _image(block: Dict[str, Any]) -> Optional[Dict[str, Any]]:
    source = block.get("source")
    if not isinstance(source, dict):
        return None
    if source.get("type") == "base64" and isinstance(source.get("data"), str):
        media = source.get("media_type") if isinstance(source.get("media_type"), str) else "image/png"
        return cast(Dict[str, Any], image_part(f"data:{media};base64,{source['data']}"))
    if source.get("type") == "url" and isinstance(source.get("url"), str):
        return cast(Dict[str, Any], image_part(source["url"]))
    return None


def _result_content(content: Any) -> Any:
    if isinstance(content, str) or content is None:
        return content if content is not None else ""
    if not isinstance(content, list):
        return json_text(content)
    parts = [_part(block) for block in content]
    return simplest(parts) if parts else ""


def _part(block: Any) -> Any:
    """A text or image block as a chat content part; anything else as it is."""
    if isinstance(block, dict) and block.get("type") == "text" and isinstance(block.get("text"), str):
        return text_part(block["text"])
    if isinstance(block, dict) and block.get("type") == "image":
        return _image(block) or block
    return block
