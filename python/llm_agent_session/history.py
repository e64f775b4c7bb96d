"""The whole history of a transcript in file order, and what became of each line.

``Session.load`` gives the live conversation: what the model would be sent next. A viewer,
an export of everything, a dataset or a trace needs the rest too: which compaction or
rewind took a message out of the live list, which elision replaced its content with a stub,
when each tool operation was dispatched and settled and whether a tool message answered
it, which grants were in force when it ran. ``History`` folds the envelopes with the very
rules load folds them by (``_fold.FoldState``), noting those facts on the way, so its live
list is load's, element for element.

It is lenient, as peek is: an envelope the fold would refuse (a duplicate id, a reference
to nothing live, a settle of an unknown operation) is recorded in ``problems`` and skipped,
and the rest is still read. Where ``problems`` is empty and the envelopes are every line
of a file, ``live_ids`` equals ``Session.load(path).message_ids`` and ``pending()`` equals
its ``pending_tool_operations()`` (a differential test holds them together).

    history = History.read(path)            # or: History(); history.feed(event) per Event
    History.read(path, end=seen["end"], identity=seen["identity"])  # what a peek `seen` listed
    history.removed.get(message_id)         # Removal(by, kind, ts), or None while live
    history.elided.get(message_id)          # ids of the elisions that stubbed it, in order
    history.operations[op_id].state         # dispatched, result-recorded, completed, ...
    history.answers.get(message_id)         # the operation a tool message answered, or None
    history.calls.get(call_id)              # the operations dispatched for a call id, in order
    history.index_of(envelope_id)           # its position among the envelopes fed
    history.each_operation()                # every operation, for one look (see below)

``History(keep_payloads=False)`` keeps the facts and leaves the values in the file: no tool
arguments, no settle payloads and no run-context texts (on a 1 GB transcript those are about
half a GB in memory; a viewer reads them from the lines it shows).

On the native core ``read`` folds the file in Rust, at about the cost of a load, and
``removed``, ``elided``, ``operations``, ``answers`` and ``calls`` are mappings that build an entry
when it is first asked for (equal to the dicts the pure core gives, in the same order;
``feed`` adds to them). An entry built is kept; ``each_operation`` looks at every
operation without keeping those it builds.

A follower (the viewer) peeks first and then reads the history of what the peek listed:
``History.read(path, end=seen["end"], identity=seen["identity"])`` reads the bytes the
peek read and only from the file it read (an empty history where the path names another
file by now), and ``feed`` takes each envelope a later peek lists.
"""

from __future__ import annotations

import os
from typing import Any, Dict, Iterable, Iterator, List, Optional, Tuple, Union

from . import _peek
from ._core import HistoryRead
from ._history_fold import OPERATION_STATES, HistoryFold, Operation, Problem, ReadMapping, Removal, passing_items
from .messages import PendingToolOperation

__all__ = ["History", "Removal", "Problem", "Operation", "OPERATION_STATES"]


class History(HistoryFold):
    """The fold of a transcript's envelopes, fed in file order, with what became of each."""

    @classmethod
    def read(
        cls, path: Union[str, "os.PathLike[str]"], keep_payloads: bool = True, *, end: Optional[int] = None,
        identity: Optional[Tuple[int, int]] = None,
    ) -> "History":
        """The history of every envelope of the file at `path` that parses, read as peek
        reads it (no lock, nothing written; malformed lines are skipped and are in peek's
        warnings, not here). On the native core the file is folded in Rust, at about the
        cost of a load; ``feed`` goes on from there.

        A follower that peeked (``Session.peek``) reads the history of what it saw: with
        `end` (the peek's ``end``) only the lines before that byte are read, and with
        `identity` (the peek's ``identity``) only that file: where the path names another
        one by now (a repair renamed a new file over it), nothing is read and the history
        is empty (``count`` 0; a follower compares ``count`` with its peek's envelopes).
        Raises ValueError for an `end` that is not an int >= 0, and MemoryError for a file of
        more than 2**32 - 1 envelopes (the most a read's notes index; read a part of it with
        `end`, or load it)."""
        if end is not None and (not isinstance(end, int) or isinstance(end, bool) or end < 0):
            raise ValueError(f"end must be an int >= 0 or None, not {end!r}")
        found = _peek.read_history(os.fspath(path), keep_payloads, end=end, identity=identity)
        return cls._of_read(found, keep_payloads)

    @classmethod
    def _of_read(cls, found: Optional[HistoryRead], keep_payloads: bool) -> "History":
        """The history a core's read (``_peek.read_history``) found; empty for None."""
        history = cls(keep_payloads)
        if found is not None:
            history.state = found.state
            history.meta = found.state.meta
            history.count = found.fed
            history.removed = found.removed
            if isinstance(found.removed, ReadMapping):
                found.removed.keep_built(False)  # its values are the read's shared Removals
            history.elided = found.elided
            history.operations = found.operations
            history.answers = found.answers
            history.calls = found.calls
            history.grants_by_id = found.grants_by_id
            history.grants_id = found.grants_id
            history.problems = found.problems
            history._seen = found.seen
            history._unanswered = found.unanswered
        return history

    # -- reading --------------------------------------------------------------------------

    @property
    def live_ids(self) -> List[str]:
        """The ids of the live conversation, as ``Session.load(path).message_ids``."""
        return list(self.state.ids)

    def index_of(self, envelope_id: str) -> Optional[int]:
        """The position of the envelope `envelope_id` among those fed (0 = the first);
        None when none was fed with that id (a duplicate is the first one's)."""
        return self._seen.get(envelope_id)

    def is_live(self, entry_id: str) -> bool:
        """Whether the message (or compaction summary) `entry_id` is in the live conversation."""
        return self.state.position(entry_id) is not None

    def each_operation(self) -> Iterator[Operation]:
        """Every tool operation in file order, as ``operations.values()`` gives them, for
        one look at them all: after a native read, an operation not asked for before is
        built for this look alone and not kept (``operations`` keeps each one it builds:
        all 124,771 of a 1 GB transcript held 90 MB). One asked for before is the one kept."""
        for _, op in passing_items(self.operations):
            yield op

    def removal_counts(self) -> Dict[str, Tuple[int, str]]:
        """For each compaction and rewind (by its id): how many entries it took out of the
        live conversation, and the first of them (in the order they were taken out). After
        a native read, counted by the core: the 10 GB transcript's 2.5 million entries
        removed, looked at one by one, took 0.9 s and kept 236 MB of the strings made."""
        counted: Dict[str, Tuple[int, str]] = {}
        rest: Iterable[Tuple[str, Removal]] = self.removed.items()
        found = self.removed.tally() if isinstance(self.removed, ReadMapping) else None
        if found is not None:
            for removal, n, first in found[0]:
                counted[removal.by] = (n, first)
            rest = found[1]
        for entry_id, removal in rest:
            n, first = counted.get(removal.by, (0, entry_id))
            counted[removal.by] = (n + 1, first)
        return counted

    def pending(self) -> List[PendingToolOperation]:
        """The operations without a settle, as ``Session.pending_tool_operations()``."""
        return self.state.pending_operations()

    def grants_for(self, op: Operation) -> Optional[Dict[str, Any]]:
        """The grants snapshot in force when `op` was dispatched (``None``: none written)."""
        return None if op.grants_id is None else self.grants_by_id[op.grants_id]
