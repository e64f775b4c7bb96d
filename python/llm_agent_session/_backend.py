"""Which core runs: the native extension or the pure-Python reference.

Both implement one small interface (see ``Core``): ``tail_check``, ``copy_prefix``,
``replay`` and ``scan``. ``LLM_AGENT_SESSION_BACKEND=pure|native`` picks one at
import; unset, native is used where it is built and pure (with a warning) where not.
Asking for native where it is missing is an error, never a silent fallback.
"""

from __future__ import annotations

import os
import warnings
from types import ModuleType
from typing import Any, Callable, List, NamedTuple, Optional

from ._pure import replay as _pure_replay
from ._pure import tail as _pure_tail

ENV_VAR = "LLM_AGENT_SESSION_BACKEND"


class Core(NamedTuple):
    name: str
    tail_check: Callable[..., Any]
    copy_prefix: Callable[..., Any]
    replay: Callable[..., Any]
    scan: Callable[..., Any]
    # Which of the four the native extension runs (the rest are the pure reference).
    native_parts: tuple


def _load_native() -> Optional[ModuleType]:
    try:
        from . import _native  # type: ignore[attr-defined]
    except ImportError:
        return None
    return _native


PURE = Core(
    "pure",
    _pure_tail.tail_check,
    _pure_tail.copy_prefix,
    _pure_replay.replay,
    _pure_replay.scan,
    (),
)


def _native_core(mod: ModuleType) -> Core:
    parts = {}
    for name in ("tail_check", "copy_prefix", "replay", "scan"):
        fn = getattr(mod, name, None)
        if fn is not None:
            parts[name] = fn
    return Core(
        "native",
        parts.get("tail_check", PURE.tail_check),
        parts.get("copy_prefix", PURE.copy_prefix),
        parts.get("replay", PURE.replay),
        parts.get("scan", PURE.scan),
        tuple(sorted(parts)),
    )


def available() -> List[str]:
    """The backends this installation can run, native first."""
    return (["native"] if _load_native() is not None else []) + ["pure"]


def _select(name: Optional[str]) -> Core:
    if name in (None, ""):
        mod = _load_native()
        if mod is None:
            warnings.warn(
                "llm_agent_session: the native extension is not built; using the pure-Python "
                "core (same behaviour, slower). Reinstall with `pip install .` to build it.",
                RuntimeWarning,
                stacklevel=3,
            )
            return PURE
        return _native_core(mod)
    if name == "pure":
        return PURE
    if name == "native":
        mod = _load_native()
        if mod is None:
            raise ImportError(
                f"{ENV_VAR}=native, but the extension llm_agent_session._native is not built "
                "in this installation; install from a wheel or with `pip install .` "
                f"(needs Rust), or set {ENV_VAR}=pure"
            )
        return _native_core(mod)
    raise ValueError(f"{ENV_VAR} must be 'pure' or 'native', not {name!r}")


core: Core = _select(os.environ.get(ENV_VAR))


def use(name: str) -> None:
    """Switch this process to backend `name` ("pure" or "native"); for tests and benchmarks."""
    global core
    core = _select(name)


def backend() -> str:
    """``"native"`` or ``"pure"``: the core this process uses."""
    return core.name
