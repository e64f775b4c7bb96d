"""Issues #11 and #27: every subcommand's --help lists every exit code it can return, each
code means one thing in every command, every argument and option has a help text, the
output rules are stated (the --json one only where there is --json), and a usage error
prints the command's own usage.

That a command returns only the codes it lists is held by every command run in the test
suite: the ``cli`` fixture (conftest.py) checks each exit status against them."""

from __future__ import annotations

import argparse
import contextlib
import io
import re

import pytest

from llm_agent_session.cli import build_parser, main
from llm_agent_session.cli import exit_codes as codes

ROW = re.compile(r"^ +(\d+)  ([^:]+): (.+)$")


def subcommands() -> dict:
    return build_parser().subcommands()


def listed_codes(help_text: str) -> list:
    """The (code, meaning, detail) rows of the 'exit codes' section of a --help."""
    section = help_text.split("exit codes", 1)[1].split("\n\n", 1)[0]
    rows = [ROW.match(line) for line in section.splitlines()[1:]]
    assert all(rows), section
    return [(int(m.group(1)), m.group(2), m.group(3)) for m in rows if m]


def test_every_argument_and_option_has_help():
    parser = build_parser()
    missing = [a.dest for a in parser._actions if not a.help or a.help == argparse.SUPPRESS]
    for name, sub in subcommands().items():
        missing += [f"{name} {a.dest}" for a in sub._actions if not a.help or a.help == argparse.SUPPRESS]
    assert not missing, missing


def test_the_table_gives_each_code_one_meaning():
    assert len(set(codes.MEANINGS.values())) == len(codes.MEANINGS)
    assert set(codes.TABLE) == set(codes.MEANINGS)
    assert (codes.OK, codes.FAILED, codes.USAGE, codes.NOT_A_TRANSCRIPT) == (0, 1, 2, 3)
    assert len({codes.WOULD_REPAIR, codes.WOULD_FAIL, codes.USAGE, codes.FAILED}) == 4  # check's own


def test_every_command_lists_its_codes_each_with_its_one_meaning():
    seen = {}
    for name, parser in subcommands().items():
        declared = parser.exit_codes
        rows = listed_codes(parser.format_help())
        listed = [code for code, _, _ in rows]
        assert listed == sorted(set(listed)), f"{name}: a code listed twice or out of order: {listed}"
        assert set(listed) == set(declared), name  # the help lists every code the command returns
        assert {codes.OK, codes.USAGE} <= set(listed), name
        # Ctrl-C is 130, but for a command whose normal stop it is (view): 0, and then 130 is not listed.
        assert (codes.INTERRUPTED in listed) != declared[codes.OK].startswith("stopped with Ctrl-C"), name
        if any(a.dest == "file" for a in parser._actions):
            assert codes.NOT_A_TRANSCRIPT in listed, name
        for code, meaning, detail in rows:
            assert meaning == codes.MEANINGS[code], f"{name}: {code} means {meaning!r}, elsewhere {codes.MEANINGS[code]!r}"
            seen.setdefault(code, set()).add(meaning)
    assert all(len(meanings) == 1 for meanings in seen.values()), seen
    assert codes.WOULD_FAIL in subcommands()["check"].exit_codes


def test_top_level_help_has_the_table_and_no_json_note(cli):
    r = cli("--help")
    assert r.returncode == 0
    rows = listed_codes(r.stdout)
    assert [(c, m) for c, m, _ in rows] == [(c, codes.MEANINGS[c]) for c in sorted(codes.TABLE)]
    assert "snake_case" not in r.stdout  # no --json at the top level


@pytest.mark.parametrize("name", sorted(subcommands()))
def test_every_subcommand_help_states_the_output_rules(cli, name):
    r = cli(name, "--help")
    assert r.returncode == 0, r.stderr
    assert "exit codes:" in r.stdout and "<U+202E>" in r.stdout  # how hostile text is shown
    has_json = "--json" in subcommands()[name]._option_string_actions
    assert ("snake_case" in r.stdout) == has_json, name  # the --json note only where there is --json


def run_in_process(*argv: str):
    """``main(argv)`` here (argparse exits for its own errors): (exit code, stderr)."""
    err = io.StringIO()
    with contextlib.redirect_stderr(err), contextlib.redirect_stdout(io.StringIO()):
        try:
            code = main(list(argv))
        except SystemExit as e:
            code = e.code
    return code, err.getvalue()


def test_usage_errors_print_the_commands_usage(tmp_path):
    src = tmp_path / "src"
    src.mkdir()
    (tmp_path / "out.jsonl").write_text("")
    for argv, command, says in [
        (["show", "x.jsonl", "--bogus"], "show", "unrecognized arguments: --bogus"),  # argparse: the top level's usage
        (["check", "a.jsonl", "b.jsonl"], "check", "unrecognized arguments: b.jsonl"),
        (["stats"], "stats", "required: FILE"),
        (["tail", "x.jsonl", "-n", "x"], "tail", "expected a whole number"),
        (["export", "x.jsonl", "--format", "openai", "--all"], "export", "--all is for html, markdown"),
        (["import", "codex", str(src), str(tmp_path / "out.jsonl")], "import", "OUT must be a directory"),
    ]:
        code, stderr = run_in_process(*argv)
        assert code == codes.USAGE, (argv, stderr)
        assert stderr.startswith(f"usage: llm-agent-session {command} "), (argv, stderr)
        assert f"llm-agent-session {command}: error: " in stderr and says in stderr, (argv, stderr)
    code, stderr = run_in_process("frobnicate")  # no command: the top level's usage
    assert code == codes.USAGE and stderr.startswith("usage: llm-agent-session [-h]")


def test_a_command_named_first_gets_the_whole_parser_s_parser():
    """``main`` builds, for a command whose parser lives in a module of its own, only that
    one of those modules' parsers (the others' imports cost a start 50 ms): the command's
    help, usage and arguments are the whole parser's, and every command is still a choice."""
    from llm_agent_session.cli import MODULE_COMMANDS

    whole = subcommands()
    for command in MODULE_COMMANDS:
        only = build_parser(command).subcommands()
        assert set(only) == set(whole)
        assert only[command].format_help() == whole[command].format_help(), command
        assert [a.dest for a in only[command]._actions] == [a.dest for a in whole[command]._actions]
    out = io.StringIO()
    with contextlib.redirect_stdout(out), pytest.raises(SystemExit):
        main(["search", "--help"])
    assert out.getvalue() == whole["search"].format_help()
