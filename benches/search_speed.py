"""How fast a search across a fleet of transcripts is (issue #35, item 2), side by side with
``grep -r -F -c`` over the same files in one run.

    python benches/search_speed.py [--fleet DIR] [--count 10000] [--size 2600MB] [--rounds 3] [--write]

``--write`` puts what it printed in its section of benches/RESULTS.md.

The fleet is DIR when it exists, else ``generate.fleet`` (``--count`` transcripts of
``--size`` together) written into ``benches/.cache``. Every file is read once first, so
grep and the search both read from the page cache. For each text (one found in most
transcripts, one found in a single transcript in the middle of the walk, one found
nowhere), best of ``--rounds``, the rounds interleaved so that both tools meet the same
load:

1. ``grep -r -F -c TEXT DIR``: wall and CPU time.
2. ``llm-agent-session search TEXT DIR --count`` with an empty cache (the first search),
   then again with the cache it wrote (a repeated search), then with ``--no-cache``, each a
   whole process (from compiled bytecode, as installed): wall and CPU time. Goal: the
   first no slower than 1.5x grep; the repeated faster than the first.
3. The library in a process of its own (``search_many(..., details=0)`` with a cache in
   memory, as the viewer's shelf runs it): the first hit, then the whole scan, against
   grep; and the first hit with its details (line, time, snippet), as the viewer's shelf
   would show it. Goal: the first hit within 300 ms; the whole scan no slower than 1.5x
   grep.
4. A repeated search after one transcript of the PATHs grew by one line (a copy of the
   fleet's largest, in a directory of its own): only its new bytes are read.

Timings are wall clock unless marked CPU; the load average (of this shared machine) is
printed with each. Nothing is asserted.
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import shutil
import subprocess
import sys
import tempfile
import time
from typing import Any, Dict, List, Optional, Tuple

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)

import generate  # noqa: E402
from benchutil import child_env  # noqa: E402

# The library in a fresh process: the first hit, the whole scan (details=0, as a count),
# the first hit with details; then the same search again with the same cache.
LIBRARY = r"""
import json, sys, time
from llm_agent_session import _backend
from llm_agent_session._search_cache import SearchCache
from llm_agent_session.search_many import search_many
_backend.use(sys.argv[1])
text, paths = sys.argv[2], sys.argv[3:]
cache = SearchCache()
out = {}
for name in ("first", "repeated"):
    t = time.perf_counter()
    first, hits = None, 0
    search = search_many(text, paths, cache=cache, details=0)
    for found in search:
        if found.hits and first is None:
            first = time.perf_counter() - t
        hits += len(found.hits)
    progress = search.progress()
    out[name] = {"first": first, "whole": time.perf_counter() - t, "hits": hits,
                 "searched": progress.searched, "cached": progress.cached}
t = time.perf_counter()
search = search_many(text, paths, details=None)
for found in search:
    if found.hits:
        out["first_detailed"] = time.perf_counter() - t
        out["snippet"] = found.hits[0].snippet
        search.cancel()
        break
