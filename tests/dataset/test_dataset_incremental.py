"""Running the export again reads only what changed: an unchanged transcript costs a
stat, a grown or repaired one is exported again, one gone from SRC has its rows removed;
files that are not transcripts are skipped and counted; nothing under SRC is written;
every table directory always holds a file with the table's schema, and never more than
8 per partition."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from typing import Any, Dict, List

import pytest

from tests.support.helpers import env_line
from llm_agent_session import Session, assistant_message, user_message
from llm_agent_session.dataset import TABLE_NAMES, DatasetError, export, query
from llm_agent_session.dataset.schema import validate
from tests.support.dataset import cli, every_kind, glob_count, rows, small, table, tree_state


def files_of(out: str) -> Dict[str, Any]:
    """Every file of OUT (but the lock) with its inode and mtime: what a run changed."""
    state = {}
    for directory, _, names in os.walk(out):
        for name in names:
            p = os.path.join(directory, name)
            if name != ".lock":
                st = os.stat(p)
                state[os.path.relpath(p, out)] = (st.st_ino, st.st_mtime_ns, st.st_size)
    return state


def test_a_rerun_reads_what_changed_and_nothing_else(tmp_path: Any) -> None:
    src, out = tmp_path / "src", str(tmp_path / "out")
    paths = [small(str(src / f"s{i}.jsonl"), f"hello {i}") for i in range(4)]
    every = every_kind(str(src / "deep" / "every.jsonl"))
    first = export(str(src), out)
    assert (first.count("exported"), first.count("failed")) == (5, 0)
    before = files_of(out)
    again = export(str(src), out)
    assert (again.count("unchanged"), again.count("exported")) == (5, 0)
    assert files_of(out) == before  # nothing written, not even the manifest
    old = {t: table(out, t) for t in TABLE_NAMES}

    # Grown: a compaction takes earlier messages out of the conversation; a new message.
    with Session.load(every) as s:
        through = s.message_ids[3]
        s.append_compaction("the start, in short", through, 900, 90)
        s.append_message(user_message("and now?"))
        live = set(s.message_ids)
    os.unlink(paths[0])  # gone from SRC
    small(str(src / "new.jsonl"), "a new one")  # new
    third = export(str(src), out)
    assert sorted((f.status, os.path.basename(f.path)) for f in third.files if f.status != "unchanged") == [
        ("exported", "every.jsonl"), ("exported", "new.jsonl"), ("removed", "s0.jsonl")]
    sessions = {r["path"]: r for r in table(out, "sessions")}
    assert paths[0] not in sessions and len(sessions) == 5
    sid = sessions[every]["session_id"]
    now_live = {r["id"] for r in rows(out, f"SELECT id FROM messages WHERE live AND session_id = '{sid}'")}
    now_live |= {r["id"] for r in rows(out, f"SELECT id FROM compactions WHERE live AND session_id = '{sid}'")}
    assert now_live == live and sessions[every]["compactions"] == 2
    for t in TABLE_NAMES:  # the other sessions' rows are exactly as before
        kept = [r for r in table(out, t) if r["session_id"] not in (sid, sessions[str(src / "new.jsonl")]["session_id"])]
        was = [r for r in old[t] if r["session_id"] not in (sid,) and r["session_id"] not in
               {x["session_id"] for x in old["sessions"] if x["path"] == paths[0]}]
        assert kept == was, t
        assert glob_count(out, t) == query(out, f"SELECT count(*) AS n FROM {t}").to_pylist()[0]["n"]


def test_a_repaired_transcript_is_exported_again(tmp_path: Any) -> None:
    src, out = tmp_path / "src", str(tmp_path / "out")
    path = small(str(src / "torn.jsonl"))
    with open(path, "ab") as f:
        f.write(b'{"id":"half-a-line","payl')
    export(str(src), out)
    [row] = table(out, "sessions")
    assert row["verdict"] == "torn-tail" and "a load removes it" in row["reason"]
    Session.load(path).close()  # repairs it
    report = export(str(src), out)
    assert report.count("exported") == 1
    [row] = table(out, "sessions")
    assert (row["verdict"], row["reason"], row["messages"]) == ("clean", None, 3)


def test_files_that_are_not_transcripts_are_skipped_and_counted_and_nothing_hangs(tmp_path: Any, backend_name: str) -> None:
    src, out = tmp_path / "src", str(tmp_path / "out")
    small(str(src / "real.jsonl"))
    (src / "notes.txt").write_text("not json\n")
    (src / "empty.jsonl").write_bytes(b"")
    (src / "array.jsonl").write_text("[1, 2]\n")
    (src / "other.jsonl").write_text('{"type": "user", "message": "a Claude Code line"}\n')
    (src / "binary.bin").write_bytes(bytes(range(256)) * 10)
    os.mkfifo(src / "fifo")
    os.symlink("loop", src / "loop")
    os.symlink("/dev/null", src / "device")
    os.symlink(str(src), src / "cycle")  # a link to a directory: not followed
    (src / ".hidden.jsonl.01a2.tmp").write_text("a library temporary file: not even looked at\n")
    before = tree_state(str(src))
    r = cli(backend_name, "dataset", str(src), out, "--json", timeout=120)
    assert r.returncode == 0, r.stderr
    report = json.loads(r.stdout)
    assert report["counts"] == {"exported": 1, "unchanged": 0, "removed": 0, "failed": 0, "skipped": 9}
    skipped = {os.path.basename(f["path"]): f["reason"] for f in report["files"] if f["status"] == "skipped"}
    assert "FIFO" in skipped["fifo"] and "device" in skipped["device"] and "leads nowhere" in skipped["loop"]
    assert "directory" in skipped["cycle"] and skipped["empty.jsonl"] == "it is empty"
    assert tree_state(str(src)) == before  # SRC is never written
    again = json.loads(cli(backend_name, "dataset", str(src), out, "--json", timeout=120).stdout)
    assert again["counts"]["skipped"] == 9 and again["counts"]["unchanged"] == 1


def test_src_is_never_written_even_where_a_load_would_repair(tmp_path: Any) -> None:
    src, out = tmp_path / "src", str(tmp_path / "out")
    path = every_kind(str(src / "every.jsonl"))
    with open(path, "ab") as f:
        f.write(b'{"id":"torn","payload":{"role":"us')
    os.chmod(path, 0o444)
    before = tree_state(str(src))
    assert export(str(src), out).count("exported") == 1
    assert tree_state(str(src)) == before and sorted(os.listdir(src)) == ["every.jsonl"]


@pytest.mark.parametrize("where", ["out-in-src", "src-in-out", "out-is-a-file", "out-is-foreign"])
def test_an_out_that_overlaps_src_or_is_not_a_dataset_is_refused(tmp_path: Any, where: str, backend_name: str) -> None:
    src = tmp_path / "src"
    small(str(src / "a.jsonl"))
    out = {"out-in-src": src / "out", "src-in-out": tmp_path, "out-is-a-file": tmp_path / "file.txt",
           "out-is-foreign": tmp_path / "foreign"}[where]
    if where == "out-is-a-file":
        out.write_text("mine")
    if where == "out-is-foreign":
        os.mkdir(out)
        (out / "precious.txt").write_text("mine")
    with pytest.raises(DatasetError):
        export(str(src), str(out))
    r = cli(backend_name, "dataset", str(src), str(out))
    assert r.returncode == (7 if where in ("out-is-a-file", "out-is-foreign") else 2) and "error" in r.stderr
    assert sorted(os.listdir(src)) == ["a.jsonl"] and (where != "out-is-foreign" or os.listdir(out) == ["precious.txt"])


def test_every_table_always_holds_a_file_with_its_schema_and_at_most_8_per_partition(tmp_path: Any) -> None:
    import pyarrow.parquet as pq

    src, out = tmp_path / "src", str(tmp_path / "out")
    os.makedirs(src)
    export(str(src), out)  # nothing at all yet

    def check() -> None:
        for t in TABLE_NAMES:
            files = [os.path.join(d, n) for d, _, ns in os.walk(os.path.join(out, t)) for n in ns]
            assert files, t
            for f in files:
                assert not os.path.basename(f).startswith(".") and f.endswith(".parquet")
                assert validate(t, pq.read_schema(f)) == [], f
            parts: Dict[str, int] = {}
            for f in files:
                parts[os.path.dirname(f)] = parts.get(os.path.dirname(f), 0) + 1
            assert max(parts.values()) <= 8, parts
            assert glob_count(out, t) >= 0
    check()
    # 300 transcripts over two days (ids and times written here, so the dates are known).
    for i in range(300):
        day = "2026-03-0" + str(1 + i % 2)
        ts = f"{day}T10:00:{i % 60:02d}.000000Z"
        with open(src / f"t{i:03d}.jsonl", "wb") as f:
            f.write(env_line(f"meta-{i}", "session-meta", {"agent": "bulk"}, ts=ts))
            f.write(env_line(f"m-{i}", "message", {"role": "user", "content": f"n{i}"}, ts=ts))
    report = export(str(src), out)
    assert report.count("exported") == 300
    check()
    assert rows(out, "SELECT date, count(*) AS n FROM sessions GROUP BY date ORDER BY date") == [
        {"date": __import__("datetime").date(2026, 3, 1), "n": 150}, {"date": __import__("datetime").date(2026, 3, 2), "n": 150}]
    for f in os.listdir(src):
        os.unlink(src / f)
    assert export(str(src), out).count("removed") == 300
    check()
    assert rows(out, "SELECT count(*) AS n FROM messages") == [{"n": 0}]


def test_no_extras_leaves_the_column_empty_and_switching_exports_again(tmp_path: Any) -> None:
    src, out = tmp_path / "src", str(tmp_path / "out")
    every_kind(str(src / "every.jsonl"))
    export(str(src), out, extras=False)
    assert rows(out, "SELECT count(*) AS n FROM messages WHERE extras IS NOT NULL") == [{"n": 0}]
    assert export(str(src), out, extras=True).count("exported") == 1
    assert rows(out, "SELECT count(*) AS n FROM messages WHERE extras IS NOT NULL")[0]["n"] > 0


def test_exports_of_two_trees_into_one_out_keep_each_others_rows(tmp_path: Any) -> None:
    out = str(tmp_path / "out")
    a = small(str(tmp_path / "a" / "one.jsonl"))
    b = small(str(tmp_path / "b" / "two.jsonl"))
    export(str(tmp_path / "a"), out)
    export(str(tmp_path / "b"), out)
    os.unlink(a)
    assert export(str(tmp_path / "b"), out).count("removed") == 0  # a is not under this SRC
    assert sorted(r["path"] for r in table(out, "sessions")) == sorted([a, b])
    assert export(str(tmp_path / "a"), out).count("removed") == 1
    assert [r["path"] for r in table(out, "sessions")] == [b]


@pytest.mark.slow
def test_jobs_read_in_processes_and_write_what_one_process_writes(tmp_path: Any) -> None:
    src = tmp_path / "src"
    every_kind(str(src / "every.jsonl"))
    for i in range(12):
        small(str(src / f"s{i:02d}.jsonl"), f"hello {i}", model=f"m{i % 3}")
    one, two = str(tmp_path / "one"), str(tmp_path / "two")
    assert export(str(src), one).count("exported") == 13
    assert export(str(src), two, jobs=2).count("exported") == 13
    for t in TABLE_NAMES:
        assert table(one, t) == table(two, t), t
