"""Hostile names under SRC: a file whose name is not UTF-8 (any bytes but ``/`` make a
name on Linux) is one failed file, named escaped, the rest exported, run after run
(``sessions.path`` is a Parquet string, which holds only UTF-8); a directory that cannot
be listed is named in the summary, escaped, not only counted."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from typing import Any, List

import pytest

from llm_agent_session.dataset import DatasetError, NotADataset, export, query
from llm_agent_session.dataset.export import NAME_NOT_UTF8
from tests.support.cli import child_env
from tests.support.dataset import all_tables, cli, rows, small

BAD = b"bad\xff\x1b[31m.jsonl"  # not UTF-8, and an escape sequence a terminal would act on
SHOWN = "bad\\xff\\x1b[31m.jsonl"  # on a terminal (and in any line the command prints)
AS_JSON = "bad\\xff\x1b[31m.jsonl"  # in --json: the byte that is not UTF-8 as \xff; ESC is JSON's to escape


def tree(src: Any, good: int = 60) -> str:
    """`good` transcripts and one whose name is not UTF-8; the path of that one."""
    for i in range(good):
        small(str(src / f"s{i}.jsonl"), f"hello {i}")
    made = small(str(src / "made.jsonl"), "the one with the bad name")
    bad = os.path.join(os.fsencode(str(src)), BAD)
    os.rename(os.fsencode(made), bad)
    return os.fsdecode(bad)


@pytest.mark.parametrize("jobs", [1, pytest.param(2, marks=pytest.mark.slow)])  # 2: the worker processes
def test_a_name_that_is_not_utf8_is_one_failed_file_run_after_run(tmp_path: Any, jobs: int) -> None:
    src, out = tmp_path / "src", str(tmp_path / "out")
    bad = tree(src, good=20)
    report = export(str(src), out, jobs=jobs)
    assert (report.count("exported"), report.count("failed")) == (20, 1)
    [failed] = [f for f in report.files if f.status == "failed"]
    assert (failed.path, failed.reason) == (bad, NAME_NOT_UTF8)  # the API's path is the one to open
    assert len(rows(out, "SELECT path FROM sessions")) == 20
    assert rows(out, "SELECT count(*) AS n FROM sessions WHERE path LIKE '%bad%'") == [{"n": 0}]
    again = export(str(src), out, jobs=jobs)
    assert (again.count("unchanged"), again.count("failed"), again.count("exported")) == (20, 1, 0)
    fresh = str(tmp_path / "fresh")
    os.unlink(bad)
    export(str(src), fresh, jobs=jobs)
    assert all_tables(out) == all_tables(fresh)  # the failed file cost its own rows only
    gone = export(str(src), out, jobs=jobs)
    assert (gone.count("unchanged"), gone.count("failed"), gone.count("removed")) == (20, 0, 0)


@pytest.mark.slow
@pytest.mark.parametrize("jobs", ["1", "2"])
def test_the_command_shows_a_name_that_is_not_utf8_escaped(tmp_path: Any, jobs: str, backend_name: str) -> None:
    src, out = tmp_path / "src", str(tmp_path / "out")
    tree(src)
    r = cli(backend_name, "dataset", str(src), out, "--jobs", jobs)
    assert r.returncode == 1, r.stderr
    assert "Traceback" not in r.stderr and "\x1b" not in r.stdout
    assert f"failed    {os.path.join(str(src), SHOWN)}: {NAME_NOT_UTF8}" in r.stdout.splitlines()
    assert r.stdout.splitlines()[-1].startswith("60 exported, 0 unchanged, 0 removed, 1 failed")
    again = cli(backend_name, "dataset", str(src), out, "--jobs", jobs)
    assert again.stdout.splitlines()[-1].startswith("0 exported, 60 unchanged, 0 removed, 1 failed")
    as_json = cli(backend_name, "dataset", str(src), str(tmp_path / "json"), "--jobs", jobs, "--json")
    assert as_json.returncode == 1, as_json.stderr
    report = json.loads(as_json.stdout)  # the name as JSON any reader decodes
    assert [f["path"] for f in report["files"] if f["status"] == "failed"] == [os.path.join(str(src), AS_JSON)]
    q = cli(backend_name, "query", out, "SELECT count(*) AS n FROM sessions", "--json")
    assert json.loads(q.stdout) == [{"n": 60}]


def test_an_out_whose_name_is_not_utf8_is_refused_before_anything_is_written(tmp_path: Any) -> None:
    src = tmp_path / "src"
    small(str(src / "a.jsonl"))
    out = os.fsdecode(os.path.join(os.fsencode(str(tmp_path)), b"out\xff"))
    with pytest.raises(DatasetError, match=r"out\\xff\) has a name that is not UTF-8"):
        export(str(src), out)
    assert not os.path.exists(out)
    os.mkdir(out)
    with pytest.raises(NotADataset, match="not UTF-8"):
        query(out, "SELECT 1")


def unlistable(src: Any) -> List[str]:
    """Two directories under `src` that cannot be listed (one with a name that is not
    UTF-8 and a terminal's escape sequence in it), a transcript in each; their paths."""
    made = []
    for name in (b"locked", b"locked\xfe\x1b]0;title\x07"):
        path = os.path.join(os.fsencode(str(src)), name)
        os.mkdir(path)
        small(os.fsdecode(os.path.join(path, b"inside.jsonl")))
        os.chmod(path, 0)
        made.append(os.fsdecode(path))
    return made


def without_root_powers(backend: str, *args: str) -> subprocess.CompletedProcess:
    """The command as this user runs it; as root, without the capabilities that let root
    list any directory (so a directory of mode 0 is refused to it too)."""
    prefix: List[str] = []
    if os.geteuid() == 0:
        setpriv = shutil.which("setpriv")
        if setpriv is None:
            pytest.skip("root lists any directory, and setpriv (util-linux) is not here to drop that")
        drop = "-dac_override,-dac_read_search"
        prefix = [setpriv, f"--inh-caps={drop}", f"--bounding-set={drop}"]
    return subprocess.run(prefix + [sys.executable, "-m", "llm_agent_session", *args], capture_output=True,
                          text=True, timeout=300, env=child_env(backend))


@pytest.mark.slow
def test_a_directory_that_cannot_be_listed_is_named_in_the_summary(tmp_path: Any, backend_name: str) -> None:
    src, out = tmp_path / "src", str(tmp_path / "out")
    small(str(src / "a.jsonl"))
    locked = unlistable(src)
    try:
        r = without_root_powers(backend_name, "dataset", str(src), out)
        assert r.returncode == 1, r.stderr
        assert "\x1b" not in r.stdout and "\x07" not in r.stdout
        lines = r.stdout.splitlines()
        assert f"failed    {locked[0]}: cannot list it: Permission denied" in lines
        assert f"failed    {locked[0]}\\xfe\\x1b]0;title\\x07: cannot list it: Permission denied" in lines
        assert lines[-1].startswith("1 exported, 0 unchanged, 0 removed, 2 failed")
        as_json = json.loads(without_root_powers(backend_name, "dataset", str(src), out, "--json").stdout)
        assert sorted(f["path"] for f in as_json["files"] if f["status"] == "failed") == [
            locked[0], f"{locked[0]}\\xfe\x1b]0;title\x07"]
    finally:
        for path in locked:
            os.chmod(path, 0o700)
