"""Issue #37: ``llm-agent-session scan`` against the open-source secret scanners people run
on such files, on the same bytes.

* Recall: the seeded corpus (``secret_corpus.py``: every built-in rule's family, each in
  a tool's output, a call's arguments, JSON a tool printed, split between two text parts,
  and base64), as a transcript, a Claude Code file and a Codex rollout: a placement counts
  as found when the tool reports the line it is on.
* False positives: lines reported that hold no seeded secret, on the seeded files and on
  the clean corpus (the generated transcripts, three corpora, and Claude Code and Codex
  sources).
* Speed: wall time of each tool on one 256 MB generated transcript (a tool too slow for
  that is timed on the 16 MB one and its MB/s given).

The competitors are found on PATH, or given: ``--ripsecrets BIN`` (``cargo install
ripsecrets --root DIR``), ``--detect-secrets BIN`` and ``--trufflehog3 BIN`` (``pip install
detect-secrets trufflehog3`` in a virtualenv of their own). gitleaks and trufflehog (v3,
Go) come from no registry this project uses (crates.io, PyPI, Debian), so are not run.

``python benches/scan_speed.py [--size 256MB] [--write]``; ``--write`` puts the tables in
their section of benches/RESULTS.md.
"""

from __future__ import annotations

import argparse
import json
import os
import random
import re
import shutil
import subprocess
import sys
import tempfile
import time
from typing import Any, Callable, Dict, List, Optional, Set, Tuple

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
sys.path.insert(0, os.path.join(os.path.dirname(HERE), "python"))

import generate  # noqa: E402
import import_speed  # noqa: E402
import secret_corpus  # noqa: E402

SECTION_START = "<!-- scan-speed:start -->"
SECTION_END = "<!-- scan-speed:end -->"
CLEAN_SIZE = 16 << 20
# A competitor whose 16 MB run takes longer than this is not run on the big file.
SLOW_LIMIT = 120.0

# One tool: (the files or directory to scan) -> the (file, line) pairs it reports.
Runner = Callable[[str], Set[Tuple[str, int]]]


def _run(argv: List[str], cwd: Optional[str] = None) -> subprocess.CompletedProcess:
    return subprocess.run(argv, capture_output=True, text=True, cwd=cwd, errors="replace")


def ours(path: str) -> Set[Tuple[str, int]]:
    r = _run([sys.executable, "-m", "llm_agent_session", "scan", "--json", path])
    if r.returncode not in (0, 1):  # 0 none found, 1 found
        raise RuntimeError(r.stderr)
    out = set()
    for line in r.stdout.splitlines():
        row = json.loads(line)
        out.update((os.path.basename(row["path"]), f["line"]) for f in row.get("findings", []))
    return out


def ripsecrets(binary: str) -> Runner:
    def run(path: str) -> Set[Tuple[str, int]]:
        r = _run([binary, path])
        out = set()
        for line in r.stdout.splitlines():
            m = re.match(r"(.*?):(\d+):", line)
            if m:
                out.add((os.path.basename(m.group(1)), int(m.group(2))))
        return out
    return run


def detect_secrets(binary: str) -> Runner:
    def run(path: str) -> Set[Tuple[str, int]]:
        # Run beside the file: it names files relative to where it runs, and leaves out
        # what is outside of that.
        r = _run([binary, "scan", os.path.basename(path)], cwd=os.path.dirname(os.path.abspath(path)))
        found = json.loads(r.stdout)["results"]
        return {(os.path.basename(name), hit["line_number"]) for name, hits in found.items() for hit in hits}
    return run


def trufflehog3(binary: str) -> Runner:
    def run(path: str) -> Set[Tuple[str, int]]:
        with tempfile.TemporaryDirectory() as tmp:
            target = path
            if not os.path.isdir(path):  # it reads a directory (a file alone it takes for its config)
                target = os.path.join(tmp, "in")
                os.mkdir(target)
                os.symlink(os.path.abspath(path), os.path.join(target, os.path.basename(path)))
            report = os.path.join(tmp, "report.json")
            _run([binary, "--no-history", "-z", "-f", "JSON", "-o", report, target])
            with open(report) as fh:
                found = json.load(fh)
        return {(os.path.basename(hit["path"]), int(hit["line"])) for hit in found}
    return run


