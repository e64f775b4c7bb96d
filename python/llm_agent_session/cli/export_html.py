"""``export --format html``: one self-contained page (inline CSS, no network, printable).

Tool results and extras sit in ``<details>`` (collapsed on screen, opened for printing);
compaction summaries and elision stubs are boxed and labelled as what they are, a failed
tool result is marked failed. With ``--all`` the page is the whole history in file order
(``whole_history.py``): compacted and rewound messages marked by what removed them, an
elided message's original with its stub, and every other line as what it did.
"""

from __future__ import annotations

import base64
import hashlib
from html import escape
from typing import Any, Dict, Iterator, List, Sequence, Tuple

from ..visible import json_text, visible
from .conversation import (
    Entry,
    RewoundGroup,
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
from .output import shorten
from .whole_history import Row, WholeHistory

CSS = """
:root { --fg:#1d1f23; --muted:#6a6f78; --line:#dcdfe4; --bg:#fbfbfc; }
* { box-sizing: border-box; }
body { font: 15px/1.5 system-ui, -apple-system, "Segoe UI", sans-serif; color: var(--fg);
       background: var(--bg); max-width: 60rem; margin: 2rem auto; padding: 0 1rem; }
h1 { font-size: 1.4rem; margin: 0 0 .25rem; word-break: break-all; }
.sub, .id, .extras { color: var(--muted); font-size: .85rem; }
pre { white-space: pre-wrap; word-wrap: break-word; margin: .25rem 0; font: 13px/1.45 ui-monospace, "SFMono-Regular", Menlo, monospace; }
.msg { background: #fff; border: 1px solid var(--line); border-left: 4px solid var(--muted);
       border-radius: 6px; padding: .6rem .9rem; margin: .8rem 0; page-break-inside: avoid; }
.role { font-weight: 700; text-transform: uppercase; letter-spacing: .04em; font-size: .8rem; }
.role-system { border-left-color: #9b4dca; } .role-system .role { color: #9b4dca; }
.role-user { border-left-color: #2e8b57; } .role-user .role { color: #2e8b57; }
.role-assistant { border-left-color: #1e6fb8; } .role-assistant .role { color: #1e6fb8; }
.role-tool { border-left-color: #b8860b; } .role-tool .role { color: #b8860b; }
.content { white-space: pre-wrap; word-wrap: break-word; margin: .3rem 0; }
.call { background: #f3f6fa; border-radius: 4px; padding: .3rem .6rem; margin: .3rem 0; }
.call-name { font-family: ui-monospace, monospace; font-weight: 600; }
details.tool-result summary { cursor: pointer; color: var(--muted); }
details.tool-result .preview { font-family: ui-monospace, monospace; font-size: .8rem; margin-left: .5rem; }
details[open].tool-result .preview { display: none; }
.compaction { background: #eef3ff; border: 1px dashed #1e6fb8; }
.note { font-size: .85rem; font-weight: 600; padding: .2rem .5rem; border-radius: 4px; display: inline-block; margin: .2rem 0; }
.compaction-note { background: #dbe6ff; color: #143d73; }
.elision-note { background: #fde8e8; color: #8a1c1c; }
.elided .content, .elided pre { color: #8a1c1c; font-style: italic; }
.rewound, .compacted { opacity: .7; border-style: dashed; }
.rewound-note, .compacted-note { background: #f0f0f0; color: #444; }
.failed { border-left-color: #c0392b; }
.failed-note { background: #fde8e8; color: #8a1c1c; }
.stub { border-top: 1px dashed var(--line); margin-top: .4rem; }
.stub pre { color: #8a1c1c; font-style: italic; }
.event { font-size: .85rem; color: var(--muted); margin: .3rem 0 .3rem .9rem; }
.event .kind { font-family: ui-monospace, monospace; font-weight: 600; color: var(--fg); }
.problem-note { background: #fde8e8; color: #8a1c1c; }
.rewound-group { margin: .6rem 0; }
.pending { background: #fff7e0; border: 1px solid #e0b000; border-radius: 6px; padding: .5rem .9rem; }
@media print {
  body { background: #fff; margin: 0; max-width: none; }
  details > * { display: block; }
  details summary { list-style: none; }
  .msg { border-color: #999; }
}
"""

# Printing shows collapsed <details> open (no network: this is the page's only script).
SCRIPT = "window.addEventListener('beforeprint',function(){document.querySelectorAll('details').forEach(function(d){d.open=true;});});"
# Defence in depth behind the escaping: the page may run only that script, load nothing
# (no images, no fonts, no frames: a transcript cannot make the reader's browser call out).
CSP = (
    "default-src 'none'; style-src 'unsafe-inline'; "
    f"script-src 'sha256-{base64.b64encode(hashlib.sha256(SCRIPT.encode()).digest()).decode()}'; "
    "base-uri 'none'; form-action 'none'"
)


def esc(text: Any, multiline: bool = False) -> str:
    """Transcript text as HTML text: escaped (quotes too), and with control, bidi and
    invisible characters shown as ``visible`` shows them (they could reorder or hide
    text on the page as on a terminal)."""
    return escape(visible(str(text), multiline))


def _pre(text: str, cls: str = "") -> str:
    return f'<pre class="{cls}">{esc(text, True)}</pre>' if cls else f"<pre>{esc(text, True)}</pre>"


def role_class(role: str) -> str:
    """A CSS class for a role: only the four known roles get their colour."""
    return f"role-{role}" if role in ("system", "user", "assistant", "tool") else "role-other"


def render_entry(entry: Entry, limit: int, note: str = "") -> str:
    m = entry.message
    classes = ["msg", role_class(m.role)]
    if entry.kind == "summary":
        classes.append("compaction")
    if entry.elided_by:
        classes.append("elided-original" if entry.shows_original else "elided")
    if entry.removed:
        classes.append("rewound" if entry.removed.kind == "rewind" else "compacted")
    mark = outcome_mark(entry.outcome)
    if entry.failed:
        classes.append("failed")
    marks = sticky_marks(m)
    head = f'<span class="role">{esc(m.role)}</span>'
    if entry.kind == "summary":
        head += ' <span class="role kind">· compaction summary</span>'
    if m.name:
        head += f" ({esc(m.name)})"
    if m.tool_call_id:
        head += f' <span class="id">← {esc(m.tool_call_id)}</span>'
    if mark:
        head += f' <span class="note failed-note">{escape(mark)}</span>'
    if marks:
        head += f' <span class="id">[{escape(", ".join(marks))}]</span>'
    head += f' <span class="id">{escape(entry.place)} {esc(entry.id)} {esc(entry.ts)}</span>'
    parts = [f'<article class="{" ".join(classes)}" id="m-{esc(entry.id)}">', f'<div class="head">{head}</div>']
    if entry.kind == "summary":
        c = entry.compaction
        fb = " — fallback: the summarizer was unreachable, the middle was hard-trimmed" if c.get("fallback") else ""
        parts.append(
            f'<div class="note compaction-note">Compaction summary of the conversation through '
            f'{esc(c.get("replaces-through-id"))} ({esc(compaction_tokens(c))}){escape(fb)}</div>'
        )
    if note:
        parts.append(f'<div class="sub">{esc(note)}</div>')
    if entry.removed:
        kind = "rewound" if entry.removed.kind == "rewind" else "compacted"
        parts.append(f'<div class="note {kind}-note">{esc(removal_note(entry.removed))}</div>')
    if entry.elided_by and entry.shows_original:
        parts.append(
            f'<div class="note elision-note">Elided by {esc(entry.elided_by)}: the original content below is '
            "no longer sent to the model; the stub after it is</div>"
        )
    elif entry.elided_by:
        parts.append(
            f'<div class="note elision-note">Elided by {esc(entry.elided_by)}: the content below is a stub; '
            "the original stays in the transcript file</div>"
        )
    text = content_text(m.content)
    if m.role == "tool":
        shown, cut = shorten(text, limit)
        more = f"; {cut:,} chars not shown (export with --full)" if cut else ""
        preview = " ".join(text[:200].split())
        preview = preview if len(preview) <= 90 else preview[:89] + "…"
        parts.append(
            f'<details class="tool-result"><summary>Tool result: {len(text):,} chars{escape(more)}'
            f' <span class="preview">{esc(preview)}</span></summary>{_pre(shown)}</details>'
        )
    elif text:
        parts.append(f'<div class="content">{esc(text, True)}</div>')
    if entry.shows_original:
        parts.append(f'<div class="stub"><span class="sub">stub sent instead:</span>{_pre(content_text(entry.stub))}</div>')
    for call in m.tool_calls or ():
        call_id, name, args = tool_call_parts(call)
        parts.append(
            f'<div class="call">→ call <span class="call-name">{esc(name)}</span> '
            f'<span class="id">{esc(call_id)}</span>{_pre(pretty_arguments(args))}</div>'
        )
    if entry.extras:
        parts.append(
            f'<details class="extras"><summary>extras: {esc(", ".join(sorted(entry.extras)))}</summary>'
            f"{_pre(extras_text(entry.extras, limit))}</details>"
        )
    parts.append("</article>")
    return "\n".join(parts)


def render_rewound(group: RewoundGroup, limit: int) -> str:
    """What one rewind cut, where the conversation went back from, open (not hidden)."""
    where = f"back to {esc(group.to_id)}" if group.to_id is not None else "back to the start"
    return "\n".join(
        [f'<details class="rewound-group" open><summary class="sub">{len(group.entries):,} message(s) '
         f"rewound by {esc(group.rewind_id)} at {esc(group.ts)} ({where})</summary>"]
        + [render_entry(e, limit) for e in group.entries]
        + ["</details>"]
    )


def render_row(row: Row, limit: int) -> str:
    """One line of the whole history."""
    problem = (f'<div class="note problem-note">not applied (a load refuses the file here): {esc(row.problem)}</div>'
               if row.problem else "")
    if row.entry is not None:
        return render_entry(row.entry, limit, row.note) + problem
    e = row.event
    payload = ""
    if row.payload:
        shown, cut = shorten(row.payload, limit)
        more = f"; {cut:,} chars not shown" if cut else ""
        payload = f"<details><summary>payload{escape(more)}</summary>{_pre(shown)}</details>"
    return (
        f'<div class="event" id="m-{esc(e.id)}"><span class="kind">{esc(e.type)}</span> {esc(row.note)} '
        f'<span class="id">line {row.number:,} {esc(e.id)} {esc(e.ts)}</span>{problem}{payload}</div>'
    )


def _pending(pending: Sequence[Any]) -> List[str]:
    if not pending:
        return []
    return (['<div class="pending"><strong>Pending tool operations</strong> (may or may not have run)<ul>']
            + [f"<li>{esc(op.tool)} [{esc(op.call_id)}]: {esc(op.state)}, dispatched at {esc(op.dispatched_at)} "
               f'<span class="id">op {esc(op.op_id)}</span></li>' for op in pending]
            + ["</ul></div>"])


def _page(path: str, meta: Dict[str, Any], what: str) -> Tuple[str, str]:
    """The page around the body: (everything before it, everything after it)."""
    title = f"Transcript {path}"
    head = [
        '<!DOCTYPE html>\n<html lang="en">\n<head>\n<meta charset="utf-8">',
        '<meta name="viewport" content="width=device-width, initial-scale=1">',
        f'<meta http-equiv="Content-Security-Policy" content="{escape(CSP)}">',
        f"<title>{esc(title)}</title>\n<style>{CSS}</style>\n</head>\n<body>",
        "<header>",
        f"<h1>{esc(title)}</h1>",
        f'<div class="sub">{esc(what)}</div>',
        f'<details class="meta"><summary class="sub">session meta</summary>{_pre(json_text(meta, indent=2, sort_keys=True))}</details>',
        "</header>",
        "<main>",
    ]
    return "\n".join(head) + "\n", f"</main>\n<script>{SCRIPT}</script>\n</body>\n</html>\n"


def render(
    path: str,
    meta: Dict[str, Any],
    entries: List[Entry],
    pending: List[Any],
    limit: int,
    rewound: Sequence[RewoundGroup] = (),
) -> str:
    """The live conversation, with what rewinds cut beside it (marked)."""
    span = time_span(e.ts for e in entries)
    what = f"{len(entries):,} messages, as the model would be sent them next" + (f"; {span}" if span else "")
    body: List[str] = []
    # A rewind's group goes right after the message the conversation went back to, when that
    # is still live; to the top for a rewind to the start; else after the conversation.
    live = {e.id for e in entries}
    first: List[RewoundGroup] = []
    after: Dict[str, List[RewoundGroup]] = {}
    last: List[RewoundGroup] = []
    for group in rewound:
        if group.to_id is None:
            first.append(group)
        elif group.to_id in live:
            after.setdefault(group.to_id, []).append(group)
        else:
            last.append(group)
    body += [render_rewound(g, limit) for g in first]
    for e in entries:
        body.append(render_entry(e, limit))
        body += [render_rewound(g, limit) for g in after.get(e.id, ())]
    body += [render_rewound(g, limit) for g in last]
    top, bottom = _page(path, meta, what)
    return top + "\n".join(body + _pending(pending)) + "\n" + bottom


def render_all(path: str, whole: WholeHistory, limit: int) -> Iterator[str]:
    """The whole history in file order (``export --all``), a row at a time."""
    span = time_span((whole.first_ts, whole.last_ts))
    what = (f"the whole history: {len(whole.envelopes):,} lines in file order, {whole.live:,} messages live at the end"
            + (f"; {span}" if span else "")
            + (f"; {whole.problems:,} line(s) a load would refuse" if whole.problems else ""))
    top, bottom = _page(path, whole.meta, what)
    yield top
    for row in whole.rows():
        yield render_row(row, limit) + "\n"
    yield "\n".join(_pending(whole.pending))
    yield bottom
