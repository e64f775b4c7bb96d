"""Issue #11: every subcommand's --help lists its exit codes, every argument and option
has a help text, and the output rules (hidden characters, --json spelling) are stated."""

from __future__ import annotations

import argparse

import pytest

from llm_agent_session.cli import build_parser


def subcommands() -> dict:
    parser = build_parser()
    action = next(a for a in parser._actions if isinstance(a, argparse._SubParsersAction))
    return dict(action.choices)


def test_every_argument_and_option_has_help():
    parser = build_parser()
    missing = [a.dest for a in parser._actions if not a.help or a.help == argparse.SUPPRESS]
    for name, sub in subcommands().items():
        missing += [f"{name} {a.dest}" for a in sub._actions if not a.help or a.help == argparse.SUPPRESS]
    assert not missing, missing


@pytest.mark.parametrize("name", sorted(subcommands()))
def test_every_subcommand_help_lists_its_exit_codes(cli, name):
    r = cli(name, "--help")
    assert r.returncode == 0, r.stderr
    text = r.stdout
    assert "exit codes:" in text
    codes = text.split("exit codes:")[1]
    assert "  0  " in codes and "  2  usage error" in codes
    if name not in ("demo", "import"):  # the two that read no transcript
        assert "  3  " in codes
    if name != "demo":
        assert "<U+202E>" in text and "snake_case" in text  # how hostile text is shown; --json spelling
