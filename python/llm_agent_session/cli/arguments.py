"""What the commands' argument parsing shares (kept apart from ``cli/__init__``, which
imports every command's module to build the parser): argument types, and the parser
class every command is built with, whose ``--help`` ends with the command's exit codes
and the output rules that apply to it."""

from __future__ import annotations

import argparse
from typing import Any, Callable, Dict, List, Mapping, Optional, Sequence

from .exit_codes import listing, with_every_command

HIDDEN_NOTE = """Transcript text is shown, never obeyed: control characters and escape sequences
appear as \\x1b, \\r, ...; invisible and bidi characters as <U+202E>, ...; rich markup
as the brackets it is."""

JSON_NOTE = """--json keys are spelled as in the Python API (snake_case); in JSON those
characters are written as \\uXXXX escapes (the same values)."""


def whole_number(minimum: int) -> Callable[[str], int]:
    """An argparse ``type``: a whole number of at least `minimum`, or a usage error."""

    def parse(text: str) -> int:
        try:
            value = int(text)
        except ValueError:
            raise argparse.ArgumentTypeError(f"expected a whole number, not {text!r}") from None
        if value < minimum:
            raise argparse.ArgumentTypeError(f"expected a number >= {minimum}, not {value}")
        return value

    return parse


class CommandParser(argparse.ArgumentParser):
    """A command's parser: ``exit_codes`` maps each code the command can return (from
    ``exit_codes.py``'s table) to what it means there. ``--help`` ends with them (and the
    two every command has), the output rules, and the ``--json`` note only for a
    command that has ``--json``, all read from the parser as it is when help is asked.

    As the top-level parser, it reports arguments a command does not know with that
    command's usage (plain argparse reports them with the top level's)."""

    def __init__(self, *args: Any, exit_codes: Optional[Mapping[int, Optional[str]]] = None, **kw: Any) -> None:
        kw.setdefault("formatter_class", argparse.RawDescriptionHelpFormatter)
        super().__init__(*args, **kw)
        self.exit_codes: Optional[Dict[int, str]] = None if exit_codes is None else with_every_command(exit_codes)

    def has_option(self, option: str) -> bool:
        return any(option in action.option_strings for action in self._actions)

    def format_help(self) -> str:
        if self.exit_codes is None:
            return super().format_help()
        notes = [listing(self.exit_codes), HIDDEN_NOTE]
        if self.has_option("--json"):
            notes.append(JSON_NOTE)
        given, self.epilog = self.epilog, "\n\n".join(notes if not self.epilog else [self.epilog, *notes])
        try:
            return super().format_help()
        finally:
            self.epilog = given

    def subcommands(self) -> Dict[str, "argparse.ArgumentParser"]:
        """The command parsers, by name (empty when this parser has no commands)."""
        for action in self._actions:
            if isinstance(action, argparse._SubParsersAction):
                return dict(action.choices)
        return {}

    def chosen(self, namespace: argparse.Namespace) -> Optional["argparse.ArgumentParser"]:
        """The parser of the command `namespace` was parsed for (None: none chosen)."""
        for action in self._actions:
            if isinstance(action, argparse._SubParsersAction):
                name = getattr(namespace, action.dest, None)
                return action.choices.get(name) if isinstance(name, str) else None
        return None

    def parse_args(  # type: ignore[override]  # the one form the command line uses
        self, args: Optional[Sequence[str]] = None, namespace: Optional[argparse.Namespace] = None
    ) -> argparse.Namespace:
        parsed, extras = self.parse_known_args(args, namespace)
        if extras:
            # argparse leaves these to the top level, which would print its own usage.
            (self.chosen(parsed) or self).error(f"unrecognized arguments: {' '.join(extras)}")
        return parsed

    def usage_error(self, namespace: argparse.Namespace, message: str) -> List[str]:
        """The lines a usage error found after parsing prints: the command's usage and the message."""
        parser = self.chosen(namespace) or self
        return [parser.format_usage().rstrip("\n"), f"{parser.prog}: error: {message}"]
