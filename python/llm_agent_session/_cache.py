"""Where the library keeps what it can always make again: one directory for every cache.

``LLM_AGENT_SESSION_CACHE``, else the platform's user cache directory's ``llm-agent-session``
(``$XDG_CACHE_HOME`` or ``~/.cache`` on Linux and the BSDs, ``~/Library/Caches`` on macOS,
``%LOCALAPPDATA%`` on Windows). Each user of it has a folder of its own below: the search
across transcripts ``search/``, the side indexes ``index/``, the viewer's imports of Claude Code and Codex sessions
``view-imports/``. Everything in it may be deleted at any time; it is made again when needed.
"""

from __future__ import annotations

import os
import sys

ENV_VAR = "LLM_AGENT_SESSION_CACHE"


def cache_dir() -> str:
    """The cache directory: ``LLM_AGENT_SESSION_CACHE``, else the platform's user cache
    directory's ``llm-agent-session``."""
    named = os.environ.get(ENV_VAR)
    if named:
        return os.path.abspath(named)
    home = os.path.expanduser("~")
    if sys.platform == "darwin":
        base = os.path.join(home, "Library", "Caches")
    elif sys.platform == "win32":
        base = os.environ.get("LOCALAPPDATA") or os.path.join(home, "AppData", "Local")
    else:
        xdg = os.environ.get("XDG_CACHE_HOME", "")
        base = xdg if os.path.isabs(xdg) else os.path.join(home, ".cache")
    return os.path.join(base, "llm-agent-session")
