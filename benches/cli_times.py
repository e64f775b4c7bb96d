"""The command line on a big transcript (issue #6): ``llm-agent-session peek`` and
``show --last 50`` against the library calls they stand on, each in a fresh child
process (interpreter start and imports included on both sides), best of three.

    python benches/cli_times.py [--size 1GB]      # prints the table; run.py includes it
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
import time
from typing import Callable, Dict, List, Optional

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)

import generate  # noqa: E402

ROUNDS = 3

# name -> argv after the interpreter ({path} is the transcript)
COMMANDS = {
    "library peek": ["-c", "import sys; from llm_agent_session import Session; Session.peek(sys.argv[1])", "{path}"],
    "library load": ["-c", "import sys; from llm_agent_session import Session; Session.load(sys.argv[1]).close()",
                     "{path}"],
    "cli peek": ["-m", "llm_agent_session", "peek", "{path}"],
    "cli show --last 50": ["-m", "llm_agent_session", "show", "--last", "50", "{path}"],
    "cli show --raw --last 50": ["-m", "llm_agent_session", "show", "--raw", "--last", "50", "{path}"],
}


def best_of(argv: List[str], env: Dict[str, str], rounds: int = ROUNDS) -> Optional[float]:
    """The shortest wall time of `rounds` runs (output discarded), None if one failed."""
    times = []
    for _ in range(rounds):
        t0 = time.perf_counter()
        done = subprocess.run([sys.executable] + argv, env=env, stdout=subprocess.DEVNULL,
                              stderr=subprocess.PIPE, text=True, timeout=3600)
        times.append(time.perf_counter() - t0)
        if done.returncode != 0:
            print(f"  {' '.join(argv[:4])}: exit {done.returncode}: {done.stderr.strip()[-300:]}")
            return None
    return min(times)


def measure(path: str, env: Dict[str, str]) -> Dict[str, Optional[float]]:
    return {name: best_of([a.replace("{path}", path) for a in argv], env) for name, argv in COMMANDS.items()}


def table(times: Dict[str, Optional[float]], label: str, md_table: Callable[[List[str], List[List[str]]], str]) -> str:
    """Each command's time, and the ratios the issue asks about."""

    def ratio(a: str, b: str) -> Optional[float]:
        x, y = times.get(a), times.get(b)
        return x / y if x and y else None

    rows = [[name, "—" if s is None else f"{s:.2f} s"] for name, s in times.items()]
    out = md_table([f"command ({label}, best of {ROUNDS}, fresh process)", "wall time"], rows)
    checks = [
        ("cli peek / library peek", ratio("cli peek", "library peek"), 1.5),
        ("cli show --raw --last 50 / library peek", ratio("cli show --raw --last 50", "library peek"), 1.5),
        ("cli show --last 50 / library load (show replays)", ratio("cli show --last 50", "library load"), 1.5),
        ("cli show --last 50 / library peek", ratio("cli show --last 50", "library peek"), None),
    ]
    rows = [
        [what, "—" if x is None else f"{x:.2f}x", "—" if bound is None else f"<= {bound}x",
         "—" if x is None or bound is None else ("yes" if x <= bound else "**no**")]
        for what, x, bound in checks
    ]
    return out + "\n\n" + md_table(["ratio", "this run", "wanted", "met"], rows)


def main() -> int:
    from benchutil import child_env, md_table

    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--size", default="1GB")
    args = ap.parse_args()
    size = generate.parse_size(args.size)
    path, stats = generate.cached(size)
    print(f"{generate.size_label(size)}: {stats['size']:,} bytes, {stats['lines']:,} lines")
    print(table(measure(path, child_env()), generate.size_label(size), md_table))
    return 0


if __name__ == "__main__":
    sys.exit(main())