print(json.dumps(out))
"""


def cpu_of_children() -> float:
    r = resource.getrusage(resource.RUSAGE_CHILDREN)
    return r.ru_utime + r.ru_stime


def timed(argv: List[str], env: Optional[Dict[str, str]] = None) -> Tuple[float, float, str]:
    """Wall and CPU seconds of a command, and its output."""
    cpu = cpu_of_children()
    t = time.perf_counter()
    r = subprocess.run(argv, capture_output=True, text=True, env=env)
    wall = time.perf_counter() - t
    if r.returncode not in (0, 1):
        raise RuntimeError(f"{argv[:4]} exited {r.returncode}: {r.stderr[-500:]}")
    return wall, cpu_of_children() - cpu, r.stdout


def first_line_after(argv: List[str], env: Dict[str, str]) -> Tuple[Optional[float], float]:
    """Seconds until the command printed its first line (None: it printed none), and in all."""
    t = time.perf_counter()
    proc = subprocess.Popen(argv, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, env=env)
    assert proc.stdout is not None
    line = proc.stdout.readline()
    first = time.perf_counter() - t if line else None
    proc.stdout.read()
    proc.wait()
    return first, time.perf_counter() - t


def load() -> str:
    return f"load {os.getloadavg()[0]:.1f}"


def fleet_dir(a: argparse.Namespace) -> str:
    if a.fleet and os.path.isdir(a.fleet):
        return a.fleet
    d = os.path.join(generate.cache_dir(), f"fleet-{a.count}-{a.size}-s{a.seed}")
    if not os.path.isdir(d):
        generate.fleet(d + ".tmp", a.count, generate.parse_size(a.size), seed=a.seed)
        os.rename(d + ".tmp", d)
    return d


def walk_order(root: str) -> List[str]:
    from llm_agent_session.walk import walk

    return [w.path for w in walk([root]) if w.problem is None]


def texts_for(paths: List[str]) -> List[Tuple[str, str]]:
    """A text in most transcripts, one in a single transcript halfway through the walk (a
    tool call's id), and one in none."""
    middle = paths[len(paths) // 2]
    call = None
    with open(middle, "rb") as f:
        for line in f:
            value = json.loads(line) if line.strip().startswith(b"{") else None
            if isinstance(value, dict) and value.get("type") == "tool-dispatched":
                call = value["payload"]["call-id"]
                break
    found = [("common", "OPENSSL_DIR")]
    if call:
        found.append(("rare", call))
    found.append(("absent", "no such text 7f3e"))
    return found


def main(argv: Optional[List[str]] = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--fleet", default=None, help="the fleet's directory (made when missing; default: fleet10k in the benches' cache)")
    ap.add_argument("--count", type=int, default=10_000, help="transcripts of a fleet made here (default 10000)")
    ap.add_argument("--size", default="2600MB", help="their bytes together (default 2600MB)")
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--backend", default="native")
    ap.add_argument("--write", action="store_true", help="replace this section of benches/RESULTS.md")
    a = ap.parse_args(argv)
    printed: List[str] = []

    def say(line: str) -> None:
        printed.append(line)
        print(line, flush=True)

    root = fleet_dir(a)
    paths = walk_order(root)
    total = sum(os.path.getsize(p) for p in paths)
    for p in paths:  # into the page cache, for both tools
        with open(p, "rb") as f:
            while f.read(1 << 22):
                pass
    say(f"search speed, backend {a.backend}, {os.cpu_count()} CPUs, {time.strftime('%Y-%m-%d %H:%M')}: "
        f"{len(paths):,} transcripts, {total / 1e9:.2f} GB, in the page cache; {load()}")
    scratch = tempfile.mkdtemp(prefix="las-search-bench-")
    env = child_env()
    env["LLM_AGENT_SESSION_BACKEND"] = a.backend
    # As installed (pip compiles a wheel's modules), the command starts from compiled
    # bytecode: where the environment forbids writing it, every start would time the
    # compiler too (0.15 s here). One start first writes it.
    env.pop("PYTHONDONTWRITEBYTECODE", None)
    cli = [sys.executable, "-m", "llm_agent_session", "search"]
    subprocess.run(cli + ["--help"], env=env, capture_output=True, check=True)
    try:
        for kind, text in texts_for(paths):
            grep: List[Tuple[float, float]] = []
            first: List[Tuple[float, float]] = []
            again: List[Tuple[float, float]] = []
            bare: List[Tuple[float, float]] = []
            whole: List[Dict[str, Any]] = []
            lines = ""
            for n in range(a.rounds):
                wall, cpu, out = timed(["grep", "-r", "-F", "-c", text, root])
                grep.append((wall, cpu))
                grep_lines = sum(int(line.rsplit(":", 1)[1]) for line in out.splitlines())
                run_env = dict(env, LLM_AGENT_SESSION_CACHE=os.path.join(scratch, f"cache-{kind}-{n}"))
                wall, cpu, out = timed(cli + [text, root, "--count"], run_env)
                first.append((wall, cpu))
                lines = out
                wall, cpu, _ = timed(cli + [text, root, "--count"], run_env)
                again.append((wall, cpu))
                wall, cpu, _ = timed(cli + [text, root, "--count", "--no-cache"], run_env)
                bare.append((wall, cpu))
                whole.append(json.loads(subprocess.run([sys.executable, "-c", LIBRARY, a.backend, text, root], env=env,
                                                       capture_output=True, text=True, check=True).stdout))
            hits = sum(int(line.rsplit(": ", 1)[1].replace(",", "")) for line in lines.splitlines())
            g, f, r, b = min(grep), min(first), min(again), min(bare)
            say(f"{kind} {text!r}: {hits:,} hits ({grep_lines:,} lines grep counts), {load()}")
            say(f"  grep -r -F -c           {g[0]:6.2f} s  (CPU {g[1]:.2f} s)")
            say(f"  search --count, first   {f[0]:6.2f} s  (CPU {f[1]:.2f} s)  {f[0] / g[0]:.2f}x grep")
            say(f"  search --count, again   {r[0]:6.2f} s  (CPU {r[1]:.2f} s)  {r[0] / f[0]:.2f}x the first")
            say(f"  search --count --no-cache {b[0]:4.2f} s  (CPU {b[1]:.2f} s)  {b[0] / g[0]:.2f}x grep")
            lib = min(whole, key=lambda run: run["first"]["whole"])
            first_hit = min(run["first"]["first"] or 1e9 for run in whole)
            say(f"  library: first hit {_ms(None if first_hit == 1e9 else first_hit)}, with details "
                f"{_ms(lib.get('first_detailed'))}; whole scan {lib['first']['whole']:.2f} s "
                f"({lib['first']['whole'] / g[0]:.2f}x grep); again {lib['repeated']['whole']:.2f} s "
                f"({lib['repeated']['cached']:,} of {lib['repeated']['searched']:,} files answered by the cache)")
            cli_first, cli_all = first_line_after(cli + [text, root], dict(env, LLM_AGENT_SESSION_CACHE=os.path.join(
                scratch, f"cache-{kind}-lines")))
            say(f"  search (every hit printed), a new process: first line {_ms(cli_first)}, all {cli_all:.2f} s")
        say(grown(paths, root, scratch, env, cli))
    finally:
        shutil.rmtree(scratch, ignore_errors=True)
    say(f"done; {load()}")
    if a.write:
        write_section(printed, argv if argv is not None else sys.argv[1:])
    return 0


def grown(paths: List[str], root: str, scratch: str, env: Dict[str, str], cli: List[str]) -> str:
    """The largest transcript copied beside the fleet, searched with it, grown by a line,
    searched again."""
    biggest = max(paths, key=os.path.getsize)
    own = os.path.join(scratch, "grows")
    os.makedirs(own)
    copy = os.path.join(own, "big.jsonl")
    shutil.copyfile(biggest, copy)
    with open(copy, "rb") as f:
        tail = f.read()[-(1 << 16):]
    run_env = dict(env, LLM_AGENT_SESSION_CACHE=os.path.join(scratch, "cache-grown"))
    text = "OPENSSL_DIR"
    before, _, _ = timed(cli + [text, root, own, "--count"], run_env)
    time.sleep(2.5)  # past the cache's settling time for the copy just written
    timed(cli + [text, root, own, "--count"], run_env)
    unchanged, _, _ = timed(cli + [text, root, own, "--count"], run_env)
    line = tail.rstrip(b"\n").rsplit(b"\n", 1)[-1]
    with open(copy, "ab") as f:
        if not tail.endswith(b"\n"):
            f.write(b"\n")
        f.write(line.replace(b'"id":"', b'"id":"grown-', 1) + b"\n")
    after, _, _ = timed(cli + [text, root, own, "--count"], run_env)
    return (f"grown: the fleet and a copy of its largest transcript ({os.path.getsize(copy) / 1e6:.1f} MB): first "
            f"{before:.2f} s, unchanged {unchanged:.2f} s, after the copy grew by a line {after:.2f} s; {load()}")


def _ms(seconds: Any) -> str:
    return "none" if seconds is None else f"{seconds * 1000:.0f} ms"


SECTION_START = "<!-- search:start -->"
SECTION_END = "<!-- search:end -->"


def write_section(printed: List[str], argv: List[str]) -> None:
    """What this run printed, as its section of benches/RESULTS.md."""
    from benchutil import machine_info, replace_section, shown_command

    info = machine_info()
    text = "\n".join([
        SECTION_START,
        "## Search across a fleet of transcripts against grep (issue #35)",
        "",
        f"`{shown_command('search_speed.py', argv)}`: {info.get('CPU')}, {info.get('Cores')}, "
        f"{info.get('Date')}, commit {info.get('Commit', '?')}. Goals: the first hit within 300 ms; the whole "
        "scan no slower than 1.5x `grep -r -F -c`; a repeated search faster than the first.",
        "",
        "```",
        *printed,
        "```",
        SECTION_END,
    ])
    replace_section(os.path.join(HERE, "RESULTS.md"), SECTION_START, SECTION_END, text)


if __name__ == "__main__":
    sys.exit(main())
