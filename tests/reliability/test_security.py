"""Security: things planted at ``<path>.repair``, linked transcripts, hostile umasks, a
read-only transcript, artifact names that try to escape, and descriptors that must not
be 0-2 or leak into children."""

from __future__ import annotations

import os
import stat
import subprocess
import sys
import threading

import pytest

from llm_agent_session import CorruptTranscript, Session, user_message
from tests.reliability.support import BACKENDS, line, record, reference_transcript, using

COMMAND = "python tests/reliability/report.py"
TORN = reference_transcript()[:-7]
GOOD = TORN[: TORN.rindex(b"\n") + 1]  # what a repair keeps


def _write(path: str, data: bytes, mode: int = 0o600) -> None:
    with open(path, "wb") as f:
        f.write(data)
    os.chmod(path, mode)


@pytest.mark.parametrize("planted", ["symlink", "dangling-symlink", "directory", "fifo"])
def test_things_planted_at_the_repair_path(tmp_path, planted):
    problems = []
    for backend in BACKENDS:
        using(backend)
        d = tmp_path / backend
        d.mkdir()
        path = str(d / "run.jsonl")
        canary = str(d / "canary")
        _write(path, TORN)
        _write(canary, b"do not touch")
        target = path + ".repair"
        if planted == "symlink":
            os.symlink(canary, target)
        elif planted == "dangling-symlink":
            os.symlink(str(d / "nowhere"), target)
        elif planted == "directory":
            os.mkdir(target)
        else:
            os.mkfifo(target)
        result = {}

        def load() -> None:
            try:
                with Session.load(path) as s:
                    result["ok"] = s.warnings
            except OSError as e:
                result["error"] = e

        t = threading.Thread(target=load, daemon=True)
        t.start()
        t.join(30)
        if t.is_alive():
            problems.append((backend, "load hung"))
            continue
        if open(canary, "rb").read() != b"do not touch":
            problems.append((backend, "canary touched"))
        if os.path.exists(str(d / "nowhere")):
            problems.append((backend, "a file was created through the dangling link"))
        if planted == "directory":
            # Never removed, never followed: the repair is refused with a clear error.
            if "error" not in result or open(path, "rb").read() != TORN:
                problems.append((backend, "directory case", result))
        elif "ok" not in result or len(result["ok"]) != 1 or open(path, "rb").read() != GOOD:
            problems.append((backend, "repair did not happen", result))
        elif os.path.lexists(target):
            problems.append((backend, "the planted leftover is still there"))
    record("Security", f"`{planted}` planted at <path>.repair: canary touched, hangs, writes through links", len(problems), "0", COMMAND)
    assert not problems, problems


def test_symlinked_and_hard_linked_transcripts(tmp_path):
    problems = []
    for backend in BACKENDS:
        using(backend)
        d = tmp_path / backend
        d.mkdir()
        real = str(d / "real.jsonl")
        link = str(d / "link.jsonl")
        _write(real, TORN)
        os.symlink(real, link)
        with Session.load(link) as s:
            s.append_message(user_message("through the link"))
        if not os.path.islink(link) or os.readlink(link) != real:
            problems.append((backend, "symlink replaced"))
        if os.path.islink(real) or not open(real, "rb").read().startswith(GOOD):
            problems.append((backend, "the target is not the repaired file"))
        if [n for n in os.listdir(str(d)) if n.endswith(".repair")]:
            problems.append((backend, ".repair left beside the target"))
        with Session.load(real) as s:
            if s.messages[-1].content != "through the link":
                problems.append((backend, "append did not reach the target"))
        hard = str(d / "hard.jsonl")
        _write(str(d / "h.jsonl"), TORN)
        os.link(str(d / "h.jsonl"), hard)
        with Session.load(hard) as s:
            # the removed line, and that the other links keep the torn version
            if len(s.warnings) != 2 or not any("hard link" in w for w in s.warnings):
                problems.append((backend, "no warning that other hard links keep the torn version", s.warnings))
        if open(hard, "rb").read() != GOOD:
            problems.append((backend, "the hard-linked path is not repaired"))
        if open(str(d / "h.jsonl"), "rb").read() != TORN:
            problems.append((backend, "the other hard link changed"))
    record("Security", "symlinked / hard-linked transcripts mishandled", len(problems), "0", COMMAND)
    assert not problems, problems


