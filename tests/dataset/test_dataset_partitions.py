"""The tables' one partition column, `date`, is read from the directories below OUT only:
OUT under ``.../date=2020-01-01/`` or ``.../team=infra/`` (key=value directories above it)
changes no row and adds no column, for ``query`` and for the readers docs/dataset.md
shows (Polars and pyarrow given the table's directory, DuckDB given a path relative to
the directory above OUT)."""

from __future__ import annotations

import datetime
import os
from typing import Any, Dict, List

import pytest

from llm_agent_session.dataset import TABLE_NAMES, export, query
from tests.support.dataset import small


def fleet_under(tmp_path: Any, above: str) -> str:
    """Two transcripts (of known days) exported into OUT under the directory `above`."""
    src, out = tmp_path / "src", str(tmp_path / above / "fleet")
    for day in ("2026-03-01", "2026-03-02"):
        path = small(str(src / f"{day}.jsonl"), day)
        with open(path, "rb") as f:
            first, rest = f.read().split(b"\n", 1)
        stamped = first.replace(first[first.index(b'"ts":"') + 6:].split(b'"', 1)[0], f"{day}T10:00:00.000000Z".encode())
        with open(path, "wb") as f:
            f.write(stamped + b"\n" + rest)
    assert export(str(src), out).count("exported") == 2
    return out


def dates(rows: List[Dict[str, Any]]) -> Dict[str, str]:
    return {r["text"]: str(r["date"]) for r in rows}


WANT = {"2026-03-01": "2026-03-01", "2026-03-02": "2026-03-02"}


@pytest.mark.parametrize("above", ["date=2020-01-01", "team=infra", "date=2020-01-01/team=infra"])
def test_key_value_directories_above_out_are_not_columns(tmp_path: Any, above: str, monkeypatch: Any) -> None:
    out = fleet_under(tmp_path, above)
    got = query(out, "SELECT text, date FROM messages WHERE role = 'user'").to_pylist()
    assert dates(got) == WANT
    for table in TABLE_NAMES:
        columns = query(out, f"SELECT * FROM {table} LIMIT 0").column_names
        assert "team" not in columns and columns.count("date") == 1 and columns[-1] == "date", table
    one_day = query(out, "SELECT count(*) AS n FROM sessions WHERE date = DATE '2026-03-02'").to_pylist()
    assert one_day == [{"n": 1}]
    # The readers docs/dataset.md shows.
    import duckdb
    import polars as pl
    import pyarrow.dataset as ds

    polars = pl.scan_parquet(os.path.join(out, "messages"), hive_partitioning=True).filter(pl.col("role") == "user")
    assert dates(polars.select("text", "date").collect().to_dicts()) == WANT
    arrow = ds.dataset(os.path.join(out, "messages"), format="parquet", partitioning="hive")
    table = arrow.to_table(filter=ds.field("role") == "user")
    assert "team" not in table.column_names
    assert dates(table.select(["text", "date"]).to_pylist()) == WANT
    monkeypatch.chdir(os.path.dirname(out))
    con = duckdb.connect()
    rel = con.sql("SELECT * FROM read_parquet('fleet/messages/**/*.parquet', hive_partitioning = true)")
    assert "team" not in rel.columns
    rows = con.sql("SELECT text, date FROM rel WHERE role = 'user'").fetchall()
    assert {text: str(day) for text, day in rows} == WANT
    assert isinstance(rows[0][1], datetime.date)
