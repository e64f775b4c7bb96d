"""Issue #38: opening a transcript through its side index, beside reading it whole.

    python benches/index_speed.py --sizes 1GB,10GB [--append 1MB,16MB,64MB] [--rounds 5]
    python benches/index_speed.py --paths /data/a.jsonl [--scratch DIR] [--write]

For each transcript (generated as the other benchmarks do: 1 GB from seed 1, 10 GB from
seed 3, realistic corpus; or given by ``--paths``), each job runs in a fresh child
process ``--rounds`` times and reports its best wall time, its best CPU time
(``time.process_time``: every thread, steadier on a shared machine) and its peak RSS:

* the index built (``llm-agent-session index``'s own call, no index before): MB/s, and
  the index's size against the transcript's;
* ``Session.load`` read whole (``index=False``) and through the index, unchanged;
* ``Session.peek`` and ``check``'s verdict, whole and through the index;
* appended by N MB (lines of another generated transcript), the next ``Session.load``
  through the index (it reads the N MB, folds them from the checkpoint, and writes the
  extended index off its thread), beside a whole load of an N MB transcript: the best of
  ``--rounds``, each the first load after the append (the index of before it put back),
  once the appended copy is on disk (``sync``). The appends go to a copy in
  ``--scratch`` (a 10 GB transcript needs 10 GB free there).

The indexes go to a cache directory of the run's own (``LLM_AGENT_SESSION_CACHE``).
``--write`` replaces this section of benches/RESULTS.md. No figure is asserted.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import sys
import tempfile
from typing import Any, Dict, List, Optional

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)

import generate  # noqa: E402

CHILD = r"""
import json, os, sys, time
from llm_agent_session import Session, _index
from llm_agent_session.verdict import verdict
path, job, rounds = sys.argv[1], sys.argv[2], int(sys.argv[3])

def load(index):
    s = Session.load(path, index=index)
    used = s._index_used
    s.close()
    return used

def build():
    _index.remove(path)
    return _index.update(path)[0]

def appends(index):
    # 20 KB messages, 130 MB in all: a session keeping its index refreshes it twice,
    # off the appending thread. The quantiles of one append's time.
    from llm_agent_session import user_message
    text = "x" * 20000
    s = Session.load(path, index=index)
    _index.flush()
    took = []
    for _ in range(6500):
        t = time.perf_counter()
        s.append_message(user_message(text))
        took.append(time.perf_counter() - t)
    s.close()
    took.sort()
    q = lambda f: round(took[int(f * (len(took) - 1))] * 1e6, 1)
    return {"p50_us": q(0.5), "p99_us": q(0.99), "p99.9_us": q(0.999), "max_us": q(1.0)}

fn = {
    "build": build,
    "load-whole": lambda: load(False),
    "load-index": lambda: load(True),
    "peek-whole": lambda: len(Session.peek(path, index=False)["envelopes"]),
    "peek-index": lambda: len(Session.peek(path, index=True)["envelopes"]),
    "check-index": lambda: verdict(path).kind.number,
    "appends-index": lambda: appends(True),
    "appends-whole": lambda: appends(False),
}[job]
best, said = [float("inf"), float("inf")], None
for _ in range(rounds):
    c0, w0 = time.process_time(), time.perf_counter()
    said = fn()
    best = [min(best[0], time.perf_counter() - w0), min(best[1], time.process_time() - c0)]
_index.flush()  # an index being written is not timed, but is written
with open("/proc/self/status") as f:
    hwm = next((int(l.split()[1]) * 1024 for l in f if l.startswith("VmHWM:")), 0)
