"""The pure backend under atheris, and every input checked on both backends.

One input is a whole file's bytes. :func:`observe` writes them to a file (on tmpfs when
there is one) and runs what a caller can: ``Session.load`` (events, messages, warnings,
meta, grants, pending operations, run-context sections, and the bytes the file holds
after it, since load may repair), ``Session.peek`` (with its survey) and
``Session.salvage`` (its report and the bytes it wrote), each on fresh bytes.
:func:`check` does so under the pure and the native backend and says what is wrong:

* ``outside-spec``: load raised something other than the spec's ``TranscriptError``
  classes, or peek or salvage raised at all (they report problems, docs/FORMAT.md's peek; the README's salvage);
* ``disagreement``: the two backends observed anything different (docs/ARCHITECTURE.md's two cores: identical
  results and identical errors on every input), error class, line, offset and text
  included.

Three ways to run it (tests/reliability/test_fuzzing.py runs the first two)::

    python -m tests.reliability.fuzz.differential seeds DIR
    python -m tests.reliability.fuzz.differential fuzz [libFuzzer options] CORPUS_DIR [SEED_DIR]
    python -m tests.reliability.fuzz.differential replay [--artifacts DIR] [-v] FILE_OR_DIR...

``seeds`` writes the seed corpus (the reference transcripts, LF and CRLF, and small
damaged variants of them). ``fuzz`` is atheris: coverage-guided on the package's Python
code (the pure core and the glue both backends share; the native extension is not
instrumented, its coverage is the cargo fuzz targets'), each input checked on both
backends; a finding raises, so libFuzzer saves the input (``crash-<sha1>`` under
``-artifact_prefix``) and stops. ``replay`` checks every file given (directories
recursively, e.g. a cargo fuzz corpus), counts the findings, saves the first 20 under
``--artifacts`` and prints a JSON summary; with ``-v`` it prints both backends' observations, which is how
to look at a crash input.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import os
import shutil
import sys
import tempfile
import traceback
from typing import Any, Dict, Iterator, List, Optional, Tuple

HERE = os.path.dirname(os.path.abspath(__file__))
RELIABILITY = os.path.dirname(HERE)
PACKAGE = "llm_agent_session"
SAVED_FINDINGS = 20  # replay saves and describes the first ones; it counts them all


class Finding(Exception):
    """What atheris reports as a crash: an input the backends disagree on, or an
    exception outside the spec."""


def scratch_dir() -> str:
    """Where each input is written: under ``LLM_AGENT_SESSION_FUZZ_SCRATCH`` when set (the
    test sets it, and removes it: libFuzzer ends atheris with exit(), so the fuzz mode
    cannot clean up after itself), else on tmpfs when there is one."""
    base = os.environ.get("LLM_AGENT_SESSION_FUZZ_SCRATCH")
    if not base and os.path.isdir("/dev/shm") and os.access("/dev/shm", os.W_OK):
        base = "/dev/shm"
    return tempfile.mkdtemp(prefix="las-fuzz-", dir=base)


def _event(e: Any) -> Tuple[Any, ...]:
    return (e.id, e.type, e.ts, e.v, e.payload)


def _error(e: BaseException) -> Tuple[Any, ...]:
    return (type(e).__name__, getattr(e, "line", None), getattr(e, "offset", None), getattr(e, "reason", None), str(e))


def _digests(events: List[Tuple[Any, ...]]) -> List[str]:
    """The run-context section digests the events name (to ask load for their texts)."""
    out: List[str] = []
    for _, type_, _, _, payload in events:
        if type_ != "run-context" or not isinstance(payload, dict):
            continue
        sections = payload.get("sections")
        for s in sections if isinstance(sections, list) else []:
            if isinstance(s, dict) and isinstance(s.get("digest"), str) and s["digest"] not in out:
                out.append(s["digest"])
    return out


class Outside(Exception):
    """Wraps an exception the spec does not allow, with where it came from."""

    def __init__(self, op: str, exc: BaseException) -> None:
        super().__init__(op, exc)
        self.op = op
        self.text = "".join(traceback.format_exception(type(exc), exc, exc.__traceback__))


def observe(backend: str, data: bytes, workdir: str) -> Dict[str, Any]:
    """What load, peek and salvage make of `data` under `backend` (raises :class:`Outside`)."""
    import llm_agent_session
    from llm_agent_session import Session, TranscriptError, _backend

    _backend.use(backend)
    assert llm_agent_session.backend() == backend
    path = os.path.join(workdir, "transcript.jsonl")
    out = os.path.join(workdir, "salvaged.jsonl")

    def fresh() -> None:
        for p in (path, out, path + ".repair"):
            if os.path.lexists(p):
                os.unlink(p)
        with open(path, "wb") as f:
            f.write(data)

    def file_state(p: str) -> Any:
        if not os.path.lexists(p):
            return None
        with open(p, "rb") as f:
            got = f.read()
        return "unchanged" if got == data else got

    seen: Dict[str, Any] = {}
    fresh()
    try:
        with Session.load(path) as s:
            events = [_event(e) for e in s.events]
            seen["load"] = (
                "ok",
                events,
                list(s.message_ids),
                [repr(m) for m in s.messages],
                list(s.warnings),
                s.meta,
                s.grants,
                [repr(p) for p in s.pending_tool_operations()],
                [(d, s.run_context_section(d)) for d in _digests(events)],
            )
    except TranscriptError as e:
        seen["load"] = _error(e)
    except Exception as e:
        raise Outside("load", e) from None
    seen["file after load"] = file_state(path)
    seen["repair file after load"] = file_state(path + ".repair")

    fresh()
    try:
        view = Session.peek(path, survey=True)
        view.pop("identity")  # (st_dev, st_ino): a new file each time
        view["envelopes"] = [_event(e) for e in view["envelopes"]]
        view["messages"] = [repr(m) for m in view["messages"]]
        view["survey"]["pending_tool_operations"] = [repr(op) for op in view["survey"]["pending_tool_operations"]]
        seen["peek"] = view
    except Exception as e:
        raise Outside("peek", e) from None

    fresh()
    try:
        seen["salvage"] = Session.salvage(path, out)
    except Exception as e:
        raise Outside("salvage", e) from None
    seen["salvaged file"] = file_state(out)
    return seen


def _where_they_differ(a: Any, b: Any, path: str = "") -> Tuple[str, Any, Any]:
    """The deepest place (a path like ``['load'][4][0]``) where `a` and `b` differ."""
    if isinstance(a, dict) and isinstance(b, dict) and list(a) == list(b):
        for key in a:
            if repr(a[key]) != repr(b[key]):
                return _where_they_differ(a[key], b[key], f"{path}[{key!r}]")
    if isinstance(a, (list, tuple)) and isinstance(b, (list, tuple)) and type(a) is type(b) and len(a) == len(b):
        for i, (x, y) in enumerate(zip(a, b)):
            if repr(x) != repr(y):
                return _where_they_differ(x, y, f"{path}[{i}]")
    return path, a, b


def _short(value: Any, n: int = 600) -> str:
    text = repr(value)
    return text if len(text) <= n else text[:n] + f"... ({len(text)} chars)"


def check(data: bytes, workdir: str, backends: List[str]) -> Optional[Tuple[str, str]]:
    """None, or (kind, description): kind is ``outside-spec`` or ``disagreement``."""
    seen = {}
    for backend in backends:
        try:
            seen[backend] = observe(backend, data, workdir)
        except Outside as e:
            return "outside-spec", f"{backend} backend, {e.op}: {e.text}"
    if len(backends) > 1:
        first, *rest = backends
        for other in rest:
            if repr(seen[first]) != repr(seen[other]):
                where, a, b = _where_they_differ(seen[first], seen[other])
                return "disagreement", (
                    f"{first} and {other} differ at {where}:\n"
                    f"  {first}: {_short(a)}\n"
                    f"  {other}: {_short(b)}"
                )
    return None


def reproducer(data: bytes, limit: int = 512) -> str:
    """The input as a Python literal when it is small, else its size and digest."""
    if len(data) <= limit:
        return f"bytes.fromhex({data.hex()!r})  # {data!r}"
    return f"{len(data)} bytes, sha1 {hashlib.sha1(data).hexdigest()}"


# -- seeds -----------------------------------------------------------------------------


def seed_inputs() -> Dict[str, bytes]:
    """The reference transcripts (LF, CRLF) and small damaged variants of their head."""
    from tests.reliability.support import line, reference_transcript

    ref = reference_transcript()
    head = b"".join(ref.splitlines(keepends=True)[:11])  # every small line, none of the long ones
    msg = line("x1", "message", {"role": "user", "content": "é ☃ 😀 ∎"})
    deep = b'{"id":"deep","payload":{"x":' + b"[" * 520 + b"]" * 520 + b'},"ts":"t","type":"message","v":1}\n'
    seeds = {
        "reference-lf": ref,
        "reference-crlf": reference_transcript(crlf=True),
        "head-lf": head,
        "head-crlf": head.replace(b"\n", b"\r\n"),
        "torn-tail": head + msg[:40],
        "torn-in-a-character": head + msg[: msg.index("☃".encode()) + 1],
        "no-final-newline": head + msg[:-1],
        "torn-twice": head + msg[:30] + b"\n" + msg[:50],
        "power-loss-zeros": head + msg[:20] + b"\x00" * 64,
        "bad-middle-line": head + b"not json\n" + msg,
        "duplicate-id": head + head.splitlines(keepends=True)[3],
        "version-2": head + msg.replace(b'"v":1', b'"v":2'),
        "dangling-compaction": head + line("c9", "compaction", {"summary": "s", "replaces-through-id": "nope"}),
        "unknown-settle": head + line("s9", "tool-settled", {"op-id": "nope", "outcome": "completed"}),
        "artifact-not-a-name": head
        + line("d9", "tool-dispatched", {"call-id": "call_9", "tool": "t"})
        + line("s9", "tool-settled", {"op-id": "d9", "outcome": "completed", "artifact": {"file": "../x"}}),
        "too-deep": head + deep,
        "bom": b"\xef\xbb\xbf" + head,
        "blank-lines-only": b"\n \r\n\t\n",
        "meta-only": head.splitlines(keepends=True)[0],
        "not-meta-first": msg + head,
    }
    return seeds


def write_seeds(directory: str) -> int:
    os.makedirs(directory, exist_ok=True)
    seeds = seed_inputs()
    for name, data in seeds.items():
        with open(os.path.join(directory, name), "wb") as f:
            f.write(data)
    return len(seeds)


# -- atheris ---------------------------------------------------------------------------


def fuzz(argv: List[str]) -> None:
    import atheris

    with atheris.instrument_imports(include=[PACKAGE]):
        import importlib
        import pkgutil

        import llm_agent_session
        from llm_agent_session import _backend

        # Modules load imports lazily (peek, salvage) are instrumented only if imported
        # here; the command line and the demo are not what this fuzzes.
        for mod in pkgutil.iter_modules(llm_agent_session.__path__):
            if mod.name not in ("__main__", "cli", "demo", "_native"):
                importlib.import_module(f"{PACKAGE}.{mod.name}")

    backends = _backend.available()
    if "native" not in backends:
        sys.exit("differential.py fuzz: the native backend is not built; nothing to compare with")
    workdir = scratch_dir()

    def one_input(data: bytes) -> None:
        found = check(data, workdir, backends)
        if found is not None:
            kind, text = found
            raise Finding(f"{kind}: {text}\nreproducer: {reproducer(data)}")

    atheris.Setup([sys.argv[0], *argv], one_input)
    atheris.Fuzz()


# -- replay ----------------------------------------------------------------------------


def _inputs(paths: List[str]) -> Iterator[str]:
    for p in paths:
        if os.path.isdir(p):
            for root, _, files in os.walk(p):
                for name in sorted(files):
                    yield os.path.join(root, name)
        else:
            yield p


def replay(argv: List[str]) -> int:
    parser = argparse.ArgumentParser(prog="differential.py replay")
    parser.add_argument("--artifacts", help="where to save each finding (default: nowhere)")
    parser.add_argument("-v", action="store_true", help="print both backends' observations")
    parser.add_argument("paths", nargs="+")
    args = parser.parse_args(argv)
    from llm_agent_session import _backend

    backends = _backend.available()
    workdir = scratch_dir()
    done = set()
    findings: List[Dict[str, Any]] = []
    counts = {"outside-spec": 0, "disagreement": 0}
    try:
        for path in _inputs(args.paths):
            with open(path, "rb") as f:
                data = f.read()
            digest = hashlib.sha1(data).hexdigest()
            if digest in done:
                continue
            done.add(digest)
            if args.v:
                for backend in backends:
                    try:
                        print(f"== {backend}: {json.dumps(observe(backend, data, workdir), default=repr, indent=1)[:20000]}")
                    except Outside as e:
                        print(f"== {backend}: outside the spec in {e.op}:\n{e.text}")
            found = check(data, workdir, backends)
            if found is None:
                continue
            kind, text = found
            counts[kind] += 1
            saved = None
            if args.artifacts and len(findings) < SAVED_FINDINGS:
                os.makedirs(args.artifacts, exist_ok=True)
                saved = os.path.join(args.artifacts, f"{kind}-{digest}")
                with open(saved, "wb") as f:
                    f.write(data)
            if len(findings) < SAVED_FINDINGS:
                findings.append({"kind": kind, "input": path, "saved": saved, "what": text, "reproducer": reproducer(data)})
    finally:
        shutil.rmtree(workdir, ignore_errors=True)
    summary = {"backends": backends, "inputs": len(done), **counts, "findings": findings}
    print(json.dumps(summary, indent=1))
    return 1 if findings else 0


def main() -> int:
    if len(sys.argv) < 2 or sys.argv[1] not in ("seeds", "fuzz", "replay"):
        print(__doc__)
        return 2
    mode, rest = sys.argv[1], sys.argv[2:]
    if mode == "seeds":
        if len(rest) != 1:
            print("usage: differential.py seeds DIR")
            return 2
        print(f"wrote {write_seeds(rest[0])} seeds to {rest[0]}")
        return 0
    if mode == "fuzz":
        fuzz(rest)
        return 0
    return replay(rest)


if __name__ == "__main__":
    sys.exit(main())
