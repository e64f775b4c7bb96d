"""The viewer on a Claude Code projects folder (``view ~/.claude/projects``): how soon the
shelf shows its first sessions, how long until every one is imported (a first look, with
an empty cache, and again with the cache full), and how soon a line Claude Code writes to
an open session is on the page (the real command in a child process, Chromium by path).

    python benches/view_sources_speed.py                  # a 236 MB projects folder, generated here
    python benches/view_sources_speed.py --size 64MB --turns 20

The folder is written with import_speed.py's Claude Code sessions (thinking with
signatures, tool calls and results of skewed size, usage on every line, one block per
line), cached in ``benches/.cache``: sessions of skewed size (a few of tens of MB, most of
well under one) in a few projects, some with subagents. The follow: a writer process
appends one turn (a prompt, a tool call, its result) every ``--every`` seconds to the
session open in the page, and each turn's time from its write to the page is reported,
for the most recent session and for the biggest. Figures are reported, not asserted.
"""

from __future__ import annotations

import argparse
import json
import os
import random
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from typing import Any, Dict, List, Optional, Tuple

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)

import generate  # noqa: E402
import import_speed  # noqa: E402
from viewer_speed import CHROMIUM, wait_until  # noqa: E402

PROJECTS = 8
SUBAGENTS = 20
TREE_VERSION = 1


