"""SQL over OUT with DuckDB (the ``dataset`` extra): each table a view by its name.

The views read the files the manifest names (``_versions/...``), not the glob names, so
one query sees one committed export across every table, even while another export
publishes (``docs/dataset.md``, "What a reader can rely on").

A query is SQL over the dataset, and by default nothing more: DuckDB itself refuses every
file but the Parquet files of OUT's tables (``enable_external_access`` off, those files
its ``allowed_paths``), every extension install or load, and any change of that
configuration (``lock_configuration``); and only statements that read are run, since a
``COPY ... TO`` one of OUT's own files, an ``EXPORT DATABASE`` or an ``ATTACH`` would
write. ``unrestricted=True`` (``query --unrestricted``) gives the whole engine, with the
user's access to files and the network.
"""

from __future__ import annotations

import contextlib
import os
import re
from typing import Any, Dict, Iterator, List, Union

from .._files import name_as_text
from .schema import TABLE_NAMES
from .errors import DatasetError, NoDatasetYet, NotADataset
from .layout import MANIFEST, split_key, version_name
from .manifest import read_manifest

PathLike = Union[str, "os.PathLike[str]"]

#: How to lift the limits, as every refusal says.
UNRESTRICTED = "--unrestricted (dataset.query(..., unrestricted=True))"
# Statements that only read: SELECT (WITH, FROM ..., VALUES, DESCRIBE, SHOW, SUMMARIZE,
# PIVOT with its columns listed are SELECTs to DuckDB), MULTI (a PIVOT whose columns DuckDB
# finds first: an ENUM type of them, made in memory, then the SELECT), and EXPLAIN of those
# (EXPLAIN ANALYZE runs what it explains).
_READING = ("SELECT", "MULTI")
_EXPLAINED = re.compile(r"\s*EXPLAIN\s+(?:ANALYZE\s+|\([^)]*\)\s*)?(.*)", re.I | re.S)


class QueryRefused(DatasetError):
    """A query that would write, or reach beyond OUT's tables (another file, the network, an
    extension), run without ``unrestricted``: what it tried, and the flag that allows it."""


# `date` from the directory a file is in, never from one above OUT: DuckDB's hive
# partitioning reads every key=value directory of the path, so OUT under
# `.../date=2020-01-01/` would give every row that date, and `team=infra/` a `team` column.
# A filter on `date` still skips the other days' files (DuckDB prunes by file name).
_DATE = r"CAST(regexp_extract(filename, '[/\\]date=([0-9]{4}-[0-9]{2}-[0-9]{2})[/\\][^/\\]*$', 1) AS DATE)"


def _literal(text: str) -> str:
    return "'" + text.replace("'", "''") + "'"


def connect(out: PathLike, *, unrestricted: bool = False) -> Any:
    """A DuckDB connection (in memory) with a view per table of the dataset at `out`, as of
    its last commit. Times are shown in UTC. Unless `unrestricted`, DuckDB reads no file
    but those of the tables and loads no extension, and its configuration is locked;
    whoever runs SQL from elsewhere on it should check it first (:func:`check_statements`), as
    :func:`query` does: a ``COPY ... TO`` one of the tables' own files would overwrite it."""
    import duckdb

    out = os.path.abspath(os.fspath(out))
    if name_as_text(out) != out:
        raise NotADataset(f"{name_as_text(out)} is not a dataset: its name is not UTF-8, where the dataset "
                          "command makes none (DuckDB takes only UTF-8 paths)")
    if not os.path.isfile(os.path.join(out, MANIFEST)):
        raise NotADataset(f"{out} is not a dataset (no {MANIFEST}): make one with `llm-agent-session dataset SRC {out}`")
    manifest = read_manifest(out)
    if manifest.no_dataset_yet:
        raise NoDatasetYet(f"{out} holds no dataset yet: no export into it has finished (the first was stopped "
                           f"before its commit, or is still running); run `llm-agent-session dataset SRC {out}`")
    files: Dict[str, List[str]] = {
        table: [os.path.join(out, version_name(table, *split_key(key), bucket.tag))
                for key, bucket in sorted(manifest.buckets.items())] for table in TABLE_NAMES}
    config: Dict[str, Any] = {} if unrestricted else {"autoinstall_known_extensions": False,
                                                      "autoload_known_extensions": False}
    con = duckdb.connect(config=config)
    try:
        con.execute("SET TimeZone = 'UTC'")
        if not unrestricted:
            try:
                con.execute(f"SET allowed_paths = {_listed([f for listed in files.values() for f in listed])}")
            except duckdb.Error as e:  # DuckDB before 1.2 has no allowed_paths
                raise DatasetError(f"a query limited to the dataset needs DuckDB 1.2 or later ({e}): "
                                   f"pip install -U duckdb, or run it with {UNRESTRICTED}") from None
            con.execute("SET enable_external_access = false")
        for table in TABLE_NAMES:
            con.execute(f"CREATE VIEW {table} AS SELECT * EXCLUDE (filename), {_DATE} AS date "
                        f"FROM read_parquet({_listed(files[table])}, filename = true, hive_partitioning = false)")
        if not unrestricted:
            con.execute("SET lock_configuration = true")
    except BaseException:
        con.close()
        raise
    return con


