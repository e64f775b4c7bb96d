"""``query`` is SQL over the dataset, and by default nothing more: a statement that writes
or reaches beyond OUT's tables (another file, an extension, the engine's own limits) is
refused with a message naming the flag that allows it, by the command and by
``dataset.query``; with ``--unrestricted`` (``unrestricted=True``) DuckDB runs it with the
user's access. Each refusal is checked to have written nothing."""

from __future__ import annotations

import hashlib
import os
from typing import Any, Dict, List, Tuple

import pytest

import llm_agent_session
from llm_agent_session.dataset import QueryRefused, check_statements, connect, export, query
from tests.support.dataset import cli, small


@pytest.fixture(autouse=True)
def backend_name() -> str:
    """What is under test is DuckDB's configuration, the same whichever core wrote OUT: one
    run, on the core this process has."""
    return llm_agent_session.backend()


@pytest.fixture
def fleet(tmp_path: Any) -> str:
    src, out = tmp_path / "src", str(tmp_path / "out")
    for i in range(3):
        small(str(src / f"s{i}.jsonl"), f"hello {i}")
    assert export(str(src), out).count("exported") == 3
    return out


def out_files(out: str) -> Dict[str, str]:
    """Every file under OUT (links not followed) and its digest."""
    found = {}
    for directory, _, names in os.walk(out):
        for name in names:
            path = os.path.join(directory, name)
            if not os.path.islink(path):
                with open(path, "rb") as f:
                    found[os.path.relpath(path, out)] = hashlib.sha256(f.read()).hexdigest()
    return found


def hostile(out: str, elsewhere: str) -> List[Tuple[str, str]]:
    """(statement, what it must not leave behind or what it must not read)."""
    some_file = sorted(p for p in out_files(out) if p.startswith("_versions/sessions/"))[0]
    outside_csv = os.path.join(elsewhere, "outside.csv")
    with open(outside_csv, "w") as f:
        f.write("secret\n42\n")
    return [
        (f"COPY (SELECT 1 AS x) TO '{elsewhere}/copied.csv'", f"{elsewhere}/copied.csv"),
        (f"COPY (SELECT 1 AS x) TO '{out}/{some_file}' (FORMAT csv, USE_TMP_FILE false)", ""),
        (f"ATTACH '{elsewhere}/attached.db' AS other", f"{elsewhere}/attached.db"),
        (f"EXPORT DATABASE '{elsewhere}/exported'", f"{elsewhere}/exported"),
        ("SELECT * FROM read_text('/etc/passwd')", ""),
        (f"SELECT * FROM read_csv('{outside_csv}')", ""),
        (f"SELECT * FROM read_text('{out}/_dataset.json')", ""),
        ("INSTALL httpfs", ""),
        ("LOAD httpfs", ""),
        ("SET enable_external_access = true", ""),
        ("RESET enable_external_access", ""),
        (f"EXPLAIN ANALYZE COPY (SELECT 1 AS x) TO '{elsewhere}/explained.csv'", f"{elsewhere}/explained.csv"),
        (f"SELECT 1; COPY (SELECT 1 AS x) TO '{elsewhere}/second.csv'", f"{elsewhere}/second.csv"),
    ]


READS = [
    "SELECT count(*) AS n FROM messages",
    "WITH m AS (FROM messages) SELECT role, count(*) AS n FROM m GROUP BY role ORDER BY role",
    "PIVOT tool_calls ON outcome USING count(*) GROUP BY tool",  # its columns found first: MULTI
    "SUMMARIZE sessions",
    "DESCRIBE tool_calls",
    "EXPLAIN SELECT count(*) FROM sessions",
]


def test_dataset_query_refuses_what_writes_or_reaches_beyond_out(fleet: str, tmp_path: Any) -> None:
    elsewhere = str(tmp_path / "elsewhere")
    os.mkdir(elsewhere)
    before = out_files(fleet)
    for sql, leaves in hostile(fleet, elsewhere):
        with pytest.raises(QueryRefused) as refused:
            query(fleet, sql)
        assert "unrestricted" in str(refused.value), sql
        assert not leaves or not os.path.exists(leaves), sql
    assert out_files(fleet) == before
    assert sorted(os.listdir(elsewhere)) == ["outside.csv"]
    for sql in READS:
        assert query(fleet, sql).num_rows > 0, sql
    assert query(fleet, "SELECT count(*) AS n FROM messages").to_pylist() == [{"n": 9}]


def test_a_connection_keeps_duckdbs_limits_whatever_runs_on_it(fleet: str, tmp_path: Any) -> None:
    import duckdb

    con = connect(fleet)
    try:
        with pytest.raises(duckdb.PermissionException):
            con.sql("SELECT * FROM read_text('/etc/passwd')").fetchall()
        with pytest.raises(duckdb.Error, match="locked"):
            con.execute("SET enable_external_access = true")
        with pytest.raises(duckdb.PermissionException):
            con.execute(f"COPY (SELECT 1) TO '{tmp_path}/x.csv'")
        assert con.sql("SELECT count(*) FROM sessions").fetchall() == [(3,)]
        with pytest.raises(QueryRefused):  # what query() checks first, for a caller's own SQL
            check_statements(con, f"COPY (SELECT 1) TO '{tmp_path}/x.csv'")
        check_statements(con, "SELECT count(*) FROM sessions")
    finally:
        con.close()
    assert not os.path.exists(tmp_path / "x.csv")


def test_unrestricted_runs_the_whole_engine(fleet: str, tmp_path: Any) -> None:
    target = tmp_path / "copied.csv"
    query(fleet, f"COPY (SELECT count(*) AS n FROM sessions) TO '{target}'", unrestricted=True)
    assert target.read_text().split() == ["n", "3"]
    (tmp_path / "other.csv").write_text("a\n1\n2\n")
    assert query(fleet, f"SELECT count(*) AS n FROM read_csv('{tmp_path}/other.csv')",
                 unrestricted=True).to_pylist() == [{"n": 2}]


@pytest.mark.slow
def test_the_command_refuses_the_same_and_names_the_flag(fleet: str, tmp_path: Any, backend_name: str) -> None:
    elsewhere = str(tmp_path / "elsewhere")
    os.mkdir(elsewhere)
    before = out_files(fleet)
    for sql, leaves in hostile(fleet, elsewhere):
        r = cli(backend_name, "query", fleet, sql)
        assert r.returncode == 1 and "the query was refused" in r.stderr and "--unrestricted" in r.stderr, sql
        assert "Traceback" not in r.stderr and r.stdout == "", sql
        assert not leaves or not os.path.exists(leaves), sql
    assert out_files(fleet) == before
    assert sorted(os.listdir(elsewhere)) == ["outside.csv"]
    for sql in READS:
        r = cli(backend_name, "query", fleet, sql)
        assert r.returncode == 0, (sql, r.stderr)
    copied = cli(backend_name, "query", fleet, f"COPY (SELECT 1 AS x) TO '{elsewhere}/copied.csv'", "--unrestricted")
    assert copied.returncode == 0 and os.path.exists(f"{elsewhere}/copied.csv")
