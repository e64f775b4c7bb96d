"""The dataset package stays readable: no function in it is longer than 80 lines (the export
was 105, the growth's read 84, before they were split into steps of their own)."""

from __future__ import annotations

import ast
import os
from typing import List

import pytest

PACKAGE = os.path.join(os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__)))),
                       "python", "llm_agent_session", "dataset")
LONGEST = 80

pytestmark = pytest.mark.skipif(not os.path.isdir(PACKAGE), reason="needs the source tree (python/)")


def test_no_function_of_the_dataset_package_is_longer_than_80_lines(backend_name: str) -> None:
    if backend_name != "pure":
        pytest.skip("backend-independent: checked once, in the pure run")
    long: List[str] = []
    for name in sorted(os.listdir(PACKAGE)):
        if not name.endswith(".py"):
            continue
        with open(os.path.join(PACKAGE, name), encoding="utf-8") as f:
            tree = ast.parse(f.read(), name)
        for node in ast.walk(tree):
            if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
                lines = (node.end_lineno or node.lineno) - node.lineno + 1
                if lines > LONGEST:
                    long.append(f"{name}:{node.lineno} {node.name} ({lines} lines)")
    assert long == []
