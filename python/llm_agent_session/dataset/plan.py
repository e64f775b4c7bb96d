"""What a run does with the files it found: which changed since the manifest, and the
buckets to build for them (each with what its new transcripts, the ones gone and the ones
that only grew change in it)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Callable, Dict, List, Tuple

from .. import _backend
from ..errors import CoreFailure
from .build import BucketJob
from .buckets import published
from .commit import Transaction
from .grow import Amendment, Grown, amendments, read_growth
from .layout import bucket_key, split_key
from .manifest import Exported, Manifest, Skipped
from .report import FAILED, SKIPPED, UNCHANGED, FileResult
from .rows import NotATranscript, read_head
from .sources import Head, Source


@dataclass(frozen=True)
class Run:
    """One export: where, the manifest as it read it, its settings, where each file's result goes."""

    out: str
    staging: str
    snapshot: Manifest
    host: str
    extras: bool
    chunk: int
    done: Callable[[FileResult], None]
    redact: bool = True  # mask what the secret rules find (docs/secrets.md)


def redacted_as(entry: Exported, redact: bool) -> bool:
    """Whether `entry`'s rows were written as a run that does (or does not) `redact` writes
    them: a run that masks reads again what was exported unmasked, and the other way."""
    return (entry.redacted is not None) == redact


def changed_sources(run: Run, found: List[Source]) -> List[Source]:
    """The files of `found` not as the manifest recorded them (the others reported unchanged,
    or skipped again)."""
    changed: List[Source] = []
    for s in found:
        entry = run.snapshot.sources.get(s.key)
        if entry is not None and entry.stamp == s.stamp and (
                isinstance(entry, Skipped) or (entry.extras == run.extras and redacted_as(entry, run.redact))):
            run.done(FileResult(s.path, SKIPPED, entry.reason) if isinstance(entry, Skipped) else
                     FileResult(s.path, UNCHANGED))
        else:
            changed.append(s)
    return changed


def bucket_jobs(run: Run, changed: List[Source], removed: List[str], transaction: Transaction) -> List[BucketJob]:
    """The buckets to build: those the changed transcripts go to (their first line read),
    those the changed and removed ones leave, the appendix of those that only grew; each
    with what the grown ones change in it (``grow.amendments``). A changed file that is no
    transcript now is recorded skipped at once."""
    sources = run.snapshot.sources
    grown = _growths(run, changed)
    by_bucket: Dict[str, List[Tuple[Source, Head]]] = {}
    for s in changed:
        if s.key in grown:
            continue
        try:
            head = read_head(s)
        except NotATranscript as e:
            transaction.record(s.key, Skipped(s.stamp, s.path, run.host, str(e)))
            run.done(FileResult(s.path, SKIPPED, str(e)))
            continue
        except OSError as e:
            run.done(FileResult(s.path, FAILED, f"cannot read it: {e.strerror or e}"))
            continue
        by_bucket.setdefault(bucket_key(head.date, head.bucket), []).append((s, head))
    # Sources whose published rows go: changed (re-read now), removed, or now skipped.
    leaving = {s.key for s in changed} | set(removed)
    touched = dict.fromkeys(by_bucket)
    for key in leaving:
        entry = sources.get(key)
        touched.update(dict.fromkeys(entry.buckets if isinstance(entry, Exported) else []))
    touched.update(dict.fromkeys(g.appendix for g in grown.values()))
    amended = amendments(grown.values())
    bucket_jobs = []
    for key in touched:
        date, k = split_key(key)
        old = published(run.snapshot, key)
        keep = [s for s in old.sources if s not in leaving] if old else []
        bucket_jobs.append(BucketJob(run.out, run.staging, date, k, old, keep, by_bucket.get(key, []), run.extras,
                                     run.chunk, _backend.core.name, amended.get(key, Amendment()), run.redact))
    return bucket_jobs


def _growths(run: Run, changed: List[Source]) -> Dict[str, Grown]:
    """The changed transcripts that only grew (``grow.py``), read as far as the checks go."""
    grown: Dict[str, Grown] = {}
    for s in changed:
        entry = run.snapshot.exported(s.key)
        if entry is None or entry.grow is None or entry.host != run.host:
            continue
        home = published(run.snapshot, entry.home)
        if home is None or s.key not in home.sources:
            continue
        try:
            growth = read_growth(s, entry, run.out, run.extras, run.chunk, run.redact) \
                if redacted_as(entry, run.redact) else None
        except (OSError, ValueError, CoreFailure):
            growth = None  # it changed while it was read: exported whole, which decides
        if growth is not None:
            grown[s.key] = Grown(s, entry, growth)
    return grown
