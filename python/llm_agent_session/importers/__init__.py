"""Importers: other agents' session files into durable transcripts.

- :mod:`llm_agent_session.importers.claude_code` — Claude Code, ``~/.claude/projects/<project>/<session>.jsonl``
- :mod:`llm_agent_session.importers.codex` — Codex, ``~/.codex/sessions/YYYY/MM/DD/rollout-*.jsonl``

- :mod:`llm_agent_session.importers.detect` — which of the two a file is, by its lines' shape
- :mod:`llm_agent_session.importers.cache` — a source imported into the cache and kept up to
  date as it grows (what ``llm-agent-session view`` shows a session by)

Each format has ``import_transcript(src, out)`` returning an :class:`ImportReport`, and
``import_tree(src_dir, out_dir)`` for a directory. A malformed or unknown source line
never stops an import and never raises: the report says what was imported, kept as
extras or skipped and why, and which lines were malformed. Importing the same source
again brings OUT to what one import of the whole source gives (a session still running),
writing only what that takes, and refuses if the part imported before has changed.
"""

from ._report import ImportReport

FORMATS = ("claude-code", "codex")

__all__ = ["ImportReport", "FORMATS"]
