"""The native core (Rust, PyO3): same verdicts and errors as ``_pure.lines``/``_pure.tail``."""

from typing import Tuple

__all__ = [
    "classify_line",
    "parse_envelope_check",
    "tail_check",
    "copy_prefix",
    "LineProblem",
    "MAX_READ_DEPTH",
]

MAX_READ_DEPTH: int

class LineProblem(ValueError):
    """Why a line is not an envelope; ``args`` is ``(kind, reason)``, kind ``corrupt``/``version``."""

def classify_line(raw: bytes) -> str:
    """``"whole"``, ``"torn"`` or ``"too-deep"`` (``_pure.lines.classify``)."""

def parse_envelope_check(raw: bytes, line_offset: int) -> Tuple[str, str, str]:
    """``(id, type, ts)`` of an envelope line, or ``LineProblem`` (``_pure.lines.parse_envelope``)."""

def tail_check(fd: int, size: int) -> Tuple[str, int, int, bytes]:
    """``(kind, cut, line, excerpt)``, or ``CoreFailure`` (``_pure.tail.tail_check``)."""

def copy_prefix(src_fd: int, dst_fd: int, length: int) -> None:
    """Copy bytes ``[0, length)`` of ``src_fd`` to ``dst_fd`` verbatim (``_pure.tail.copy_prefix``)."""
