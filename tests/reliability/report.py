"""Run the reliability battery and rewrite docs/RELIABILITY.md from the figures it records.

    python tests/reliability/report.py                    # fast tier (what the README test command runs)
    python tests/reliability/report.py --long --jobs 2    # the long tier, before a release (~1 hour on 2 cores)

``--jobs N`` runs N test files at once, one pytest each (the long tier's fuzzing alone
takes ~40 minutes, the rest about as long).

Every figure comes from this run; nothing in the document is typed by hand.
"""

from __future__ import annotations

import argparse
import glob
import datetime
import json
import os
import platform
import subprocess
import sys
import tempfile
import time
from typing import Dict, List, Tuple

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


# What the battery does not do, in either tier.
NOT_COVERED = [
    "- A real power cut or kernel crash: power loss is simulated by images derived from a",
    "  reference file (torn, zeroed and junked pages past the last fsync), not by cutting",
    "  power to a disk. File systems tested: the one under the temporary directory and",
    "  tmpfs (for a full disk); not NFS, FUSE or network file systems.",
    "- Sanitizers on the Rust fuzz targets: stable Rust has none (`-s none`); the targets",
    "  run with debug assertions and overflow checks instead.",
]

# Rough minutes a file takes in the long tier on 2 cores; with --jobs, the longest start
# first so the jobs end together. A file missing here counts as one minute.
LONG_MINUTES = {
    "test_fuzzing.py": 42,
    "test_every_cut.py": 11,
    "test_kill_inside.py": 8,
    "test_hostile_input.py": 6,
    "test_power_loss.py": 4,
    "test_random_sigkill.py": 4,
    "test_concurrency.py": 4,
}


def _run_files(files: List[str], jobs: int, env: Dict[str, str], tmp: str, pytest_args: List[str]) -> Tuple[int, List[str]]:
    """pytest over each test file, `jobs` at a time, each with a figures file of its own;
    the figures files come back in file order, so the page reads the same as from one run."""
    order = sorted(files, key=lambda f: -LONG_MINUTES.get(os.path.basename(f), 1))
    figures = {f: os.path.join(tmp, os.path.basename(f) + ".figures.jsonl") for f in files}
    running: List[subprocess.Popen] = []
    status = 0
    for f in order:
        while len(running) >= jobs:  # wait for whichever ends first
            done = [p for p in running if p.poll() is not None]
            if not done:
                time.sleep(0.5)
            for p in done:
                status = max(status, p.returncode)
                running.remove(p)
        command = [sys.executable, "-m", "pytest", f, "-q", "-p", "no:cacheprovider", *pytest_args]
        running.append(subprocess.Popen(command, env=dict(env, LLM_AGENT_SESSION_FIGURES=figures[f]), cwd=ROOT))
    for p in running:
        status = max(status, p.wait())
    return status, [figures[f] for f in sorted(files)]


def _commit() -> str:
    """The commit the battery ran on (with `+changes` when the tree differed from it)."""
    try:
        head = subprocess.run(["git", "rev-parse", "--short", "HEAD"], cwd=ROOT, capture_output=True, text=True)
        dirty = subprocess.run(["git", "status", "--porcelain", "--", "python", "rust", "tests"], cwd=ROOT, capture_output=True, text=True)
    except OSError:
        return "unknown"
    if head.returncode != 0:
        return "unknown"
    return head.stdout.strip() + (" +changes" if dirty.stdout.strip() else "")


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--long", action="store_true", help="run the long tier")
    parser.add_argument("--jobs", type=int, default=1, help="test files run at once (one pytest each); default 1")
    parser.add_argument("pytest_args", nargs="*", help="extra pytest arguments")
    args = parser.parse_args()
    tier = "long" if args.long else "fast"
    with tempfile.TemporaryDirectory() as tmp:
        env = dict(os.environ, LLM_AGENT_SESSION_TIER=tier, LLM_AGENT_SESSION_TEETH="1")
        started = datetime.datetime.now(datetime.timezone.utc)
        commit = _commit()  # what runs is what the tree holds now
        if args.jobs > 1:
            files = sorted(glob.glob(os.path.join(HERE, "test_*.py")))
            returncode, figure_files = _run_files(files, args.jobs, env, tmp, args.pytest_args)
        else:
            figure_files = [os.path.join(tmp, "figures.jsonl")]
            returncode = subprocess.run(
                [sys.executable, "-m", "pytest", HERE, "-q", "-p", "no:cacheprovider", *args.pytest_args],
                env=dict(env, LLM_AGENT_SESSION_FIGURES=figure_files[0]),
                cwd=ROOT,
            ).returncode
        finished = datetime.datetime.now(datetime.timezone.utc)
        rows = []
        for path in figure_files:
            if os.path.exists(path):
                with open(path) as f:
                    rows += [json.loads(r) for r in f]
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
        f"    python tests/reliability/report.py{' --long' if args.long else ''}{f' --jobs {args.jobs}' if args.jobs > 1 else ''}",
        "",
        f"Tier: **{tier}** (`--long` for the long tier). Backends: {backends}. "
        f"Run: {started:%Y-%m-%d %H:%M} UTC, {(finished - started).total_seconds() / 60:.0f} min"
        f", commit {commit}"
        f"{f' ({args.jobs} test files at a time)' if args.jobs > 1 else ''}, on {_machine()}. "
        f"pytest exit status: {returncode} ({'all passed' if returncode == 0 else 'FAILURES: see the run'}).",
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
        *(
            [
                "- This page holds the fast tier (seconds of fuzzing a target, sampled cuts and",
                "  syscalls, 50 SIGKILL cycles, 300 power-loss images). The long tier's figures",
                "  (`--long`: every byte offset, every system call, 1,000 SIGKILL cycles, 10,000",
                "  images, 10 minutes of fuzzing a target, a 256 MB line, 10^7 lines) replace them",
                "  when it is run.",
            ]
            if tier == "fast"
            else []
        ),
        *NOT_COVERED,
        "",
    ]
    os.makedirs(os.path.dirname(DOC), exist_ok=True)
    with open(DOC, "w") as f:
        f.write("\n".join(out))
    print(f"wrote {DOC} ({len(rows)} figures, tier {tier})")
    return returncode


if __name__ == "__main__":
    sys.exit(main())
