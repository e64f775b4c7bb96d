"""Issue #33: transcripts whose names are legal but long (up to the file system's NAME_MAX,
255 bytes here): the files the library keeps beside one (create's temporary, load's
``.repair``, salvage's, fork's and the importers' temporaries) must fit too, or create,
repair, salvage, fork and import fail on a name the user was allowed to choose.

Where ``<name>.repair`` does not fit, the repair copy's name is the short form docs/FORMAT.md
gives; the test builds that name from the document's rule, not from the library's code.
"""

from __future__ import annotations

import errno
import hashlib
import os
from typing import Any, List

import pytest

from tests.support import import_fixtures as fx
from tests.support.helpers import append_raw, meta_line, msg_line, read, write_raw
from llm_agent_session import Session, user_message
from llm_agent_session._files import side_name
from llm_agent_session.cli import main as cli_main
from llm_agent_session.importers import claude_code, codex

LENGTHS = (200, 213, 214, 248, 249, 255)
# A stem of one character, repeated: ASCII, then 2-, 3- and 4-byte UTF-8, so that a short
# form's cut falls inside a character for some lengths.
CHARACTERS = ("a", "é", "日", "🦀")
TORN = b'{"id":"0194","payload":{"role":"user","content":"half a li'
# A transcript written as bytes, not by Session.create: the load tests stand on their own.
GOOD = meta_line(payload={"agent": "long"}) + msg_line("m1", content="kept")


