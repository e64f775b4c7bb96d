"""Which live entries survive a compaction (docs/FORMAT.md, "Replay: from lines to the conversation"), written once for
every fold of one: the replay fold, peek's survey and the importers' bulk writer."""

from __future__ import annotations

from typing import Iterable, List, TypeVar

Entry = TypeVar("Entry")


def compacted(live: List[Entry], through: int, summary: Entry, sticky: Iterable[bool]) -> List[Entry]:
    """The live list after a compaction naming ``live[through]``: the sticky entries up to
    and including it, then `summary` (the synthetic user message), then the rest untouched.

    `sticky` says, in order from ``live[0]``, which entries are sticky (only the first
    ``through + 1`` are read), so parallel lists can share one reading of it."""
    return [entry for entry, keep in zip(live[: through + 1], sticky) if keep] + [summary] + live[through + 1 :]
