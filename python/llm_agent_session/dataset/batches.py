"""From a core's columns to Arrow record batches, and from batches to row groups.

A core hands each column over in Arrow's own layout (``_core.Column``): pyarrow wraps those
buffers as they are (``from_buffers``), so the bytes the Rust pass wrote are the bytes the
Parquet writer reads, with no copy and no Python object per value. Row groups are cut by
their size in bytes, not by a row count: one row may hold a 200 KB tool result or a
10-byte user turn.
"""

from __future__ import annotations

import functools
from typing import Any, Dict, Iterable, Iterator, List, Optional, Sequence, Tuple

from .._core import Buffer, Column
from .schema import DICTIONARY_COLUMNS, write_schema

#: A row group closes once its batches hold this many bytes (uncompressed).
ROW_GROUP_BYTES = 16 << 20


@functools.lru_cache(maxsize=None)
def _arrow_types() -> Dict[str, Any]:
    import pyarrow as pa

    return {"int64": pa.int64(), "int32": pa.int32(), "float64": pa.float64(), "bool": pa.bool_(),
            "timestamp": pa.timestamp("us", tz="UTC")}


def arrow_buffer(data: Buffer) -> Any:
    """A pyarrow buffer over `data` where it is: ``bytes``, or the native core's own bytes,
    which the buffer keeps alive (``foreign_buffer``'s `base`)."""
    import pyarrow as pa

    if isinstance(data, bytes):
        return pa.py_buffer(data)
    return pa.foreign_buffer(data.address, len(data), base=data)


def arrow_array(column: Column) -> Any:
    """The pyarrow array over `column`'s buffers (not copied)."""
    import pyarrow as pa

    validity = None if column.validity is None else arrow_buffer(column.validity)
    if column.kind == "string":
        assert column.offsets is not None
        return pa.LargeStringArray.from_buffers(
            column.length, arrow_buffer(column.offsets), arrow_buffer(column.values), validity)
    return pa.Array.from_buffers(_arrow_types()[column.kind], column.length, [validity, arrow_buffer(column.values)])


def record_batch(table: str, columns: Dict[str, Column], common: Tuple[Optional[str], ...], live: bool,
                 dictionaries: Optional[Dict[str, Any]] = None) -> Any:
    """One chunk of `table`'s rows as a RecordBatch of its write schema. `common`: the
    transcript's session_id, agent and model; `live` False sets every ``live`` to false (a
    transcript that would not load); `dictionaries`: the values of each dictionary column."""
    import pyarrow as pa

    schema = write_schema(table)
    n = next(iter(columns.values())).length if columns else 0
    arrays: List[Any] = []
    for f in schema:
        if f.name in ("session_id", "agent", "model"):
            value = common[("session_id", "agent", "model").index(f.name)]
            arrays.append(pa.nulls(n, f.type) if value is None else pa.repeat(pa.scalar(value, f.type), n))
        elif f.name == "live" and not live:
            arrays.append(pa.nulls(n, pa.bool_()).fill_null(False))
        elif (table, f.name) in DICTIONARY_COLUMNS:
            values = (dictionaries or {})[f.name]
            arrays.append(pa.DictionaryArray.from_arrays(arrow_array(columns[f.name]), values))
        else:
            arrays.append(arrow_array(columns[f.name]))
    return pa.RecordBatch.from_arrays(arrays, schema=schema)


def grants_dictionary(grants: Sequence[str]) -> Dict[str, Any]:
    """`record_batch`'s dictionaries for a pass whose summary lists `grants`: each grants
    line's snapshot, which ``tool_calls.grants`` indexes."""
    import pyarrow as pa

    return {"grants": pa.array(grants, pa.large_string())}


def chunk_batches(chunks: Iterable[Dict[str, Dict[str, Column]]], common: Tuple[Optional[str], ...], live: bool,
                  dictionaries: Optional[Dict[str, Any]] = None) -> Iterator[Tuple[str, Any]]:
    """(table, batch) for each table with rows in each chunk of a core's dataset pass, in
    order: ``record_batch`` of each."""
    for chunk in chunks:
        for table, columns in chunk.items():
            if columns and next(iter(columns.values())).length:
                yield table, record_batch(table, columns, common, live, dictionaries)


def empty_batch(table: str) -> Any:
    import pyarrow as pa

    return pa.RecordBatch.from_pylist([], schema=write_schema(table))


def size_of(batch: Any) -> int:
    """The bytes of `batch`'s buffers (whole buffers: a slice counts what it shares; cheaper
    than ``nbytes``, which walks the offsets)."""
    return int(batch.get_total_buffer_size())


def pieces(batch: Any) -> Sequence[Any]:
    """`batch` in slices of at most about ``ROW_GROUP_BYTES``."""
    size = size_of(batch)
    if size <= ROW_GROUP_BYTES or batch.num_rows <= 1:
        return [batch]
    parts = -(-size // ROW_GROUP_BYTES)
    step = max(1, -(-batch.num_rows // parts))
    return [batch.slice(i, step) for i in range(0, batch.num_rows, step)]