def tools(args: argparse.Namespace) -> Dict[str, Runner]:
    out: Dict[str, Runner] = {"llm-agent-session": ours}
    for name, make, given in (("ripsecrets", ripsecrets, args.ripsecrets),
                              ("detect-secrets", detect_secrets, args.detect_secrets),
                              ("trufflehog3", trufflehog3, args.trufflehog3)):
        binary = given or shutil.which(name)
        if binary:
            out[name] = make(binary)
        else:
            print(f"{name}: not found (give --{name} BIN); left out")
    return out


# -- the corpora --------------------------------------------------------------------------------

def seeded_files(directory: str) -> Dict[str, List[Tuple[Any, int]]]:
    """The three seeded files, each with its placements and the line each is on."""
    os.makedirs(directory, exist_ok=True)
    out: Dict[str, List[Tuple[Any, int]]] = {}
    path = os.path.join(directory, "seeded-transcript.jsonl")
    if os.path.exists(path):
        os.unlink(path)
    placed = secret_corpus.write_seeded(path, random.Random(1))
    with open(path, "rb") as fh:
        line_of = {json.loads(raw)["id"]: n for n, raw in enumerate(fh, 1)}
    out[path] = [(p, line_of[id_]) for p, id_ in placed]
    for name, make in (("seeded-claude-code.jsonl", secret_corpus.claude_code_seeded),
                       ("seeded-codex.jsonl", secret_corpus.codex_seeded)):
        data, where = make(random.Random(1))
        path = os.path.join(directory, name)
        with open(path, "wb") as fh:
            fh.write(data)
        out[path] = where
    return out


def secret_lines(path: str, placements: List[Tuple[Any, int]]) -> Set[int]:
    """Every line of `path` that holds a seeded secret in any form (raw, as JSON writes it,
    once or twice, its text in base64, or a split's two halves): a report there is right."""
    import base64

    forms = set()
    for p, _ in placements:
        s = p.seed.secret
        once = json.dumps(s)[1:-1]
        forms.update({s, once, json.dumps(once)[1:-1], base64.b64encode(p.seed.text.encode()).decode()})
    with open(path, encoding="utf-8") as fh:
        lines = fh.read().split("\n")
    out = {n for n, text in enumerate(lines, 1) if any(f in text for f in forms)}
    out.update(line for _, line in placements)
    return out


def clean_files(directory: str) -> List[str]:
    os.makedirs(directory, exist_ok=True)
    out = []
    for corpus in generate.CORPORA:
        path = os.path.join(directory, f"clean-{corpus}.jsonl")
        if not os.path.exists(path):
            generate.generate(path, CLEAN_SIZE, seed=1, corpus=corpus)
        out.append(path)
    for fmt in ("claude-code", "codex"):
        path = os.path.join(directory, f"clean-{fmt}.jsonl")
        if not os.path.exists(path):
            with open(path, "wb") as fh:
                fh.write(import_speed.SOURCES[fmt][1](CLEAN_SIZE, 1))
        out.append(path)
    return out


# -- measuring -----------------------------------------------------------------------------------

def quality(runners: Dict[str, Runner], work: str) -> List[str]:
    seeded = seeded_files(os.path.join(work, "seeded"))
    clean = clean_files(os.path.join(work, "clean"))
    rows = [["tool", "recall: transcript", "Claude Code", "Codex", "seeds found in any form",
             "false positives: seeded files", f"clean corpus (5 x {generate.size_label(CLEAN_SIZE)})"]]
    for name, run in runners.items():
        row = [name]
        wrong = 0
        seeds_found: Set[Tuple[str, str]] = set()
        seeds_all: Set[Tuple[str, str]] = set()
        for path, placements in seeded.items():
            reported = {line for f, line in run(path) if f == os.path.basename(path)}
            hit = sum(1 for _, line in placements if line in reported)
            row.append(f"{hit}/{len(placements)} ({100 * hit / len(placements):.0f}%)")
            wrong += len(reported - secret_lines(path, placements))
            for p, line in placements:
                seeds_all.add((path, p.seed.rule))
                if line in reported:
                    seeds_found.add((path, p.seed.rule))
        row.append(f"{len(seeds_found)}/{len(seeds_all)}")
        row.append(str(wrong))
        row.append(str(sum(len(run(path)) for path in clean)))
        rows.append(row)
        print(" | ".join(row), flush=True)
    return table(rows)


def timed(run: Runner, path: str) -> float:
    start = time.perf_counter()
    run(path)
    return time.perf_counter() - start


