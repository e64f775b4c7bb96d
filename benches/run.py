"""Run the whole benchmark suite and print how far each operation is from its peers and
from the physical limit; rewrite ``benches/RESULTS.md``.

    python benches/run.py [--sizes 1MB,16MB,256MB] [--gb] [--backends native,pure]
                          [--append-sizes 1MB,256MB] [--corpora realistic,nonascii,escapes]
                          [--no-rss] [--cli-size 1GB] [--import-size 32MB] [--no-write]
                          [--no-cpu] [--issue17-section]

Issue #17's goals at 256 MB and 1 GB, in one run beside the full one (the 1 GB run
leaves out the pure backend, whose 1 GB load alone takes minutes):

    python benches/run.py --sizes 256MB --gb --backends native --cli-size none \
        --import-size none --loop-size none --issue17-section

Steps: generate (or reuse from ``benches/.cache``) the transcripts, run the
pytest-benchmark suites in ``benches/`` (library operations, baselines and limits in
one run, one group per operation and size), measure the peak RSS of ``load`` and
``peek`` per backend and size each in a fresh child process, time the command line
against the library on one big transcript (``cli_times.py``), then print the ratio
table. Times are medians. Ratios are time ratios: below 1 means native is faster.
"""

from __future__ import annotations

import argparse
import json
import os
import shlex
import shutil
import subprocess
import sys
import tempfile
import time
from typing import Any, Dict, List, Optional, Tuple

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
sys.path.insert(0, HERE)

import cli_times  # noqa: E402
import cpu_times  # noqa: E402
import generate  # noqa: E402
import event_loop  # noqa: E402
from benchutil import child_env, machine_info, md_table, replace_section  # noqa: E402
import import_speed  # noqa: E402

CORPORA = list(generate.CORPORA)
# load, peek and peek-survey run on every corpus; the others on the realistic one.
PER_CORPUS = ["load", "peek", "peek-survey"]
READ_OPS = ["load", "load-torn", "peek", "peek-survey", "peek-since", "salvage"] + [
    f"{op}-{c}" for c in CORPORA if c != "realistic" for op in PER_CORPUS]
APPEND_OPS = ["append-message-200B", "append-message-20KB", "tool-pair", "sync-messages",
              "sync-messages-10k"]
PARSERS = ("json", "orjson", "orjson-discard")


def split_op(op: str) -> Tuple[str, str]:
    """``load-nonascii`` -> (``load``, ``nonascii``); ``load`` -> (``load``, ``realistic``)."""
    for c in CORPORA:
        if c != "realistic" and op.endswith("-" + c):
            return op[: -len(c) - 1], c
    return op, "realistic"


def with_corpus(op: str, corpus: str) -> str:
    return op if corpus == "realistic" else f"{op}-{corpus}"


def limit_name(op: str) -> str:
    return LIMIT_NAME[split_op(op)[0]]


LIMIT_NAME = {
    "load": "read+count newlines",
    "load-torn": "copy prefix+fsync+rename, then read",
    "peek": "read+count newlines",
    "peek-survey": "read+count newlines",
    "peek-since": "read the tail+count newlines",
    "salvage": "copy+fsync",
    "append-message-200B": "os.write of the line",
    "append-message-20KB": "os.write of the line",
    "tool-pair": "2 os.write of the lines",
    "sync-messages": "os.write of the line",
    "sync-messages-10k": "os.write of the line",
}


# ----------------------------------------------------------------------------- RSS child

_CHILD = r"""
import json, os, sys
def status(key):
    with open("/proc/self/status") as fh:
        for line in fh:
            if line.startswith(key + ":"):
                return int(line.split()[1]) * 1024
    import resource
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024
op, path = sys.argv[1], sys.argv[2]
if op in ("load", "peek"):
    from llm_agent_session import Session, backend
    name = backend()
elif op == "orjson":
    import orjson
    name = "orjson"
else:
    name = "json"
base = status("VmRSS")
if op == "load":
    s = Session.load(path)
    n = len(s.messages)
elif op == "peek":
    r = Session.peek(path)
    n = sum(1 for _ in r["envelopes"])
else:
    loads = orjson.loads if op == "orjson" else json.loads
    keep = [loads(line) for line in open(path, "rb") if line.strip()]
    n = len(keep)
print(json.dumps({"op": op, "backend": name, "base": base, "peak": status("VmHWM"), "n": n}))
"""


