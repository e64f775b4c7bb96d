"""Exports and readers at the same time: two exports of disjoint SRC trees into one OUT
both land, and a reader running queries while exports publish sees each session's rows
of a table all old or all new (globbing the table directories), and one whole export
across every table (through the manifest, as ``query`` reads)."""

from __future__ import annotations

import os
import subprocess
import sys
import time
from typing import Any, Dict, Set

import pytest

from benches.generate import generate
from tests.support.helpers import child_env, env_line
from llm_agent_session.dataset import query
from tests.support.dataset import rows

pytestmark = pytest.mark.slow

EXPORT = "import sys; from llm_agent_session.dataset import export; export(sys.argv[1], sys.argv[2])"


@pytest.fixture(autouse=True)
def backend_name() -> str:
    """What is under test is the publish, the same Python on both cores."""
    return "default"


def write_version(path: str, i: int, v: int) -> None:
    """Transcript `i` at version `v`: its meta line, then v + 1 messages saying "v<v>",
    written aside and renamed over the old one (a new file: the export reads it again)."""
    tmp = path + ".next"
    with open(tmp, "wb") as f:
        f.write(env_line(f"meta-{i}", "session-meta", {"agent": "race"}, ts="2026-05-01T10:00:00.000000Z"))
        for n in range(v + 1):
            f.write(env_line(f"m-{i}-{v}-{n}", "message", {"role": "user", "content": f"v{v}"}))
    os.replace(tmp, path)


def test_two_exports_of_disjoint_trees_into_one_out_both_land(tmp_path: Any) -> None:
    out = str(tmp_path / "out")
    # A is slow (a big transcript), B is quick; they share the date, so they share buckets.
    a, b = tmp_path / "a", tmp_path / "b"
    os.makedirs(a)
    generate(str(a / "big.jsonl"), 6 << 20, seed=3)
    os.makedirs(b)
    for i in range(40):
        write_version(str(b / f"b{i}.jsonl"), i, 0)
    env = dict(os.environ)
    first = subprocess.Popen([sys.executable, "-c", EXPORT, str(a), out], env=env)
    deadline = time.time() + 120
    while not any(n.startswith(".staging-") for n in (os.listdir(out) if os.path.isdir(out) else [])):
        assert time.time() < deadline and first.poll() is None
        time.sleep(0.01)
    second = subprocess.run([sys.executable, "-c", EXPORT, str(b), out], env=env, timeout=300)
    assert second.returncode == 0 and first.wait(300) == 0
    paths = {r["path"] for r in rows(out, "SELECT path FROM sessions")}
    assert paths == {str(a / "big.jsonl")} | {str(b / f"b{i}.jsonl") for i in range(40)}
    import duckdb

    con = duckdb.connect()
    for t in ("sessions", "messages", "tool_calls"):
        globbed = con.execute(f"SELECT count(*) FROM read_parquet('{out}/{t}/**/*.parquet')").fetchone()[0]
        assert globbed == rows(out, f"SELECT count(*) AS n FROM {t}")[0]["n"], t


