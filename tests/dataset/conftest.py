"""Fixtures for the dataset's tests (``llm-agent-session dataset`` and ``query``): the
backend under test runs in this process (``tests/conftest.py``), children get it too."""

from __future__ import annotations

import os
import sys

HERE = os.path.dirname(__file__)
