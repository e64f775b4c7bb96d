"""The command line: ``llm-agent-session demo`` (also ``python -m llm_agent_session demo``)."""

from __future__ import annotations

import argparse
import sys
from typing import List, Optional


def main(argv: Optional[List[str]] = None) -> int:
    argv = sys.argv[1:] if argv is None else argv
    if argv[:1] == ["_demo-child"]:  # the demo's own child process, not a user command
        from .demo import child_main

        return child_main(argv[1:])
    parser = argparse.ArgumentParser(
        prog="llm-agent-session",
        description="The durable, resumable JSONL transcript of an LLM agent run.",
    )
    sub = parser.add_subparsers(dest="command", required=True)
    demo = sub.add_parser("demo", help="run a scripted agent, kill it with SIGKILL mid-write, resume it")
    demo.add_argument("--dir", help="where to write the transcript (default: a new temp directory)")
    args = parser.parse_args(argv)
    if args.command == "demo":
        from .demo import main as demo_main

        return demo_main(args.dir)
    parser.error(f"unknown command {args.command}")
    return 2


if __name__ == "__main__":
    sys.exit(main())
