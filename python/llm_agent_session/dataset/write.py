"""Writing OUT: bucket files, their versions, the views, the manifest and the publish.

The layout (``docs/dataset.md`` says what each reader may rely on)::

    OUT/_dataset.json                                      the manifest: the commit point
    OUT/<table> -> _views/<table>/<n>                      what engines read (a symbolic link)
    OUT/_views/<table>/<n>/date=D/part-<k>-<tag>.parquet   view n: one hard link per bucket
    OUT/_versions/<table>/date=D/part-<k>-<tag>.parquet    every file, never changed once written
    OUT/.lock                                              taken around a publish
    OUT/.staging-<run>/                                    a run's work until it is published

A session's rows of a table live in its bucket's file (``date`` from the session-meta
line, which never changes, ``k`` from its id, one of ``BUCKETS``), and the rows of what it
grew by since it was last exported whole in the partition's appendix bucket (``k`` =
``APPENDIX``): at most 8 files per table and partition, however many transcripts. A
bucket is rewritten whole, into a new file with a new tag (a table whose rows do not
change is a hard link to the file before); a file is never changed once written. Each publish makes a new view per
table (hard links to the current files, complete before anything names it) and points
the table's name at it in one rename.

A run builds its buckets in its staging directory without a lock, from the manifest as it
read it; then, holding ``OUT/.lock``, it reads the manifest again, rebuilds any bucket
another run published meanwhile (so two runs over disjoint SRC trees both land), and
commits by renaming the new manifest into place. The manifest then names the new files
and views and says the tables still have to be pointed at them (``publishing``); that is
done, and the manifest written once more without it. A run killed before the commit left
the manifest and every table as they were; killed after, the next run finds the to-do and
finishes it. Superseded files and views stay for ``GRACE`` seconds, for readers that
resolved them before.
"""

from __future__ import annotations

import contextlib
import os
import shutil
import uuid
from dataclasses import dataclass, field
from typing import Any, Dict, Iterable, Iterator, List, Optional, Sequence, Set, Tuple

from .._files import fsync_dir
from . import grow
from .batches import ROW_GROUP_BYTES, empty_batch, pieces, session_batch, size_of
from .layout import APPENDIX, IDS, MANIFEST, VERSIONS, VIEWS, bucket_key, fsync_all, split_key, version_name, view_name
from .manifest import BucketEntry, Exported, Manifest, Retired, SessionRow, ids_name, write_manifest
from .schema import TABLE_NAMES, write_schema

#: Seconds a superseded file stays for readers of an older manifest.
GRACE = 600

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
           substitute: Optional[Dict[str, Any]] = None, tables: Sequence[str] = TABLE_NAMES,
           patches: Optional[Dict[str, Dict[str, Dict[str, Any]]]] = None) -> Iterator[Tuple[str, str, Any]]:
    """The rows of the sources `keys` (in the order of `files`) read back from `files`
    (published ones: `out` is OUT; a run's own: `out` is ""), as ``BucketFiles.write`` takes
    them; of `tables` only. A transcript that grew (``grow.py``): `substitute`, source key
    -> the ``sessions`` row given instead of the one read back; `patches`, source key ->
    its open operations' new tool_calls columns."""
    ranges = files.ranges(keys)
    substitute = substitute or {}
    patches = patches or {}
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
                if table == "sessions" and key in substitute:
                    yield key, table, substitute[key]
                elif table == "tool_calls" and patches.get(key):
                    yield key, table, grow.patched(pending.slice(0, take), patches[key])
                else:
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


# -- the publish ---------------------------------------------------------------------------------


def complete_publish(out: str, staging: str, manifest: Manifest) -> None:
    """Point each table's name at the view a committed manifest names (after a run was
    killed mid-publish, or right after the commit), then write the manifest again without
    the to-do. Under the lock."""
    if not manifest.publishing:
        return
    assert manifest.view is not None
    for table in TABLE_NAMES:
        point(out, staging, table, view_name(table, manifest.view))
    fsync_dir(os.path.join(out, MANIFEST))
    manifest.publishing = False
    write_manifest(out, staging, manifest)