def speed(runners: Dict[str, Runner], size: int, pure: bool) -> List[str]:
    big = generate.cached(size)[0]
    small = generate.cached(CLEAN_SIZE)[0]
    label = generate.size_label(size)
    rows = [["tool", f"{label} transcript", "MB/s", "llm-agent-session is ... faster"]]
    times: Dict[str, Tuple[float, int]] = {}
    for name, run in runners.items():
        first = timed(run, small)
        if first > SLOW_LIMIT:
            times[name] = (first, os.path.getsize(small))
            print(f"{name}: {first:.1f} s on {generate.size_label(CLEAN_SIZE)}; not run on {label}", flush=True)
            continue
        times[name] = (timed(run, big), os.path.getsize(big))
        print(f"{name}: {times[name][0]:.2f} s on {label}", flush=True)
    if pure:
        env = dict(os.environ, LLM_AGENT_SESSION_BACKEND="pure")
        start = time.perf_counter()
        subprocess.run([sys.executable, "-m", "llm_agent_session", "scan", big], env=env, capture_output=True)
        times["llm-agent-session (pure core)"] = (time.perf_counter() - start, os.path.getsize(big))
    base = times["llm-agent-session"][1] / times["llm-agent-session"][0]
    for name, (seconds, nbytes) in times.items():
        rate = nbytes / seconds
        shown = f"{seconds:.2f} s" if nbytes == os.path.getsize(big) else \
            f"(not run; {generate.size_label(CLEAN_SIZE)}: {seconds:.1f} s)"
        rows.append([name, shown, f"{rate / 1e6:.1f}", "-" if name == "llm-agent-session" else f"{base / rate:.0f}x"])
    return table(rows)


def table(rows: List[List[str]]) -> List[str]:
    widths = [max(len(r[i]) for r in rows) for i in range(len(rows[0]))]
    out = ["| " + " | ".join(c.ljust(w) for c, w in zip(row, widths)) + " |" for row in rows]
    out.insert(1, "|" + "|".join("-" * (w + 2) for w in widths) + "|")
    return out


def main(argv: Optional[List[str]] = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--size", default="256MB", help="the transcript timed (default 256MB)")
    parser.add_argument("--ripsecrets", metavar="BIN")
    parser.add_argument("--detect-secrets", metavar="BIN")
    parser.add_argument("--trufflehog3", metavar="BIN")
    parser.add_argument("--clean-size", default="16MB", help="each clean corpus file (default 16MB)")
    parser.add_argument("--no-pure", action="store_true", help="do not time the pure core")
    parser.add_argument("--write", action="store_true", help="write the section of benches/RESULTS.md")
    args = parser.parse_args(argv)
    global CLEAN_SIZE
    CLEAN_SIZE = generate.parse_size(args.clean_size)
    runners = tools(args)
    with tempfile.TemporaryDirectory() as work:
        os.environ.setdefault("LLM_AGENT_SESSION_CONFIG", os.path.join(work, "config"))
        load_before = os.getloadavg()
        found = quality(runners, work)
        fast = speed(runners, generate.parse_size(args.size), not args.no_pure)
        load_after = os.getloadavg()
    printed = ["Recall (placements whose line is reported; a seed is found in any form when one of its five",
               "placements is) and false positives (lines reported that hold no seeded secret), on the same bytes:",
               "", *found, "", "Speed:", "", *fast, "",
               f"load average {load_before[0]:.2f} before, {load_after[0]:.2f} after (2 shared cores)"]
    print("\n".join(printed))
    if args.write:
        write_section(printed, argv if argv is not None else sys.argv[1:])
    return 0


def write_section(printed: List[str], argv: List[str]) -> None:
    from benchutil import machine_info, replace_section, shown_command

    info = machine_info()
    text = "\n".join([
        SECTION_START,
        "## Secret scanning against the established scanners (issue #37)",
        "",
        f"`{shown_command('scan_speed.py', argv)}`: {info.get('CPU')}, {info.get('Cores')}, "
        f"{info.get('Date')}, commit {info.get('Commit', '?')}. Goals: recall at least theirs, false positives "
        "at most theirs, a 256 MB transcript scanned at least 10x faster than the fastest of them.",
        "",
        *printed,
        SECTION_END,
    ])
    replace_section(os.path.join(HERE, "RESULTS.md"), SECTION_START, SECTION_END, text)


if __name__ == "__main__":
    sys.exit(main())
