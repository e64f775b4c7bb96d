"""The command line: ``llm-agent-session`` (also ``python -m llm_agent_session``).

``demo`` runs the scripted crash-and-resume; the other subcommands (peek, show, tail,
check, repair, salvage, fork, stats, export) live in :mod:`llm_agent_session.cli`.
"""

from __future__ import annotations

import sys
from typing import List, Optional


def main(argv: Optional[List[str]] = None) -> int:
    argv = sys.argv[1:] if argv is None else argv
    if argv[:1] == ["_demo-child"]:  # the demo's own child process, not a user command
        from .demo import child_main

        return child_main(argv[1:])
    from .cli import main as cli_main

    return cli_main(argv)


if __name__ == "__main__":
    sys.exit(main())