def measure_rss(op: str, path: str, backend: Optional[str]) -> Optional[Dict[str, Any]]:
    env = child_env()
    if backend:
        env["LLM_AGENT_SESSION_BACKEND"] = backend
    try:
        p = subprocess.run([sys.executable, "-c", _CHILD, op, path], env=env,
                           capture_output=True, text=True, timeout=3600)
    except subprocess.TimeoutExpired:
        return None
    if p.returncode != 0:
        print(f"  rss {op} {backend or ''}: failed: {p.stderr.strip().splitlines()[-1:]}")
        return None
    return json.loads(p.stdout.strip().splitlines()[-1])


# ----------------------------------------------------------------------------- machine





def fmt_time(s: Optional[float]) -> str:
    if s is None:
        return "—"
    if s >= 1:
        return f"{s:.2f} s"
    if s >= 1e-3:
        return f"{s * 1e3:.3g} ms"
    if s >= 1e-6:
        return f"{s * 1e6:.3g} µs"
    return f"{s * 1e9:.3g} ns"


def fmt_ratio(a: Optional[float], b: Optional[float]) -> str:
    if a is None or b is None or b == 0:
        return "—"
    r = a / b
    return f"{r:.3g}"


def fmt_rate(nbytes: Optional[int], s: Optional[float]) -> str:
    if not nbytes or not s:
        return "—"
    return f"{nbytes / s / 1e6:,.0f}" if nbytes / s >= 1e7 else f"{nbytes / s / 1e6:.3g}"


def fmt_mb(n: Optional[float]) -> str:
    return "—" if n is None else f"{n / (1 << 20):,.0f}"


# ----------------------------------------------------------------------------- main


def run_pytest(args: Any, json_path: str, log_path: str) -> int:
    cmd = [sys.executable, "-m", "pytest", HERE, "-q", "-p", "no:cacheprovider",
           "--benchmark-json", json_path, "--benchmark-columns", "median,min,rounds",
           "--benchmark-sort", "name", "--bench-sizes", args.sizes]
    if args.gb:
        cmd.append("--bench-gb")
    if args.backends:
        cmd += ["--bench-backends", args.backends]
    if args.append_sizes:
        cmd += ["--bench-append-sizes", args.append_sizes]
    if args.corpora:
        cmd += ["--bench-corpora", args.corpora]
    if args.k:
        cmd += ["-k", args.k]
    print("$", " ".join(cmd[1:]), f"  (full output: {os.path.relpath(log_path)})", flush=True)
    with open(log_path, "w") as log:
        p = subprocess.Popen(cmd, cwd=ROOT, env=child_env(), stdout=subprocess.PIPE,
                             stderr=subprocess.STDOUT, text=True)
        assert p.stdout is not None
        for line in p.stdout:
            log.write(line)
            s = line.rstrip()
            # Progress dots and the summary; the pytest-benchmark tables go to the log only.
            if s and ("%]" in s or " passed" in s or " failed" in s
                      or s.startswith(("FAILED", "ERROR"))):
                print("  " + s, flush=True)
        return p.wait()


def collect(json_path: str) -> Dict[Tuple[str, int, str], Dict[str, Any]]:
    with open(json_path) as fh:
        data = json.load(fh)
    out = {}
    for b in data.get("benchmarks", []):
        ei = b.get("extra_info") or {}
        if "op" not in ei:
            continue
        out[(ei["op"], ei["size"], ei["impl"])] = {
            "median": b["stats"]["median"], "min": b["stats"]["min"],
            "rounds": b["stats"]["rounds"], "bytes": ei.get("bytes"), "extra": ei}
    return out


def median(res: Dict[Tuple[str, int, str], Dict[str, Any]], op: str, size: int,
           impl: str) -> Optional[float]:
    """The median time of one (operation, size, implementation). Peek's groups run the
    limit only: the per-line parsers read the same file as load's, so their times come
    from load's group of the same corpus; peek-survey takes peek's limit as well."""
    r = res.get((op, size, impl))
    if r:
        return r["median"]
    base, corpus = split_op(op)
    if base in ("peek", "peek-survey") and impl in PARSERS:
        return median(res, with_corpus("load", corpus), size, impl)
    if base == "peek-survey" and impl == "limit":
        return median(res, with_corpus("peek", corpus), size, impl)
    return None


