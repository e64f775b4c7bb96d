"""``History.read`` beside ``Session.load``, per backend, each job in a fresh process.

    python benches/history_read.py --sizes 256MB,1GB [--backends native,pure] [--rounds 3]
    python benches/history_read.py --paths /data/a.jsonl,/data/b.jsonl

For each transcript (generated and cached as the other benchmarks do, realistic corpus,
or given by ``--paths``) and each job, a child process runs the job ``--rounds`` times
and reports its best wall time and its best CPU time (``time.process_time``: every
thread, steadier on a shared machine); another runs it once for its peak RSS
(``VmHWM``: one read a process, so the peak is that read's). Jobs: native
``Session.load`` + ``close`` (the yardstick), ``History.read`` (payloads kept, and not:
the viewer's) on each backend asked for. The pure backend runs once, and is left out
past ``--pure-max`` (default 256MB: its 1 GB read takes minutes).
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
from typing import Any, Callable, Dict, List, Optional, Tuple

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)

import generate  # noqa: E402

CHILD = r"""
import json, sys, time
from llm_agent_session import Session
from llm_agent_session.history import History
path, job, rounds = sys.argv[1], sys.argv[2], int(sys.argv[3])

def load():
    Session.load(path).close()

fn = {
    "load": load,
    "history": lambda: History.read(path),
    "history-facts": lambda: History.read(path, keep_payloads=False),
}[job]
best = [float("inf"), float("inf")]
for _ in range(rounds):
    c0, w0 = time.process_time(), time.perf_counter()
    fn()
    best = [min(best[0], time.perf_counter() - w0), min(best[1], time.process_time() - c0)]
with open("/proc/self/status") as f:
    hwm = next((int(l.split()[1]) * 1024 for l in f if l.startswith("VmHWM:")), 0)
print(json.dumps({"wall": best[0], "cpu": best[1], "rss": hwm}))
"""


def run_job(path: str, job: str, backend: str, rounds: int) -> Optional[Dict[str, float]]:
    env = dict(os.environ, LLM_AGENT_SESSION_BACKEND=backend)
    p = subprocess.run([sys.executable, "-c", CHILD, path, job, str(rounds)],
                       env=env, capture_output=True, text=True)
    if p.returncode != 0:
        print(p.stderr[-2000:], file=sys.stderr)
        return None
    result: Dict[str, float] = json.loads(p.stdout.strip().splitlines()[-1])
    return result


def measure(paths: List[Tuple[str, str]], backends: List[str], rounds: int,
            pure_max: int) -> List[Dict[str, Any]]:
    rows = []
    for label, path in paths:
        size, load_avg = os.path.getsize(path), os.getloadavg()[0]
        jobs = [("load", "native")] + [
            (job, b) for b in backends if b != "pure" or size <= pure_max for job in ("history", "history-facts")]
        results = {}
        for job, backend in jobs:
            timed = run_job(path, job, backend, 1 if backend == "pure" else rounds)
            once = timed if backend == "pure" or rounds == 1 else run_job(path, job, backend, 1)
            if timed is not None and once is not None:
                results[(job, backend)] = dict(timed, rss=once["rss"])
        rows.append({"label": label, "bytes": size, "load_avg": load_avg, "results": results})
        print(f"  {label}: done", flush=True)
    return rows


def table(rows: List[Dict[str, Any]], md_table: Callable[[List[str], List[List[str]]], str]) -> str:
    head = ["transcript", "load avg", "job", "wall", "CPU", "wall / native load", "CPU / native load",
            "peak RSS", "peak RSS / file"]
    out = []
    for r in rows:
        res = r["results"]
        base = res.get(("load", "native"))
        for (job, backend), v in res.items():
            name = {"load": "Session.load", "history": "History.read",
                    "history-facts": "History.read(keep_payloads=False)"}[job]
            out.append([
                f"{r['label']} ({r['bytes'] / 1e6:,.0f} MB)", f"{r['load_avg']:.1f}", f"{name}, {backend}",
                f"{v['wall'] * 1000:,.0f} ms", f"{v['cpu'] * 1000:,.0f} ms",
                f"{v['wall'] / base['wall']:.2f}x" if base else "—",
                f"{v['cpu'] / base['cpu']:.2f}x" if base else "—",
                f"{v['rss'] / 2**20:,.0f} MiB", f"{v['rss'] / r['bytes']:.2f}x",
            ])
    return md_table(head, out)


def main() -> int:
    from benchutil import md_table

    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--sizes", default="256MB")
    ap.add_argument("--paths", default="", help="transcripts to read instead of generated ones")
    ap.add_argument("--backends", default="native,pure")
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--pure-max", default="256MB")
    args = ap.parse_args()
    if args.paths:
        paths = [(os.path.basename(p), p) for p in args.paths.split(",") if p.strip()]
    else:
        paths = []
        for s in args.sizes.split(","):
            if s.strip():
                path, _ = generate.cached(generate.parse_size(s))
                paths.append((f"{s.strip()} realistic", path))
    backends = [b.strip() for b in args.backends.split(",") if b.strip()]
    rows = measure(paths, backends, args.rounds, generate.parse_size(args.pure_max))
    print(table(rows, md_table))
    return 0


if __name__ == "__main__":
    sys.exit(main())
