"""``search``: every transcript under some PATHs searched for a text, hits printed as found
(``llm_agent_session.search_many``, the library's search across transcripts)."""

from __future__ import annotations

import argparse
import sys
from typing import Any, Callable, Dict, List, Optional

from ..search_many import DEFAULT_GROUPS, Found, Hit, SearchCache, search_many
from ..search import GROUPS
from ..visible import json_text, visible
from .advice import PROG
from .arguments import whole_number
from .exit_codes import FAILED, NOT_A_TRANSCRIPT, OK
from .output import CliError, Out

DESCRIPTION = """Search every transcript under PATH (files, and directories searched recursively for
*.jsonl transcripts as the viewer's shelf finds them) for TEXT, and print each envelope
that holds it as it is found: the file and line, the envelope's time and kind, and the
string around the text. The order is the walk's (PATHs in the order given, each directory
depth first in name order), each transcript's hits in file order.

TEXT is found as the viewer's search finds it: within one string's characters (not a
key, not the letters of an escape such as the n of a newline written \\n), or a number as
Python writes it; in what was said, tool calls and tool results (--extras: everywhere in
the envelope). Case counts unless -i, which folds ASCII letters only (as a browser's find
does: É does not find é). There is no --regex: the search runs over the bytes of each
file as written, which a regular expression would have to decode first.

A search for a text searched before reads only what changed: a transcript unchanged since
is not read, one that grew is read from where it ended (the cache is in
LLM_AGENT_SESSION_CACHE, else the user cache directory, under llm-agent-session/search;
--no-cache neither reads nor writes it)."""

EPILOG = """examples:
  llm-agent-session search OPENSSL_DIR ~/transcripts
  llm-agent-session search -i "permission denied" runs/ --limit 20
  llm-agent-session search call_7f3a runs/ --extras --json | jq .id"""

EXIT_CODES: Dict[int, Optional[str]] = {
    OK: "at least one envelope holds TEXT (and every transcript could be searched)",
    FAILED: "none does (as grep says 1: nothing found; nothing else fails with 1 here)",
    NOT_A_TRANSCRIPT: "a PATH is missing or cannot be read, a file or directory under one cannot be read, "
                      "or a FILE given is not a transcript (each is named on stderr; the hits found elsewhere "
                      "are printed all the same, and this code wins over 0 and 1, as grep's 2 does)",
}


ROLES = ("system", "user", "assistant", "tool")  # those with a style of their own (output.STYLES)


def add_parser(add: Callable[..., argparse.ArgumentParser], common: argparse.ArgumentParser) -> None:
    p = add("search", EXIT_CODES, parents=[common], help="search every transcript under PATH for TEXT",
            description=DESCRIPTION + "\n\n" + EPILOG)
    p.add_argument("text", metavar="TEXT", help="the text to find (as it reads, not as JSON writes it)")
    p.add_argument("paths", nargs="+", metavar="PATH", help="transcript files and/or directories of them")
    p.add_argument("-i", "--ignore-case", action="store_true", help="fold ASCII letters (A finds a)")
    p.add_argument("--extras", action="store_true",
                   help="also in message extras, the meta, grants and the rest of each envelope")
    p.add_argument("--limit", type=whole_number(1), metavar="N", help="stop after N hits")
    p.add_argument("--json", action="store_true",
                   help="one JSON object a line for each hit: path, line, offset, id, ts, type, role, groups, "
                        "snippet, match (the text's span in snippet); with --count, path and hits")
    p.add_argument("-c", "--count", action="store_true",
                   help="only the number of hits of each transcript that has some (read faster: no line is "
                        "read again for its details)")
    p.add_argument("--no-cache", action="store_true", help="neither read nor write the search cache")


def run(args: argparse.Namespace, out: Out) -> int:
    if not args.text:
        raise CliError("TEXT is empty: give the text to find", 2)
    cache = None if args.no_cache else SearchCache.on_disk()
    groups = GROUPS if args.extras else DEFAULT_GROUPS
    search = search_many(args.text, args.paths, ignore_case=args.ignore_case, groups=groups, limit=args.limit,
                         details=0 if args.count else None, cache=cache)
    problems = hits = 0
    counted: Optional[Found] = None  # --count: the transcript being counted (its first Found)
    count = 0
    try:
        for found in search:
            if found.problem is not None:
                problems += 1
                sys.stdout.flush()
                print(visible(f"{PROG} search: {found.path}: {found.problem}"), file=sys.stderr)
                continue
            hits += len(found.hits)
            if args.count:  # a transcript's hits come in one Found or several in a row
                if counted is not None and (found.root, found.relative) != (counted.root, counted.relative):
                    _print_count(out, counted.path, count, args.json)
                    count = 0
                counted = found
                count += len(found.hits)
                continue
            for hit in found.hits:
                _print_hit(out, hit, args.json)
        if counted is not None:
            _print_count(out, counted.path, count, args.json)
    finally:
        search.cancel()
        if cache is not None:
            cache.save()
    if problems:
        return NOT_A_TRANSCRIPT
    return OK if hits else FAILED


def _print_count(out: Out, path: str, count: int, as_json: bool) -> None:
    if as_json:
        out.stream.write(json_text({"path": path, "hits": count}) + "\n")
    else:
        out.line((path, "key"), f": {count:,}")


def _print_hit(out: Out, hit: Hit, as_json: bool) -> None:
    if as_json:
        out.stream.write(json_text(_hit_json(hit)) + "\n")
        return
    kind = hit.role if hit.role is not None else hit.type or "?"
    style = ("role." + kind if kind in ROLES else "role.other") if hit.role is not None else "id"
    parts: List[Any] = [(hit.path, "key"), f":{hit.line if hit.line is not None else '?'}: ",
                        (hit.ts or "", "dim"), " ", (kind, style), ": "]
    if hit.snippet is None or hit.match is None:
        parts.append(("(the line changed since it was searched)", "warn"))
    else:
        start, end = hit.match
        parts += [hit.snippet[:start], (hit.snippet[start:end], "error"), hit.snippet[end:]]
    out.line(*parts)


def _hit_json(hit: Hit) -> Dict[str, Any]:
    return {"path": hit.path, "line": hit.line, "offset": hit.offset, "id": hit.id, "ts": hit.ts,
            "type": hit.type, "role": hit.role, "groups": list(hit.groups), "snippet": hit.snippet,
            "match": list(hit.match) if hit.match is not None else None}
