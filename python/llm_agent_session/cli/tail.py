"""``tail``: the last envelopes of a transcript, and with ``-f`` every one appended after.

Following uses ``Session.peek(offset=end, identity=...)``, so each poll reads only what
is new. When a repair renames a new file over the path, peek restarts from the top; the
new file is a prefix of the old, so what was already printed is skipped, not repeated.
"""

from __future__ import annotations

import argparse
import time
from typing import Dict, Optional, Sequence

from .. import Event, Session
from ..visible import json_visible
from .conversation import canonical_line, envelope_summary
from .output import Out
from .reading import peek_transcript, require_file

POLL_SECONDS = 0.2


def print_envelopes(
    out: Out, envelopes: Sequence[Event], start: int, as_json: bool, rewound: Optional[Dict[str, str]] = None
) -> None:
    """One line per envelope; a message a later rewind cut is marked (`rewound`: its id ->
    the rewind's, from peek's survey)."""
    for i in range(start, len(envelopes)):
        e = envelopes[i]
        if as_json:
            out.stream.write(json_visible(canonical_line(e)) + "\n")
            continue
        by = rewound.get(e.id) if rewound else None
        mark = (f"  [rewound by {by}]", "warn") if by is not None else ""
        out.line((e.ts[11:23] + " ", "dim"), (f"{e.type:<15}", "key"), " ", envelope_summary(e), mark, (f"  {e.id}", "id"))
    out.stream.flush()


def run(args: argparse.Namespace, out: Out) -> int:
    require_file(args.file)
    view = peek_transcript(args.file, survey=True)  # the survey names the messages a rewind cut
    envelopes = view["envelopes"]
    print_envelopes(out, envelopes, max(0, len(envelopes) - args.lines), args.json, view["survey"]["rewound"])
    if not args.follow:
        return 0
    # What has been printed, to recognise it after a restart: the count and the last id.
    count = len(envelopes)
    last_id = envelopes[count - 1].id if count else None
    end, identity = view["end"], view["identity"]
    missing = False
    try:
        while True:
            time.sleep(POLL_SECONDS)
            step = Session.peek(args.file, offset=end, identity=identity)
            if "error" in step and step["identity"] is None:
                if not missing:
                    out.line(("# the file is gone; waiting for it to come back (Ctrl-C to stop)", "warn"))
                    out.stream.flush()
                    missing = True
                continue
            missing = False
            new = step["envelopes"]
            skip = 0
            if step["restarted"]:
                found = already_shown(new, count, last_id)
                if found is None:
                    out.line(("# the file was replaced by a different one; printing it from the top", "warn"))
                    skip, count = 0, 0
                else:
                    out.line(("# the file was replaced (a repair?); carrying on after what was already shown", "dim"))
                    skip = count = found
            print_envelopes(out, new, skip, args.json)
            count += len(new) - skip
            if len(new) > skip:
                last_id = new[len(new) - 1].id
            end, identity = step["end"], step["identity"]
    except KeyboardInterrupt:
        return 0


def already_shown(new: Sequence[Event], count: int, last_id: Optional[str]) -> Optional[int]:
    """How many of `new` were printed before a restart (a repair keeps a verbatim prefix)."""
    if last_id is None:
        return 0
    if count <= len(new) and new[count - 1].id == last_id:
        return count
    for i in range(len(new)):  # not where expected: look for it
        if new[i].id == last_id:
            return i + 1
    return None
