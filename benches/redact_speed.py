"""Issue #37: what masking secrets by default costs the outward commands.

Each export format (``openai``, ``markdown``, ``html``, ``otlp``, ``markdown --all``) and
``dataset`` of one transcript, run as the real command in a fresh process, by default
(masked) and with ``--no-redact`` (the code path of the version before: no check), rounds
interleaved; wall and CPU time (the child's user + system) per run, the median of each.
The outputs of both are compared byte for byte (a clean transcript must come out the
same). The side index cache is a directory of the run's own, warmed by a first run.

``python benches/redact_speed.py [FILE] [--rounds 3] [--formats openai,markdown,html,otlp]``;
FILE defaults to a generated 256 MB transcript (``generate.py --size 256MB --seed 1``),
made in a temporary directory when not given.
"""

from __future__ import annotations

import argparse
import filecmp
import os
import resource
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from typing import Dict, List, Tuple

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)

import generate  # noqa: E402

CLI = [sys.executable, "-m", "llm_agent_session"]


def timed(argv: List[str], env: Dict[str, str]) -> Tuple[float, float]:
    """(wall, CPU) seconds of one run of the command."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    started = time.perf_counter()
    done = subprocess.run(CLI + argv, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True,
                          timeout=3600)
    wall = time.perf_counter() - started
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    if done.returncode != 0:
        raise SystemExit(f"{' '.join(argv)} failed ({done.returncode}): {done.stderr[-2000:]}")
    return wall, (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)


def main(argv: List[str]) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("file", nargs="?")
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--formats", default="openai,markdown,html,otlp,markdown-all")
    args = parser.parse_args(argv)
    work = tempfile.mkdtemp(prefix="redact-speed-")
    try:
        path = args.file
        if path is None:
            path = os.path.join(work, "big.jsonl")
            generate.generate(path, 256 << 20, seed=1)
        src = os.path.join(work, "src")
        os.mkdir(src)
        os.symlink(os.path.abspath(path), os.path.join(src, os.path.basename(path)))
        env = dict(os.environ, LLM_AGENT_SESSION_CACHE=os.path.join(work, "cache"))
        jobs: Dict[str, List[str]] = {}
        for fmt in args.formats.split(","):
            name, extra = (fmt[:-4], ["--all"]) if fmt.endswith("-all") else (fmt, [])
            jobs[fmt] = ["export", path, "--format", name, *extra, "-o"]
        jobs["dataset"] = ["dataset", src]
        size = os.path.getsize(path)
        print(f"{path}: {size / 1e6:,.0f} MB; load {os.getloadavg()[0]:.1f}; {args.rounds} rounds interleaved")
        figures: Dict[Tuple[str, str], List[Tuple[float, float]]] = {}
        for k in range(args.rounds + 1):  # round 0 warms the caches and is not counted
            for job, cmd in jobs.items():
                outs = []
                for way, flags in (("masked", []), ("--no-redact", ["--no-redact"])):
                    outs.append(os.path.join(work, f"{job}.{way}.{k}"))
                    got = timed(cmd + [outs[-1]] + flags, env)
                    if k:
                        figures.setdefault((job, way), []).append(got)
                if job != "dataset" and not filecmp.cmp(outs[0], outs[1], shallow=False):
                    print(f"  {job}: the outputs differ (something was masked)")
                for out in outs:
                    shutil.rmtree(out) if os.path.isdir(out) else os.unlink(out)
        print(f"{'job':16} {'masked wall':>12} {'cpu':>7} {'--no-redact wall':>17} {'cpu':>7}")
        for job in jobs:
            row = []
            for way in ("masked", "--no-redact"):
                runs = figures[(job, way)]
                row += [statistics.median(w for w, _ in runs), statistics.median(c for _, c in runs)]
            print(f"{job:16} {row[0]:11.2f}s {row[1]:6.2f}s {row[2]:16.2f}s {row[3]:6.2f}s")
        print(f"load at the end {os.getloadavg()[0]:.1f}")
    finally:
        shutil.rmtree(work, ignore_errors=True)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
