"""``output.visible``, the command line's one neutraliser, and ``json_text``, its JSON twin."""

from __future__ import annotations

import io
import json
import re
import sys
import unicodedata

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from llm_agent_session.cli.output import Out
from llm_agent_session.visible import json_text, visible

HIDDEN_CATEGORIES = ("Cc", "Cf", "Zl", "Zp", "Cs")


def test_every_control_format_and_separator_character_is_shown():
    """Against this Python's own Unicode tables: a character added to Cf by a newer
    Unicode fails here until the list in output.py has it."""
    missed = [
        f"U+{c:04X}"
        for c in range(sys.maxunicode + 1)
        if unicodedata.category(chr(c)) in HIDDEN_CATEGORIES and chr(c) not in "\n\t" and visible(chr(c)) == chr(c)
    ]
    assert not missed, missed


@pytest.mark.parametrize(
    "raw, shown",
    [
        ("\x1b[2J", "\\x1b[2J"),
        ("a\rb", "a\\rb"),
        ("\x07\x08\x7f\x00", "\\x07\\x08\\x7f\\x00"),
        ("\x9b31m\x85", "\\x9b31m\\x85"),
        ("abc\u202edef", "abc<U+202E>def"),
        ("\u2066x\u2069", "<U+2066>x<U+2069>"),
        ("zero\u200bwidth\u200d\ufeff", "zero<U+200B>width<U+200D><U+FEFF>"),
        ("a\u2028b\u2029c", "a<U+2028>b<U+2029>c"),
        ("tag\U000e0041", "tag<U+E0041>"),
        ("lone \udc9b", "lone <U+DC9B>"),
        ("a\tb", "a\tb"),
        ("[bold]x[/bold] :warning:", "[bold]x[/bold] :warning:"),
        ("héllo — 日本語 😀 مرحبا", "héllo — 日本語 😀 مرحبا"),
    ],
)
def test_shown_visibly(raw, shown):
    assert visible(raw) == shown
    assert visible(shown) == shown  # idempotent: what it shows is plain text


def test_newlines_are_kept_only_in_blocks():
    assert visible("one\ntwo") == "one\\ntwo"
    assert visible("one\ntwo", multiline=True) == "one\ntwo"
    assert visible("one\r\ntwo", multiline=True) == "one\\r\ntwo"


@settings(max_examples=300, deadline=None)
@given(st.recursive(st.none() | st.booleans() | st.integers() | st.text(),
                    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(st.text(), inner, max_size=4),
                    max_leaves=12))
def test_json_text_is_the_same_value_with_nothing_hidden(value):
    text = json_text(value, indent=2, sort_keys=True)
    assert json.loads(text) == value
    assert visible(text, multiline=True) == text


@pytest.mark.parametrize("colour", [False, True])
def test_out_never_interprets_markup_or_controls(colour):
    if colour:
        pytest.importorskip("rich")
    stream = io.StringIO()
    out = Out(colour, stream)
    out.line("[bold red]x[/bold red] ", ("\x1b]0;title\x07[link=https://e.example]y[/link]", "warn"))
    out.block("a\x1b[2J\nb\u202e", None, "  ")
    text = re.sub(r"\x1b\[[0-9;]*m", "", stream.getvalue())  # rich's own colours
    assert "\x1b" not in text and "\x07" not in text and "\u202e" not in text
    assert "[bold red]x[/bold red]" in text and "[link=https://e.example]y[/link]" in text
    assert text.splitlines() == [
        "[bold red]x[/bold red] \\x1b]0;title\\x07[link=https://e.example]y[/link]", "  a\\x1b[2J", "  b<U+202E>",
    ]
