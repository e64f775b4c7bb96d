"""I/O errors: partial writes at sampled byte cuts (RLIMIT_FSIZE), each write/fsync/rename/
open/link of an operation failed in turn with ENOSPC and EIO (strace), a real full disk
(a small tmpfs) and a read-only directory for the repair."""

from __future__ import annotations

import contextlib
import os
import subprocess
import sys

import pytest

from llm_agent_session import Session, TranscriptError
from tests.reliability.support import BACKENDS, LONG, record, reference_transcript, run_python, using
from tests.reliability.tracing import STRACE, run_traced, syscalls_of

COMMAND = "python tests/reliability/report.py"

RLIMIT_CHILD = r"""
import os, resource, signal, sys
from llm_agent_session import Session, user_message
signal.signal(signal.SIGXFSZ, signal.SIG_IGN)  # else the kernel kills us instead of failing the write
path, allowance, n = sys.argv[1], int(sys.argv[2]), int(sys.argv[3])
s = Session.load(path)
before = os.path.getsize(path)
resource.setrlimit(resource.RLIMIT_FSIZE, (before + allowance, resource.RLIM_INFINITY))
try:
    s.append_message(user_message("y" * n))
    print("appended", "yes")
except OSError as e:
    print("raised", e.errno)
print("size", before, os.path.getsize(path))
resource.setrlimit(resource.RLIMIT_FSIZE, (resource.RLIM_INFINITY, resource.RLIM_INFINITY))
print("next", s.append_message(user_message("after")))
"""