print(json.dumps({"wall": best[0], "cpu": best[1], "rss": hwm, "said": said}))
"""


def run_job(path: str, job: str, rounds: int, cache: str) -> Dict[str, Any]:
    env = dict(os.environ, LLM_AGENT_SESSION_CACHE=cache, LLM_AGENT_SESSION_BACKEND="native")
    p = subprocess.run([sys.executable, "-c", CHILD, path, job, str(rounds)], env=env, capture_output=True, text=True)
    if p.returncode != 0:
        raise RuntimeError(f"{job} on {path} failed:\n{p.stderr[-3000:]}")
    return dict(json.loads(p.stdout.strip().splitlines()[-1]))


def index_path(path: str, cache: str) -> str:
    env = dict(os.environ, LLM_AGENT_SESSION_CACHE=cache)
    code = "import sys; from llm_agent_session import index_file; print(index_file(sys.argv[1]))"
    return subprocess.run([sys.executable, "-c", code, path], env=env, capture_output=True, text=True,
                          check=True).stdout.strip()


def index_size(path: str, cache: str) -> int:
    return os.path.getsize(index_path(path, cache))


def fmt(r: Dict[str, Any]) -> str:
    return f"{r['wall'] * 1000:9.1f} ms wall {r['cpu'] * 1000:9.1f} ms CPU {r['rss'] / 2**20:7.0f} MB RSS"


def appended_lines(size: int, seed: int, mark: bytes) -> bytes:
    """About `size` bytes of whole envelope lines (another transcript's, its meta left
    out), every id and reference starting with `mark` instead of the generator's time
    prefix, so that no id repeats one already in the file."""
    path, _ = generate.cached(size, seed=seed)
    with open(path, "rb") as f:
        data = f.read()
    return data[data.index(b"\n") + 1 :].replace(b'"019f', b'"' + mark)


def bench(path: str, rounds: int, appends: List[int], scratch: str, cache: str, out: List[str]) -> None:
    size = os.path.getsize(path)
    load_avg = os.getloadavg()[0]
    out.append(f"{os.path.basename(path)}: {size / 2**30:.2f} GiB (load average {load_avg:.1f} at its start)")
    built = run_job(path, "build", 1, cache)
    isize = index_size(path, cache)
    out.append(f"  index built            {fmt(built)}  {size / built['wall'] / 1e9:5.2f} GB/s; "
               f"{isize / 2**20:.1f} MB = {100 * isize / size:.2f}% of the transcript")
    for job in ("load-whole", "load-index", "peek-whole", "peek-index", "check-index"):
        r = run_job(path, job, 1 if job.endswith("whole") else rounds, cache)
        out.append(f"  {job:<22} {fmt(r)}  ({r['said']})")
        print(out[-1], flush=True)
    if not appends:
        return
    copy = os.path.join(scratch, "appended.jsonl")
    shutil.copyfile(path, copy)
    run_job(copy, "build", 1, cache)
    kept = index_path(copy, cache)
    for k, n in enumerate(appends):
        with open(kept, "rb") as f:
            before = f.read()  # the index of the file as it was before this append
        with open(copy, "ab") as f:
            f.write(appended_lines(n, 7, b"%x19f" % (10 + k)))
        # The copy's writeback (10 GB at 10 GB) is the disk's, not the load's.
        os.sync()
        best: Optional[Dict[str, Any]] = None
        for _ in range(rounds):  # each the first load after the append: the index put back
            with open(kept, "wb") as f:
                f.write(before)
            got = run_job(copy, "load-index", 1, cache)
            best = got if best is None or got["wall"] < best["wall"] else best
        assert best is not None
        r = best
        whole, _ = generate.cached(n, seed=7)
        w = run_job(whole, "load-whole", rounds, cache)
        out.append(f"  +{generate.size_label(n):<5} load-index        {fmt(r)}  ({r['said']}); a whole load of "
                   f"{generate.size_label(n)}: {w['wall'] * 1000:.1f} ms wall {w['cpu'] * 1000:.1f} ms CPU; "
                   f"over it: {(r['wall'] - w['wall']) * 1000:+.1f} ms wall {(r['cpu'] - w['cpu']) * 1000:+.1f} ms CPU")
        print(out[-1], flush=True)
    # Appends to a session that keeps its index (refreshed every 64 MB) and to one that
    # keeps none: the same appending thread's figures.
    for job in ("appends-index", "appends-whole"):
        r = run_job(copy, job, 1, cache)
        out.append(f"  {job:<22} 6,500 appends of 20 KB: {r['said']}")
        print(out[-1], flush=True)
    os.unlink(copy)


SECTION_START = "<!-- index-speed:start -->"
SECTION_END = "<!-- index-speed:end -->"


def write_section(printed: List[str], argv: List[str]) -> None:
    from benchutil import machine_info, replace_section, shown_command

    info = machine_info()
    text = "\n".join([
        SECTION_START,
        "## Opening a transcript through its side index (issue #38)",
        "",
        f"`{shown_command('index_speed.py', argv)}`: {info.get('CPU')}, {info.get('Cores')}, "
        f"{info.get('Date')}, commit {info.get('Commit', '?')}, native core, each job a fresh process (best of "
        "its rounds). Goals: a load through the index of an unchanged transcript <= 50 ms at 1 GB and <= 100 ms "
        "at 10 GB; after appending N MB, no more than a whole load of those N MB plus 50 ms; the index <= 1% of "
        "the transcript, built at >= 1 GB/s.",
        "",
        "```",
        *printed,
        "```",
        SECTION_END,
    ])
    replace_section(os.path.join(HERE, "RESULTS.md"), SECTION_START, SECTION_END, text)


def main(argv: Optional[List[str]] = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--sizes", default="1GB", help="generated transcripts (1 GB: seed 1; 10 GB: seed 3)")
    ap.add_argument("--paths", default="", help="transcripts of your own instead, comma-separated")
    ap.add_argument("--append", default="1MB,16MB,64MB", help="MB appended before a load ('' for none)")
    ap.add_argument("--rounds", type=int, default=5)
    ap.add_argument("--scratch", help="where the appended copy goes (default: a temporary directory)")
    ap.add_argument("--write", action="store_true", help="replace this section of benches/RESULTS.md")
    a = ap.parse_args(argv)
    paths = [p for p in a.paths.split(",") if p]
    if not paths:
        for label in a.sizes.split(","):
            n = generate.parse_size(label)
            paths.append(generate.cached(n, seed=3 if n >= 8 << 30 else 1)[0])
    appends = [generate.parse_size(x) for x in a.append.split(",") if x]
    scratch = a.scratch or tempfile.mkdtemp(prefix="index-speed-")
    cache = tempfile.mkdtemp(prefix="index-speed-cache-")
    printed: List[str] = []
    try:
        for path in paths:
            bench(path, a.rounds, appends, scratch, cache, printed)
    finally:
        shutil.rmtree(cache, ignore_errors=True)
        if not a.scratch:
            shutil.rmtree(scratch, ignore_errors=True)
    print("\n".join(printed))
    if a.write:
        write_section(printed, argv if argv is not None else sys.argv[1:])
    return 0


if __name__ == "__main__":
    sys.exit(main())
