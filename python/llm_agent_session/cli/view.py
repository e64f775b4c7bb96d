"""``view``: browse transcripts in a browser (issue #25); the server is ``llm_agent_session.view``.

Kept in its own module, with its own parser, so the command line's dispatch only names it.
The viewer's packages are the ``view`` extra, imported only here, when the command runs.
"""

from __future__ import annotations

import argparse
import contextlib
import os
import sys
import threading
from typing import Callable, Dict, List, NoReturn, Optional

from ..visible import visible
from .arguments import whole_number
from .exit_codes import FAILED, INTERRUPTED, NOT_A_TRANSCRIPT, OK, USAGE
from .output import CliError, Out

DESCRIPTION = """Browse transcripts in a browser: a shelf of every transcript under PATH
(files and directories, searched recursively for *.jsonl transcripts, each directory
once: a link back to one already walked is not followed), and each one's
whole history in file order, with search, jumps, deep links and live follow. It starts a
local web server (read-only, loopback only) and prints the URL to open as the first line
of its output: the URL carries a per-run token after #, which the page keeps in its tab
(never a cookie) and sends with each request.
Stop it with Ctrl-C. The JSON data API the page uses is in docs/viewer.md.

Claude Code sessions and Codex rollouts under PATH (known by their lines, wherever they
are: ~/.claude/projects, ~/.codex/sessions, a copy, one session file) are shown too, as
they are written: each is imported into the cache (LLM_AGENT_SESSION_CACHE, else the user
cache directory, under llm-agent-session/view-imports; nothing is written beside the
source), in the background, the most recent first, and imported again as it grows (only
what is new), so an open session follows the agent within a second or two.
--clear-cache deletes those imports (the next view makes them again)."""

EPILOG = """examples:
  llm-agent-session view run.jsonl
  llm-agent-session view ~/transcripts --no-browser --port 8765
  llm-agent-session view ~/.claude/projects ~/.codex/sessions
  llm-agent-session view --clear-cache

needs the view extra: pip install 'llm-agent-session[view]'"""

EXIT_CODES: Dict[int, Optional[str]] = {
    OK: "stopped with Ctrl-C (its normal way to stop) or SIGTERM",
    FAILED: "the server failed (the port is taken, the address cannot be bound)",
    NOT_A_TRANSCRIPT: "no transcript found under PATH (nor a Claude Code or Codex session), or a PATH cannot be read",
    INTERRUPTED: None,  # Ctrl-C is how it stops: 0
}

PACKAGES = (("starlette", "starlette"), ("uvicorn", "uvicorn"), ("markdown_it", "markdown-it-py"))


def add_parser(add: Callable[..., argparse.ArgumentParser], common: argparse.ArgumentParser) -> None:
    p = add("view", EXIT_CODES, parents=[common], help="browse transcripts in a browser (a local read-only web server)",
            description=DESCRIPTION + "\n\n" + EPILOG)
    p.add_argument("paths", nargs="*", metavar="PATH",
                   help="transcript files and/or directories of them (Claude Code and Codex sessions too)")
    p.add_argument("--port", type=whole_number(0), default=0, metavar="N", help="the port (default: a free one)")
    p.add_argument("--host", default=None, metavar="ADDRESS",
                   help="listen on this address instead of 127.0.0.1, one a browser can name: this machine's "
                        "address on a network (a warning: others on it can then reach the viewer; they still need "
                        "the token); a wildcard (0.0.0.0, ::), or anything else a browser cannot name as given "
                        "(a port, a path, a space), is refused with the reason")
    p.add_argument("--no-browser", action="store_true", help="print the URL only; do not open a browser")
    p.add_argument("--clear-cache", action="store_true",
                   help="delete the imports of Claude Code and Codex sessions the viewer keeps in the cache "
                        "(and say where they were), then view PATH if one is given")
    p.add_argument("--no-redact", action="store_true",
                   help="send secrets to the page as they are (by default what the secret rules find is masked, "
                        "each with a reveal button for one at a time; docs/secrets.md)")


def missing_packages() -> List[str]:
    """The view extra's packages that cannot be imported here."""
    missing = []
    for module, package in PACKAGES:
        try:
            __import__(module)
        except ImportError:
            missing.append(package)
    return missing


IMPORT_HINT = ("to import sessions this version does not recognise: llm-agent-session import claude-code|codex "
               "SRC OUT, then view OUT")


