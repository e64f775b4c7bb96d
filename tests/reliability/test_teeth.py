"""Teeth: each durability rule, broken on purpose, must make the battery fail. A battery
that passes a broken library proves nothing.

Each seeded bug (``seeded_bugs.py``) is planted by behaviour in every Python process of a
run of the test that must catch it, which must then fail. The same tests pass with
nothing planted (checked once, as the control). Whether each seed still has a place to
go is checked cheaply by ``tests/test_seeded_bugs.py``, in the test command.
"""

from __future__ import annotations

import os
import subprocess
import sys
from typing import Dict, Optional

import pytest

from tests.reliability.seeded_bugs import SEEDS, Seed, site_dir
from tests.reliability.support import LONG, record

# Minutes, not seconds: run by tests/reliability/report.py and in the long tier, not in CI.
pytestmark = pytest.mark.skipif(
    not (LONG or os.environ.get("LLM_AGENT_SESSION_TEETH")),
    reason="teeth run with tests/reliability/report.py or LLM_AGENT_SESSION_TIER=long",
)

COMMAND = "python tests/reliability/report.py"
HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))


def _run(selection: str, env: Optional[Dict[str, str]] = None) -> subprocess.CompletedProcess:
    env = dict(env or os.environ)
    env.pop("LLM_AGENT_SESSION_FIGURES", None)  # the control and the seeded runs report nothing
    return subprocess.run(
        [sys.executable, "-m", "pytest", "-q", "-x", "-p", "no:cacheprovider", *[os.path.join(HERE, s) for s in selection.split()]],
        env=env,
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=900,
    )


def test_nothing_planted_passes_every_catching_test():
    out = _run(" ".join(sorted({seed.catcher for seed in SEEDS})))
    assert out.returncode == 0, out.stdout[-2000:]


@pytest.mark.parametrize("seed", SEEDS, ids=[seed.name for seed in SEEDS])
def test_seeded_bug_is_caught(tmp_path, seed: Seed):
    out = _run(seed.catcher, site_dir(str(tmp_path), seed.name))
    assert "SeedNoLongerApplies" not in out.stdout + out.stderr, out.stderr[-1500:]
    caught = out.returncode != 0
    record("Teeth: seeded bugs", seed.name, f"caught by {seed.catcher}" if caught else "NOT CAUGHT", "caught", COMMAND)
    assert caught, f"seeded bug {seed.name!r} passed {seed.catcher}:\n{out.stdout[-1500:]}"
