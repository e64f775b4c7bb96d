"""Helpers shared by the benchmark suites (kept out of conftest.py so that test modules
can import them by a name no other conftest shadows)."""

from __future__ import annotations

import importlib.util
import os
import shutil
import sys
from typing import Any, List

import generate

HERE = os.path.dirname(os.path.abspath(__file__))

# An installed package (maturin develop / pip install) wins; else the source tree.
if importlib.util.find_spec("llm_agent_session") is None:
    sys.path.insert(0, os.path.join(os.path.dirname(HERE), "python"))


def available_backends() -> List[str]:
    try:
        from llm_agent_session import _backend

        return list(_backend.available())
    except Exception:
        return []


def use_backend(name: str) -> None:
    from llm_agent_session import _backend

    _backend.use(name)


def rounds_for(size: int, cheap: bool = False) -> int:
    """Few rounds for big files so a 256 MB run stays within minutes."""
    budget = (64 << 20) * (20 if cheap else 5)
    return max(3, min(20, budget // max(size, 1)))


def warmup_for(size: int) -> int:
    return 1 if size <= (64 << 20) else 0


def fsync_path(path: str) -> None:
    fd = os.open(path, os.O_RDONLY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


def fresh_copy(src: str, dst: str) -> None:
    """``dst`` as a flushed copy of ``src`` (so writeback of the copy does not land inside
    a timed round)."""
    for p in (dst, dst + ".repair"):
        if os.path.lexists(p):
            os.unlink(p)
    shutil.copyfile(src, dst)
    fsync_path(dst)




def tag(benchmark: Any, op: str, size: int, impl: str, nbytes: int, **extra: Any) -> None:
    """Group by operation and size; record what run.py needs to build the ratio table."""
    label = generate.size_label(size) if size else "-"
    benchmark.group = f"{op} {label}"
    benchmark.extra_info.update({"op": op, "size": size, "size_label": label, "impl": impl,
                                 "bytes": nbytes, **extra})


def replace_section(results: str, start: str, end: str, text: str) -> None:
    """Put `text` (which begins with `start` and ends with `end`) in place of that
    marked section of the file `results`, or at its end when it has none yet."""
    import re

    with open(results, encoding="utf-8") as fh:
        old = fh.read()
    if start in old:
        new = re.sub(re.escape(start) + ".*?" + re.escape(end), lambda m: text, old, flags=re.S)
    else:
        new = old.rstrip("\n") + "\n\n" + text + "\n"
    with open(results, "w", encoding="utf-8") as fh:
        fh.write(new)
