"""Hostile input, coverage-guided: load, peek and salvage fuzzed on arbitrary bytes.

Three libFuzzer targets on the Rust core (tests/reliability/fuzz/, a cargo-fuzz crate:
``tail_repair``, ``load``, ``scan``; each asserts the core's own invariants, see its
src/lib.rs), atheris on the pure backend with every input also run on the native one
and compared (tests/reliability/fuzz/differential.py), and the corpus the Rust targets
grew replayed through the same comparison. All of it seeded with the reference
transcripts (LF and CRLF) and small damaged variants, written at run time. Targets:
panics 0, exceptions outside the spec 0, native/pure disagreements 0.

Fast tier (the README's test command): a short smoke, about a minute and a half
including the cold cargo build on 2 cores::

    python -m pytest tests/reliability/test_fuzzing.py -q

Long tier: 10 minutes a target (``LLM_AGENT_SESSION_FUZZ_SECONDS`` overrides the time
a target runs in either tier, e.g. 60 for a shortened long run)::

    LLM_AGENT_SESSION_TIER=long python -m pytest tests/reliability/test_fuzzing.py -q

Without pytest, with cargo-fuzz installed (``cargo install cargo-fuzz``; stable Rust has
no sanitizers, hence ``-s none``; ``-a`` adds the debug assertions and overflow checks
the test builds with)::

    python -m tests.reliability.fuzz.differential seeds tests/reliability/fuzz/corpus/load
    cargo fuzz run --fuzz-dir tests/reliability/fuzz -s none -a load -- -dict=tests/reliability/fuzz/envelope.dict -max_total_time=600

and atheris::

    python -m tests.reliability.fuzz.differential fuzz CORPUS_DIR SEED_DIR -dict=tests/reliability/fuzz/envelope.dict -max_total_time=600

A crash input is saved under tests/reliability/fuzz/artifacts/<target>/ (git ignores it;
the failure message names it, and gives the bytes when they are short). Reproduce it::

    target/reliability-fuzz/x86_64-unknown-linux-gnu/release/load CRASH_FILE   # Rust, as built here
    cargo fuzz run --fuzz-dir tests/reliability/fuzz -s none -a load CRASH_FILE
    python -m tests.reliability.fuzz.differential replay -v CRASH_FILE          # both backends

The Rust targets are built with cargo and the flags cargo-fuzz uses (sancov
instrumentation, ``--cfg fuzzing``), so the fast tier needs no cargo-fuzz install; the
build goes to ``target/reliability-fuzz`` (``LLM_AGENT_SESSION_FUZZ_TARGET_DIR``
overrides). A machine without cargo, a C++ compiler (libFuzzer is C++) or atheris skips
the part it cannot run, saying why.
"""

from __future__ import annotations

import importlib.util
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
import time
from typing import Dict, List

import pytest

from tests.reliability.support import BACKENDS, LONG, record

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))
FUZZ_DIR = os.path.join(HERE, "fuzz")
# Run from ROOT as a module of the test tree (it imports tests.reliability.support).
DIFFERENTIAL = [sys.executable, "-m", "tests.reliability.fuzz.differential"]
SHOWN = "python -m tests.reliability.fuzz.differential"  # as a person runs it, from the project's folder
ARTIFACTS = os.path.join(FUZZ_DIR, "artifacts")
DICT = os.path.join(FUZZ_DIR, "envelope.dict")  # the line format's words, for the mutations
TARGET_DIR = os.environ.get("LLM_AGENT_SESSION_FUZZ_TARGET_DIR") or os.path.join(ROOT, "target", "reliability-fuzz")
RUST_TARGETS = ("tail_repair", "load", "scan")
AREA = "Hostile input"
COMMAND = "python tests/reliability/report.py"

_override = os.environ.get("LLM_AGENT_SESSION_FUZZ_SECONDS")
RUST_SECONDS = int(_override) if _override else (600 if LONG else 10)
ATHERIS_SECONDS = int(_override) if _override else (600 if LONG else 25)