def name_of(length: int, character: str, ending: str = ".jsonl") -> str:
    """A file name of exactly `length` bytes: `character` repeated, ASCII to make up the rest."""
    width = len(character.encode())
    room = length - len(ending.encode())
    stem = character * (room // width)
    return "x" * (room - len(stem.encode())) + stem + ending


def documented_repair_name(name: str, name_max: int) -> str:
    """docs/FORMAT.md: `<name>.repair`, or where that is longer than NAME_MAX, the longest
    start of `name` ending at a character boundary, `~`, the first 16 hex digits of the
    SHA-256 of the name's bytes and `.repair`, within NAME_MAX."""
    whole = name.encode()
    if len(whole) + len(b".repair") <= name_max:
        return name + ".repair"
    digest = hashlib.sha256(whole).hexdigest()[:16]
    cut = name
    while len(f"{cut}~{digest}.repair".encode()) > name_max:
        cut = cut[:-1]
    return f"{cut}~{digest}.repair"


@pytest.fixture
def name_max(tmp_path: Any) -> int:
    limit = os.pathconf(tmp_path, "PC_NAME_MAX")
    if limit < max(LENGTHS):
        pytest.skip(f"this file system takes names of at most {limit} bytes")
    return int(limit)


def only(directory: Any, *names: str) -> None:
    """The directory holds exactly `names`: no temporary or repair copy was left behind."""
    assert sorted(os.listdir(directory)) == sorted(names)


@pytest.mark.parametrize("character", CHARACTERS, ids=["ascii", "2-byte", "3-byte", "4-byte"])
def test_create_append_repair_salvage_fork_at_every_length(tmp_path: Any, name_max: int, character: str) -> None:
    for length in LENGTHS:
        d = tmp_path / str(length)
        name = name_of(length, character)
        assert len(name.encode()) == length
        path = d / name
        with Session.create(path, {"agent": "long"}) as s:
            first = s.append_message(user_message("before the tear"))
        only(d, name)
        good = read(path)
        append_raw(path, TORN)
        with Session.load(path) as s:
            assert s.message_ids == [first], length
            assert "removed a torn last line" in s.warnings[0]
            assert read(path) == good
            s.append_message(user_message("after the repair"))
        only(d, name)
        # Salvage and fork into other names of the same length, beside it.
        salvaged, forked = name_of(length, character, ".s.jsonl"), name_of(length, character, ".f.jsonl")
        assert Session.salvage(path, d / salvaged)["loads"] is True
        with Session.fork(path, d / forked, first) as f:
            assert f.message_ids == [first]
        only(d, name, salvaged, forked)
        assert read(d / salvaged) == read(path)


def test_temporary_names_fit_and_keep_whole_characters(tmp_path: Any, name_max: int, backend_name: str) -> None:
    """The temporary a new file is written under (gone once it is published, so asked for
    here): `.<name>.<uuid>.tmp` where that fits, else the documented short form."""
    if backend_name != "pure":
        pytest.skip("backend-independent: checked once, in the pure run")
    uuid = "0194f1c2-7a6b-7c3e-9d2a-5b8e1f0a4c7d"
    for character in CHARACTERS:
        for length in LENGTHS:
            name = name_of(length, character)
            made = os.path.basename(side_name(str(tmp_path / name), ".", f".{uuid}.tmp"))
            raw = made.encode("utf-8")  # raises on a split character (a lone surrogate)
            assert len(raw) <= name_max
            if length + 42 <= name_max:
                assert made == f".{name}.{uuid}.tmp"
            else:
                digest = hashlib.sha256(name.encode()).hexdigest()[:16]
                assert made.endswith(f"~{digest}.{uuid}.tmp") and made.startswith(".")
                cut = made[1:-len(f"~{digest}.{uuid}.tmp")]
                assert name.startswith(cut) and len(raw) > name_max - len(character.encode())


def test_a_torn_file_whose_repair_needs_the_short_form(tmp_path: Any, name_max: int) -> None:
    """The repair copy goes to the documented short form: a directory planted at that name
    makes the repair's exclusive create fail, and the error says so, of the user's file."""
    for character in CHARACTERS:
        for length in (249, 255):
            d = tmp_path / f"{length}-{len(character.encode())}"
            name = name_of(length, character)
            path = d / name
            os.makedirs(d)
            write_raw(path, GOOD, TORN)
            blocker = d / documented_repair_name(name, name_max)
            os.mkdir(blocker)  # the repair's exclusive create fails there: proof of the name it uses
            with pytest.raises(OSError) as raised:
                Session.load(path)
            assert raised.value.filename == str(path)  # the user's file, not the copy
            assert str(blocker) in str(raised.value)
            os.rmdir(blocker)
            with Session.load(path) as s:
                assert "removed a torn last line" in s.warnings[0]
            only(d, name)


def test_a_leftover_short_form_repair_is_handled_as_a_leftover(tmp_path: Any, name_max: int) -> None:
    for character in CHARACTERS:
        for length in LENGTHS:
            d = tmp_path / f"{length}-{len(character.encode())}"
            name = name_of(length, character)
            path = d / name
            os.makedirs(d)
            good = write_raw(path, GOOD)
            leftover = d / documented_repair_name(name, name_max)
            write_raw(leftover, good[:10])  # what a repair killed mid-copy leaves
            # `check` reads without writing, and says a load would delete it.
            assert cli_main(["check", str(path)]) == 0
            with Session.load(path) as s:
                assert len(s.message_ids) == 1
            only(d, name)
            # With the transcript gone, the leftover may be the only copy: never deleted.
            os.rename(path, leftover)
            with pytest.raises(FileNotFoundError) as raised:
                Session.load(path)
            assert raised.value.filename == str(path) and "may be the only copy" in str(raised.value)
            assert str(leftover) in str(raised.value)
            only(d, leftover.name)
            assert read(leftover) == good


def test_check_names_the_short_form_leftover(tmp_path: Any, name_max: int, capsys: Any) -> None:
    name = name_of(255, "日")
    path = tmp_path / name
    write_raw(path, GOOD)
    leftover = tmp_path / documented_repair_name(name, name_max)
    write_raw(leftover, b"half")
    capsys.readouterr()
    assert cli_main(["check", str(path)]) == 0
    assert f"a load deletes the leftover {leftover}" in capsys.readouterr().out
    assert cli_main(["show", str(tmp_path / "gone.jsonl")]) == 3  # an unrelated name: no hint
    os.rename(path, tmp_path / "elsewhere.jsonl")
    assert cli_main(["show", str(path)]) == 3
    err = capsys.readouterr().err
    assert "may be the only copy" in err and leftover.name in err


@pytest.mark.parametrize("importer, text", [(claude_code, fx.claude_code_session()), (codex, fx.codex_rollout())],
                         ids=["claude_code", "codex"])
def test_import_into_a_long_name(tmp_path: Any, name_max: int, importer: Any, text: str) -> None:
    for length in LENGTHS:
        name = name_of(length, "é")
        src, out, report = fx.import_into(importer, tmp_path / str(length), text, name)
        with Session.load(out) as s:
            assert s.message_ids
        only(os.path.dirname(out), name)
        # Again over the same OUT: the import appends what is new (nothing), loading OUT.
        importer.import_transcript(src, out)
        only(os.path.dirname(out), name)


def test_a_name_longer_than_the_file_system_takes_is_said_of_that_name(tmp_path: Any, name_max: int) -> None:
    """The error names the user's file, never the temporary beside it."""
    name = name_of(name_max + 1, "a")
    good = tmp_path / "run.jsonl"
    with Session.create(good, {"agent": "t"}) as s:
        first = s.append_message(user_message("m"))
    calls: List[Any] = [
        lambda: Session.create(tmp_path / name, {"agent": "t"}),
        lambda: Session.salvage(good, tmp_path / name),
        lambda: Session.fork(good, tmp_path / name, first),
    ]
    for call in calls:
        with pytest.raises(OSError) as raised:
            call()
        assert raised.value.errno == errno.ENAMETOOLONG
        assert raised.value.filename == str(tmp_path / name)
        only(tmp_path, "run.jsonl")