def build_tables(res: Dict[Tuple[str, int, str], Dict[str, Any]], sizes: List[int],
                 rss: Dict[Tuple[str, int, str], Dict[str, Any]], file_sizes: Dict[int, int]
                 ) -> Tuple[str, str, str]:
    def t(op: str, size: int, impl: str) -> Optional[float]:
        return median(res, op, size, impl)

    def nbytes(op: str, size: int) -> Optional[int]:
        for impl in ("native", "pure", "limit", "orjson", "json"):
            r = res.get((op, size, impl))
            if r and r["bytes"]:
                return r["bytes"]
        return None

    head = ["operation", "size", "native", "pure", "native MB/s", "pure MB/s", "native/pure",
            "native/json", "native/orjson", "native/orjson-discard", "native/limit", "pure/orjson",
            "pure/limit"]
    rows = []
    all_sizes = sorted({k[1] for k in res})
    for op in READ_OPS + APPEND_OPS:
        for size in all_sizes:
            if not any(k[0] == op and k[1] == size for k in res):
                continue
            n, p = t(op, size, "native"), t(op, size, "pure")
            j, o, lim = t(op, size, "json"), t(op, size, "orjson"), t(op, size, "limit")
            od = t(op, size, "orjson-discard")
            nb = nbytes(op, size)
            label = generate.size_label(size)
            if op == "peek-since":
                label += f" (last {nb / 1024:.1f} KiB)" if nb else ""
            elif op in APPEND_OPS:
                ex = next((res[(op, size, i)]["extra"] for i in ("native", "pure")
                           if (op, size, i) in res), {})
                msgs = ex.get("messages")
                label = f"session of {label}" if op != "sync-messages-10k" else "new session"
                if msgs is not None:
                    grown = ex.get("messages_after")
                    label += f" ({msgs}–{grown} msgs)" if op.startswith("sync-messages") and grown \
                        else f" ({msgs} msgs)"
            rows.append([op, label, fmt_time(n), fmt_time(p), fmt_rate(nb, n), fmt_rate(nb, p),
                         fmt_ratio(n, p), fmt_ratio(n, j), fmt_ratio(n, o), fmt_ratio(n, od),
                         fmt_ratio(n, lim), fmt_ratio(p, o), fmt_ratio(p, lim)])
    main = md_table(head, rows)

    # Baselines in absolute terms, for reference.
    bhead = ["operation", "size", "json per line", "orjson per line", "orjson per line, discarded",
             "limit", "limit is"]
    brows = []
    for op in READ_OPS + APPEND_OPS:
        for size in all_sizes:
            if (op, size, "limit") not in res:
                continue
            nb = nbytes(op, size)
            brows.append([op, generate.size_label(size), fmt_time(t(op, size, "json")),
                          fmt_time(t(op, size, "orjson")), fmt_time(t(op, size, "orjson-discard")),
                          f"{fmt_time(t(op, size, 'limit'))} ({fmt_rate(nb, t(op, size, 'limit'))} MB/s)",
                          limit_name(op)])
    base = md_table(bhead, brows)

    rhead = ["size", "file MiB", "load native", "load pure", "peek native", "peek pure",
             "orjson per line", "json per line"]
    rrows = []
    for size in sizes:
        if not any(k[1] == size for k in rss):
            continue
        row = [generate.size_label(size), fmt_mb(file_sizes.get(size))]
        for op, be in (("load", "native"), ("load", "pure"), ("peek", "native"), ("peek", "pure"),
                       ("orjson", ""), ("json", "")):
            r = rss.get((op, size, be))
            if r:
                row.append(f"{fmt_mb(r['peak'])} (+{fmt_mb(max(0, r['peak'] - r['base']))})")
            else:
                row.append("—")
        rrows.append(row)
    rss_table = md_table(rhead, rrows) if rrows else "(not measured)"
    return main, base, rss_table


def ratio(a: Optional[float], b: Optional[float]) -> Optional[float]:
    return a / b if a and b else None


def target_row(rows: List[List[str]]) -> Any:
    """``row(what, figure, wanted, met, how)``: one line of a targets table, into ``rows``."""
    def row(what: str, figure: Optional[float], target: str, met: Optional[bool], how: str) -> None:
        shown = "—" if figure is None else f"{figure:.2f}x"
        rows.append([what, shown, target, "—" if met is None else ("yes" if met else "**no**"), how])
    return row