def test_a_reader_during_exports_sees_old_or_new_never_a_mix(tmp_path: Any) -> None:
    import duckdb

    src, out = tmp_path / "src", str(tmp_path / "out")
    os.makedirs(src)
    count = 24
    for i in range(count):
        write_version(str(src / f"t{i}.jsonl"), i, 0)
    assert subprocess.run([sys.executable, "-c", EXPORT, str(src), out], timeout=300).returncode == 0
    writer = subprocess.Popen([sys.executable, "-c", f"""
import os
from tests.dataset.test_dataset_concurrency import write_version
from llm_agent_session.dataset import export
for v in range(1, 9):
    for i in range(0, {count}, 1 + v % 3):
        write_version(os.path.join({str(src)!r}, f"t{{i}}.jsonl"), i, v)
    export({str(src)!r}, {out!r})
"""], env=child_env())
    con = duckdb.connect()
    versions: Dict[str, Set[int]] = {}
    reads = stale = 0
    while writer.poll() is None or reads < 3:
        # Through the table's name, as users glob it: an engine lists the files, then opens
        # them by name; a publish between the two makes it fail ("No such file"), never
        # read a mix. Through the view the name resolved to (realpath): that never fails.
        for root in (f"{out}/messages", os.path.realpath(f"{out}/messages")):
            glob = f"read_parquet('{root}/**/*.parquet', hive_partitioning = true)"
            try:
                seen = con.execute(f"SELECT session_id, list(text), count(*) FROM {glob} GROUP BY session_id").fetchall()
            except duckdb.IOException as e:
                assert root == f"{out}/messages" and "No such file" in str(e), e
                stale += 1
                continue
            assert len(seen) == count
            for session, texts, n in seen:
                assert len(set(texts)) == 1, (session, texts)  # one version of the session, never two
                v = int(texts[0][1:])
                assert n == v + 1, (session, texts)  # and all of it
                versions.setdefault(session, set()).add(v)
        snapshot = rows(out, "SELECT s.session_id, s.messages, count(m.id) AS n FROM sessions s "
                             "LEFT JOIN messages m USING (session_id) GROUP BY ALL")
        assert all(r["messages"] == r["n"] for r in snapshot), snapshot  # across tables: one export
        reads += 1
    assert writer.wait() == 0
    assert sum(len(v) for v in versions.values()) > count  # it did see sessions change
    final = query(out, "SELECT DISTINCT text FROM messages").to_pylist()
    assert {r["text"] for r in final} <= {f"v{v}" for v in range(9)}


def test_two_exports_that_each_add_to_one_appendix_both_land(tmp_path: Any) -> None:
    """Transcripts of one day that grew, in two trees exported at once: both runs add rows
    to that partition's appendix, and the second to publish rebuilds it from both."""
    from tests.support.dataset import all_tables

    grow_export = ("import sys; from llm_agent_session.dataset import export, grow; grow.GROW_MIN = 0; "
                   "export(sys.argv[1], sys.argv[2])")
    out = str(tmp_path / "out")
    a, b = tmp_path / "a", tmp_path / "b"
    os.makedirs(a)
    os.makedirs(b)
    write_version(str(a / "a0.jsonl"), 1000, 3)
    for i in range(20):
        write_version(str(b / f"b{i}.jsonl"), i, 0)
    for tree in (a, b):
        assert subprocess.run([sys.executable, "-c", grow_export, str(tree), out], timeout=300).returncode == 0
    for path in [a / "a0.jsonl"] + [b / f"b{i}.jsonl" for i in range(20)]:
        with open(path, "ab") as f:  # appended in place: the next runs read only these lines
            f.write(env_line(f"grown-{path.name}", "message", {"role": "user", "content": "grown"}))
    generate(str(a / "big.jsonl"), 6 << 20, seed=3)  # keeps A's run busy while B publishes
    first = subprocess.Popen([sys.executable, "-c", grow_export, str(a), out])
    deadline = time.time() + 120
    while not any(n.startswith(".staging-") for n in os.listdir(out)):
        assert time.time() < deadline and first.poll() is None
        time.sleep(0.01)
    second = subprocess.run([sys.executable, "-c", grow_export, str(b), out], timeout=300)
    assert second.returncode == 0 and first.wait(300) == 0
    import json

    with open(os.path.join(out, "_dataset.json")) as f:
        sources = json.load(f)["sources"].values()
    assert sum(1 for e in sources if "appended" in e) == 21  # every grown one read only where it grew
    fresh = str(tmp_path / "fresh")
    for tree in (a, b):
        assert subprocess.run([sys.executable, "-c", EXPORT, str(tree), fresh], timeout=300).returncode == 0
    assert all_tables(out) == all_tables(fresh)
