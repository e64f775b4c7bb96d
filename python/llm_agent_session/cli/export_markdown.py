"""``export --format markdown``: the conversation as a Markdown document (with ``--all``,
the whole history in file order, marked as the HTML export marks it).

Transcript text never becomes Markdown or HTML: content, arguments and results go in
fenced code blocks whose fence is longer than any backtick run inside, and one-line
fields (roles, names, ids, the file name) in code spans delimited the same way. Many
viewers render raw HTML in Markdown; inside code it is shown as text. Everything passes
through ``visible`` too, since the export is often printed to a terminal.
"""

from __future__ import annotations

import re
from typing import Any, Dict, Iterator, List, Sequence

from ..visible import json_text, visible
from .conversation import (
    Entry,
    compaction_tokens,
    content_text,
    extras_text,
    outcome_mark,
    pretty_arguments,
    removal_note,
    sticky_marks,
    time_span,
    tool_call_parts,
)
from .output import count, shorten
from .whole_history import Row, WholeHistory

_BACKTICKS = re.compile(r"`+")


def _longest_backtick_run(text: str) -> int:
    return max((len(m) for m in _BACKTICKS.findall(text)), default=0)


def fenced(text: str, lang: str = "") -> str:
    """A code block whose fence is longer than any backtick run inside it."""
    text = visible(text, multiline=True)
    fence = "`" * max(3, _longest_backtick_run(text) + 1)
    return f"{fence}{lang}\n{text}\n{fence}"


def inline(text: Any) -> str:
    """A one-line code span that nothing inside can close (CommonMark: a delimiter of
    more backticks than any run inside; spaces pad a value that starts or ends with one)."""
    text = visible(str(text))
    if not text:
        return "` `"
    ticks = "`" * (_longest_backtick_run(text) + 1)
    pad = " " if text.startswith("`") or text.endswith("`") or (text.startswith(" ") and text.endswith(" ")) else ""
    return f"{ticks}{pad}{text}{pad}{ticks}"


def number(value: Any) -> str:
    """A whole number as text; anything else (a hand-edited file) as a code span."""
    return count(value) if isinstance(value, int) and not isinstance(value, bool) else inline(value)


_PLAIN = re.compile(r"[A-Za-z0-9][A-Za-z0-9_.-]*")


def label(text: Any) -> str:
    """A role or name: as it is when it is a plain word, else a code span."""
    text = str(text)
    return text if _PLAIN.fullmatch(text) else inline(text)


def render_entry(entry: Entry, limit: int, note: str = "") -> List[str]:
    m = entry.message
    marks = sticky_marks(m)
    head = f"## {label(m.role)}" + (" · compaction summary" if entry.kind == "summary" else "")
    if m.name:
        head += f" ({label(m.name)})"
    if m.tool_call_id:
        head += f" ← {inline(m.tool_call_id)}"
    mark = outcome_mark(entry.outcome)
    if mark:
        head += f" · **{mark}**"
    if marks:
        head += f" [{', '.join(marks)}]"
    out = [head, "", f"*{entry.place}* {inline(entry.id)} {inline(entry.ts)}", ""]
    if note:
        out += [f"*{note}*", ""]
    if entry.removed:
        out += [f"> *{removal_note(entry.removed, inline)}.*", ""]
    text = content_text(m.content)
    if entry.kind == "summary":
        c = entry.compaction
        fb = " — **fallback**: the summarizer was unreachable, the middle was hard-trimmed" if c.get("fallback") else ""
        out += [
            f"> **Compaction summary** of the conversation through {inline(c.get('replaces-through-id'))} "
            f"({compaction_tokens(c)}){fb}",
            "",
        ]
    if entry.elided_by and entry.shows_original:
        out += [f"> *Elided by {inline(entry.elided_by)}: the original content below is no longer sent to the "
                "model; the stub after it is.*", ""]
    elif entry.elided_by:
        out += [f"> *Elided by {inline(entry.elided_by)}: the content below is a stub; the original stays in the file.*", ""]
    if m.role == "tool" and entry.kind != "summary":
        shown, cut = shorten(text, limit)
        more = f"; {cut:,} chars not shown" if cut else ""
        out += [f"<details><summary>Tool result ({len(text):,} chars{more})</summary>", "", fenced(shown, "text"), "",
                "</details>", ""]
    elif text:
        out += [fenced(text, "text"), ""]
    if entry.shows_original:
        out += ["stub sent instead:", "", fenced(content_text(entry.stub), "text"), ""]
    for call in m.tool_calls or ():
        call_id, name, args = tool_call_parts(call)
        out += [f"**→ call {inline(name)}** {inline(call_id)}", "", fenced(pretty_arguments(args), "json"), ""]
    if entry.extras:
        out += [f"<details><summary>extras: {len(entry.extras):,}</summary>", "",
                fenced(extras_text(entry.extras, limit), "text"), "", "</details>", ""]
    return out


def render_row(row: Row, limit: int) -> List[str]:
    """One line of the whole history."""
    problem = [f"> **not applied** (a load refuses the file here): {inline(row.problem)}", ""] if row.problem else []
    if row.entry is not None:
        return render_entry(row.entry, limit, row.note) + problem
    e = row.event
    out = [f"**{label(e.type)}** {inline(row.note)} *line {row.number:,}* {inline(e.id)} {inline(e.ts)}", "", *problem]
    if row.payload:
        shown, cut = shorten(row.payload, limit)
        more = f"; {cut:,} chars not shown" if cut else ""
        out += [f"<details><summary>payload{more}</summary>", "", fenced(shown, "json"), "", "</details>", ""]
    return out


def _pending(pending: Sequence[Any]) -> List[str]:
    if not pending:
        return []
    return ["## Pending tool operations (may or may not have run)", ""] + [
        f"- {inline(op.tool)} {inline(op.call_id)}: {op.state}, dispatched at {inline(op.dispatched_at)} (op {inline(op.op_id)})"
        for op in pending
    ] + [""]


def _header(path: str, meta: Dict[str, Any], what: str) -> List[str]:
    return [f"# Transcript {inline(path)}", "", what, "", fenced(json_text(meta, indent=2, sort_keys=True), "json"), ""]


def _shown(lines: List[str]) -> str:
    # Every piece is already visible; this pass guards the whole of it.
    return visible("\n".join(lines), multiline=True)


def render(path: str, meta: Dict[str, Any], entries: List[Entry], limit: int, pending: Sequence[Any] = ()) -> str:
    """The live conversation."""
    span = time_span((e.ts for e in entries), inline)
    what = f"{count(len(entries))} messages, as the model would be sent them next" + (f"; {span}" if span else "")
    out = _header(path, meta, what)
    for entry in entries:
        out += render_entry(entry, limit)
    return _shown(out + _pending(pending))


def render_all(path: str, whole: WholeHistory, limit: int) -> Iterator[str]:
    """The whole history in file order (``export --all``), a row at a time."""
    span = time_span((whole.first_ts, whole.last_ts), inline)
    what = (f"The whole history: {len(whole.envelopes):,} lines in file order, {whole.live:,} messages live at the end"
            + (f"; {span}" if span else "")
            + (f"; {whole.problems:,} line(s) a load would refuse" if whole.problems else "") + ".")
    yield _shown(_header(path, whole.meta, what)) + "\n"
    for row in whole.rows():
        yield _shown(render_row(row, limit)) + "\n"
    yield _shown(_pending(whole.pending))
