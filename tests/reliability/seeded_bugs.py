"""The battery's seeded bugs, planted by behaviour: each replaces a function (or a module a
function calls through) with a broken one, wherever the package has bound it, so a
refactor that moves or rewrites the code cannot silently disarm a seed the way a text
patch could (the seed "ignoring a short write" was once disarmed by a fast path in
``write_all``).

A seed names the modules whose binding it replaces (where the rule lives); each must hold it.
``plant`` raises ``SeedNoLongerApplies`` when one of them does not: the cheap check
``tests/test_seeded_bugs.py`` (in the test command) plants and unplants each seed, and
the long tier's teeth (``test_teeth.py``) run the catching tests with one seed planted in
every Python process they start, through the ``sitecustomize`` that ``site_dir`` writes.
"""

from __future__ import annotations

import importlib
import io
import os
import sys
import types
from dataclasses import dataclass
from typing import Any, Callable, Dict, List, Tuple

ENV_VAR = "LLM_AGENT_SESSION_SEEDED_BUG"
PACKAGE = "llm_agent_session"


class SeedNoLongerApplies(Exception):
    pass


@dataclass(frozen=True)
class Seed:
    name: str
    module: str  # where the original lives
    attr: str  # its name there
    where: Tuple[str, ...]  # the modules whose binding the rule depends on
    broken: Callable[[Any], Any]  # the original -> its broken replacement
    catcher: str  # the battery's test that must fail with the seed planted


def _two_writes(write_all: Callable[[int, bytes], None]) -> Callable[[int, bytes], None]:
    def newline_apart(fd: int, data: bytes) -> None:
        write_all(fd, data[:-1])
        write_all(fd, data[-1:])

    return newline_apart


def _buffered(_: Any) -> Callable[[int, bytes], None]:
    writers: Dict[int, io.BufferedWriter] = {}

    def buffered(fd: int, data: bytes) -> None:
        w = writers.get(fd)
        if w is None:
            w = writers[fd] = open(fd, "ab", buffering=1 << 16, closefd=False)  # noqa: SIM115
        w.write(data)
        w.flush()

    return buffered


def _one_write(_: Any) -> Callable[[int, bytes], None]:
    def ignores_short_writes(fd: int, data: bytes) -> None:
        os.write(fd, data)

    return ignores_short_writes


def _no_lock(_: Any) -> Callable[[int, str], None]:
    def takes_no_lock(fd: int, path: str) -> None:
        return None

    return takes_no_lock


def _repair_open_follows_links(open_fd: Callable[..., int]) -> Callable[..., int]:
    def opens_anything(path: str, flags: int, *args: Any) -> int:
        if flags & os.O_CREAT:
            flags = (flags & ~(os.O_EXCL | os.O_NOFOLLOW)) | os.O_TRUNC
        return open_fd(path, flags, *args)

    return opens_anything


def _splitlines(replay: Callable[[Any, int], Any]) -> Callable[[Any, int], Any]:
    def splits_on_unicode_separators(buf: Any, size: int) -> Any:
        text = bytes(buf[:size]).decode("utf-8", "surrogateescape")
        joined = ("\n".join(text.splitlines()) + "\n").encode("utf-8", "surrogateescape")
        return replay(joined, len(joined))

    return splits_on_unicode_separators


def _float_version(json_module: types.ModuleType) -> types.ModuleType:
    proxy = types.ModuleType("json")
    proxy.__dict__.update(json_module.__dict__)

    def loads(*args: Any, **kwargs: Any) -> Any:
        value = json_module.loads(*args, **kwargs)
        if isinstance(value, dict) and type(value.get("v")) is float and value["v"] == 1:
            value["v"] = 1  # a version check that takes 1.0 for 1
        return value

    proxy.loads = loads  # type: ignore[attr-defined]
    return proxy


def _no_truncate_back(os_module: types.ModuleType) -> types.ModuleType:
    proxy = types.ModuleType("os")
    proxy.__dict__.update(os_module.__dict__)
    proxy.ftruncate = lambda fd, length: None  # type: ignore[attr-defined]
    return proxy


