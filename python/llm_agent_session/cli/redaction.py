"""What the outward commands (``export``, ``dataset``) share about secrets: ``--no-redact``
and ``--shared``, the run's ``secrets.Redactor``, a transcript read through it, and the
count said on stderr (docs/secrets.md)."""

from __future__ import annotations

import argparse
import sys
from typing import Callable, TypeVar

from ..secrets import Redactor
from ..visible import visible
from .output import CliError

T = TypeVar("T")


def read_redacted(path: str, redactor: Redactor, reader: Callable[[str, bool], T]) -> T:
    """``reader(readable, original)`` of the transcript at `path` through `redactor`:
    `readable` is `path`, or a private masked copy of it (``original`` False: nothing
    of it, such as a side index, is worth keeping). An error names `path`, never the copy."""

    def read(readable: str) -> T:
        try:
            return reader(readable, readable == path)
        except CliError as e:
            if readable == path:
                raise
            raise CliError(str(e).replace(readable, path), e.code) from None

    return redactor.read(path, read)


def add_redaction_arguments(p: argparse.ArgumentParser, written: str) -> None:
    """``--no-redact`` and ``--shared``, as every outward command takes them."""
    p.add_argument("--no-redact", action="store_true",
                   help="keep secrets as they are (by default what the secret rules find is masked as "
                        "«redacted:RULE:FINGERPRINT» and the count said; docs/secrets.md)")
    p.add_argument("--shared", action="store_true",
                   help=f"write {written} with the permissions your umask gives (by default it is private to you: "
                        "mode 0600)")


def redactor_of(args: argparse.Namespace) -> Redactor:
    """The run's redactor (``--no-redact``: one that masks nothing)."""
    return Redactor(enabled=not args.no_redact)


def say_masked(command: str, redactor: Redactor) -> None:
    """The count on stderr, whatever it is (0 too: the reader knows the export was checked)."""
    if redactor.enabled:
        n, kinds = redactor.masked, len(redactor.counts)
        said = f"masked {n:,} secret{'' if n == 1 else 's'}"
        if n:
            said += f" of {kinds} kind{'' if kinds == 1 else 's'} (`scan FILE` lists them; --no-redact keeps them)"
        print(visible(f"llm-agent-session {command}: {said}"), file=sys.stderr)
