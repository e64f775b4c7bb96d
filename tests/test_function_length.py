"""No Python function of the package's surfaces over the library is longer than 80 lines
(a decorator, its docstring and its comments included): past that a function does more
than one thing, and a reader holds too much of it at once. Checked from the source, once."""

from __future__ import annotations

import ast
import os
from typing import List

import pytest

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
PACKAGE_DIR = os.path.join(ROOT, "python", "llm_agent_session")
LONGEST = 80
#: The folders held to it.
FOLDERS = ("view", "dataset", "otlp")

pytestmark = pytest.mark.skipif(not os.path.isdir(PACKAGE_DIR), reason="needs the source tree (python/)")


def too_long(top: str, longest: int = LONGEST) -> List[str]:
    """``path:line name (lines)`` of every function under `top` longer than `longest` lines."""
    found = []
    for dirpath, dirnames, filenames in os.walk(top):
        dirnames[:] = sorted(d for d in dirnames if not d.startswith((".", "__pycache__")))
        for name in sorted(filenames):
            if not name.endswith(".py"):
                continue
            path = os.path.join(dirpath, name)
            tree = ast.parse(open(path, encoding="utf-8").read(), path)
            for node in ast.walk(tree):
                if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
                    first = min([node.lineno] + [d.lineno for d in node.decorator_list])
                    lines = (node.end_lineno or node.lineno) - first + 1
                    if lines > longest:
                        found.append(f"{os.path.relpath(path, ROOT)}:{node.lineno} {node.name} ({lines} lines)")
    return found


@pytest.mark.parametrize("folder", FOLDERS)
def test_no_function_is_longer_than_80_lines(folder, backend_name):
    if backend_name != "pure":
        pytest.skip("backend-independent: checked once, in the pure run")
    assert too_long(os.path.join(PACKAGE_DIR, folder)) == []


def test_the_measure_finds_a_long_function(tmp_path, backend_name):
    if backend_name != "pure":
        pytest.skip("backend-independent: checked once, in the pure run")
    body = "".join(f"    x{n} = {n}\n" for n in range(LONGEST - 1))
    (tmp_path / "long.py").write_text(f"def fits():\n{body}\n\n@staticmethod\ndef over():\n{body}")
    assert [line.split(" ", 1)[1] for line in too_long(str(tmp_path))] == [f"over ({LONGEST + 1} lines)"]
