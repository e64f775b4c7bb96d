"""A bucket's files: six Parquet files (one per table) written in a directory, never
changed once written; and the rows of some of its sources read back from them.

A bucket is rewritten whole, into new files with a new tag; a table whose rows do not
change is a hard link to the file before. A run writes a bucket's candidate files in its
staging directory (``build.py``, from transcripts and published files, or ``rebuild``,
from published files and another candidate); the commit (``commit.py``) moves them in.
"""

from __future__ import annotations

import os
import uuid
from dataclasses import dataclass, field
from typing import Any, Dict, Iterable, Iterator, List, Optional, Sequence, Tuple

from .. import _platform
from .batches import ROW_GROUP_BYTES, empty_batch, pieces, size_of
from .grow import Amendment
from .layout import APPENDIX, bucket_key, split_key, version_name
from .manifest import Exported, Manifest
from .schema import TABLE_NAMES, write_schema

#: Snappy, the default of DuckDB, Spark and pyarrow (every engine reads it), and the fastest
#: to write here: 256 MB exported in 0.85 s of CPU, against 1.05 s with zstd level 1, for
#: files 2 to 4 times larger (benches/dataset_speed.py; the Parquet writer is most of an export).
COMPRESSION = "snappy"

# Columns few distinct values fill: dictionary-encoded. Others (text, JSON, ids) plain, with
# no statistics for the long ones: a dictionary that overflows is work thrown away.
_DICTIONARY = ["session_id", "agent", "model", "role", "name", "sticky", "removed_kind", "tool", "outcome",
               "grants", "verdict", "host", "reason", "error"]
_NO_STATISTICS = {"text", "content", "tool_calls", "extras", "arguments", "grants", "summary", "meta", "reason",
                  "error"}


# -- Parquet files ------------------------------------------------------------------------------


def _writer(path: str, table: str) -> Any:
    import pyarrow.parquet as pq

    schema = write_schema(table)
    # Made private first (rows hold whatever the conversations held): the writer keeps its mode.
    os.close(os.open(path, os.O_WRONLY | os.O_CREAT | _platform.O_CLOEXEC, 0o600))
    return pq.ParquetWriter(
        path, schema, compression=COMPRESSION, use_dictionary=[n for n in _DICTIONARY if n in schema.names],
        write_statistics=[n for n in schema.names if n not in _NO_STATISTICS], store_schema=False,
    )


def read_rows(path: str, table: str, ranges: Sequence[Tuple[int, int]]) -> Iterator[Any]:
    """The rows ``[start, stop)`` of each range (in order, not overlapping) of a bucket file,
    as batches of `table`'s write schema."""
    import pyarrow.parquet as pq

    ranges = [r for r in ranges if r[1] > r[0]]
    if not ranges:
        return
    schema = write_schema(table)
    pf = pq.ParquetFile(path)
    at = 0
    i = 0
    for batch in pf.iter_batches(batch_size=1 << 14):
        n = batch.num_rows
        while i < len(ranges) and ranges[i][0] < at + n:
            start, stop = max(ranges[i][0], at), min(ranges[i][1], at + n)
            yield _cast(batch.slice(start - at, stop - start), schema)
            if ranges[i][1] <= at + n:
                i += 1
            else:
                break
        at += n
        if i == len(ranges):
            return


def _cast(batch: Any, schema: Any) -> Any:
    import pyarrow as pa

    return pa.RecordBatch.from_arrays([c.cast(f.type) for c, f in zip(batch.columns, schema)], schema=schema)


