"""The publish: a run's bucket files moved into OUT, the views, the manifest committed.

Each publish makes a new view per table (hard links to the current files, complete before
anything names it) and points the table's name at it in one rename (the layout:
``layout.py``).

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
from typing import Dict, Iterable, List, Sequence, Set

from .._files import fsync_dir
from .buckets import BucketFiles
from .layout import IDS, MANIFEST, VERSIONS, VIEWS, fsync_all, split_key, version_name, view_name
from .manifest import BucketEntry, Manifest, Retired, ids_name, write_manifest
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