def targets_table(res: Dict[Tuple[str, int, str], Dict[str, Any]],
                  rss: Dict[Tuple[str, int, str], Dict[str, Any]], file_sizes: Dict[int, int]) -> str:
    """The speed and memory targets of the native core (issue #4), at the largest size
    measured, each with the figures it is computed from and whether this run met it."""
    sizes = sorted({k[1] for k in res if k[0] == "load"})
    if not sizes:
        return "(no load measured)"
    size = sizes[-1]
    label = generate.size_label(size)

    def t(op: str, impl: str, at: int = size) -> Optional[float]:
        r = res.get((op, at, impl))
        return r["median"] if r else None

    rows: List[List[str]] = []
    row = target_row(rows)

    load, pure, orj, read = t("load", "native"), t("load", "pure"), t("load", "orjson"), t("load", "limit")
    x = ratio(pure, load)
    row(f"load {label}: faster than pure", x, ">= 15x", None if x is None else x >= 15, "pure / native")
    x = ratio(orj, load)
    row(f"load {label}: faster than orjson per line", x, ">= 5x", None if x is None else x >= 5, "orjson / native")
    x = ratio(load, read)
    row(f"load {label}: of read+count newlines", x, "<= 4x", None if x is None else x <= 4, "native / limit")
    x = ratio(t("peek", "pure"), t("peek", "native"))
    row(f"peek {label} (every envelope): faster than pure", x, ">= 10x", None if x is None else x >= 10, "pure / native")
    since = [v for v in (t("peek-since", "native", at) for at in sorted({k[1] for k in res if k[0] == "peek-since"})) if v]
    x = max(since) / min(since) if len(since) > 1 else None
    row("peek from an offset: slowest / fastest over the sizes", x, "<= 1.5x (flat, within noise)",
        None if x is None else x <= 1.5, "same bytes after the offset at every size")
    torn, torn_limit = t("load-torn", "native"), t("load-torn", "limit")
    copy_and_load = (torn_limit - read + load) if torn_limit and read and load else None
    x = ratio(torn, copy_and_load)
    row(f"repair {label}: of copying the file plus a clean load", x, "<= 1.5x", None if x is None else x <= 1.5,
        "load-torn native / (copy+fsync+rename limit - read limit + clean load native)")
    r_native, r_pure = rss.get(("load", size, "native")), rss.get(("load", size, "pure"))
    if r_native and file_sizes.get(size):
        x = r_native["peak"] / file_sizes[size]
        row(f"load {label}: peak RSS of the file size", x, "<= 1.25x", x <= 1.25, "VmHWM / file bytes")
    if r_native and r_pure:
        x = r_native["peak"] / r_pure["peak"]
        row(f"load {label}: peak RSS of pure's", x, "<= 1x", x <= 1, "VmHWM native / pure")
    for op in APPEND_OPS:
        for at in sorted({k[1] for k in res if k[0] == op}):
            x = ratio(t(op, "native", at), t(op, "pure", at))
            row(f"{op} (session of {generate.size_label(at)}): native time of pure's", x, "<= 1x (within noise: 1.1)",
                None if x is None else x <= 1.1, "native / pure; the ratio to a raw os.write is in the table above")
    return md_table(["target", "this run", "wanted", "met", "computed as"], rows)


