"""A command's output written to a new file (`export -o OUT`): never over an existing one, nothing partial left."""

from __future__ import annotations

import os
from typing import Iterable

from .exit_codes import FAILED
from .output import CliError


def write_new_file(path: str, pieces: Iterable[str]) -> None:
    """Write `pieces` to the new file `path` (never over an existing one); if writing
    fails part-way (or is interrupted), the partial file is removed."""
    try:
        f = open(path, "x", encoding="utf-8")
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
