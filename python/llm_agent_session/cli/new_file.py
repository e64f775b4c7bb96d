"""A command's output written to a new file (`export -o OUT`): never over an existing one, nothing partial left,
private to the user unless asked otherwise."""

from __future__ import annotations

import os
from typing import Iterable

from .exit_codes import FAILED
from .output import CliError


def write_new_file(path: str, pieces: Iterable[str], *, shared: bool = False) -> None:
    """Write `pieces` to the new file `path` (never over an existing one), private to the
    user (mode 0600) unless `shared` (then as the umask allows); if writing fails
    part-way (or is interrupted), the partial file is removed."""
    try:
        fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL | getattr(os, "O_CLOEXEC", 0),
                     0o666 if shared else 0o600)
        f = open(fd, "w", encoding="utf-8")
    except FileExistsError:
        raise CliError(f"{path}: already exists; name a new file (export never overwrites)", FAILED) from None
    except OSError as e:
        raise CliError(f"{path}: cannot write it ({e.strerror})", FAILED) from None
    try:
        with f:
            for piece in pieces:
                f.write(piece)
    except OSError as e:
        os.unlink(path)
        raise CliError(f"{path}: cannot write it ({e.strerror}); the partial file was removed", FAILED) from None
    except BaseException:
        os.unlink(path)
        raise