def issue17_table(res: Dict[Tuple[str, int, str], Dict[str, Any]],
                  rss: Dict[Tuple[str, int, str], Dict[str, Any]], file_sizes: Dict[Any, int],
                  corpora: List[str]) -> str:
    """The goals of issue #17, for every size measured and every corpus."""
    rows: List[List[str]] = []
    row = target_row(rows)

    def t(op: str, size: int, impl: str) -> Optional[float]:
        return median(res, op, size, impl)

    sizes = sorted({k[1] for k in res if split_op(k[0])[0] == "load"})
    for size in sizes:
        label = generate.size_label(size)
        for corpus in corpora:
            load = with_corpus("load", corpus)
            if (load, size, "native") not in res:
                continue
            name = f"{label} {corpus}"
            n = t(load, size, "native")
            x = ratio(t(load, size, "orjson-discard"), n)
            row(f"load {name}: faster than orjson per line, discarded", x, ">= 5x",
                None if x is None else x >= 5, "orjson-discard / native")
            x = ratio(t(load, size, "orjson"), n)
            row(f"load {name}: faster than orjson per line, kept", x, ">= 5x",
                None if x is None else x >= 5, "orjson / native")
            x = ratio(n, t(load, size, "limit"))
            row(f"load {name}: of read+count newlines", x, "<= 1.3x", None if x is None else x <= 1.3,
                "native / limit")
            peek = with_corpus("peek", corpus)
            x = ratio(t(peek, size, "native"), t(peek, size, "limit"))
            row(f"peek {name} (every envelope): of read+count newlines", x, "<= 1.2x",
                None if x is None else x <= 1.2, "native / limit")
            survey = with_corpus("peek-survey", corpus)
            x = ratio(t(survey, size, "native"), t(survey, size, "limit"))
            row(f"peek(survey=True) {name}: of read+count newlines", x, "<= 1.3x",
                None if x is None else x <= 1.3, "native / limit")
            r = rss.get((load, size, "native"))
            fsize = file_sizes.get(size if corpus == "realistic" else (size, corpus))
            if r and fsize:
                x = r["peak"] / fsize
                row(f"load {name}: peak RSS of the file size", x, "<= 0.25x", x <= 0.25,
                    "VmHWM / file bytes")
    for at in sorted({k[1] for k in res if k[0] == "append-message-200B"}):
        x = ratio(t("append-message-200B", at, "native"), t("append-message-200B", at, "limit"))
        row(f"append-message-200B (session of {generate.size_label(at)}): of a raw os.write", x,
            "<= 8x", None if x is None else x <= 8, "native / os.write of the same line")
    ten_k = [k[1] for k in res if k[0] == "sync-messages-10k" and k[2] == "native"]
    small = sorted(k[1] for k in res if k[0] == "sync-messages" and k[2] == "native")
    if ten_k and small:
        x = ratio(t("sync-messages-10k", ten_k[0], "native"), t("sync-messages", small[0], "native"))
        n_small = res[("sync-messages", small[0], "native")]["extra"].get("messages")
        row(f"sync-messages: 10,000 messages + 1 of {n_small} + 1", x, "~1x (O(new))",
            None if x is None else x <= 1.5, "native sync-messages-10k / native sync-messages")
    return md_table(["goal", "this run", "wanted", "met", "computed as"], rows)