def _check(paths: List[str]) -> Optional[str]:
    """The one transcript to open straight into, or None for the shelf; CliError(3) when a
    PATH cannot be read or holds no transcript (nor a Claude Code or Codex session)."""
    from ..view.shelf import Found, Roots, look

    for path in paths:
        if not os.path.exists(path):
            raise CliError(f"{path}: no such file or directory", 3)
        if not os.access(path, os.R_OK):
            raise CliError(f"{path}: not readable (permission denied)", 3)
        if os.path.isfile(path):
            try:
                kind = look(path)
            except OSError as e:
                raise CliError(f"{path}: cannot be read: {e.strerror or e}", 3)
            if kind is None:
                raise CliError(f"{path}: not a transcript (its first line that is not blank is not a session-meta "
                               "envelope), nor a Claude Code or Codex session (its first lines are not theirs); "
                               + IMPORT_HINT, 3)
    found: List[Found] = []
    unreadable: List[Found] = []
    for entry in Roots(paths).walk():
        (found if entry.unreadable is None else unreadable).append(entry)
        if len(found) > 1:
            break
    if not found:
        why = "".join(f"; {e.name}: {e.unreadable}" for e in unreadable[:3])
        others = _other_jsonl(paths)
        hint = (f"; {others} other *.jsonl file(s) there are neither; " + IMPORT_HINT) if others else ""
        raise CliError("no transcript under " + ", ".join(paths) + " (a transcript is a *.jsonl file whose "
                       "first line is a session-meta envelope), nor a Claude Code or Codex session"
                       + visible(why + hint), 3)
    if len(found) == 1 and not unreadable and len(paths) == 1 and os.path.isfile(paths[0]):
        return found[0].name
    return None


def _other_jsonl(paths: List[str], limit: int = 10_000) -> int:
    """How many *.jsonl (and .jsonl.zst) files are under the directories of `paths` (a
    count up to `limit`): where no transcript or session was found, they are what
    ``import`` might read."""
    count = 0
    for path in paths:
        for _, _, names in os.walk(path) if os.path.isdir(path) else ():
            count += sum(1 for n in names if n.endswith((".jsonl", ".jsonl.zst")))
            if count >= limit:
                return count
    return count


def _clear_cache(out: Out, aside: bool) -> None:
    """Delete the viewer's imports and say so (`aside`: on stderr, the URL is stdout's first line)."""
    from ..importers import cache

    try:
        where, files, size = cache.clear()
    except OSError as e:
        raise CliError(f"cannot clear the viewer's imports: {e.strerror or e}", FAILED)
    said = (f"deleted {where}: {files:,} file(s), {size / 1e6:,.1f} MB" if files else
            f"nothing to delete: {where} holds no imports")
    if aside:
        print(visible(said), file=sys.stderr)
    else:
        out.line(said)


def run(args: argparse.Namespace, out: Out) -> int:
    if not args.paths and not args.clear_cache:
        raise CliError("say which transcripts to view: view PATH... (or view --clear-cache)", USAGE)
    if args.clear_cache:
        _clear_cache(out, aside=bool(args.paths))
        if not args.paths:
            return OK
    missing = missing_packages()
    if missing:
        raise CliError("the viewer needs the view extra, which is not installed here (missing: "
                       + ", ".join(missing) + "): pip install 'llm-agent-session[view]'", 1)
    from ..view.security import PolicyRefused, listening_host, only_this_machine

    try:  # before anything is bound: an address no browser can name is a usage error
        host = listening_host(args.host)
    except PolicyRefused as e:
        raise CliError(visible(str(e)), USAGE)
    paths = [os.path.expanduser(p) for p in args.paths]
    single = _check(paths)
    if not only_this_machine(host):
        print(visible(f"warning: listening on {host}: anyone who can reach this address and has the URL's "
                      "token can read these transcripts"), file=sys.stderr)
    from ..view.server import serve

    try:
        code = serve(paths, host, args.port, not args.no_browser, single, out.stream, redact=not args.no_redact)
    except OSError as e:
        raise CliError(f"cannot serve on {host}:{args.port}: {e.strerror or e}", 1)
    except KeyboardInterrupt:
        code = OK
    _leave(code)


def _leave(code: int) -> NoReturn:
    """End the process once the server has stopped, without the interpreter's finalization.

    The viewer's passes over a whole file run on daemon threads, often inside the native
    core with the GIL let go. CPython (3.9-3.13) ends a daemon thread that takes the GIL
    back during finalization with ``pthread_exit``, whose unwinding through the core's
    frames aborted the process (SIGABRT, "FATAL: exception not rethrown"): four Ctrl-C in
    five sent as a 16 MB transcript opened. What the viewer writes is written whole (an
    index by atomic replace, its leftovers removed later), so nothing is lost; the threads
    the interpreter would wait for (an index being written) are waited for here."""
    for thread in threading.enumerate():
        if not thread.daemon and thread is not threading.current_thread():
            thread.join()
    for stream in (sys.stdout, sys.stderr):
        with contextlib.suppress(OSError, ValueError):  # a reader gone, a stream closed
            stream.flush()
    os._exit(code)