UMASK_CHILD = r"""
import os, sys
os.umask(int(sys.argv[2], 8))
from llm_agent_session import Session, user_message
base = sys.argv[1]
s = Session.create(os.path.join(base, "a", "b", "run.jsonl"), {"agent": "umask"})
ids = [s.append_message(user_message(str(i))) for i in range(3)]
s.close()
Session.salvage(os.path.join(base, "a", "b", "run.jsonl"), os.path.join(base, "s", "salvaged.jsonl"))
Session.fork(os.path.join(base, "a", "b", "run.jsonl"), os.path.join(base, "f", "forked.jsonl"), ids[1]).close()
with open(os.path.join(base, "a", "b", "run.jsonl"), "ab") as f:
    f.write(b'{"torn')
Session.load(os.path.join(base, "a", "b", "run.jsonl")).close()
"""


@pytest.mark.parametrize("umask", ["000", "022"])
def test_nothing_created_is_open_to_group_or_other(tmp_path, umask):
    problems = []
    for backend in BACKENDS:
        base = tmp_path / backend
        base.mkdir()
        out = subprocess.run(
            [sys.executable, "-c", UMASK_CHILD, str(base), umask],
            env=dict(os.environ, LLM_AGENT_SESSION_BACKEND=backend),
            capture_output=True,
            text=True,
            timeout=60,
        )
        if out.returncode:
            problems.append((backend, out.stderr[-400:]))
            continue
        for root, dirs, files in os.walk(str(base)):
            for name in dirs + files:
                p = os.path.join(root, name)
                if stat.S_IMODE(os.lstat(p).st_mode) & 0o077:
                    problems.append((backend, os.path.relpath(p, str(base)), oct(os.lstat(p).st_mode)))
    record("Security", f"files or dirs created with group/other access under umask {umask}", len(problems), "0", COMMAND)
    assert not problems, problems


def test_read_only_transcript_with_a_torn_tail_is_refused_not_replaced(tmp_path):
    problems = []
    for backend in BACKENDS:
        using(backend)
        path = str(tmp_path / f"ro-{backend}.jsonl")
        _write(path, TORN, 0o400)
        ino = os.stat(path).st_ino
        with pytest.raises(PermissionError):
            Session.load(path)
        if open(path, "rb").read() != TORN or os.stat(path).st_ino != ino:
            problems.append((backend, "replaced"))
    record("Security", "read-only torn transcripts replaced", len(problems), "0", COMMAND)
    assert not problems


BAD_NAMES = ["..", ".", "/etc/passwd", "a/b", "a\\b", "a\x00b", "", "x" * 300]


@pytest.mark.parametrize("name", BAD_NAMES, ids=["dotdot", "dot", "abs", "slash", "backslash", "nul", "empty", "300"])
def test_artifact_names_that_escape(tmp_path, name):
    problems = []
    for backend in BACKENDS:
        using(backend)
        path = str(tmp_path / f"art-{backend}.jsonl")
        with Session.create(path, {}) as s:
            op = s.append_tool_dispatched("c1", "t", {})
            size = os.path.getsize(path)
            try:
                s.append_tool_settled(op, "completed", artifact={"file": name, "digest": "sha256:0", "bytes": 1, "chars": 1, "elided-chars": 0})
                problems.append((backend, "accepted on write"))
            except ValueError:
                pass
            if os.path.getsize(path) != size:
                problems.append((backend, "written anyway"))
            try:
                s.artifact_path(name)
                problems.append((backend, "artifact_path accepted it"))
            except ValueError:
                pass
        payload = {"op-id": op, "outcome": "completed", "artifact": {"file": name}}
        with open(path, "ab") as f:
            f.write(line("bad-settle", "tool-settled", payload))
        try:
            Session.load(path).close()
            problems.append((backend, "accepted on load"))
        except CorruptTranscript as e:
            if e.line != 3:
                problems.append((backend, "wrong line named", e.line))
    record("Security", f"artifact name {name[:12]!r}: accepted anywhere", len(problems), "0", COMMAND)
    assert not problems, problems


