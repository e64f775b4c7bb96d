"""The commit: one ``Transaction`` the export feeds (the buckets it staged, the sources whose
rows leave, the entries it records), committed under OUT's lock; and the publish it ends with.

A run builds its buckets in its staging directory without a lock, from the manifest as it
read it (``build.py``); then ``Transaction.commit``, holding ``OUT/.lock``, reads the
manifest again, rebuilds any bucket another run published meanwhile (so two runs over
disjoint SRC trees both land), and commits by renaming the new manifest into place. The
manifest then names the new files and views and says the tables still have to be pointed
at them (``publishing``); that is done, and the manifest written once more without it. A
run killed before the commit left the manifest and every table as they were; killed after,
the next run finds the to-do and finishes it. Superseded files and views stay for
``GRACE`` seconds, for readers that resolved them before.

Each publish makes a new view per table (hard links to the current files, complete before
anything names it) and points the table's name at it in one rename (the layout:
``layout.py``).
"""

from __future__ import annotations

import contextlib
import os
import shutil
import time
import uuid
from dataclasses import dataclass, field
from typing import Callable, Dict, Iterable, List, Optional, Sequence, Set

from .._files import fsync_dir
from .buckets import BucketFiles, published, rebuild
from .errors import NotADataset
from .grow import Amendment
from .layout import (
    IDS, LOCK, MANIFEST, PLACEHOLDER, STAGING, VERSIONS, VIEWS, bucket_key, fsync_all, out_lock, split_key, staging_dir,
    version_name, view_name,
)
from .manifest import (
    BucketEntry, Exported, Manifest, Retired, SourceEntry, ids_name, read_manifest, write_manifest,
)
from .schema import TABLE_NAMES

#: Seconds a superseded file stays for readers of an older manifest.
GRACE = 600


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


# -- the transaction --------------------------------------------------------------------------------


@dataclass(frozen=True)
class Staged:
    """A bucket's candidate files, built from the manifest as the run read it."""

    files: Optional[BucketFiles]  # None: nothing of it to publish (every transcript failed)
    kept: Optional[List[str]]  # the published sources it copied; None: it could not read them
    # What grown transcripts change in it (what a rebuild needs where the candidate fails).
    amendment: Amendment = field(default_factory=Amendment)


class Transaction:
    """One commit of OUT. The export feeds it: ``stage`` each bucket it built, ``drop`` each
    source whose published rows leave (gone from SRC), ``record`` each new entry (its rows,
    if any, in a staged bucket; its published rows leave). ``commit`` then does the rest
    under the lock (module doc)."""

    def __init__(self, out: str, staging: str, snapshot: Manifest) -> None:
        self.out = out
        self.staging = staging
        self.snapshot = snapshot  # the manifest the candidates were built from
        self.staged: Dict[str, Staged] = {}
        self.leaving: Set[str] = set()
        self.entries: Dict[str, SourceEntry] = {}

    def stage(self, key: str, staged: Staged) -> None:
        self.staged[key] = staged

    def drop(self, key: str) -> None:
        self.leaving.add(key)

    def record(self, key: str, entry: SourceEntry) -> None:
        self.entries[key] = entry
        self.leaving.add(key)

    def needed(self) -> bool:
        """Whether a commit changes anything: a bucket staged, a source gone or recorded, or
        the manifest's own to-do (a first export, a publish to finish, files to collect)."""
        return bool(self.staged or self.leaving or self.snapshot.no_dataset_yet or self.snapshot.publishing
                    or expired(self.snapshot))

    def commit(self, waiting: Optional[Callable[[], None]] = None) -> None:
        """Under OUT's lock: the manifest read again, the candidates checked against it (a
        bucket another run published meanwhile is rebuilt from both), the commit."""
        with out_lock(self.out, waiting):
            now = time.time()
            manifest = read_manifest(self.out)
            complete_publish(self.out, self.staging, manifest)
            manifest.awaiting = False  # this commit is an export
            remove_orphans(self.out, manifest)
            collect_garbage(self.out, manifest, now)
            # Where the leaving sources' rows are now (another run may have moved them).
            affected = set(self.staged)
            for key in self.leaving:
                affected.update(_buckets_of(manifest.sources.get(key)))
            before = {key: published(manifest, key) for key in affected}  # read while the sources are still listed
            self._enter(manifest, now)
            exported = {s for s, e in self.entries.items() if isinstance(e, Exported)}
            ready: Dict[str, BucketFiles] = {}
            gone: List[str] = []
            for key in sorted(affected):
                files = self._bucket(manifest, key, before[key], exported)
                if files is not None and files.sources:
                    ready[key] = files
                elif key in manifest.buckets:
                    gone.append(key)
            _placeholder(self.staging, manifest, ready, gone)
            publish(self.out, self.staging, manifest, ready, gone, now)

    def _enter(self, manifest: Manifest, now: float) -> None:
        """The entries of `manifest` replaced by this run's, and the id side files only the
        replaced ones named retired."""
        sources = manifest.sources
        superseded = [ids_name(sources.get(key)) for key in self.leaving]
        for key in self.leaving:
            sources.pop(key, None)
        sources.update(self.entries)
        still = {ids_name(e) for e in sources.values()}
        retire(manifest, [os.path.join(IDS, n) for n in superseded if n and n not in still], now)

    def _bucket(self, manifest: Manifest, key: str, now_published: Optional[BucketFiles],
                exported: Set[str]) -> Optional[BucketFiles]:
        """The files bucket `key` gets: its candidate where nobody published the bucket since
        the run read the manifest, else made again from what is published and the candidate
        (`exported`: the sources this run exported)."""
        keep = [s for s in now_published.sources if s not in self.leaving] if now_published else []
        staged = self.staged.get(key)
        candidate = staged.files if staged is not None else None
        ours = [s for s in (candidate.sources if candidate else []) if s in exported]
        if staged is not None and candidate is not None and staged.kept == keep and \
                _tag(self.snapshot, key) == _tag(manifest, key):
            return candidate  # nobody published this bucket meanwhile: the candidate holds
        # A grown transcript whose home candidate is missing: its published rows, amended.
        amendment = (staged.amendment if staged else Amendment()).only(s for s in exported if s not in ours)
        carried = [s for s in now_published.sources if s not in self.leaving or s in amendment.sessions] \
            if now_published else []
        if not carried and not ours:
            return None
        return rebuild(self.out, self.staging, *split_key(key), now_published, carried, candidate, ours, amendment)


