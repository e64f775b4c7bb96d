"""SQL over OUT with DuckDB (the ``dataset`` extra): each table a view by its name.

The views read the files the manifest names (``_versions/...``), not the glob names, so
one query sees one committed export across every table, even while another export
publishes (``docs/dataset.md``, "What a reader can rely on").
"""

from __future__ import annotations

import os
from typing import Any, Union

from .schema import TABLE_NAMES
from .write import NotADataset, read_manifest, split_key, version_name

PathLike = Union[str, "os.PathLike[str]"]


# `date` from the directory a file is in, never from one above OUT: DuckDB's hive
# partitioning reads every key=value directory of the path, so OUT under
# `.../date=2020-01-01/` would give every row that date, and `team=infra/` a `team` column.
# A filter on `date` still skips the other days' files (DuckDB prunes by file name).
_DATE = r"CAST(regexp_extract(filename, '[/\\]date=([0-9]{4}-[0-9]{2}-[0-9]{2})[/\\][^/\\]*$', 1) AS DATE)"


def _literal(text: str) -> str:
    return "'" + text.replace("'", "''") + "'"


def connect(out: PathLike) -> Any:
    """A DuckDB connection (in memory) with a view per table of the dataset at `out`, as of
    its last commit. Times are shown in UTC."""
    import duckdb

    out = os.path.abspath(os.fspath(out))
    if not os.path.isfile(os.path.join(out, "_dataset.json")):
        raise NotADataset(f"{out} is not a dataset (no _dataset.json): make one with `llm-agent-session dataset SRC {out}`")
    manifest = read_manifest(out)
    con = duckdb.connect()
    con.execute("SET TimeZone = 'UTC'")
    for table in TABLE_NAMES:
        files = [os.path.join(out, version_name(table, *split_key(key), bucket["tag"]))
                 for key, bucket in sorted(manifest["buckets"].items())]
        listed = "[" + ", ".join(_literal(f) for f in files) + "]"
        con.execute(f"CREATE VIEW {table} AS SELECT * EXCLUDE (filename), {_DATE} AS date "
                    f"FROM read_parquet({listed}, filename = true, hive_partitioning = false)")
    return con


def query(out: PathLike, sql: str) -> Any:
    """The result of `sql` over the dataset at `out`, as a ``pyarrow.Table``."""
    con = connect(out)
    try:
        result = con.sql(sql)
        if result is None:  # a statement that returns nothing (SET, CREATE ...)
            import pyarrow as pa

            return pa.table({})
        # DuckDB 1.x names it fetch_arrow_table; 2.x to_arrow_table (the old name deprecated).
        return result.to_arrow_table() if hasattr(result, "to_arrow_table") else result.fetch_arrow_table()
    finally:
        con.close()