STDIO_CLOSED = r"""
import os, sys
path, report = sys.argv[1], sys.argv[2]
from llm_agent_session import Session, user_message
def transcript_fds():
    # Every open descriptor by fstat (no /proc: this also runs with /proc unmounted).
    st = os.stat(path)
    found = []
    for f in range(256):
        try:
            x = os.fstat(f)
        except OSError:
            continue
        if (x.st_dev, x.st_ino) == (st.st_dev, st.st_ino):
            found.append(f)
    return found
os.close(0); os.close(1); os.close(2)
s = Session.create(path, {"agent": "no stdio"})
s.append_message(user_message("hello"))
fds = transcript_fds()
s.close()
s = Session.load(path)
fds += transcript_fds()
with open(report, "w") as f:
    f.write(repr(sorted(fds)))
"""


INHERITED = r"""
import os, sys
st = os.stat(sys.argv[1])
n = 0
for f in range(256):
    try:
        x = os.fstat(f)
    except OSError:
        continue
    n += (x.st_dev, x.st_ino) == (st.st_dev, st.st_ino)
print(n)
"""


def test_descriptor_is_never_0_1_2_and_never_leaks(tmp_path):
    """docs/durability.md: the append handle is close-on-exec and numbered 3 or more, with stdin,
    stdout and stderr closed, after create and after load."""
    problems = []
    for backend in BACKENDS:
        d = tmp_path / backend
        d.mkdir()
        path, report = str(d / "run.jsonl"), str(d / "report")
        subprocess.run([sys.executable, "-c", STDIO_CLOSED, path, report], env=dict(os.environ, LLM_AGENT_SESSION_BACKEND=backend), timeout=60)
        fds = eval(open(report).read())
        if not fds or min(fds) < 3:
            problems.append((backend, "transcript descriptor numbers", fds))
        using(backend)
        with Session.load(path):
            # A child that inherits every descriptor the parent has not marked close-on-exec.
            out = subprocess.run(
                [sys.executable, "-c", INHERITED, path], capture_output=True, text=True, close_fds=False, timeout=60
            )
            if out.stdout.strip() != "0":
                problems.append((backend, "descriptor leaked into a child", out.stdout, out.stderr[-300:]))
    record("Security", "transcript descriptors numbered 0-2 or leaked into children", len(problems), "0", COMMAND)
    assert not problems, problems


def test_repair_open_refuses_a_link_planted_in_the_race_window(tmp_path, monkeypatch):
    """Someone plants a symlink at <path>.repair after load removed the leftover and before the
    repair creates it: O_EXCL|O_NOFOLLOW must refuse it, and the link's target stays untouched."""
    from llm_agent_session import session as session_module

    problems = []
    real_cleanup = session_module.remove_leftover_repair
    for backend in BACKENDS:
        using(backend)
        d = tmp_path / backend
        d.mkdir()
        path, canary = str(d / "run.jsonl"), str(d / "canary")
        _write(path, TORN)
        _write(canary, b"do not touch")

        def cleanup_then_plant(p, warnings):
            real_cleanup(p, warnings)
            os.symlink(canary, p + ".repair")

        monkeypatch.setattr(session_module, "remove_leftover_repair", cleanup_then_plant)
        try:
            Session.load(path).close()
            problems.append((backend, "repaired through a planted link"))
        except OSError:
            pass
        monkeypatch.setattr(session_module, "remove_leftover_repair", real_cleanup)
        if open(canary, "rb").read() != b"do not touch" or open(path, "rb").read() != TORN:
            problems.append((backend, "canary or transcript changed"))
    record("Security", "repairs written through a link planted in the race window", len(problems), "0", COMMAND)
    assert not problems, problems
