"""The reliability battery's seeded bugs still have somewhere to go. The teeth themselves
(each seed planted, its catching test failing) run in the long tier only, since they take
minutes; this check is cheap, so a refactor that takes a seed's place away fails the
test command at once, not a release later."""

from __future__ import annotations

import os
import sys

import pytest


from tests.reliability import seeded_bugs  # noqa: E402


@pytest.mark.parametrize("seed", seeded_bugs.SEEDS, ids=[seed.name for seed in seeded_bugs.SEEDS])
def test_each_seeded_bug_still_applies(seed, backend_name):
    replaced = seeded_bugs.plant(seed.name)
    try:
        assert {module.__name__.split(".", 1)[1] for module, _, _ in replaced} == set(seed.where)
    finally:
        seeded_bugs.unplant(replaced)


def test_a_seed_whose_place_is_gone_is_refused(monkeypatch, backend_name):
    from llm_agent_session import session

    monkeypatch.setattr(session, "write_all", lambda fd, data: None)  # as if session.py stopped calling it
    with pytest.raises(seeded_bugs.SeedNoLongerApplies, match="session no longer calls _files.write_all"):
        seeded_bugs.plant("newline as a second write")
