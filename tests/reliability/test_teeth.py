"""Teeth: each durability rule, broken on purpose in a copy of the package, must make the
battery fail. A battery that passes a broken library proves nothing.

Each seeded bug is a patch applied to a temporary copy of ``llm_agent_session``; the
named tests run against that copy (PYTHONPATH first) and must fail. The same tests pass
on the unpatched copy (checked once, as the control).
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys

import pytest

import llm_agent_session
from support import LONG, record

# Minutes, not seconds: run by tests/reliability/report.py and in the long tier, not in CI.
pytestmark = pytest.mark.skipif(
    not (LONG or os.environ.get("LLM_AGENT_SESSION_TEETH")),
    reason="teeth run with tests/reliability/report.py or LLM_AGENT_SESSION_TIER=long",
)

COMMAND = "python tests/reliability/report.py"
HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))

# (name, file in the package, text to replace, replacement, the test that must catch it)
SEEDED_BUGS = [
    (
        "newline as a second write",
        "session.py",
        "            write_all(fd, line)\n",
        "            write_all(fd, line[:-1])\n            write_all(fd, line[-1:])\n",
        "test_io_errors.py::test_one_write_per_line",
    ),
    (
        "a buffered writer",
        "session.py",
        "            write_all(fd, line)\n",
        "            if not hasattr(self, '_bw'):\n"
        "                self._bw = open(fd, 'ab', buffering=1 << 16, closefd=False)\n"
        "            self._bw.write(line)\n"
        "            self._bw.flush()\n",
        "test_io_errors.py::test_partial_writes_at_sampled_cuts",
    ),
    (
        "ignoring a short write",
        "_files.py",
        "    view = memoryview(data)\n    while view:\n",
        "    os.write(fd, data)\n    view = b''\n    while view:\n",
        "test_io_errors.py::test_partial_writes_at_sampled_cuts",
    ),
    (
        "no lock",
        "_files.py",
        "        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)\n",
        "        pass\n",
        "test_concurrency.py::test_second_process_is_locked_out_of_a_live_writer",
    ),
    (
        ".repair without O_EXCL|O_NOFOLLOW",
        "_load.py",
        "os.O_RDWR | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW, stat.S_IMODE(st.st_mode)",
        "os.O_RDWR | os.O_CREAT | os.O_TRUNC, stat.S_IMODE(st.st_mode)",
        "test_security.py::test_repair_open_refuses_a_link_planted_in_the_race_window",
    ),
    (
        "str.splitlines",
        "_pure/replay.py",
        "def _replay(buf: Any, size: int) -> Tuple[FoldState, List[Event]]:\n",
        "def _replay(buf: Any, size: int) -> Tuple[FoldState, List[Event]]:\n"
        "    buf = '\\n'.join(buf.decode('utf-8', 'surrogateescape').splitlines()).encode('utf-8', 'surrogateescape') + b'\\n'\n"
        "    size = len(buf)\n",
        "test_hostile_input.py::test_raw_line_separators_inside_strings",
    ),
    (
        "`v == 1` that accepts 1.0",
        "_pure/lines.py",
        "        if type(v) is not int or v != 1:\n",
        "        if v != 1:\n",
        "test_hostile_input.py::test_other_versions_on_the_last_line_are_never_repaired_away",
    ),
    (
        "no truncate-back",
        "session.py",
        "                os.ftruncate(fd, before)\n",
        "                pass\n",
        "test_io_errors.py::test_partial_writes_at_sampled_cuts",
    ),
]


def _copy_package(dest: str) -> str:
    src = os.path.dirname(llm_agent_session.__file__)
    target = os.path.join(dest, "llm_agent_session")
    shutil.copytree(src, target, ignore=shutil.ignore_patterns("__pycache__", "*.pyc"))
    return target


def _run(selection: str, pythonpath: str) -> subprocess.CompletedProcess:
    env = dict(os.environ, PYTHONPATH=pythonpath)
    env.pop("LLM_AGENT_SESSION_FIGURES", None)  # the control and the seeded runs report nothing
    return subprocess.run(
        [sys.executable, "-m", "pytest", "-q", "-x", "-p", "no:cacheprovider", *[os.path.join(HERE, s) for s in selection.split()]],
        env=env,
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=900,
    )


def test_unpatched_copy_passes_every_selection(tmp_path):
    _copy_package(str(tmp_path))
    selections = sorted({bug[4] for bug in SEEDED_BUGS})
    out = _run(" ".join(selections), str(tmp_path))
    assert out.returncode == 0, out.stdout[-2000:]


@pytest.mark.parametrize("bug", SEEDED_BUGS, ids=[b[0] for b in SEEDED_BUGS])
def test_seeded_bug_is_caught(tmp_path, bug):
    name, file, old, new, selection = bug
    package = _copy_package(str(tmp_path))
    target = os.path.join(package, file)
    text = open(target).read()
    assert text.count(old) == 1, f"the seeded bug no longer applies to {file}: update the patch"
    with open(target, "w") as f:
        f.write(text.replace(old, new))
    out = _run(selection, str(tmp_path))
    caught = out.returncode != 0
    record("Teeth: seeded bugs", name, f"caught by {selection}" if caught else "NOT CAUGHT", "caught", COMMAND)
    assert caught, f"seeded bug {name!r} passed {selection}:\n{out.stdout[-1500:]}"