def _listed(paths: List[str]) -> str:
    return "[" + ", ".join(_literal(p) for p in paths) + "]"


def check_statements(con: Any, sql: str) -> None:
    """``QueryRefused`` unless every statement of `sql` only reads (see ``_READING``)."""
    import duckdb

    try:
        statements = con.extract_statements(sql)
    except duckdb.Error:
        return  # not SQL DuckDB parses: running it says why
    for statement in statements:
        kind = str(statement.type).rsplit(".", 1)[-1]
        if kind in _READING or (kind == "EXPLAIN" and _explains_a_read(con, statement.query)):
            continue
        text = " ".join(statement.query.split())
        shown = text if len(text) <= 60 else text[:59] + "…"
        raise QueryRefused(
            f"{kind} is not run ({shown}): a query runs only statements that read the dataset "
            "(SELECT, WITH, FROM, DESCRIBE, SUMMARIZE, PIVOT, EXPLAIN), since others can write files or "
            f"reach beyond OUT's tables. To run it with DuckDB's full access to your files, pass {UNRESTRICTED}")


def _explains_a_read(con: Any, explain: str) -> bool:
    explained = _EXPLAINED.fullmatch(explain)
    if explained is None or not explained.group(1).strip():
        return False  # a form not recognised here: refused, as anything unknown is
    try:
        check_statements(con, explained.group(1))
    except QueryRefused:
        return False
    return True


@contextlib.contextmanager
def refusals() -> Iterator[None]:
    """DuckDB refusing a file, the network or an extension to a limited connection, as a
    ``QueryRefused`` that says why and how to allow it."""
    import duckdb

    try:
        yield
    except duckdb.PermissionException as e:
        raise QueryRefused(f"{e}: a query reads the Parquet files of OUT's tables and no other file, and installs "
                           f"or loads no extension. To run it with DuckDB's full access to your files, pass "
                           f"{UNRESTRICTED}") from None


def query(out: PathLike, sql: str, *, unrestricted: bool = False) -> Any:
    """The result of `sql` over the dataset at `out`, as a ``pyarrow.Table``. Only
    statements that read, over OUT's tables only, unless `unrestricted` (module doc)."""
    con = connect(out, unrestricted=unrestricted)
    try:
        if not unrestricted:
            check_statements(con, sql)
        with contextlib.nullcontext() if unrestricted else refusals():
            result = con.sql(sql)
            if result is None:  # a statement that returns nothing (SET, CREATE ...)
                import pyarrow as pa

                return pa.table({})
            # DuckDB 1.x names it fetch_arrow_table; 2.x to_arrow_table (the old name deprecated).
            return result.to_arrow_table() if hasattr(result, "to_arrow_table") else result.fetch_arrow_table()
    finally:
        con.close()