def _buckets_of(entry: Optional[SourceEntry]) -> List[str]:
    """The buckets a manifest entry's rows are in: its home bucket, and the appendix if it grew."""
    return entry.buckets if isinstance(entry, Exported) else []


def _tag(manifest: Manifest, key: str) -> Optional[str]:
    bucket = manifest.buckets.get(key)
    return bucket.tag if bucket is not None else None


def _placeholder(staging: str, manifest: Manifest, ready: Dict[str, BucketFiles], gone: List[str]) -> None:
    """Keep the placeholder bucket where no other is left (every table directory holds a
    file), and only then."""
    placeholder = bucket_key(*PLACEHOLDER)
    left = set(manifest.buckets) - set(gone) | set(ready)
    if not left:
        ready[placeholder] = _empty_bucket(staging)
    elif left != {placeholder} and placeholder in left and not _sources_of(manifest, ready, placeholder):
        ready.pop(placeholder, None)
        gone.append(placeholder)


def _sources_of(manifest: Manifest, ready: Dict[str, BucketFiles], key: str) -> List[str]:
    if key in ready:
        return ready[key].sources
    bucket = manifest.buckets.get(key)
    return list(bucket.sources) if bucket is not None else []


def _empty_bucket(staging: str) -> BucketFiles:
    files = BucketFiles(staging, *PLACEHOLDER)
    files.write(())
    return files


def expired(manifest: Manifest) -> bool:
    """Whether something `manifest` retired has outlived ``GRACE``: a commit would collect it."""
    return any(time.time() - r.when >= GRACE for r in manifest.retired)


def claim(out: str) -> None:
    """Make `out` a dataset directory unless it is one: an empty manifest marked as awaiting
    its first export, then every table published empty (a file with its schema), so that
    from then on, whatever stops the export, OUT reads as "no dataset yet" and a reader
    that globs a table finds it, empty. Refuse a directory that holds anything else. Under
    the lock, so that a second run starting while the first publishes for the first time
    sees the manifest, not a stranger's files."""
    def refuse_strangers() -> None:
        if any(not n.startswith(STAGING) and n != LOCK for n in os.listdir(out)):
            raise NotADataset(f"OUT ({out}) is a directory with other files in it: give a new or empty "
                               "directory, or one this command made")

    if os.path.exists(os.path.join(out, MANIFEST)) and read_manifest(out).buckets:
        return
    if not os.path.exists(os.path.join(out, MANIFEST)):
        refuse_strangers()  # before the lock file is made: nothing is written into a stranger's directory
    with out_lock(out):
        with staging_dir(out) as staging:
            if not os.path.exists(os.path.join(out, MANIFEST)):
                refuse_strangers()
                write_manifest(out, staging, Manifest())
            manifest = read_manifest(out)
            if not manifest.buckets:  # (also where a run was stopped between the two)
                publish(out, staging, manifest, {bucket_key(*PLACEHOLDER): _empty_bucket(staging)}, [], time.time())