def _time_target(seconds: int) -> str:
    here = "long tier" if LONG else "fast-tier smoke"
    return f"{seconds} s a target here ({here}); 10 min a target in the long tier"


# What `cargo fuzz build -s none -a` passes (cargo-fuzz 0.13.2 on x86-64 Linux, as its `-v`
# shows): SanitizerCoverage with inline 8-bit counters, a PC table and compare tracing,
# `--cfg fuzzing`, debug assertions (so overflow checks too), one codegen unit.
RUSTFLAGS = " ".join(
    [
        "-Cpasses=sancov-module",
        "-Cllvm-args=-sanitizer-coverage-level=4",
        "-Cllvm-args=-sanitizer-coverage-inline-8bit-counters",
        "-Cllvm-args=-sanitizer-coverage-pc-table",
        "-Cllvm-args=-sanitizer-coverage-trace-compares",
        "-Cllvm-args=-simplifycfg-branch-fold-threshold=0",
        "--cfg fuzzing",
        "-Cllvm-args=-sanitizer-coverage-stack-depth",
        "-Cdebug-assertions",
        "-Ccodegen-units=1",
    ]
)


def _host_triple() -> str:
    out = subprocess.run(["rustc", "-vV"], capture_output=True, text=True, check=True).stdout
    return next(row.split(":", 1)[1].strip() for row in out.splitlines() if row.startswith("host:"))


_SCRATCH = None


def _scratch_env() -> Dict[str, str]:
    """The environment of a fuzzing subprocess: its input files go under one scratch
    directory (on tmpfs when there is one) that this module removes at the end."""
    global _SCRATCH
    if _SCRATCH is None:
        base = "/dev/shm" if os.path.isdir("/dev/shm") and os.access("/dev/shm", os.W_OK) else None
        _SCRATCH = tempfile.mkdtemp(prefix="las-fuzz-test-", dir=base)
    return dict(os.environ, LLM_AGENT_SESSION_FUZZ_SCRATCH=_SCRATCH)


@pytest.fixture(scope="module", autouse=True)
def _remove_scratch():
    yield
    if _SCRATCH is not None:
        shutil.rmtree(_SCRATCH, ignore_errors=True)


class Run:
    """One libFuzzer run (cargo fuzz target or atheris) and what it printed."""

    def __init__(self, name: str, cmd: List[str], seconds: int, artifacts: str, corpus_dir: str):
        os.makedirs(artifacts, exist_ok=True)
        self.corpus_dir = corpus_dir
        started = time.monotonic()
        proc = subprocess.run(cmd, capture_output=True, text=True, errors="replace", timeout=seconds + 300, cwd=ROOT, env=_scratch_env())
        self.name = name
        self.seconds = time.monotonic() - started
        self.returncode = proc.returncode
        self.log = proc.stderr + proc.stdout
        done = [m for m in re.finditer(r"#(\d+)\s+(?:DONE|INITED|NEW|REDUCE|pulse)\s+cov: (\d+) ft: (\d+) corp: (\d+)/", self.log)]
        last = done[-1] if done else None
        runs = re.search(r"stat::number_of_executed_units: (\d+)", self.log)
        self.runs = int(runs.group(1)) if runs else (int(last.group(1)) if last else 0)
        self.cov = int(last.group(2)) if last else 0
        self.ft = int(last.group(3)) if last else 0
        self.corpus = int(last.group(4)) if last else 0
        saved = re.search(r"Test unit written to (\S+)", self.log)
        self.crash = saved.group(1) if saved else None

    def figures(self) -> str:
        return f"{self.runs:,} runs in {self.seconds:.0f} s; corpus {self.corpus:,}; cov {self.cov:,} edges, {self.ft:,} features"

    def failure(self, reproduce: str) -> str:
        """The message for a failed run: what libFuzzer said, the input, how to replay it."""
        lines = self.log.splitlines()
        start = next(
            (i for i, row in enumerate(lines) if "panicked at" in row or "Uncaught Python exception" in row or "ERROR: libFuzzer" in row),
            max(0, len(lines) - 40),
        )
        text = "\n".join(lines[start : start + 40])
        data = b""
        if self.crash and os.path.exists(self.crash):
            with open(self.crash, "rb") as f:
                data = f.read()
        shown = f"bytes.fromhex({data.hex()!r})" if data and len(data) <= 512 else f"{len(data)} bytes"
        return (
            f"{self.name}: libFuzzer exit status {self.returncode}; crash input {self.crash} ({shown})\n"
            f"reproduce: {reproduce.format(crash=self.crash)}\n{text}"
        )


