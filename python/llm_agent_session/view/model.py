"""What the data API answers: the transcripts open now, and each answer as the page reads it.

``Viewer`` is the application's state: the roots and the shelf, and the last few
transcripts asked for, kept open (a peek each; two requests for one transcript wait for
one peek). The functions below make the answers of ``/api/transcript``, ``/api/window``,
``/api/envelope`` and ``/api/follow`` from an open transcript: plain JSON-ready dicts in
which every string from the transcript has been made visible (docs/viewer.md, "The JSON
data API"). The routes (``app.py``) read a request's parameters and call them; the jumps
and the search are the open transcript's own (``Transcript.locate_*``, ``.search``).

Everything from a transcript is masked by the viewer's ``secrets.Redactor`` first (unless
``view --no-redact``): payloads, live messages, raw lines, the meta and the shelf's
titles; ``reveal`` answers one masked finding, by its envelope and fingerprint, for the
local user who asks (docs/secrets.md).
"""

from __future__ import annotations

import json
import threading
from collections import OrderedDict
from typing import Any, Dict, List, Optional

from ..secrets import Redactor
from ..verdict import Verdict
from ..visible import json_visible, visible
from . import render, tokens
from .problems import Problem
from .imports import WORKERS, Imports
from .shelf import NameRefused, Roots, Shelf
from .shelf_row import title_of, verdict_words
from .transcript import Transcript

LIMIT = 20_000  # characters of one value in a window; the rest on request ("more")
MAX_WINDOW = 200  # envelopes in one window
KEEP_OPEN = 3  # transcripts kept open (a 1 GB one holds about 0.2 GB)
TITLE_LOOK = 256  # envelopes looked at for a first prompt, where the meta has no title


class Viewer:
    """What the routes serve: the roots, the shelf, the open transcripts."""

    def __init__(self, roots: Roots, shelf: Optional[Shelf] = None, imports: Optional[Imports] = None,
                 import_workers: int = WORKERS, *, redactor: Optional[Redactor] = None) -> None:
        self.roots = roots
        self.shelf = shelf or Shelf(roots)
        # The Claude Code and Codex sessions under the roots, imported into the cache.
        self.imports = imports or Imports(self.shelf, import_workers)
        # What everything sent to the page is masked with (docs/secrets.md).
        self.redactor = redactor if redactor is not None else Redactor()
        self.open: "OrderedDict[str, Transcript]" = OrderedDict()
        self.lock = threading.Lock()
        self.opening: Dict[str, threading.Lock] = {}

    def transcript(self, link: str) -> Transcript:
        """The open transcript a link names (opened on first use; a source's waits for its
        first import); Problem 403/404."""
        name = self.shelf.name_of(link)
        try:
            with self.lock:
                opened_before = name in self.open
            if not opened_before:  # (a source's transcript is imported before it is opened)
                self.imports.prepare(name)
            path = self.roots.resolve(name)
        except NameRefused as e:
            raise Problem(403, str(e))
        except (OSError, ValueError) as e:
            raise Problem(404, f"no transcript {visible(name)!s}: {visible(str(e))}")
        with self.lock:
            opening = self.opening.setdefault(name, threading.Lock())
        with opening:  # one peek per transcript, however many requests ask at once
            with self.lock:
                found = self.open.get(name)
                if found is not None and found.path == path:
                    self.open.move_to_end(name)
                    return found
            opened = Transcript(name, path, self.redactor)  # outside self.lock: other transcripts go on
            with self.lock:
                self.open[name] = opened
                while len(self.open) > KEEP_OPEN:
                    self.open.popitem(last=False)
            return opened

    def catch_up(self, t: Transcript) -> None:
        """Before a follow: where `t` is a source's import, what its source gained since."""
        self.imports.catch_up(t.name)

    def shelf_rows(self, start: int) -> Dict[str, Any]:
        """``/api/shelf``: the rows from the `start`-th on (the shelf is read from the first ask)."""
        self.shelf.start()
        rows = self.shelf.since(max(start, 0))
        if self.redactor.enabled:
            rows["rows"] = [dict(row, title=self.redactor.text(row["title"])) if isinstance(row.get("title"), str)
                            else row for row in rows["rows"]]
        return rows


def renderer(t: Transcript, limit: int = LIMIT) -> render.Renderer:
    """A renderer of `t`'s envelopes with what its history knows (nothing yet, before it is
    read), and its envelopes around each (a tool call's card, a run of bookkeeping)."""
    return render.Renderer(t.history, t.removals(), limit, t.envelope, t.card_homes, t.redactor)


def info(t: Transcript, note: Optional[str] = None) -> Dict[str, Any]:
    """``/api/transcript``: what the page shows above the list, and what is ready (`note`:
    what its import says, for a source's: ``Imports.note``)."""
    used = tokens.of_session(t.path)  # the session's, each response once (before `ready` is read below)
    with t.lock:  # one state of it: a whole read taking over a preview is never seen halfway
        generation, count, size, end, ready, preview = t.generation, t.count, t.size, t.end, t.ready, t.preview
        read_meta = t.meta
    v = t.verdict
    state = t.live()
    meta = t.redactor.value(read_meta)
    return {
        "name": visible(t.name),
        "generation": generation,
        "count": count,
        "size": size,
        "end": end,
        "meta": json.loads(json_visible(json.dumps(meta, ensure_ascii=False))),
        "title": t.redactor.value(title_of(read_meta, (t.envelope(i) for i in range(min(count, TITLE_LOOK))))),
        "tokens": used,
        # Whether secrets are masked, and how many the file holds (None: not counted yet).
        "redacted": t.redactor.enabled,
        "secrets": t.secrets,
        "warnings": len(t.warnings),
        "first_warnings": [visible(w) for w in t.warnings[:20]],
        "error": visible(t.error) if t.error else None,
        "note": note,
        "ready": ready,
        "preview": preview,
        "verdict": None if v is None else _verdict(v),
        "live": None if state is None else len(state.ids),
        # pending(): not every operation's state (a native read would build them all)
        "pending": None if t.history is None else len(t.history.pending()),
        "problems": None if t.history is None else [
            {"i": p.index, "id": visible(p.id), "reason": visible(p.reason)} for p in t.history.problems[:20]],
    }


