"""``show``: the conversation as the model would be sent it next, or every envelope (``--raw``).

Each message is headed by its role, marks (compaction summary, failed tool result, sticky),
index, id and time (the envelope's ``ts``). Extras are named, not printed, unless
``--extras``; then each is shortened like a tool result, so a shortened result is never
printed again in full through the source's copy of it (``tool-use-result``).
"""

from __future__ import annotations

import argparse
import json
from typing import Any, List, Optional

from .. import Event
from .advice import command
from .conversation import (
    Entry,
    annotate,
    compaction_tokens,
    content_text,
    extras_text,
    outcome_mark,
    pretty_arguments,
    sticky_marks,
    tool_call_parts,
)
from .output import CliError, Out, shorten
from .reading import open_read_only, peek_transcript, require_file

ROLE_STYLES = {"system": "role.system", "user": "role.user", "assistant": "role.assistant", "tool": "role.tool"}


def select(ids: List[str], last: Optional[int], from_id: Optional[str], path: str, what: str) -> range:
    """The index range that --from ID and --last N pick out of `ids` (N counts from the end of it)."""
    start = 0
    if from_id is not None:
        try:
            start = ids.index(from_id)
        except ValueError:
            raise CliError(
                f"{path}: no {what} has id {from_id!r}"
                + (f"; a compacted message is no longer in the conversation (`{command('show', '--raw', path)}` "
                   "lists every envelope)" if what == "message" else ""),
                1,
            ) from None
    stop = len(ids)
    if last is not None:
        start = max(start, stop - last)
    return range(start, stop)


def render_entry(out: Out, entry: Entry, limit: int, extras: bool = False) -> None:
    msg = entry.message
    role_style = ROLE_STYLES.get(msg.role, "role.other")
    head: List[Any] = [(f"── {msg.role}", role_style)]
    if entry.kind == "summary":
        head.append((" · compaction summary", "summary"))
    if msg.name:
        head.append((f" ({msg.name})", role_style))
    if msg.tool_call_id:
        head.append((f" ← {msg.tool_call_id}", "call"))
    mark = outcome_mark(entry.outcome)
    if mark:
        head.append((f" · {mark}", "error"))
    marks = sticky_marks(msg)
    if marks:
        head.append((f" [{', '.join(marks)}]", "dim"))
    head.append((f"  #{entry.index:,} {entry.id}" + (f"  {entry.ts}" if entry.ts else ""), "id"))
    out.line(*head)
    if entry.kind == "summary":
        c = entry.compaction
        fb = "; FALLBACK: the summarizer was unreachable, the middle was hard-trimmed" if c.get("fallback") else ""
        out.line(
            "   ",
            (f"[compaction summary of the conversation through {c.get('replaces-through-id')}: "
             f"{compaction_tokens(c)}{fb}]", "summary"),
        )
    if entry.elided_by:
        out.line("   ", (f"[elided by {entry.elided_by}: the content below is a stub; the original stays in the file]", "elided"))
    text = content_text(msg.content)
    if text:
        style = "elided" if entry.elided_by else None
        if msg.role == "tool" and limit:
            shown, cut = shorten(text, limit)
            out.block(shown, style, "   ")
            if cut:
                out.line("   ", (f"… {cut:,} more chars ({len(text):,} in all; --full shows everything)", "dim"))
        else:
            out.block(text, style, "   ")
    elif msg.content is None and not msg.tool_calls:
        out.line("   ", ("(no content)", "dim"))
    for call in msg.tool_calls or ():
        call_id, name, args = tool_call_parts(call)
        out.line("   ", ("→ call ", "dim"), (name, "call"), (f"  {call_id}", "id"))
        out.block(pretty_arguments(args), None, "       ")
    if not entry.extras:
        return
    if not extras:
        out.line("   ", (f"extras: {', '.join(sorted(entry.extras))} (--extras shows them)", "extra"))
        return
    out.block(extras_text(entry.extras, limit, " (--full shows everything)"), "extra", "   ")


def show_conversation(args: argparse.Namespace, out: Out) -> int:
    with open_read_only(args.file) as opened:
        s = opened.session
        if opened.note:
            out.line(("# " + opened.note, "warn"))
        messages = s.messages
        ids = s.message_ids
        rows = select(ids, args.last, args.from_id, args.file, "message")
        entries = annotate(s.events, ids, messages, rows.start, rows.stop)
        pending = s.pending_tool_operations()
    if rows.start > 0:
        out.line((f"# {rows.start:,} earlier message(s) not shown", "dim"))
    limit = 0 if args.full else args.max_chars
    for entry in entries:
        render_entry(out, entry, limit, args.extras)
    for op in pending:
        out.line((f"# pending tool operation {op.op_id}: {op.tool} [{op.call_id}] is {op.state} "
                  f"(dispatched at {op.dispatched_at})", "warn"))
    return 0


def render_envelope(out: Out, number: int, e: Event, limit: int, rewound_by: Optional[str] = None) -> None:
    mark = (f"  · rewound by {rewound_by}: no longer in the conversation", "warn") if rewound_by else ""
    out.line((f"── {number:,} {e.type}", "key"), mark, (f"  {e.id}  {e.ts}", "id"))
    text = json.dumps(e.payload, ensure_ascii=False, indent=2, sort_keys=True)
    if limit:
        shown, cut = shorten(text, limit)
        out.block(shown, "dim" if e.type == "session-meta" else None, "   ")
        if cut:
            out.line("   ", (f"… {cut:,} more chars ({len(text):,} in all; --full shows everything)", "dim"))
    else:
        out.block(text, None, "   ")


def show_raw(args: argparse.Namespace, out: Out) -> int:
    """Every envelope in file order, from a peek (no replay, no lock, nothing written)."""
    require_file(args.file)
    view = peek_transcript(args.file, survey=True)  # the survey names the messages a rewind cut
    envelopes = view["envelopes"]
    rewound = view["survey"]["rewound"]
    count = len(envelopes)
    if args.from_id is not None:
        # Index only what is needed: find the id, then print from there.
        start = next((i for i in range(count) if envelopes[i].id == args.from_id), None)
        if start is None:
            raise CliError(f"{args.file}: no envelope has id {args.from_id!r}", 1)
    else:
        start = 0
    if args.last is not None:
        start = max(start, count - args.last)
    limit = 0 if args.full else args.max_chars
    for i in range(start, count):
        e = envelopes[i]
        render_envelope(out, i + 1, e, limit, rewound.get(e.id))
    for w in view["warnings"]:
        out.line(("# warning: " + w, "warn"))
    if view["pending"]:
        out.line((f"# an unfinished last line of {view['pending']:,} bytes follows (torn, or a writer mid-line)", "warn"))
    return 0


def run(args: argparse.Namespace, out: Out) -> int:
    return show_raw(args, out) if args.raw else show_conversation(args, out)