@pytest.fixture(scope="module")
def rust_build():
    """Build the three cargo fuzz targets as cargo-fuzz would (no cargo-fuzz needed)."""
    if shutil.which("cargo") is None or shutil.which("rustc") is None:
        pytest.skip("cargo fuzzing needs a Rust toolchain (cargo, rustc): none on PATH")
    if not (os.environ.get("CXX") and shutil.which(os.environ["CXX"])) and not any(shutil.which(c) for c in ("c++", "g++", "clang++")):
        pytest.skip("cargo fuzzing needs a C++ compiler to build libFuzzer (libfuzzer-sys): none on PATH")
    triple = _host_triple()
    if "-linux-" not in triple:
        pytest.skip(f"libfuzzer-sys supports Linux only; host is {triple}")
    binaries = {t: os.path.join(TARGET_DIR, triple, "release", t) for t in RUST_TARGETS}
    cold = not all(os.path.exists(b) for b in binaries.values())
    env = dict(os.environ)
    env["RUSTFLAGS"] = (RUSTFLAGS + " " + env.get("RUSTFLAGS", "")).strip()
    env["CARGO_FUZZ"] = "1"
    started = time.monotonic()
    # --target: RUSTFLAGS then apply to the targets only, not to build scripts (cargo-fuzz does the same).
    proc = subprocess.run(
        ["cargo", "build", "--release", "--bins", "--manifest-path", os.path.join(FUZZ_DIR, "Cargo.toml"),
         "--target", triple, "--target-dir", TARGET_DIR],
        capture_output=True,
        text=True,
        env=env,
        timeout=1800,
    )
    seconds = time.monotonic() - started
    if proc.returncode != 0:
        pytest.fail(f"building the cargo fuzz targets failed:\n{proc.stderr[-4000:]}")
    record(AREA, "fuzz targets built (cargo, sancov flags of cargo-fuzz, stable Rust)", f"{seconds:.0f} s ({'cold' if cold else 'warm'})", "fits the fast tier", COMMAND)
    return binaries


@pytest.fixture(scope="module")
def seed_dir(tmp_path_factory):
    path = str(tmp_path_factory.mktemp("fuzz-seeds"))
    subprocess.run([*DIFFERENTIAL, "seeds", path], check=True, capture_output=True, timeout=120, cwd=ROOT)
    return path


@pytest.fixture(scope="module")
def rust_runs(rust_build, seed_dir, tmp_path_factory):
    """Each cargo fuzz target run once (on first use), its grown corpus kept for the replay."""
    runs: Dict[str, Run] = {}
    corpora = tmp_path_factory.mktemp("fuzz-corpora")

    def run(target: str) -> Run:
        if target not in runs:
            corpus = str(corpora / target)
            os.makedirs(corpus, exist_ok=True)
            artifacts = os.path.join(ARTIFACTS, target)
            runs[target] = Run(
                f"cargo fuzz target {target}",
                [rust_build[target], corpus, seed_dir, f"-max_total_time={RUST_SECONDS}",
                 f"-artifact_prefix={artifacts}/", f"-dict={DICT}", "-print_final_stats=1", "-timeout=60"],
                RUST_SECONDS,
                artifacts,
                corpus,
            )
        return runs[target]

    return run


