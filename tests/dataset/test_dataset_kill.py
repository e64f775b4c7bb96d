"""An export killed at any moment (a real SIGKILL, delivered by strace at the N-th
rename or link of the publish, or while it writes) leaves OUT as it was or fully
updated, for a reader of the manifest; a reader that globs sees every session's rows of
every table either all old or all new; and the next run completes it."""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
from typing import Any, Dict, List, Tuple

import pytest

from llm_agent_session import Session, user_message
from llm_agent_session.dataset import TABLE_NAMES
from tests.support.dataset import all_tables, every_kind, small

STRACE = shutil.which("strace")
pytestmark = [pytest.mark.slow, pytest.mark.skipif(STRACE is None, reason="strace not installed (Debian package strace)")]

# Every transcript keeps what a re-run needs to read only what it grew by (by default only
# those of 8 MiB and more), so the grown one below takes that path, appendix and all.
EXPORT = ("import sys; from llm_agent_session.dataset import export, grow; grow.GROW_MIN = 0; "
          "export(sys.argv[1], sys.argv[2])")
PUBLISH_CALLS = "rename,renameat,renameat2,link,linkat"


@pytest.fixture(autouse=True)
def backend_name() -> str:
    """The publish is the same Python on both cores: one run, on the default core."""
    return "default"


def run_export(src: str, out: str, inject: str = "", log: str = "") -> int:
    env = dict(os.environ, PYTHONDONTWRITEBYTECODE="1")
    argv = [sys.executable, "-c", EXPORT, src, out]
    if inject or log:
        argv = [STRACE, "-f", "-qq", "-o", log or os.devnull, "-e", f"trace={PUBLISH_CALLS},write"] + (
            ["-e", f"inject={inject}"] if inject else []) + argv
    return subprocess.run(argv, env=env, capture_output=True, timeout=300).returncode


def glob_tables(out: str) -> Dict[str, List[Dict[str, Any]]]:
    import duckdb

    con = duckdb.connect()
    con.execute("SET TimeZone = 'UTC'")
    tables = {}
    for t in TABLE_NAMES:
        rel = con.sql(f"SELECT * FROM read_parquet('{out}/{t}/**/*.parquet', hive_partitioning = true)")
        names = rel.columns
        tables[t] = [dict(zip(names, r)) for r in rel.fetchall()]
    return tables


def by_session(tables: Dict[str, List[Dict[str, Any]]]) -> Dict[Tuple[str, str], List[Any]]:
    out: Dict[Tuple[str, str], List[Any]] = {}
    for t, rows in tables.items():
        for r in rows:
            out.setdefault((t, r["session_id"]), []).append(tuple(sorted((k, str(v)) for k, v in r.items())))
    return {k: sorted(v) for k, v in out.items()}


def kill_points(src: str, out: str, tmp: str, most: int = 16) -> List[str]:
    """Where to kill: the renames of the manifest (the commit, the end of the publish), about
    `most` other renames and links of the publish spread over it, and a few writes."""
    probe = os.path.join(tmp, "probe")
    shutil.copytree(out, probe, symlinks=True)
    log = os.path.join(tmp, "trace.log")
    assert run_export(src, probe, log=log) == 0
    return points_of(log, most)


