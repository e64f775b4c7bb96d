"""``export --format markdown``: the conversation as a Markdown document."""

from __future__ import annotations

import json
import re
from typing import Any, Dict, List

from .conversation import Entry, content_text, pretty_arguments, tool_call_parts
from .output import shorten


def fenced(text: str, lang: str = "") -> str:
    """A code block whose fence is longer than any backtick run inside it."""
    longest = max((len(m) for m in re.findall(r"`+", text)), default=0)
    fence = "`" * max(3, longest + 1)
    return f"{fence}{lang}\n{text}\n{fence}"


def quoted(text: str) -> str:
    return "\n".join("> " + line if line else ">" for line in text.split("\n"))


def render(path: str, meta: Dict[str, Any], entries: List[Entry], limit: int) -> str:
    out: List[str] = [f"# Transcript `{path}`", "", fenced(json.dumps(meta, ensure_ascii=False, indent=2, sort_keys=True), "json"), ""]
    for entry in entries:
        m = entry.message
        marks = [k for k, on in (("sysprompt", m.sysprompt), ("sticky", m.sticky)) if on]
        if m.depth is not None:
            marks.append(f"depth {m.depth}")
        head = f"## {m.role}" + (" · compaction summary" if entry.kind == "summary" else "")
        if m.name:
            head += f" ({m.name})"
        if m.tool_call_id:
            head += f" ← `{m.tool_call_id}`"
        if marks:
            head += f" [{', '.join(marks)}]"
        out += [head, "", f"<sub>#{entry.index} `{entry.id}` {entry.ts}</sub>", ""]
        if entry.kind == "summary":
            c = entry.compaction
            fb = " — **fallback**: the summarizer was unreachable, the middle was hard-trimmed" if c.get("fallback") else ""
            out += [
                f"> **Compaction summary** of the conversation through `{c.get('replaces-through-id')}` "
                f"({c.get('tokens-before')} → {c.get('tokens-after')} tokens){fb}",
                ">",
                quoted(content_text(m.content)),
                "",
            ]
        else:
            text = content_text(m.content)
            if entry.elided_by:
                out += [f"> *Elided by `{entry.elided_by}`: the content below is a stub; the original stays in the file.*", ""]
            if m.role == "tool":
                shown, cut = shorten(text, limit)
                note = f"; {cut:,} chars not shown" if cut else ""
                out += [f"<details><summary>Tool result ({len(text):,} chars{note})</summary>", "", fenced(shown), "", "</details>", ""]
            elif text:
                out += [text, ""]
        for call in m.tool_calls or ():
            call_id, name, args = tool_call_parts(call)
            out += [f"**→ call `{name}`** `{call_id}`", "", fenced(pretty_arguments(args), "json"), ""]
        if entry.extras:
            out += ["<sub>" + ", ".join(f"{k}={json.dumps(v, ensure_ascii=False)}" for k, v in sorted(entry.extras.items())) + "</sub>", ""]
    return "\n".join(out)