@pytest.mark.parametrize("target", RUST_TARGETS)
def test_rust_core_fuzz(rust_runs, rust_build, target):
    """No panic and no broken invariant of the core on whatever libFuzzer makes."""
    run = rust_runs(target)
    crashed = run.returncode != 0 or run.crash is not None
    record(AREA, f"cargo fuzz `{target}` (Rust core): runs, corpus, coverage", run.figures(), _time_target(RUST_SECONDS), COMMAND)
    record(AREA, f"cargo fuzz `{target}`: panics or broken invariants", int(crashed), "0", COMMAND)
    assert not crashed, run.failure(
        f"{rust_build[target]} {{crash}}  or  cargo fuzz run --fuzz-dir tests/reliability/fuzz -s none -a {target} {{crash}}"
    )
    assert run.runs > 0, f"{target}: libFuzzer ran nothing:\n{run.log[-2000:]}"


def _need_differential() -> None:
    if "native" not in BACKENDS:
        pytest.skip("differential fuzzing needs the native backend, which this installation lacks (pip install .)")


def test_pure_backend_atheris_differential(seed_dir, tmp_path):
    """atheris on the pure backend's Python, every input also run on native: no exception
    outside the spec, no disagreement."""
    if importlib.util.find_spec("atheris") is None:
        pytest.skip("atheris is not installed (pip install atheris, or '.[test]' on x86-64 Linux)")
    _need_differential()
    corpus = str(tmp_path / "corpus")
    os.makedirs(corpus)
    artifacts = os.path.join(ARTIFACTS, "differential")
    run = Run(
        "atheris on the pure backend",
        [*DIFFERENTIAL, "fuzz", corpus, seed_dir, f"-max_total_time={ATHERIS_SECONDS}",
         f"-artifact_prefix={artifacts}/", f"-dict={DICT}", "-print_final_stats=1", "-timeout=60"],
        ATHERIS_SECONDS,
        artifacts,
        corpus,
    )
    finding = re.search(r"Finding: (outside-spec|disagreement)", run.log)
    outside = int(bool(finding and finding.group(1) == "outside-spec"))
    disagreements = int(bool(finding and finding.group(1) == "disagreement"))
    record(AREA, "atheris on the pure backend, each input also on native: runs, corpus, coverage", run.figures(), _time_target(ATHERIS_SECONDS), COMMAND)
    record(AREA, "atheris: exceptions outside the spec", outside, "0", COMMAND)
    record(AREA, "atheris: native/pure disagreements", disagreements, "0", COMMAND)
    crashed = run.returncode != 0 or run.crash is not None
    assert not crashed, run.failure(f"{SHOWN} replay -v {{crash}}")
    assert run.runs > 0, f"atheris ran nothing:\n{run.log[-2000:]}"


def test_rust_corpus_on_both_backends(rust_runs, seed_dir):
    """What the Rust targets found (their corpora, seeds included) through the Python
    differential check: the coverage of the native core compared between backends."""
    _need_differential()
    dirs = [seed_dir] + [rust_runs(t).corpus_dir for t in RUST_TARGETS]
    artifacts = os.path.join(ARTIFACTS, "corpus-replay")
    proc = subprocess.run(
        [*DIFFERENTIAL, "replay", "--artifacts", artifacts, *dirs],
        capture_output=True,
        text=True,
        timeout=3600,
        cwd=ROOT,
        env=_scratch_env(),
    )
    try:
        summary = json.loads(proc.stdout)
    except ValueError:
        pytest.fail(f"the corpus replay did not finish (exit {proc.returncode}):\n{proc.stderr[-3000:]}")
    record(AREA, "cargo fuzz corpora replayed on both backends: inputs", summary["inputs"], "every input the Rust targets kept", COMMAND)
    record(AREA, "corpus replay: exceptions outside the spec", summary["outside-spec"], "0", COMMAND)
    record(AREA, "corpus replay: native/pure disagreements", summary["disagreement"], "0", COMMAND)
    shown = "\n\n".join(
        f"{f['kind']} on {f['saved'] or f['input']}\n{f['what'][:1500]}\nreproducer: {f['reproducer']}\n"
        f"reproduce: {SHOWN} replay -v {f['saved'] or f['input']}"
        for f in summary["findings"][:3]
    )
    assert proc.returncode == 0 and not summary["findings"], shown or proc.stderr[-3000:]
    assert summary["inputs"] > 0
