"""A transcript's ``sessions`` row: its totals, counted from its rows the one way for a whole
export and for the rows a transcript grew by (``grow.py``), and the row as a batch."""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass, field
from typing import Any, Dict

from .._token_usage import UsageTotals
from .manifest import SessionRow
from .schema import write_schema

#: The tables whose rows a sessions row counts.
COUNTED = ("messages", "tool_calls", "compactions", "rewinds", "grants")


@dataclass
class Totals:
    """What a run of a transcript's rows adds to its sessions row: rows per table, the live
    ones (messages and compactions), operations per outcome, and the token usage of its
    message lines (the core pass's own totals, ``DatasetSummary.usage``: a run never shares
    a response with the rows before it, ``grow.py`` makes sure)."""

    rows: Dict[str, int] = field(default_factory=lambda: dict.fromkeys(COUNTED, 0))
    live: int = 0
    outcomes: Dict[str, int] = field(default_factory=dict)
    usage: UsageTotals = field(default_factory=UsageTotals)

    def add(self, table: str, batch: Any) -> None:
        """Count a batch of `table`'s rows."""
        import pyarrow.compute as pc

        self.rows[table] += batch.num_rows
        if table in ("messages", "compactions"):
            self.live += pc.sum(batch.column("live")).as_py() or 0
        elif table == "tool_calls":
            for value in batch.column("outcome").to_pylist():
                self.outcomes[value] = self.outcomes.get(value, 0) + 1

    def moved(self, before: str, after: str) -> None:
        """An operation counted before (in an earlier run) as `before` whose outcome is now `after`."""
        self.outcomes[before] = self.outcomes.get(before, 0) - 1
        self.outcomes[after] = self.outcomes.get(after, 0) + 1


def with_totals(row: SessionRow, totals: Totals) -> SessionRow:
    """`row` with `totals` added to its counts (a whole export adds them to a row of zeros);
    `live_messages` stays null where it is (a transcript that would not load)."""
    def outcome(name: str) -> int:
        return totals.outcomes.get(name, 0)

    dispatched = row.dispatched + outcome("dispatched")
    result_recorded = row.result_recorded + outcome("result-recorded")
    tokens = UsageTotals(row.input_tokens, row.output_tokens, row.cache_read_tokens, row.cache_write_tokens,
                         row.responses, row.unmeasured_responses) + totals.usage
    return dataclasses.replace(
        row, messages=row.messages + totals.rows["messages"],
        live_messages=None if row.live_messages is None else row.live_messages + totals.live,
        tool_calls=row.tool_calls + totals.rows["tool_calls"], completed=row.completed + outcome("completed"),
        failed=row.failed + outcome("failed"), outcome_unknown=row.outcome_unknown + outcome("outcome-unknown"),
        dispatched=dispatched, result_recorded=result_recorded, pending_operations=dispatched + result_recorded,
        compactions=row.compactions + totals.rows["compactions"], rewinds=row.rewinds + totals.rows["rewinds"],
        grants=row.grants + totals.rows["grants"], input_tokens=tokens.input, output_tokens=tokens.output,
        cache_read_tokens=tokens.cache_read, cache_write_tokens=tokens.cache_write, responses=tokens.responses,
        unmeasured_responses=tokens.unmeasured)


def session_batch(row: SessionRow) -> Any:
    """The ``sessions`` row of one transcript, as a batch of the table's write schema."""
    import pyarrow as pa

    schema = write_schema("sessions")
    return pa.RecordBatch.from_arrays([pa.array([getattr(row, f.name)], f.type) for f in schema], schema=schema)
