"""Which live entries survive a compaction (SPEC 4, "How replay folds"), written once for
every fold of one: the replay fold, peek's survey and the importers' bulk writer."""

from __future__ import annotations

from typing import Callable, List, TypeVar

Entry = TypeVar("Entry")


def compacted(live: List[Entry], through: int, summary: Entry, is_sticky: Callable[[Entry], bool]) -> List[Entry]:
    """The live list after a compaction naming ``live[through]``: the sticky entries up to
    and including it, then `summary` (the synthetic user message), then the rest untouched."""
    return [entry for entry in live[: through + 1] if is_sticky(entry)] + [summary] + live[through + 1 :]
