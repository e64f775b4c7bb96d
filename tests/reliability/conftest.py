"""The reliability battery drives both backends itself (to compare them on the same
input), so the suite-wide per-backend parametrisation is switched off here."""

from __future__ import annotations

import os
import sys

import pytest
from tests.reliability.support import BACKENDS, using  # noqa: E402


@pytest.fixture(autouse=True)
def backend_name():
    """Overrides tests/conftest.py: each test here runs once and switches backends itself."""
    yield BACKENDS[0]
    using(BACKENDS[0])