def _verdict(v: Verdict) -> Dict[str, Any]:
    """Load's verdict in the shelf's words (``kind`` as the dataset names it, ``code`` the
    exit code check returns for it)."""
    text, why = verdict_words(v)
    return {"kind": v.kind.value, "code": v.kind.number, "text": text, "why": why}


def window(t: Transcript, start: int, count: int, mode: str = "history") -> Dict[str, Any]:
    """``/api/window``: the envelopes ``[start, start + count)`` (at most ``MAX_WINDOW``),
    or with `mode` ``live`` the messages of the live conversation there."""
    count = min(max(count, 0), MAX_WINDOW)
    r = renderer(t)
    if mode == "live":
        return _live_window(t, r, start, count)
    if mode != "history":
        raise Problem(400, "mode is history or live")
    # Whether the history was read before these were made (their badges of what removed,
    # elided or settled them): a page that knows it is read asks again for one made before.
    history = t.history is not None
    items = [r.envelope(i, e) for i, e in t.window(start, count)]
    tokens.mark(t.path, items, t.envelope)
    return {"ready": True, "count": t.count, "items": items, "generation": t.generation, "history": history}


def with_window(t: Transcript, found: Dict[str, Any], count: int) -> Dict[str, Any]:
    """``/api/locate``'s answer `found` with, where it found an envelope and `count` > 0,
    the window of `count` (at most ``MAX_WINDOW``) that holds it, from a multiple of
    `count`, as the page asks for windows: a jump's envelope comes with its answer, one
    round trip rather than two."""
    i = found.get("i")
    if count <= 0 or not isinstance(i, int):
        return found
    count = min(count, MAX_WINDOW)
    return dict(found, window=window(t, i // count * count, count))


def _live_window(t: Transcript, r: render.Renderer, start: int, count: int) -> Dict[str, Any]:
    state = t.live()
    if state is None:
        return {"ready": False, "count": None, "items": []}
    with t.lock:
        ids, messages = list(state.ids[start:start + count]), list(state.messages[start:start + count])
        total = len(state.ids)
    items = []
    for offset, (entry_id, message) in enumerate(zip(ids, messages)):
        items.append(r.live(start + offset, entry_id, message, _is_compaction(t, entry_id)))
    return {"ready": True, "count": total, "items": items, "generation": t.generation}


def _is_compaction(t: Transcript, entry_id: str) -> bool:
    i = t.index_of_id(entry_id, scan=False)
    return i is not None and t.envelope(i).type == "compaction"


def position_of(t: Transcript, envelope_id: str) -> int:
    """The position of the envelope `envelope_id` in `t`; Problem 404 where there is none."""
    i = t.index_of_id(envelope_id)
    if i is None:
        raise Problem(404, "no envelope with that id in this transcript")
    return i


def envelope(t: Transcript, i: int, full: bool = False) -> Dict[str, Any]:
    """``/api/envelope``: the envelope at position `i` as in a window (`full`: nothing shortened)."""
    _must_hold(t, i)
    item = renderer(t, 0 if full else LIMIT).envelope(i, t.envelope(i))
    tokens.mark(t.path, [item], t.envelope)
    return item


def raw_line(t: Transcript, i: int) -> Dict[str, Any]:
    """``/api/envelope?raw=1``: the line of the envelope at position `i`, as it is in the file."""
    _must_hold(t, i)
    return {"i": i, "raw": json_visible(t.redactor.line(t.line(i)).decode("utf-8", "replace"))}


def reveal(t: Transcript, i: int, fingerprint: str) -> Dict[str, Any]:
    """``/api/reveal``: the one secret the marker with `fingerprint` masks in the envelope
    at position `i`, or on the tool call cards it shows (their dispatch's arguments and
    result come from envelopes of their own): the local user asked to see it. Problem 404
    where there is none."""
    _must_hold(t, i)
    if t.redactor.enabled:
        for at in [i] + _card_parts(t, i):
            event = t.envelope(at)
            found = t.redactor.reveal(event.type, event.payload, fingerprint)
            if found is not None:
                rule, secret = found
                return {"i": at, "rule": rule, "fingerprint": fingerprint, "secret": visible(secret, multiline=True)}
    raise Problem(404, "no such masked secret in that envelope")


def _card_parts(t: Transcript, i: int) -> List[int]:
    """The positions of the envelopes the cards of envelope `i` are made of, as drawn."""
    drawn = renderer(t).envelope(i, t.envelope(i))
    return [at for block in drawn["body"] if isinstance(block.get("call"), dict)
            for _, _, at in block["call"].get("parts", []) if isinstance(at, int) and 0 <= at < t.count]


def _must_hold(t: Transcript, i: int) -> None:
    if not 0 <= i < t.count:
        raise Problem(404, f"no envelope at {i}: the transcript holds {t.count:,}")


def follow(t: Transcript) -> Dict[str, Any]:
    """``/api/follow``: read what was appended since (``Session.peek`` from the last end,
    with the file's identity): the new count, and a new generation where the file was replaced."""
    t.refresh()
    state = t.live()
    return {"count": t.count, "generation": t.generation, "size": t.size, "ready": t.ready,
            "live": None if state is None else len(state.ids)}