def test_partial_writes_at_sampled_cuts(tmp_path):
    n = 100_000
    allowances = [0, 1, 2, 100, 4095, 4096, 65536, n // 2, n - 1, n + 100, n + 400]
    if LONG:
        allowances = sorted(set(allowances + list(range(0, n + 400, 997))))
    swallowed = appeared = unloadable = changed = 0
    problems = []
    for backend in BACKENDS:
        for allowance in allowances:
            path = str(tmp_path / f"fsize-{backend}-{allowance}.jsonl")
            with open(path, "wb") as f:
                f.write(reference_transcript())
            using(backend)
            Session.load(path).close()
            out = subprocess.run(
                [sys.executable, "-c", RLIMIT_CHILD, path, str(allowance), str(n)],
                env=dict(os.environ, LLM_AGENT_SESSION_BACKEND=backend),
                capture_output=True,
                text=True,
                timeout=60,
            )
            lines = dict(row.split(" ", 1) for row in out.stdout.splitlines())
            raised = "raised" in lines
            line_fits = allowance >= n + 150  # the whole line fits under the limit
            if not raised and not line_fits:
                swallowed += 1
                problems.append((backend, allowance, "no error", out.stdout, out.stderr[-300:]))
            size_before, size_after = map(int, lines["size"].split())
            if raised and size_after != size_before:
                changed += 1
                problems.append((backend, allowance, "file not rolled back", size_before, size_after))
            try:
                with Session.load(path) as s:
                    contents = [m.content for m in s.messages]
                    if s.warnings:
                        unloadable += 1
                        problems.append((backend, allowance, "load had to repair", s.warnings))
                    if raised and "y" * n in contents:
                        appeared += 1
                        problems.append((backend, allowance, "a line that raised appears"))
                    assert contents[-1] == "after"
            except (TranscriptError, AssertionError) as e:
                unloadable += 1
                problems.append((backend, allowance, "load", repr(e)))
    area = "I/O errors: partial writes (RLIMIT_FSIZE)"
    record(area, "byte cuts tried (x backends)", f"{len(allowances)} x {len(BACKENDS)}", "sampled through a 100 KB line", COMMAND)
    record(area, "errors swallowed", swallowed, "0", COMMAND)
    record(area, "lines that raised yet appear later", appeared, "0", COMMAND)
    record(area, "file left other than before the failed call", changed, "0", COMMAND)
    record(area, "file loadable (clean) afterwards", f"{100 * (1 - unloadable / max(1, len(allowances) * len(BACKENDS))):.0f}%", "100%", COMMAND)
    assert not problems, problems[:5]


# The syscalls whose failure must reach the caller (or be handled without losing a byte).
FAULTABLE = {"write", "pwrite64", "fsync", "fdatasync", "rename", "renameat", "renameat2", "openat", "link", "linkat", "copy_file_range", "ftruncate", "mkdir"}


def prepare(op: str, path: str) -> None:
    if op in ("load", "append"):
        with open(path, "wb") as f:
            f.write(reference_transcript()[:-7] if op == "load" else reference_transcript())
    if op == "append":
        Session.load(path).close()


@pytest.mark.skipif(STRACE is None, reason="strace not installed (Debian package strace)")
@pytest.mark.parametrize("op", ["create", "load", "append"])
def test_each_syscall_failed_in_turn(tmp_path, op):
    errnos = ["ENOSPC", "EIO"]
    tried = swallowed = lost = unloadable = 0
    problems = []
    for backend in BACKENDS:
        using(backend)
        probe = str(tmp_path / f"probe-{op}-{backend}.jsonl")
        prepare(op, probe)
        calls = syscalls_of(op, probe, backend, str(tmp_path / "log"))
        points = []
        seen = {}
        for name in calls:
            seen[name] = seen.get(name, 0) + 1
            if name in FAULTABLE:
                points.append((name, seen[name]))
        for i, (name, k) in enumerate(points):
            for err in errnos if (LONG or i % 2 == 0) else errnos[:1]:
                tried += 1
                path = str(tmp_path / f"{op}-{backend}-{name}-{k}-{err}.jsonl")
                prepare(op, path)
                before = open(path, "rb").read() if os.path.exists(path) else None
                said = run_traced(op, path, backend, f"{name}:error={err}:when={k}", os.devnull)
                after = open(path, "rb").read() if os.path.exists(path) else None
                if said == "done":
                    # Only acceptable where the failed call was not needed for what the op promised.
                    swallowed_here = not _finished_anyway(op, path, before, after)
                    if swallowed_here:
                        swallowed += 1
                        problems.append((backend, op, name, k, err, "swallowed"))
                elif said.startswith("raised"):
                    if op == "load" and after not in (before, _repaired(before)):
                        lost += 1
                        problems.append((backend, op, name, k, err, "file is neither the original nor its repair"))
                    if op == "append" and after != before:
                        lost += 1
                        problems.append((backend, op, name, k, err, "file changed by a failed call"))
                    if op == "create" and after is not None:
                        lost += 1
                        problems.append((backend, op, name, k, err, "create raised but left a file"))
                    if os.path.exists(path + ".repair"):
                        lost += 1
                        problems.append((backend, op, name, k, err, ".repair left behind"))
                else:
                    problems.append((backend, op, name, k, err, "child died", said))
                try:
                    if os.path.exists(path):
                        Session.load(path).close()
                    else:
                        Session.create(path).close()
                except Exception as e:
                    unloadable += 1
                    problems.append((backend, op, name, k, err, "cannot proceed", repr(e)))
    area = f"I/O errors injected into `{op}`"
    record(area, "write/fsync/rename/open/link calls failed, one at a time", tried, "each, with ENOSPC and EIO (long tier)", COMMAND)
    record(area, "errors swallowed", swallowed, "0", COMMAND)
    record(area, "original unchanged after a failed call", "100%" if not lost else f"{lost} failures", "100%", COMMAND)
    record(area, "file loadable afterwards", f"{100 * (1 - unloadable / max(1, tried)):.0f}%", "100%", COMMAND)
    assert tried > 0
    assert not problems, problems[:5]


def _repaired(data: bytes) -> bytes:
    """The good prefix a repair of `data` keeps (its torn last line removed)."""
    return data[: data.rstrip(b"\n").rfind(b"\n") + 1]


def _finished_anyway(op: str, path: str, before, after) -> bool:
    """The op reported success: is what it promised really on disk?"""
    if after is None:
        return False
    with contextlib.suppress(TranscriptError):
        with Session.load(path) as s:
            if op == "append":
                return s.messages[-1].content.startswith("traced append")
            if op == "create":
                return s.meta == {"agent": "traced"}
            return not s.warnings and after.endswith(b"\n") and len(after) < len(before)
    return False


@contextlib.contextmanager
def small_disk(tmp_path, size: str):
    mnt = tmp_path / "disk"
    mnt.mkdir(parents=True)
    if subprocess.run(["mount", "-t", "tmpfs", "-o", f"size={size}", "tmpfs", str(mnt)], capture_output=True).returncode:
        pytest.skip("cannot mount a tmpfs here (needs root)")
    try:
        yield mnt
    finally:
        subprocess.run(["umount", "-l", str(mnt)], capture_output=True)


TORN_TAIL = b'{"id":"torn","payload":{"ro'


def test_repair_on_a_real_full_disk(tmp_path):
    """~600 KB of lines and a torn one on a 1 MB disk: the repair copy cannot fit beside it."""
    failures = []
    for backend in BACKENDS:
        using(backend)
        with small_disk(tmp_path / backend, "1m") as disk:
            path = str(disk / "run.jsonl")
            with Session.create(path) as s:
                while os.path.getsize(path) < 600_000:
                    s.append_message({"role": "user", "content": "w" * 50_000})
            good = os.path.getsize(path)
            with open(path, "ab") as f:
                f.write(TORN_TAIL)
            before = open(path, "rb").read()
            try:
                Session.load(path).close()
                failures.append((backend, "the repair did not fail on a full disk"))
            except OSError as e:
                if str(good) not in str(e):
                    failures.append((backend, "the error does not say how many bytes the copy needed", str(e)))
            if open(path, "rb").read() != before:
                failures.append((backend, "original changed by a failed repair"))
            if os.path.exists(path + ".repair"):
                failures.append((backend, ".repair left on a full disk"))
            # Room made: the same file now repairs to exactly its good prefix.
            subprocess.run(["mount", "-o", "remount,size=4m", str(disk)], check=True)
            with Session.load(path) as s:
                if len(s.warnings) != 1:
                    failures.append((backend, "no repair warning", s.warnings))
            if open(path, "rb").read() != before[:good]:
                failures.append((backend, "repair after freeing space is not the good prefix"))
    record("I/O errors: a real full disk (tmpfs)", "original unchanged after a failed repair copy", "100%" if not failures else f"{len(failures)} failures", "100%", COMMAND)
    assert not failures, failures


def test_full_disk_append_rolls_back(tmp_path):
    failures = []
    for backend in BACKENDS:
        using(backend)
        with small_disk(tmp_path / backend, "256k") as disk:
            path = str(disk / "run.jsonl")
            acked = []
            raised = 0
            with Session.create(path, {"agent": "full"}) as s:
                for i in range(200):
                    size = os.path.getsize(path)
                    try:
                        acked.append(s.append_message({"role": "user", "content": f"{i} " + "f" * 3000}))
                    except OSError:
                        raised += 1
                        if os.path.getsize(path) != size:
                            failures.append((backend, "a failed append was not truncated back"))
                if s.message_ids != acked:
                    failures.append((backend, "the live state holds an append that raised"))
                # Room made: the same session appends on.
                subprocess.run(["mount", "-o", "remount,size=1m", str(disk)], check=True)
                acked.append(s.append_message({"role": "user", "content": "after"}))
            with Session.load(path) as t:
                ids = set(t.message_ids)
                if not raised:
                    failures.append((backend, "the disk never filled"))
                if t.warnings:
                    failures.append((backend, "a failed append left a torn line", t.warnings))
                if [a for a in acked if a not in ids]:
                    failures.append((backend, "acknowledged appends lost"))
                if len(ids) != len(acked):
                    failures.append((backend, "a line that raised is in the file"))
    record("I/O errors: a real full disk (tmpfs)", "appends that raised ENOSPC and left a partial line", len(failures), "0", COMMAND)
    assert not failures, failures


def test_read_only_directory_for_the_repair(tmp_path):
    """The caller may write the transcript but not its directory: the repair is refused cleanly."""
    failures = []
    for backend in BACKENDS:
        d = tmp_path / f"ro-{backend}"
        d.mkdir()
        path = str(d / "run.jsonl")
        data = reference_transcript()[:-7]
        with open(path, "wb") as f:
            f.write(data)
        os.chown(path, 65534, 65534)
        os.chmod(str(d), 0o755)  # owned by root: `nobody` cannot create the .repair beside it
        code = (
            "import os\n"
            "from llm_agent_session import Session\n"
            "os.setgid(65534); os.setuid(65534)\n"
            "try:\n Session.load(%r)\nexcept OSError as e:\n print('raised', e.errno, e)\nelse:\n print('loaded')\n" % path
        )
        out = run_python(code, backend=backend, capture_output=True, text=True)
        if "raised" not in out.stdout:
            failures.append((backend, "no error", out.stdout, out.stderr[-300:]))
        if open(path, "rb").read() != data:
            failures.append((backend, "original changed"))
        if os.path.exists(path + ".repair"):
            failures.append((backend, ".repair left"))
    record("I/O errors: read-only directory", "original unchanged after the refused repair", "100%" if not failures else f"{len(failures)} failures", "100%", COMMAND)
    assert not failures, failures


@pytest.mark.skipif(STRACE is None, reason="strace not installed (Debian package strace)")
def test_one_write_per_line(tmp_path):
    """A line goes out in one write(2) with its newline: no window where a reader or a crash
    sees the line without its end, and nothing buffered to be re-sent later."""
    problems = []
    for backend in BACKENDS:
        path = str(tmp_path / f"one-{backend}.jsonl")
        prepare("append", path)
        calls = syscalls_of("append", path, backend, str(tmp_path / "log"))
        writes = [c for c in calls if c in ("write", "writev", "pwrite64", "pwritev")]
        if len(writes) != 1:
            problems.append((backend, calls))
    record("I/O errors injected into `append`", "appends that took other than one write(2) for the whole line", len(problems), "0", COMMAND)
    assert not problems, problems