@dataclass
class BucketFiles:
    """One new version of a bucket's six files, being written in a directory."""

    directory: str
    date: str
    k: int
    tag: str = field(default_factory=lambda: uuid.uuid4().hex[:16])
    sources: List[str] = field(default_factory=list)  # source keys, in row order
    rows: Dict[str, Dict[str, int]] = field(default_factory=dict)  # source key -> table -> rows

    @property
    def key(self) -> str:
        return bucket_key(self.date, self.k)

    def path(self, table: str) -> str:
        return os.path.join(self.directory, version_name(table, self.date, self.k, self.tag))

    def write(self, rows: Iterable[Tuple[str, str, Any]], linked: Optional["BucketFiles"] = None,
              linked_tables: Sequence[str] = ()) -> None:
        """Write the six files from `rows`: (source key, table, a batch of its rows). A
        source's rows of each table come in order, and the sources in the order they first
        appear (every source has its ``sessions`` row first or, for a transcript, last: the
        tables are files of their own). Batches are gathered into row groups of about
        ``ROW_GROUP_BYTES``; a table without rows gets a file with its schema and none.

        `linked` (published files, paths relative to ``linked.directory``): each table of
        `linked_tables` is a hard link to its file there, which `rows` must then hold
        nothing of (a transcript that grew has only its ``sessions`` row, and maybe some
        ``tool_calls`` rows, replaced in its bucket)."""
        import pyarrow as pa

        writers: Dict[str, Any] = {}
        pending: Dict[str, List[Any]] = {t: [] for t in TABLE_NAMES}
        held: Dict[str, int] = {t: 0 for t in TABLE_NAMES}
        written: Dict[str, int] = {t: 0 for t in TABLE_NAMES}

        def flush(table: str) -> None:
            if pending[table]:
                t = pa.Table.from_batches(pending[table])
                writers[table].write_table(t, row_group_size=t.num_rows)
                written[table] += t.num_rows
                pending[table], held[table] = [], 0

        written_tables = [t for t in TABLE_NAMES if linked is None or t not in linked_tables]
        try:
            for table in TABLE_NAMES:
                os.makedirs(os.path.dirname(self.path(table)), exist_ok=True)
                if table in written_tables:
                    writers[table] = _writer(self.path(table), table)
                else:
                    assert linked is not None
                    os.link(os.path.join(linked.directory, linked.path(table)), self.path(table))
            for key, table, batch in rows:
                if key not in self.rows:
                    self.sources.append(key)
                    self.rows[key] = {t: 0 for t in TABLE_NAMES}
                    if linked is not None:
                        self.rows[key].update((t, n) for t, n in linked.rows[key].items() if t not in written_tables)
                if batch.num_rows == 0:
                    continue
                assert table in writers, f"rows of {table}, a table linked to the files before"
                self.rows[key][table] += batch.num_rows
                split = pieces(batch)
                for piece in split:
                    pending[table].append(piece)
                    held[table] += size_of(piece) // len(split)
                    if held[table] >= ROW_GROUP_BYTES:
                        flush(table)
            for table in written_tables:
                flush(table)
                if written[table] == 0:
                    writers[table].write_batch(empty_batch(table))  # the schema, and no row
        finally:
            for w in writers.values():
                w.close()

    def ranges(self, keys: Iterable[str]) -> Dict[str, List[Tuple[int, int]]]:
        """Per table, the row ranges of the sources `keys` in these files."""
        wanted = set(keys)
        out: Dict[str, List[Tuple[int, int]]] = {t: [] for t in TABLE_NAMES}
        for table in TABLE_NAMES:
            at = 0
            for key in self.sources:
                n = self.rows[key][table]
                if key in wanted and n:
                    ranges = out[table]
                    if ranges and ranges[-1][1] == at:
                        ranges[-1] = (ranges[-1][0], at + n)
                    else:
                        ranges.append((at, at + n))
                at += n
        return out


def copied(out: str, files: BucketFiles, keys: Sequence[str], rows: Dict[str, Dict[str, int]],
           tables: Sequence[str] = TABLE_NAMES) -> Iterator[Tuple[str, str, Any]]:
    """The rows of the sources `keys` (in the order of `files`) read back from `files`
    (published ones: `out` is OUT; a run's own: `out` is ""), as ``BucketFiles.write`` takes
    them; of `tables` only. (What grown transcripts change in them: ``grow.Amendment``.)"""
    ranges = files.ranges(keys)
    for table in tables:  # sessions first: every source has its one row there
        batches = read_rows(os.path.join(out, files.path(table)), table, ranges[table])
        pending: Optional[Any] = None
        for key in [s for s in files.sources if s in set(keys)]:
            need = rows[key][table]
            if need == 0:
                yield key, table, empty_batch(table)
            while need > 0:
                if pending is None:
                    pending = next(batches)
                take = min(need, pending.num_rows)
                yield key, table, pending.slice(0, take)
                pending = pending.slice(take) if take < pending.num_rows else None
                need -= take


def published(manifest: Manifest, key: str) -> Optional[BucketFiles]:
    """The files of bucket `key` as `manifest` names them (paths relative to OUT)."""
    bucket = manifest.buckets.get(key)
    if bucket is None:
        return None
    files = BucketFiles("", *split_key(key), tag=bucket.tag)
    files.sources = list(bucket.sources)
    files.rows = {s: _rows_in(manifest, s, files.k) for s in bucket.sources}
    return files


def _rows_in(manifest: Manifest, key: str, k: int) -> Dict[str, int]:
    entry = manifest.sources[key]
    assert isinstance(entry, Exported), f"{key} is listed in a bucket but was not exported"
    rows = entry.appended if k == APPENDIX else entry.rows
    assert rows is not None, f"{key} is listed in the appendix but has no rows there"
    return rows


def rebuild(out: str, staging: str, date: str, k: int, old: Optional[BucketFiles], keep: Sequence[str],
            ours: Optional[BucketFiles], our_keys: Sequence[str], amendment: Amendment) -> BucketFiles:
    """A bucket's files made again from what is published (`old`, its sources `keep`, as
    `amendment` amends them) and from a candidate this run built (`ours`, its sources
    `our_keys`), without reading any transcript."""
    files = BucketFiles(staging, date, k)

    def rows() -> Iterator[Tuple[str, str, Any]]:
        if old is not None and keep:
            yield from amendment.applied(copied(out, old, keep, old.rows))
        if ours is not None and our_keys:
            yield from copied("", ours, our_keys, ours.rows)

    files.write(rows())
    return files