SEEDS: List[Seed] = [
    Seed("newline as a second write", "_files", "write_all", ("session",), _two_writes,
         "test_io_errors.py::test_one_write_per_line"),
    Seed("a buffered writer", "_files", "write_all", ("session",), _buffered,
         "test_io_errors.py::test_partial_writes_at_sampled_cuts"),
    Seed("ignoring a short write", "_files", "write_all", ("_files", "session", "_load"), _one_write,
         "test_io_errors.py::test_partial_writes_at_sampled_cuts"),
    Seed("no lock", "_files", "try_lock", ("_files", "_load"), _no_lock,
         "test_concurrency.py::test_second_process_is_locked_out_of_a_live_writer"),
    Seed(".repair without O_EXCL|O_NOFOLLOW", "_files", "open_fd", ("_load",), _repair_open_follows_links,
         "test_security.py::test_repair_open_refuses_a_link_planted_in_the_race_window"),
    Seed("str.splitlines", "_pure.replay", "_replay", ("_pure.replay",), _splitlines,
         "test_hostile_input.py::test_raw_line_separators_inside_strings"),
    Seed("`v == 1` that accepts 1.0", "json", "", ("_pure.lines",), _float_version,
         "test_hostile_input.py::test_other_versions_on_the_last_line_are_never_repaired_away"),
    Seed("no truncate-back", "os", "", ("session",), _no_truncate_back,
         "test_io_errors.py::test_partial_writes_at_sampled_cuts"),
]
BY_NAME = {seed.name: seed for seed in SEEDS}


def plant(name: str) -> List[Tuple[types.ModuleType, str, Any]]:
    """Plant the seed `name` in this process; the bindings it replaced (for `unplant`)."""
    seed = BY_NAME[name]
    importlib.import_module(PACKAGE)
    for where in seed.where:
        importlib.import_module(f"{PACKAGE}.{where}")
    if seed.attr:  # a function of the package
        home = importlib.import_module(f"{PACKAGE}.{seed.module}")
        original = getattr(home, seed.attr, None)
        if original is None:
            raise SeedNoLongerApplies(f"{PACKAGE}.{seed.module} has no {seed.attr}: update the seed {name!r}")
    else:  # a module of the standard library, as the named modules see it
        original = sys.modules[seed.module]
    bound = {w: [k for k, v in vars(sys.modules[f"{PACKAGE}.{w}"]).items() if v is original] for w in seed.where}
    missing = [w for w, keys in bound.items() if not keys]
    if missing:
        raise SeedNoLongerApplies(
            f"{', '.join(missing)} no longer call{'s' if len(missing) == 1 else ''} "
            f"{seed.module}{'.' + seed.attr if seed.attr else ''}: update the seed {name!r}"
        )
    replacement = seed.broken(original)
    replaced = []
    for where, keys in bound.items():
        module = sys.modules[f"{PACKAGE}.{where}"]
        for key in keys:
            setattr(module, key, replacement)
            replaced.append((module, key, original))
    return replaced


def unplant(replaced: List[Tuple[types.ModuleType, str, Any]]) -> None:
    for module, key, original in replaced:
        setattr(module, key, original)


def site_dir(directory: str, name: str) -> Dict[str, str]:
    """Write a ``sitecustomize`` into `directory` that plants `name` in every Python process
    started with the returned environment (the catching tests start children)."""
    root = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))  # holds tests/
    with open(os.path.join(directory, "sitecustomize.py"), "w", encoding="utf-8") as f:
        f.write(
            "import os\n"
            "from tests.reliability import seeded_bugs\n"
            f"seeded_bugs.plant(os.environ[{ENV_VAR!r}])\n"
        )
    path = os.pathsep.join(p for p in (directory, root, os.environ.get("PYTHONPATH", "")) if p)
    return dict(os.environ, PYTHONPATH=path, **{ENV_VAR: name})
