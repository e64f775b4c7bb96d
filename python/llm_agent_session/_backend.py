"""Which core runs: the native extension or the pure-Python reference.

Both implement one small interface (see ``Core``): ``tail_check``, ``copy_prefix``,
``replay`` and ``scan`` (which answers a ``Scanned``). The native ``replay`` and
``scan`` answer in the pure core's terms through the thin glue below (the native
events, peek messages and section texts are built on access).
``LLM_AGENT_SESSION_BACKEND=pure|native`` picks one at import; unset, native is used
where it is built and pure (with a warning) where not.
Asking for native where it is missing is an error, never a silent fallback.
"""

from __future__ import annotations

import os
import warnings
from types import ModuleType
from typing import Any, Callable, List, NamedTuple, Optional, Sequence, Tuple

from . import _platform
from ._events import LazyList, LazyTexts
from ._pure import replay as _pure_replay
from ._pure import survey as _pure_survey
from ._pure import tail as _pure_tail
from ._pure.fold import FoldState, message_from_payload
from ._pure.replay import Problem, Span
from .messages import Event, Message

ENV_VAR = "LLM_AGENT_SESSION_BACKEND"


class Core(NamedTuple):
    name: str
    tail_check: Callable[..., Any]
    copy_prefix: Callable[..., Any]
    replay: Callable[..., Any]
    scan: Callable[..., Any]
    # Which of the four the native extension runs (the rest are the pure reference).
    native_parts: Tuple[str, ...]
    # The write path's serialiser (``_native.encode_envelope``): ``(id, ts, line, copy)``
    # or None where the reference's path (``canonical``) must run. None for pure.
    encode_envelope: Optional[Callable[..., Any]] = None
    # ``append_size(fd, path)``: the size of ``fd`` if ``path`` still names it, else -1
    # (``_native.append_size``); None for pure, where ``Session`` runs the reference.
    append_size: Optional[Callable[[int, str], int]] = None


class Scanned(NamedTuple):
    """What the lenient scan of peek, salvage and fork found (``_pure.replay.scan``, plus
    the facts about each envelope that they need, so the native core can answer them
    without building every envelope)."""

    events: Sequence[Event]
    spans: Sequence[Span]
    problems: List[Problem]
    end: int
    # The first envelope's type, None when there is none.
    first_type: Optional[str]
    # The Message of every message envelope with a string role, in file order.
    messages: Sequence[Message]
    # (line, offset) of every message envelope without a string role.
    bad_roles: List[Tuple[int, int]]
    # The envelopes' ids, when asked for (else empty).
    ids: Sequence[str]
    # Peek's survey of the envelopes, when asked for (else None).
    survey: Optional[_pure_survey.SurveyCounts]


def _pure_replay_of(fd: int, size: int, path: Optional[str] = None) -> Tuple[FoldState, List[Event]]:
    # `path` only tells the native core how to reopen the file; the pure core reads it all now.
    return _pure_replay.replay(fd, size)


def _pure_scan(
    fd: int,
    start: int,
    size: int,
    final_line: bool = False,
    want_ids: bool = False,
    want_survey: bool = False,
    path: Optional[str] = None,
) -> Scanned:
    events, spans, problems, end = _pure_replay.scan(fd, start, size, final_line)
    messages: List[Message] = []
    bad_roles: List[Tuple[int, int]] = []
    for event, (line, off, _) in zip(events, spans):
        if event.type == "message":
            if isinstance(event.payload.get("role"), str):
                messages.append(message_from_payload(event.payload))
            else:
                bad_roles.append((line, off))
    return Scanned(
        events,
        spans,
        problems,
        end,
        events[0].type if events else None,
        messages,
        bad_roles,
        [e.id for e in events] if want_ids else [],
        _pure_survey.survey(events, spans) if want_survey else None,
    )


def _native_replay(mod: ModuleType) -> Callable[..., Tuple[FoldState, Sequence[Event]]]:
    def replay(fd: int, size: int, path: Optional[str] = None) -> Tuple[FoldState, Sequence[Event]]:
        (meta, ids, messages, grants, pending, settled, sections, section_lines, events, envelope_at) = mod.replay(
            fd, size, _platform.reopen_path(path)
        )
        if not isinstance(sections, dict):
            sections = LazyTexts(sections)
        state = FoldState.from_parts(
            meta, ids, messages, grants, pending, settled, sections, section_lines, envelope_at
        )
        return state, (events if isinstance(events, list) else LazyList(events))

    return replay


def _native_scan(mod: ModuleType) -> Callable[..., Scanned]:
    def scan(
        fd: int,
        start: int,
        size: int,
        final_line: bool = False,
        want_ids: bool = False,
        want_survey: bool = False,
        path: Optional[str] = None,
    ) -> Scanned:
        events, spans, problems, end, first_type, messages, bad_roles, ids, survey = mod.scan(
            fd, start, size, final_line, want_ids, want_survey, _platform.reopen_path(path)
        )
        return Scanned(
            events if isinstance(events, list) else LazyList(events),
            spans,
            problems,
            end,
            first_type,
            messages if isinstance(messages, list) else LazyList(messages),
            bad_roles,
            ids,
            None if survey is None else _pure_survey.SurveyCounts(*survey),
        )

    return scan


def _load_native() -> Optional[ModuleType]:
    try:
        from . import _native
    except ImportError:
        return None
    # Built where its file I/O is not ported (Windows): an empty module, so not a core.
    return _native if hasattr(_native, "replay") else None


PURE = Core(
    "pure",
    _pure_tail.tail_check,
    _pure_tail.copy_prefix,
    _pure_replay_of,
    _pure_scan,
    (),
)


def _native_core(mod: ModuleType) -> Core:
    parts = {}
    for name in ("tail_check", "copy_prefix"):
        fn = getattr(mod, name, None)
        if fn is not None:
            parts[name] = fn
    # replay and scan answer in Python's terms through thin glue.
    if hasattr(mod, "replay"):
        parts["replay"] = _native_replay(mod)
    if hasattr(mod, "scan"):
        parts["scan"] = _native_scan(mod)
    return Core(
        "native",
        parts.get("tail_check", PURE.tail_check),
        parts.get("copy_prefix", PURE.copy_prefix),
        parts.get("replay", PURE.replay),
        parts.get("scan", PURE.scan),
        tuple(sorted(parts)),
        getattr(mod, "encode_envelope", None),
        getattr(mod, "append_size", None),
    )


def available() -> List[str]:
    """The backends this installation can run, native first."""
    return (["native"] if _load_native() is not None else []) + ["pure"]


def _select(name: Optional[str]) -> Core:
    if name in (None, ""):
        mod = _load_native()
        if mod is None:
            warnings.warn(
                "llm_agent_session: the native extension is not built (or, on this platform, has "
                "no file I/O); using the pure-Python core (same behaviour, slower). Reinstall "
                "with `pip install .` to build it.",
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
