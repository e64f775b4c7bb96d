"""The shelf: which files under the PATHs given it lists, and that one odd file costs its own
row at most (the rows are made in a thread, and past the first 100 in worker processes)."""

from __future__ import annotations

import os
import time

import pytest

from llm_agent_session import Session, user_message
from llm_agent_session.view.shelf import BATCH, Roots, Shelf

ODD_SUMMARIES = [5, True, {"a": 1}, "a string, not a list", [], [7], None]


def _filled(paths) -> Shelf:
    shelf = Shelf(Roots(paths))
    shelf.start()
    for _ in range(3000):
        if shelf.done:
            return shelf
        time.sleep(0.01)
    raise AssertionError(f"the shelf never finished: {len(shelf.rows)} rows")


def _transcript(path, meta) -> None:
    with Session.create(path, meta) as s:
        s.append_message(user_message("hello"))


def test_an_odd_summaries_field_costs_no_row(tmp_path):
    """A meta whose "summaries" was 5, true or an object killed the shelf's worker: 0 rows."""
    _transcript(tmp_path / "a-good.jsonl", {"summaries": ["the import's title"]})
    for n, odd in enumerate(ODD_SUMMARIES):
        _transcript(tmp_path / f"odd-{n}.jsonl", {"summaries": odd})
    rows = {r["name"]: r for r in _filled([str(tmp_path)]).rows}
    assert len(rows) == 1 + len(ODD_SUMMARIES)
    root = os.path.basename(tmp_path)
    assert rows[f"{root}/a-good.jsonl"]["title"] == "the import's title"
    for n in range(len(ODD_SUMMARIES)):
        row = rows[f"{root}/odd-{n}.jsonl"]
        assert (row["title"], row["verdict"], row["messages"]) == (None, "clean", 1), ODD_SUMMARIES[n]


@pytest.mark.slow  # worker processes
def test_an_odd_meta_among_the_workers_rows_costs_no_row(tmp_path, backend_name, monkeypatch):
    """Past the first BATCH rows the pool makes them: an odd meta there lost every row after
    (100 of 154)."""
    monkeypatch.setenv("LLM_AGENT_SESSION_BACKEND", backend_name)  # the workers' core
    count = BATCH + 54
    for n in range(count):
        odd = ODD_SUMMARIES[n % len(ODD_SUMMARIES)] if n >= BATCH else ["fine"]
        _transcript(tmp_path / f"run-{n:03d}.jsonl", {"summaries": odd})
    rows = _filled([str(tmp_path)]).rows
    assert len(rows) == count and all(r["verdict"] == "clean" for r in rows)
    assert [r["title"] for r in rows[:BATCH]] == ["fine"] * BATCH
