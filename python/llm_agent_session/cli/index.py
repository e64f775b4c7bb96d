"""``index``: build or refresh the side index of each transcript under PATH (files and
directories, searched for ``*.jsonl``), so that the next load, peek, check or stats of
it reads only what was appended since. A cron job's way to keep a fleet's indexes
warm; the transcripts are only read.
"""

from __future__ import annotations

import argparse
import os
from typing import Any, Callable, Dict, Iterator, List, Tuple

from .. import _index
from ..visible import json_text
from .exit_codes import FAILED, NOT_A_TRANSCRIPT, OK
from .output import Out

DESCRIPTION = """Build or refresh the side index of each transcript under PATH (files, or
directories searched recursively for *.jsonl): where every envelope is and what load's
replay holds at the end, kept in the user's cache (LLM_AGENT_SESSION_CACHE, else the
platform's cache directory), never beside the transcript. The next Session.load, peek,
check or stats of a transcript reads only what was appended since; an index that no
longer describes its file is never used. The transcripts are only read: a file being
written has its unfinished last line left for next time. Safe to run any time (a cron
job keeps a fleet's indexes warm); an index is a cache, safe to delete."""

EXIT_CODES = {
    OK: "every transcript is indexed (or was already)",
    FAILED: "some could not be indexed (a load would fail, the cache cannot be written): each line says why",
    NOT_A_TRANSCRIPT: "a PATH is missing, not a transcript, or a directory holding none",
}

DONE = (_index.INDEXED, _index.REFRESHED, _index.UP_TO_DATE)


def add_parser(add: Callable[..., Any], common: argparse.ArgumentParser) -> None:
    p = add("index", EXIT_CODES, parents=[common], help="build or refresh the side index of transcripts (a cache)",
            description=DESCRIPTION)
    p.add_argument("paths", nargs="+", metavar="PATH", help="a transcript, or a directory searched for *.jsonl")
    p.add_argument("--json", action="store_true",
                   help="print one JSON line a transcript: path, status, detail, index (its file)")


def transcripts(path: str) -> Iterator[str]:
    """The ``*.jsonl`` files under the directory `path`, in name order, not following
    symbolic links to directories (nor into ``<stem>.artifacts``)."""
    for top, dirs, files in os.walk(path):
        dirs[:] = sorted(d for d in dirs if not d.endswith(".artifacts"))
        for name in sorted(files):
            if name.endswith(".jsonl"):
                yield os.path.join(top, name)


def run(args: argparse.Namespace, out: Out) -> int:
    results: List[Tuple[str, str, str]] = []
    missing = False
    for path in args.paths:
        if os.path.isdir(path):
            found = [(p, *_index.update(p)) for p in transcripts(path)]
            # Under a directory, a *.jsonl that is no transcript is passed over.
            found = [r for r in found if r[1] != _index.NOT_A_TRANSCRIPT]
            if not found:
                missing = True
                results.append((path, _index.NOT_A_TRANSCRIPT, "a directory holding no transcript"))
            results += found
        else:
            status, detail = _index.update(path)
            missing = missing or status == _index.NOT_A_TRANSCRIPT
            results.append((path, status, detail))
    for path, status, detail in results:
        if args.json:
            row: Dict[str, Any] = {"path": path, "status": status, "detail": detail}
            row["index"] = _index.index_file(path) if status in DONE else None
            out.stream.write(json_text(row, sort_keys=True) + "\n")
        else:
            style = "ok" if status in DONE else "error"
            out.line((status, style), f": {path}" + ("" if status in DONE else f": {detail}"))
    if missing:
        return NOT_A_TRANSCRIPT
    return OK if all(status in DONE for _, status, _ in results) else FAILED