def point(out: str, staging: str, table: str, view: str) -> None:
    """Make `OUT/<table>` the view `view` (relative to OUT) in one rename: a symbolic link
    made in the staging directory, renamed over the table's name. Every reader that
    resolves the name from then on finds the whole new view; one that resolved it before
    keeps the old, which stays for ``GRACE`` seconds."""
    target = os.path.join(out, table)
    if os.path.islink(target) and os.readlink(target) == view:
        return
    tmp = os.path.join(staging, f"link-{uuid.uuid4().hex}")
    os.symlink(view, tmp)
    if os.path.isdir(target) and not os.path.islink(target):
        # A copy of OUT made without keeping links (cp -r): the table is a directory,
        # which no rename replaces. Moved aside first (the table is missing meanwhile).
        os.replace(target, os.path.join(staging, f"copied-{table}"))
    os.replace(tmp, target)


def retire(manifest: Manifest, paths: Iterable[str], now: float) -> None:
    manifest.retired.extend(Retired(p, now) for p in paths)


def _in_use(manifest: Manifest) -> Set[str]:
    """What the manifest names: its buckets' version files and its views."""
    named: Set[str] = set()
    for key, bucket in manifest.buckets.items():
        date, k = split_key(key)
        named.update(version_name(t, date, k, bucket.tag) for t in TABLE_NAMES)
    if manifest.view is not None:
        named.update(view_name(t, manifest.view) for t in TABLE_NAMES)
    named.update(os.path.join(IDS, n) for n in map(ids_name, manifest.sources.values()) if n)
    return named


def collect_garbage(out: str, manifest: Manifest, now: float) -> bool:
    """Delete what was retired more than ``GRACE`` seconds ago (superseded version files
    and views); True if the manifest changed."""
    keep: List[Retired] = []
    changed = False
    in_use = _in_use(manifest)
    for retired in manifest.retired:
        if retired.path in in_use or now - retired.when < GRACE:
            keep.append(retired)
            continue
        changed = True
        _remove(os.path.join(out, retired.path))
        _remove_empty_dirs(out, os.path.dirname(retired.path))
    manifest.retired = keep
    return changed


def _remove(path: str) -> None:
    if os.path.isdir(path) and not os.path.islink(path):
        shutil.rmtree(path, ignore_errors=True)
    else:
        with contextlib.suppress(FileNotFoundError):
            os.unlink(path)


def remove_orphans(out: str, manifest: Manifest) -> None:
    """Delete version files and views no manifest names: a run killed after moving its
    files into place but before its commit left them. Under the lock (no run is between
    the two steps then)."""
    named = _in_use(manifest) | {r.path for r in manifest.retired}
    for directory, _, names in os.walk(os.path.join(out, VERSIONS)):
        for name in names:
            rel = os.path.relpath(os.path.join(directory, name), out)
            if rel not in named:
                _remove(os.path.join(out, rel))
    for table in TABLE_NAMES:
        views = os.path.join(out, VIEWS, table)
        for name in os.listdir(views) if os.path.isdir(views) else ():
            if view_name(table, int(name) if name.isdigit() else -1) not in named:
                _remove(os.path.join(views, name))


def _remove_empty_dirs(out: str, rel: str) -> None:
    while rel and rel not in (VERSIONS, VIEWS) and os.path.dirname(rel) not in (VERSIONS, VIEWS):
        try:
            os.rmdir(os.path.join(out, rel))
        except OSError:
            return
        rel = os.path.dirname(rel)


