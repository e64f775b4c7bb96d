"""CPU time of issue #17's jobs, measured side by side in one process per transcript.

    python benches/cpu_times.py --sizes 256MB,1GB [--corpora realistic,nonascii,escapes]

On a machine shared with other jobs, wall-time ratios measure the neighbours as much as
the library; the CPU time a job spends (``time.process_time``: every thread of the
process, user + system) is steadier. A fresh child process per transcript (native
backend) runs, in turn and ``--rounds`` times, the limit (read + count newlines), native
``Session.load`` + ``close``, ``Session.peek`` iterating every envelope,
``Session.peek(survey=True)`` and orjson per line with the objects discarded; each job's
best round (CPU and wall) is kept. The native load and peek use two threads on a big
file (their CPU time counts both); the limit and orjson use one.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
from typing import Any, Callable, Dict, List, Optional

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)

import generate  # noqa: E402

JOBS = ["limit", "load", "peek", "peek-survey", "orjson-discard"]

CHILD = r"""
import json, os, sys, time
sys.path.insert(0, sys.argv[3])
import baselines
from llm_agent_session import Session
path, rounds = sys.argv[1], int(sys.argv[2])

def load():
    s = Session.load(path)
    s.close()

def peek():
    for _ in Session.peek(path)["envelopes"]:
        pass

jobs = {
    "limit": lambda: baselines.limit_read(path),
    "load": load,
    "peek": peek,
    "peek-survey": lambda: Session.peek(path, survey=True),
    "orjson-discard": lambda: baselines.orjson_discard(path),
}
best = {k: [float("inf"), float("inf")] for k in jobs}
for _ in range(rounds):
    for name, fn in jobs.items():
        c0, w0 = time.process_time(), time.perf_counter()
        fn()
        c, w = time.process_time() - c0, time.perf_counter() - w0
        best[name][0] = min(best[name][0], c)
        best[name][1] = min(best[name][1], w)
print(json.dumps({k: {"cpu": v[0], "wall": v[1]} for k, v in best.items()}))
"""


def measure_one(path: str, rounds: int, env: Dict[str, str]) -> Optional[Dict[str, Dict[str, float]]]:
    env = dict(env, LLM_AGENT_SESSION_BACKEND="native")
    p = subprocess.run([sys.executable, "-c", CHILD, path, str(rounds), HERE],
                       env=env, capture_output=True, text=True)
    if p.returncode != 0:
        print(p.stderr[-2000:], file=sys.stderr)
        return None
    result: Dict[str, Dict[str, float]] = json.loads(p.stdout.strip().splitlines()[-1])
    return result


def measure(sizes: List[int], corpora: List[str], env: Dict[str, str],
            rounds: int = 3) -> List[Dict[str, Any]]:
    rows = []
    for size in sizes:
        for corpus in corpora:
            path, stats = generate.cached(size, corpus=corpus)
            load_avg = os.getloadavg()[0]
            r = measure_one(path, rounds, env)
            if r is None:
                continue
            rows.append({"size": size, "corpus": corpus, "bytes": stats["size"],
                         "load_avg": load_avg, "jobs": r})
            print(f"  {generate.size_label(size)} {corpus}: done", flush=True)
    return rows


def _ratio(a: float, b: float) -> str:
    return f"{a / b:.2f}x" if b > 0 else "—"


def table(rows: List[Dict[str, Any]], md_table: Callable[[List[str], List[List[str]]], str]) -> str:
    head = ["transcript", "load avg", "limit CPU", "load CPU", "peek CPU", "survey CPU",
            "orjson discarded CPU", "load / limit (CPU)", "peek / limit (CPU)",
            "survey / limit (CPU)", "orjson discarded / load (CPU)",
            "load / limit (wall, same run)", "peek / limit (wall)", "survey / limit (wall)",
            "orjson discarded / load (wall)"]
    out = []
    for r in rows:
        j = r["jobs"]
        cpu = {k: v["cpu"] for k, v in j.items()}
        wall = {k: v["wall"] for k, v in j.items()}
        out.append([
            f"{generate.size_label(r['size'])} {r['corpus']}", f"{r['load_avg']:.1f}",
            *(f"{cpu[k] * 1000:,.0f} ms" for k in JOBS),
            _ratio(cpu["load"], cpu["limit"]), _ratio(cpu["peek"], cpu["limit"]),
            _ratio(cpu["peek-survey"], cpu["limit"]), _ratio(cpu["orjson-discard"], cpu["load"]),
            _ratio(wall["load"], wall["limit"]), _ratio(wall["peek"], wall["limit"]),
            _ratio(wall["peek-survey"], wall["limit"]), _ratio(wall["orjson-discard"], wall["load"]),
        ])
    return md_table(head, out)


def main() -> int:
    from benchutil import child_env, md_table

    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--sizes", default="256MB")
    ap.add_argument("--corpora", default=",".join(generate.CORPORA))
    ap.add_argument("--rounds", type=int, default=3)
    args = ap.parse_args()
    sizes = [generate.parse_size(s) for s in args.sizes.split(",") if s.strip()]
    corpora = [c.strip() for c in args.corpora.split(",") if c.strip()]
    print(table(measure(sizes, corpora, child_env(), args.rounds), md_table))
    return 0


if __name__ == "__main__":
    sys.exit(main())
