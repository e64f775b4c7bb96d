"""Which core runs: the native extension or the pure-Python reference.

Both implement ``_core.Core`` (``tail_check``, ``copy_prefix``, ``replay``, ``scan``
and the write path's ``encode_envelope``/``append_size``): ``_pure/core.py`` and
``_native_core.py``. ``LLM_AGENT_SESSION_BACKEND=pure|native`` picks one at import;
unset, native is used where it is built and pure (with a warning) where not.
Asking for native where it is missing is an error, never a silent fallback.
"""

from __future__ import annotations

import os
import warnings
from types import ModuleType
from typing import List, Optional

from ._core import Core
from ._pure import core as _pure_core

ENV_VAR = "LLM_AGENT_SESSION_BACKEND"

PURE: Core = _pure_core


def _native_core() -> Optional[Core]:
    """The native core, or None where the extension is not built (or, built where its
    file I/O is not ported, has no core functions)."""
    try:
        from . import _native_core as native
    except ImportError:
        return None
    return native


def _load_native() -> Optional[ModuleType]:
    """The extension module where it is a core (benches report its file), else None."""
    if _native_core() is None:
        return None
    from . import _native

    return _native


def available() -> List[str]:
    """The backends this installation can run, native first."""
    return (["native"] if _native_core() is not None else []) + ["pure"]


def _select(name: Optional[str]) -> Core:
    if name in (None, ""):
        native = _native_core()
        if native is None:
            warnings.warn(
                "llm_agent_session: the native extension is not built (or, on this platform, has "
                "no file I/O); using the pure-Python core (same behaviour, slower). Reinstall "
                "with `pip install .` to build it.",
                RuntimeWarning,
                stacklevel=3,
            )
            return PURE
        return native
    if name == "pure":
        return PURE
    if name == "native":
        native = _native_core()
        if native is None:
            raise ImportError(
                f"{ENV_VAR}=native, but the extension llm_agent_session._native is not built "
                "in this installation; install from a wheel or with `pip install .` "
                f"(needs Rust), or set {ENV_VAR}=pure"
            )
        return native
    raise ValueError(f"{ENV_VAR} must be 'pure' or 'native', not {name!r}")


core: Core = _select(os.environ.get(ENV_VAR))


def use(name: str) -> None:
    """Switch this process to backend `name` ("pure" or "native"); for tests and benchmarks."""
    global core
    core = _select(name)


def backend() -> str:
    """``"native"`` or ``"pure"``: the core this process uses."""
    return core.name