def points_of(log: str, most: int) -> List[str]:
    """The kill points (see ``kill_points``) of the run that wrote the strace `log`."""
    seen: Dict[str, int] = {}
    calls: List[Tuple[str, bool]] = []
    for row in open(log):
        m = re.match(r"^\d+ +([a-z0-9_]+)\(", row)
        if not m:
            continue
        name = m.group(1)
        seen[name] = seen.get(name, 0) + 1
        if name != "write":
            calls.append((f"{name}:signal=SIGKILL:when={seen[name]}", "_dataset.json" in row))
    step = max(1, len(calls) // most)
    points = [p for i, (p, manifest) in enumerate(calls) if manifest or i % step == 0]
    writes = seen.get("write", 0)
    points += [f"write:signal=SIGKILL:when={n}" for n in (1, writes // 3, 2 * writes // 3) if n]
    return points


def test_a_kill_anywhere_leaves_old_or_new_and_the_next_run_completes(tmp_path: Any) -> None:
    src, pristine = tmp_path / "src", str(tmp_path / "v1")
    every = every_kind(str(src / "every.jsonl"))
    paths = [small(str(src / f"s{i}.jsonl"), f"hello {i}") for i in range(3)]
    assert run_export(str(src), pristine) == 0
    old = all_tables(pristine)
    # The change: one grown, one gone, one new.
    with Session.load(every) as s:
        s.append_message(user_message("grown"))
    os.unlink(paths[0])
    small(str(src / "new.jsonl"), "new")
    reference = str(tmp_path / "reference")
    shutil.copytree(pristine, reference, symlinks=True)
    assert run_export(str(src), reference) == 0
    with open(os.path.join(reference, "_dataset.json")) as f:
        grown = [e for e in json.load(f)["sources"].values() if e["path"] == every]
    assert grown and "appended" in grown[0]  # only its new bytes were read
    new = all_tables(reference)
    assert new != old
    old_glob, new_glob = by_session(glob_tables(pristine)), by_session(glob_tables(reference))
    points = kill_points(str(src), pristine, str(tmp_path))
    assert len(points) > 12
    outcomes = {"old": 0, "new": 0}
    for n, point in enumerate(points):
        out = str(tmp_path / f"out{n}")
        shutil.copytree(pristine, out, symlinks=True)
        code = run_export(str(src), out, inject=point)
        assert code != 0, point  # it was killed
        seen = all_tables(out)  # a reader of the manifest: one whole export or the other
        assert seen in (old, new), point
        outcomes["old" if seen == old else "new"] += 1
        now = by_session(glob_tables(out))  # a reader that globs: each session's rows old or new
        for key in set(old_glob) | set(new_glob) | set(now):
            assert now.get(key, []) in (old_glob.get(key, []), new_glob.get(key, [])), (point, key)
        assert run_export(str(src), out) == 0, point  # the next run completes it
        assert all_tables(out) == new and by_session(glob_tables(out)) == new_glob, point
        assert not [n for n in os.listdir(out) if n.startswith(".staging-")], point
        shutil.rmtree(out)
    assert outcomes["old"] and outcomes["new"]  # killed both before and after the commit


def query_cli(out: str, sql: str) -> subprocess.CompletedProcess:
    env = dict(os.environ, PYTHONDONTWRITEBYTECODE="1")
    return subprocess.run([sys.executable, "-m", "llm_agent_session", "query", out, sql], env=env,
                          capture_output=True, text=True, timeout=120)


def test_a_first_export_killed_before_its_commit_reads_as_no_dataset_yet(tmp_path: Any) -> None:
    """Killed anywhere in its first export, OUT is no dataset yet (query says so, exit 7),
    or the whole export; once the export has claimed OUT (its first publish, of empty
    tables, done), every table's directory holds a file with its schema (a glob reads an
    empty table); the next run completes it."""
    import pyarrow.parquet as pq
    from llm_agent_session.dataset.schema import validate
    from llm_agent_session.dataset import NotADataset, query

    src = tmp_path / "src"
    every_kind(str(src / "every.jsonl"))
    for i in range(3):
        small(str(src / f"s{i}.jsonl"), f"hello {i}")
    probe, log = str(tmp_path / "probe"), str(tmp_path / "first.log")
    assert run_export(str(src), probe, log=log) == 0
    whole = all_tables(probe)
    states = {"nothing yet": 0, "no dataset yet": 0, "empty tables": 0, "exported": 0}
    for n, point in enumerate(points_of(log, most=10)):
        out = str(tmp_path / f"out{n}")
        assert run_export(str(src), out, inject=point) != 0, point  # it was killed
        r = query_cli(out, "SELECT count(*) FROM sessions")
        assert "Traceback" not in r.stderr, (point, r.stderr)
        with open(os.path.join(out, "_dataset.json")) if os.path.exists(os.path.join(out, "_dataset.json")) else \
                open(os.devnull) as f:
            manifest = json.loads(f.read() or "null")
        if manifest is not None and manifest["sources"]:
            states["exported"] += 1
            assert r.returncode == 0 and all_tables(out) == whole, point
        else:
            assert r.returncode == 7, (point, r.stderr)
            if manifest is None:
                states["nothing yet"] += 1
                assert "is not a dataset (no _dataset.json)" in r.stderr, point
            else:
                states["no dataset yet"] += 1
                assert "holds no dataset yet" in r.stderr and "llm-agent-session dataset SRC" in r.stderr, point
                with pytest.raises(NotADataset, match="no dataset yet"):
                    query(out, "SELECT 1")
            if manifest is not None and manifest["buckets"] and not manifest["publishing"]:  # claimed: every table, empty
                states["empty tables"] += 1
                for t in TABLE_NAMES:
                    files = [os.path.join(d, f) for d, _, fs in os.walk(os.path.join(out, t)) for f in fs]
                    assert files and all(validate(t, pq.read_schema(f)) == [] for f in files), (point, t)
                assert all(rows == [] for rows in glob_tables(out).values()), point
        assert run_export(str(src), out) == 0, point  # the next run completes it
        assert all_tables(out) == whole, point
        assert not [n for n in os.listdir(out) if n.startswith(".staging-")], point
        shutil.rmtree(out)
    assert states["empty tables"] and states["exported"], states