def main(argv: Optional[List[str]] = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--sizes", default="1MB,16MB,256MB", help="default 1MB,16MB,256MB")
    ap.add_argument("--gb", action="store_true", help="add a 1 GB transcript")
    ap.add_argument("--backends", default="", help="default: every available backend")
    ap.add_argument("--append-sizes", default="",
                    help="sizes of the sessions appends go to (default: smallest and largest)")
    ap.add_argument("--no-rss", action="store_true", help="skip the peak-RSS child processes")
    ap.add_argument("--cli-size", default="1GB",
                    help="the transcript the command line is timed on (default 1GB; 'none' skips it)")
    ap.add_argument("--import-size", default="32MB",
                    help="the Claude Code / Codex sources import is timed on (default 32MB; 'none' skips it)")
    ap.add_argument("--loop-size", default="256MB",
                    help="the transcript AsyncSession loads beside the event-loop ticker (default 256MB; 'none' skips it)")
    ap.add_argument("--no-write", action="store_true", help="do not rewrite benches/RESULTS.md")
    ap.add_argument("--results", default=os.path.join(HERE, "RESULTS.md"))
    ap.add_argument("--json", default="", help="keep the pytest-benchmark JSON here")
    ap.add_argument("--corpora", default=",".join(CORPORA),
                    help="corpora that load/peek/peek-survey run on (default: all three)")
    ap.add_argument("-k", default="", help="pytest -k expression (a subset; for development)")
    ap.add_argument("--no-cpu", action="store_true",
                    help="skip the CPU-time children (issue #17's jobs side by side, sizes >= 256MB)")
    ap.add_argument("--issue17-section", action="store_true",
                    help="write only this run's issue #17 tables, as a marked section of RESULTS.md "
                         "(for a run of big sizes beside the file's full run)")
    args = ap.parse_args(argv)
    corpora = [c.strip() for c in args.corpora.split(",") if c.strip()]

    t_start = time.time()
    info = machine_info()
    sizes = sorted({generate.parse_size(s) for s in args.sizes.split(",") if s.strip()}
                   | ({1 << 30} if args.gb else set()))

    print("Transcripts (cached in", os.path.relpath(generate.cache_dir()) + "):", flush=True)
    file_sizes: Dict[Any, int] = {}
    for size in sizes:
        for corpus in corpora:
            if corpus == "realistic":
                continue
            t0 = time.perf_counter()
            _, stats = generate.cached(size, corpus=corpus)
            file_sizes[(size, corpus)] = stats["size"]
            print(f"  {generate.size_label(size)} {corpus}: {stats['size']:,} bytes, "
                  f"{stats['multibyte-share']:.1%} of them multi-byte UTF-8, "
                  f"{stats['backslash-share']:.1%} backslashes ({time.perf_counter() - t0:.1f}s)",
                  flush=True)
        for torn in (False, True):
            t0 = time.perf_counter()
            path, stats = generate.cached(size, seed=1, torn=torn)
            if not torn:
                file_sizes[size] = stats["size"]
                print(f"  {generate.size_label(size)}: {stats['size']:,} bytes, {stats['lines']:,} lines, "
                      f"{stats['types'].get('message', 0):,} message lines, {stats['compactions']} "
                      f"compactions, {stats['elisions']} elisions, {stats['messages']} live messages "
                      f"({time.perf_counter() - t0:.1f}s)", flush=True)

    tmpdir = tempfile.mkdtemp(prefix="las-bench-")
    json_path = args.json or os.path.join(tmpdir, "bench.json")
    log_path = os.path.join(generate.cache_dir(), "last-run.log")
    rc = run_pytest(args, json_path, log_path)
    if not os.path.exists(json_path):
        print("pytest-benchmark wrote no results; see", log_path)
        return rc or 1
    res = collect(json_path)

    rss: Dict[Tuple[str, int, str], Dict[str, Any]] = {}
    if not args.no_rss:
        from benchutil import available_backends

        backends = available_backends()
        if args.backends:
            backends = [b for b in backends if b in args.backends.split(",")]
        print("Peak RSS, one child process per measurement:", flush=True)
        work = os.path.join(generate.cache_dir(), "rss")
        os.makedirs(work, exist_ok=True)
        for size in sizes:
            src, _ = generate.cached(size)
            path = os.path.join(work, "clean.jsonl")
            shutil.copyfile(src, path)
            for op in ("load", "peek"):
                for be in backends:
                    r = measure_rss(op, path, be)
                    if r:
                        rss[(op, size, be)] = r
            for op in ("orjson", "json"):
                r = measure_rss(op, path, None)
                if r:
                    rss[(op, size, "")] = r
            os.unlink(path)
            for corpus in corpora:
                if corpus == "realistic" or "native" not in backends:
                    continue
                src, _ = generate.cached(size, corpus=corpus)
                shutil.copyfile(src, path)
                r = measure_rss("load", path, "native")
                if r:
                    rss[(with_corpus("load", corpus), size, "native")] = r
                os.unlink(path)
            print(f"  {generate.size_label(size)}: done", flush=True)
        shutil.rmtree(work, ignore_errors=True)

    cpu_t = "(not measured: --no-cpu, or no size of 256MB or more)"
    cpu_sizes = [s for s in sizes if s >= 256 << 20]
    if not args.no_cpu and cpu_sizes:
        print("CPU time of issue #17's jobs, one child process per transcript:", flush=True)
        cpu_t = cpu_times.table(cpu_times.measure(cpu_sizes, corpora, child_env()), md_table)

    cli_t = "(not measured: --cli-size none)"
    if args.cli_size.lower() != "none":
        cli_size = generate.parse_size(args.cli_size)
        cli_path, cli_stats = generate.cached(cli_size)
        print(f"Command line on {generate.size_label(cli_size)} ({cli_stats['lines']:,} lines), "
              "fresh processes:", flush=True)
        cli_t = cli_times.table(cli_times.measure(cli_path, child_env()), generate.size_label(cli_size), md_table)

    import_t = "(not measured: --import-size none)"
    if args.import_size.lower() != "none":
        from benchutil import available_backends

        print(f"Import of Claude Code and Codex sources ({args.import_size}), fresh processes:", flush=True)
        rows = import_speed.measure(generate.parse_size(args.import_size), child_env(), available_backends())
        import_t = import_speed.table(rows, md_table)

    loop_t = "(not measured: --loop-size none)"
    if args.loop_size.lower() != "none":
        loop_size = generate.parse_size(args.loop_size)
        print(f"AsyncSession and the event loop ({generate.size_label(loop_size)} load, {event_loop.APPENDS} "
              "fsync appends):", flush=True)
        loop_path, _ = generate.cached(loop_size)
        loop_t = event_loop.table(event_loop.measure(loop_path), generate.size_label(loop_size))

    try:
        info["Load average at end"] = " ".join(f"{x:.2f}" for x in os.getloadavg())
    except OSError:
        pass
    main_t, base_t, rss_t = build_tables(res, sizes, rss, file_sizes)
    targets_t = targets_table(res, rss, file_sizes)
    issue17_t = issue17_table(res, rss, file_sizes, corpora)
    elapsed = time.time() - t_start
    print()
    print(main_t)
    print()
    print(base_t)
    print()
    print("Peak RSS in MiB (+ growth over the process after import):")
    print(rss_t)
    print()
    print(targets_t)
    print()
    print(issue17_t)
    print()
    print(cpu_t)
    print()
    print(cli_t)
    print()
    print(import_t)
    print()
    print(loop_t)
    print(f"\n{len(res)} benchmarks in {elapsed / 60:.1f} min; pytest exit status {rc}")

    if args.issue17_section and not args.no_write:
        cmdline = "python benches/run.py " + shlex.join(argv if argv is not None else sys.argv[1:])
        replace_section(args.results, ISSUE17_START, ISSUE17_END,
                        issue17_section(info, cmdline, issue17_t, cpu_t, elapsed))
        print("wrote the issue #17 section of", os.path.relpath(args.results))
    elif not args.no_write:
        cmdline = "python benches/run.py" + ("" if args.sizes == "1MB,16MB,256MB" else f" --sizes {args.sizes}") \
            + (" --gb" if args.gb else "") + (f" --backends {args.backends}" if args.backends else "") \
            + (f" --append-sizes {args.append_sizes}" if args.append_sizes else "") \
            + (f" --cli-size {args.cli_size}" if args.cli_size != "1GB" else "")
        write_results(args.results, info, cmdline, main_t, base_t, rss_t, targets_t, issue17_t, cpu_t,
                      cli_t, elapsed, rc)
        import_speed.write_section(args.results, import_speed.section(import_t, "Measured in this run."))
        replace_section(args.results, event_loop.SECTION_START, event_loop.SECTION_END, event_loop.section(loop_t))
        print("wrote", os.path.relpath(args.results))
    shutil.rmtree(tmpdir, ignore_errors=True)
    return rc


ISSUE17_START = "<!-- issue17-big:start -->"
ISSUE17_END = "<!-- issue17-big:end -->"

CPU_NOTE = """CPU time of the same jobs, side by side in one child process per transcript
(`benches/cpu_times.py`: best of three rounds, `time.process_time`, every thread of the
process): steadier than wall time on a shared machine. The native load and peek split a
big file between two threads (their CPU time counts both); the limit and orjson use one.
The wall ratios of the same child are beside them."""


def issue17_section(info: Dict[str, str], cmdline: str, issue17_t: str, cpu_t: str,
                    elapsed: float) -> str:
    machine = "; ".join(f"{k.lower()}: {info[k]}" for k in
                        ("Commit", "Date", "Load average at start", "Load average at end") if k in info)
    return f"""{ISSUE17_START}
## Issue #17 at the big sizes, in one run

Generated by `{cmdline}` in {elapsed / 60:.1f} minutes ({machine}), beside the run named
at the top of this file; the goals as in the issue #17 section above, every ratio from
this one run.

{issue17_t}

{CPU_NOTE}

{cpu_t}
{ISSUE17_END}"""


def write_results(path: str, info: Dict[str, str], cmdline: str, main_t: str, base_t: str,
                  rss_t: str, targets_t: str, issue17_t: str, cpu_t: str, cli_t: str,
                  elapsed: float, rc: int) -> None:
    machine = "\n".join(f"- **{k}**: {v}" for k, v in info.items())
    failed = "" if rc == 0 else (
        f"\n> **Note:** pytest exited with status {rc}: some benchmarks failed or were skipped; "
        "their cells show —.\n")
    text = f"""# Benchmark results

Generated by `{cmdline}` in {elapsed / 60:.1f} minutes. Do not edit by hand: rerun the
command to regenerate this file.
{failed}
## Machine

{machine}

## Targets of the native core

The speed and memory targets (issue #4) at the largest size, computed from the tables
below in this same run. Wall times on a shared machine vary by 10-15% between runs:
read a near miss with the load averages above.

{targets_t}

## Issue #17: memory speed on any text, appends near a write

Each goal at every size measured, on each corpus of the generator (`realistic`;
`nonascii`: most bytes multi-byte UTF-8; `escapes`: dense in JSON escapes), from the
tables below in this same run. `orjson per line, discarded` parses each line and drops
the object at once (no memory held): the stricter baseline. The analysis of what is not
met, with its profile, is in `benches/ANALYSIS.md`.

{issue17_t}

{CPU_NOTE}

{cpu_t}

## The command line on a big transcript

`llm-agent-session peek` and `show --last 50` (issue #6) against the library calls they
stand on, each a fresh process (so interpreter start and imports count on both sides),
best of three. `peek` surveys in the scan's own pass (`Session.peek(path, survey=True)`);
`show --last 50` shows the conversation as replay leaves it, so it costs a `load`, not a
peek; `show --raw --last 50` (envelopes in file order, no replay) costs a peek.

{cli_t}

## Time per operation, and ratios

Median time of one operation. Ratios are time ratios (below 1: the first is faster):
`native/pure` compares the two backends; `native/json`, `native/orjson` and `pure/orjson`
compare with reading the same file with `json.loads` / `orjson.loads` per line (what
users would otherwise write); `native/limit` and `pure/limit` compare with the physical
limit (see the second table). MB/s is bytes of the file (or of the appended lines) per
second, 10^6 bytes per MB. The machine is shared: read the load averages above before
reading small differences.

{main_t}

What each operation does:

- `load`: `Session.load` of a clean transcript and `close()` (replay of every line).
- `load-torn`: the same file plus a torn last line (cut inside a UTF-8 character):
  tail check, verbatim copy of the good prefix to `.repair`, fsync, rename, replay.
- `peek`: `Session.peek` of the whole file, iterating every envelope (what a viewer does).
- `peek-since`: `Session.peek(path, offset=..., identity=...)` of only the last turn
  (a user message, tool rounds and the answer: the same number of bytes, about 67 KiB, at
  every size), iterating its envelopes: the per-refresh cost for a viewer following a live
  file. It should not grow with the file size.
- `salvage`: `Session.salvage` of the torn file into a new file.
- `append-message-200B` / `append-message-20KB`: `append_message` of a user message of
  about 200 bytes / a tool message with 20 KB of content, on a session loaded from the
  transcript of that size; `tool-pair`: `append_tool_dispatched` + `append_tool_settled`;
  `sync-messages`: `sync_messages` of the session's whole message list plus one new
  message (the list grows by one per round).
  No fsync (`Session.create/load` default).

## Baselines and limits

{base_t}

The limits: reading is 1 MiB `readinto` calls plus counting `\\n` (the least any JSONL reader
does); copying is `copy_file_range` plus `fsync` (the least a verbatim repair or salvage
does); an append is one `os.write` of the same line, already serialised, to an
`O_APPEND` descriptor. All files are in the page cache (just written), so reads measure
memory bandwidth and CPU, not the disk; copies include the fsync to this machine's disk.

## Peak memory

Peak RSS (`VmHWM`) of a fresh child process that imports the library (with
`LLM_AGENT_SESSION_BACKEND` set) and runs one `Session.load` (keeping the session) or one
`Session.peek` (iterating every envelope, keeping the result); in parentheses the growth
over the child's RSS just before the call. The last two columns read the same file with
`orjson.loads` / `json.loads` per line, keeping the parsed lines.

{rss_t}

## Transcripts

Written by `benches/generate.py` (seed 1): a long coding-agent run with a sticky system
prompt and task, one run-context line per run (sections deduplicated by digest), user and
assistant turns, tool calls with dispatched/settled pairs around tool results of skewed
size (median about 2 KB, tail to 200 KB: code, escapes, control characters,
U+2028/U+2029, non-ASCII text), grants snapshots, elisions of old tool results and
compactions; every reference names a live id. Cached in `benches/.cache/`.
"""
    with open(path, "w", encoding="utf-8") as fh:
        fh.write(text)


if __name__ == "__main__":
    sys.exit(main())
