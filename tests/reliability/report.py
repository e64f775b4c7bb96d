"""Run the reliability battery and rewrite docs/RELIABILITY.md from the figures it records.

    python tests/reliability/report.py            # fast tier (what the README test command runs)
    python tests/reliability/report.py --long     # the long tier, before a release

Every figure comes from this run; nothing in the document is typed by hand.
"""

from __future__ import annotations

import argparse
import datetime
import json
import os
import platform
import subprocess
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))
DOC = os.path.join(ROOT, "docs", "RELIABILITY.md")


def _machine() -> str:
    cpu = "unknown CPU"
    try:
        with open("/proc/cpuinfo") as f:
            for row in f:
                if row.startswith("model name"):
                    cpu = row.split(":", 1)[1].strip()
                    break
    except OSError:
        pass
    return f"{cpu}, {os.cpu_count()} cores, Linux {platform.release()}, Python {platform.python_version()}"


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--long", action="store_true", help="run the long tier")
    parser.add_argument("pytest_args", nargs="*", help="extra pytest arguments")
    args = parser.parse_args()
    tier = "long" if args.long else "fast"
    with tempfile.TemporaryDirectory() as tmp:
        figures = os.path.join(tmp, "figures.jsonl")
        env = dict(os.environ, LLM_AGENT_SESSION_FIGURES=figures, LLM_AGENT_SESSION_TIER=tier, LLM_AGENT_SESSION_TEETH="1")
        started = datetime.datetime.now(datetime.timezone.utc)
        run = subprocess.run(
            [sys.executable, "-m", "pytest", os.path.join(HERE), "-q", "-p", "no:cacheprovider", *args.pytest_args],
            env=env,
            cwd=ROOT,
        )
        rows = []
        if os.path.exists(figures):
            with open(figures) as f:
                rows = [json.loads(r) for r in f]
    import llm_agent_session

    backends = ", ".join(llm_agent_session._backend.available())
    out = [
        "# Reliability: the figures",
        "",
        "What an append returned from is never lost, and no file is made worse by reading it.",
        "The battery in `tests/reliability/` crashes and fails the library on purpose, on every",
        "backend, and records what happened. Every figure below is from one run of the command",
        "under it; regenerate the whole page with",
        "",
        f"    python tests/reliability/report.py{' --long' if args.long else ''}",
        "",
        f"Tier: **{tier}** (`--long` for the long tier). Backends: {backends}. "
        f"Run: {started:%Y-%m-%d %H:%M} UTC on {_machine()}. "
        f"pytest exit status: {run.returncode} ({'all passed' if run.returncode == 0 else 'FAILURES: see the run'}).",
        "",
    ]
    areas: dict = {}
    for row in rows:  # grouped by area, in the order areas first report
        areas.setdefault(row["area"], []).append(row)

    def cell(value: object) -> str:
        return str(value).replace("|", "\\|")

    for area, group in areas.items():
        out += ["", f"## {area}", "", "| figure | value | target |", "|---|---|---|"]
        out += [f"| {cell(r['figure'])} | {cell(r['value'])} | {cell(r['target'])} |" for r in group]
    out += [
        "",
        "## Not covered yet",
        "",
        "- Coverage-guided fuzzing in the fast tier is a smoke run (seconds a target); the",
        "  10 minutes a target are the long tier's (`--long`).",
        "- The long tier as a whole (`--long`): run so far for the kill-inside tests only.",
        "",
    ]
    os.makedirs(os.path.dirname(DOC), exist_ok=True)
    with open(DOC, "w") as f:
        f.write("\n".join(out))
    print(f"wrote {DOC} ({len(rows)} figures, tier {tier})")
    return run.returncode


if __name__ == "__main__":
    sys.exit(main())
