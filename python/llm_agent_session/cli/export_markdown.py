"""``export --format markdown``: the conversation as a Markdown document.

Transcript text never becomes Markdown or HTML: content, arguments and results go in
fenced code blocks whose fence is longer than any backtick run inside, and one-line
fields (roles, names, ids, the file name) in code spans delimited the same way. Many
viewers render raw HTML in Markdown; inside code it is shown as text. Everything passes
through ``visible`` too, since the export is often printed to a terminal.
"""

from __future__ import annotations

import re
from typing import Any, Dict, List

from .conversation import Entry, content_text, pretty_arguments, sticky_marks, tool_call_parts
from .output import count, json_text, shorten, visible

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


def render(path: str, meta: Dict[str, Any], entries: List[Entry], limit: int) -> str:
    out: List[str] = [f"# Transcript {inline(path)}", "", fenced(json_text(meta, indent=2, sort_keys=True), "json"), ""]
    for entry in entries:
        m = entry.message
        marks = sticky_marks(m)
        head = f"## {label(m.role)}" + (" · compaction summary" if entry.kind == "summary" else "")
        if m.name:
            head += f" ({label(m.name)})"
        if m.tool_call_id:
            head += f" ← {inline(m.tool_call_id)}"
        if marks:
            head += f" [{', '.join(marks)}]"
        out += [head, "", f"*#{entry.index:,}* {inline(entry.id)} {inline(entry.ts)}", ""]
        text = content_text(m.content)
        if entry.kind == "summary":
            c = entry.compaction
            fb = " — **fallback**: the summarizer was unreachable, the middle was hard-trimmed" if c.get("fallback") else ""
            out += [
                f"> **Compaction summary** of the conversation through {inline(c.get('replaces-through-id'))} "
                f"({number(c.get('tokens-before'))} → {number(c.get('tokens-after'))} tokens){fb}",
                "",
                fenced(text, "text"),
                "",
            ]
        else:
            if entry.elided_by:
                out += [f"> *Elided by {inline(entry.elided_by)}: the content below is a stub; the original stays in the file.*", ""]
            if m.role == "tool":
                shown, cut = shorten(text, limit)
                note = f"; {cut:,} chars not shown" if cut else ""
                out += [f"<details><summary>Tool result ({len(text):,} chars{note})</summary>", "", fenced(shown, "text"), "",
                        "</details>", ""]
            elif text:
                out += [fenced(text, "text"), ""]
        for call in m.tool_calls or ():
            call_id, name, args = tool_call_parts(call)
            out += [f"**→ call {inline(name)}** {inline(call_id)}", "", fenced(pretty_arguments(args), "json"), ""]
        if entry.extras:
            out += ["extras: " + ", ".join(inline(f"{k}={json_text(v)}") for k, v in sorted(entry.extras.items())), ""]
    # Every piece above is already visible; this pass guards the whole document.
    return visible("\n".join(out), multiline=True)