def cached_projects(size: int, seed: int = 3) -> Tuple[str, List[str]]:
    """A Claude Code projects folder of about `size` bytes (made once), and its session
    files, the biggest first."""
    path = os.path.join(generate.cache_dir(), f"view-projects-{generate.size_label(size)}-s{seed}-v{TREE_VERSION}")
    if not os.path.isdir(path):
        rng = random.Random(seed)
        tmp = path + ".tmp"
        shutil.rmtree(tmp, ignore_errors=True)
        sizes: List[int] = []
        biggest = size // 8  # one session of an eighth of it all (Claude Code's long sessions reach tens of MB)
        sizes.append(biggest)
        while sum(sizes) < size:
            sizes.append(min(int(rng.lognormvariate(13.3, 1.3)), biggest, size - sum(sizes) + 4096))
        for k, n in enumerate(sizes):
            project = os.path.join(tmp, f"-home-dev-project-{k % PROJECTS}")
            session = f"{k:08d}-bench-session"
            os.makedirs(project, exist_ok=True)
            with open(os.path.join(project, session + ".jsonl"), "wb") as f:
                f.write(import_speed.claude_code_source(max(n, 4096), seed * 1000 + k))
            if k % max(1, len(sizes) // SUBAGENTS) == 1:
                agents = os.path.join(project, session, "subagents")
                os.makedirs(agents)
                with open(os.path.join(agents, "agent-a1.jsonl"), "wb") as f:
                    f.write(import_speed.claude_code_source(64 << 10, seed * 1000 + k + 500))
        os.replace(tmp, path)
    files = [os.path.join(folder, name) for folder, _, names in os.walk(path) for name in names
             if name.endswith(".jsonl") and "subagents" not in folder]
    return path, sorted(files, key=lambda p: -os.path.getsize(p))


class View:
    """``llm-agent-session view FOLDER --no-browser`` in a child process, with its own cache."""

    def __init__(self, folder: str, cache: str) -> None:
        env = dict(os.environ, LLM_AGENT_SESSION_CACHE=cache)
        t0 = time.perf_counter()
        self.proc = subprocess.Popen([sys.executable, "-m", "llm_agent_session", "view", folder, "--no-browser"],
                                     stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env)
        assert self.proc.stdout is not None
        self.url = self.proc.stdout.readline().strip()
        self.url_seconds = time.perf_counter() - t0
        if not self.url.startswith("http"):
            raise SystemExit(f"no URL: {self.proc.stderr.read() if self.proc.stderr else ''}")
        self.base = self.url.split("#")[0].rstrip("/")

    def stop(self) -> None:
        self.proc.send_signal(2)
        try:
            self.proc.wait(20)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait()


def shelf_times(page: Any, view: View) -> Tuple[float, float, int]:
    """From navigation: the first row shown, the shelf complete; and its rows."""
    t0 = time.perf_counter()
    page.goto(view.url)
    page.wait_for_selector(".shelf-row", timeout=600_000)
    first = time.perf_counter() - t0
    wait_until(page, "document.getElementById('shelf-count').textContent.indexOf('reading') < 0", timeout=1200)
    every = time.perf_counter() - t0
    rows = int(page.evaluate("document.getElementById('shelf-count').textContent.split(' of ')[1].split(' ')[0]"
                             ".replace(/[^0-9]/g, '')"))
    return first, every, rows


WRITER = r"""
import json, sys, time
path, parent, turns, every = sys.argv[1], sys.argv[2], int(sys.argv[3]), float(sys.argv[4])
common = {"isSidechain": False, "userType": "external", "cwd": "/home/dev/project", "sessionId": "bench",
          "version": "2.0.14", "gitBranch": "main"}
for k in range(turns):
    ts = time.strftime("%Y-%m-%dT%H:%M:%S.000Z", time.gmtime())
    lines = [
        {"parentUuid": parent, **common, "type": "user", "message": {"role": "user", "content": f"FOLLOWED PROMPT {k}"},
         "uuid": f"fp-{k}", "timestamp": ts},
        {"parentUuid": f"fp-{k}", **common, "type": "assistant", "requestId": f"freq-{k}", "uuid": f"fa-{k}", "timestamp": ts,
         "message": {"id": f"fmsg-{k}", "type": "message", "role": "assistant", "model": "claude-sonnet-4-5",
                     "content": [{"type": "tool_use", "id": f"ftool-{k}", "name": "Bash", "input": {"command": "make"}}],
                     "stop_reason": "tool_use", "usage": {"input_tokens": 4, "output_tokens": 30}}},
        {"parentUuid": f"fa-{k}", **common, "type": "user", "uuid": f"fr-{k}", "timestamp": ts,
         "message": {"role": "user", "content": [{"type": "tool_result", "tool_use_id": f"ftool-{k}",
                                                  "content": f"FOLLOWED RESULT {k} " + "ok " * 300}]}},
    ]
    with open(path, "a", encoding="utf-8") as f:
        f.write("".join(json.dumps(line) + "\n" for line in lines))
    print(k, time.time(), flush=True)
    parent = f"fr-{k}"
    time.sleep(every)
"""


def last_uuid(path: str) -> Optional[str]:
    with open(path, "rb") as f:
        f.seek(max(0, os.path.getsize(path) - (1 << 20)))
        lines = f.read().split(b"\n")
    for line in reversed(lines[1:]):
        try:
            found = json.loads(line).get("uuid")
        except ValueError:
            continue
        if isinstance(found, str):
            return found
    return None


def follow_latencies(page: Any, view: View, folder: str, session: str, turns: int, every: float) -> List[float]:
    """Open `session` in the page (at its end), append `turns` turns to its source in a
    writer process, and time each from its write to the page."""
    name = os.path.basename(folder) + "/" + os.path.relpath(session, folder)
    page.goto(view.base + "/t/" + name)
    page.wait_for_selector("[data-envelope-id]", timeout=600_000)
    wait_until(page, "document.getElementById('status').textContent.indexOf('reading the history') < 0", timeout=600)
    page.click("#to-end")
    writer = subprocess.Popen([sys.executable, "-c", WRITER, session, last_uuid(session) or "", str(turns), str(every)],
                              stdout=subprocess.PIPE, text=True)
    seen: Dict[int, float] = {}
    end = time.monotonic() + turns * every + 60
    while len(seen) < turns and time.monotonic() < end:
        for k in range(len(seen), turns):
            if not page.evaluate("(t) => document.getElementById('layer').innerText.includes(t)", f"FOLLOWED RESULT {k}"):
                break
            seen[k] = time.time()
        time.sleep(0.01)
    out, _ = writer.communicate(timeout=120)
    written = {int(k): float(t) for k, t in (line.split() for line in out.splitlines() if line)}
    return [seen[k] - written[k] for k in sorted(seen)]


def describe(latencies: List[float], turns: int) -> str:
    if not latencies:
        return "none shown"
    got = sorted(latencies)
    return (f"median {statistics.median(got):.2f} s, worst {got[-1]:.2f} s, {len(got)} of {turns} shown "
            f"({', '.join(f'{x:.2f}' for x in latencies)})")


def main(argv: Optional[List[str]] = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--size", default="236MB", help="the projects folder's size (generated once, cached)")
    parser.add_argument("--turns", type=int, default=10, help="turns the writer appends to each session followed")
    parser.add_argument("--every", type=float, default=1.5, help="seconds between two turns")
    a = parser.parse_args(argv)
    from playwright.sync_api import sync_playwright

    folder, sessions = cached_projects(generate.parse_size(a.size))
    total = sum(os.path.getsize(os.path.join(d, n)) for d, _, ns in os.walk(folder) for n in ns)
    print(f"{folder}: {total / 1e6:.0f} MB, {len(sessions)} sessions (the biggest {os.path.getsize(sessions[0]) / 1e6:.1f} MB),"
          f" load average {os.getloadavg()[0]:.1f}", flush=True)
    scratch = tempfile.mkdtemp(prefix="view-sources-")
    work = os.path.join(scratch, "projects")
    shutil.copytree(folder, work)  # the writer appends to a copy: the cached folder stays as made
    sessions = [os.path.join(work, os.path.relpath(s, folder)) for s in sessions]
    cache = os.path.join(scratch, "cache")
    try:
        with sync_playwright() as p:
            browser = p.chromium.launch(executable_path=CHROMIUM, args=["--no-sandbox"])
            page = browser.new_page(viewport={"width": 1280, "height": 900})
            for when in ("empty cache", "cache full"):
                view = View(work, cache)
                first, every, rows = shelf_times(page, view)
                print(f"{when}: URL {view.url_seconds:.2f} s; first row {first:.2f} s after navigation; "
                      f"all {rows} rows {every:.2f} s; load average {os.getloadavg()[0]:.1f}", flush=True)
                if when == "cache full":
                    recent = max(sessions, key=os.path.getmtime)
                    for label, session in (("the most recent", recent), ("the biggest", sessions[0])):
                        got = follow_latencies(page, view, work, session, a.turns, a.every)
                        print(f"follow, {label} session ({os.path.getsize(session) / 1e6:.1f} MB): "
                              f"{describe(got, a.turns)}; load average {os.getloadavg()[0]:.1f}", flush=True)
                view.stop()
            browser.close()
    finally:
        shutil.rmtree(scratch, ignore_errors=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