def publish(out: str, staging: str, manifest: Manifest, built: Dict[str, BucketFiles],
            gone: Sequence[str], now: float) -> None:
    """Commit `manifest` (already updated with the sources of this run) with the buckets
    `built` (their files in `staging`) and without the buckets `gone` (no sessions left),
    then point the tables at the new views. Under the lock.

    Files are never changed once written: a bucket's new version is a new file. A view is a
    directory tree per table, a hard link to each current file (one per bucket), complete
    before anything names it; the table's name is a symbolic link to its view, replaced
    in one rename. So a reader that globs `OUT/<table>/**` sees one view's partitions, and
    an engine that opens a file twice (a footer, then row groups on other threads) reads
    the same bytes both times."""
    replaced: List[str] = []
    staged_ids = os.path.join(staging, "_ids")
    ids = [n for n in map(ids_name, manifest.sources.values()) if n and os.path.exists(os.path.join(staged_ids, n))]
    fsync_all([files.path(t) for files in built.values() for t in TABLE_NAMES] +
              [os.path.join(staged_ids, n) for n in ids])  # before any rename
    moved: List[str] = []
    for key, files in built.items():
        old = manifest.buckets.get(key)
        for table in TABLE_NAMES:
            rel = version_name(table, files.date, files.k, files.tag)
            os.makedirs(os.path.dirname(os.path.join(out, rel)), exist_ok=True)
            os.replace(files.path(table), os.path.join(out, rel))
            moved.append(os.path.dirname(os.path.join(out, rel)))
            if old is not None and old.tag != files.tag:
                replaced.append(version_name(table, files.date, files.k, old.tag))
        manifest.buckets[key] = BucketEntry(files.tag, tuple(files.sources))
    for key in gone:
        old = manifest.buckets.pop(key, None)
        if old is not None:
            replaced.extend(version_name(t, *split_key(key), old.tag) for t in TABLE_NAMES)
    for name in ids:  # this run's id side files (grow.py)
        os.makedirs(os.path.join(out, IDS), exist_ok=True)
        os.replace(os.path.join(staged_ids, name), os.path.join(out, IDS, name))
        moved.append(os.path.join(out, IDS))
    fsync_all(moved)
    view = (manifest.view or 0) + 1
    made: List[str] = []
    for table in TABLE_NAMES:
        root = os.path.join(out, view_name(table, view))
        for key, bucket in sorted(manifest.buckets.items()):
            date, k = split_key(key)
            name = version_name(table, date, k, bucket.tag)
            link = os.path.join(root, f"date={date}", os.path.basename(name))
            if not made or made[-1] != os.path.dirname(link):
                os.makedirs(os.path.dirname(link), exist_ok=True)
                made.append(os.path.dirname(link))
            os.link(os.path.join(out, name), link)
        made.append(root)
    fsync_all(made)
    if manifest.view is not None:
        replaced.extend(view_name(t, manifest.view) for t in TABLE_NAMES)
    retire(manifest, replaced, now)
    manifest.version += 1
    manifest.view = view
    manifest.publishing = True
    write_manifest(out, staging, manifest)  # the commit point
    complete_publish(out, staging, manifest)


def rebuild(out: str, staging: str, date: str, k: int, old: Optional[BucketFiles], keep: Sequence[str],
            ours: Optional[BucketFiles], our_keys: Sequence[str],
            substitute: Optional[Dict[str, SessionRow]] = None,
            patches: Optional[Dict[str, Dict[str, Dict[str, Any]]]] = None) -> BucketFiles:
    """A bucket's files made again from what is published (`old`, its sources `keep`, with
    the sessions rows of `substitute` given instead and `patches` applied) and from a
    candidate this run built (`ours`, its sources `our_keys`), without reading any
    transcript."""
    files = BucketFiles(staging, date, k)

    def rows() -> Iterator[Tuple[str, str, Any]]:
        if old is not None and keep:
            yield from copied(out, old, keep, old.rows, {s: session_batch(r) for s, r in (substitute or {}).items()},
                              patches=patches)
        if ours is not None and our_keys:
            yield from copied("", ours, our_keys, ours.rows)

    files.write(rows())
    return files
