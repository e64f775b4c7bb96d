"""A search across transcripts reads a batch of them in one call (``Core.search_files``, what
``search_many`` asks of every transcript its cache knows nothing of): each file's identity,
its first bytes, the look at its first line (``Core.first_line_is_meta``), its hits and where
a search of it grown would start. Held, on both cores, to the calls one file at a time
(``os.fstat``, ``find_hits``) and to answers written out by hand, on every kind of path a
walk can meet: a transcript, one whose first line is longer than the head, one with a torn
last line longer than the tail, an empty file, a file that is not a transcript, one larger
than the batch reads, a directory, a FIFO, a missing path; then the two cores against each
other, exception for exception."""

from __future__ import annotations

import os
import stat
from typing import Any, Dict, List, Tuple

import pytest

from tests.support.helpers import env_line, meta_line, msg_line, write_raw
from llm_agent_session import _backend
from llm_agent_session import search as one_search

TEXT = "Needle-7"
HEAD, TAIL = 256, 32


def files(root: Any) -> Dict[str, Tuple[str, Any]]:
    """name -> (path, what the batch says of it: ("read", the look's answer at HEAD bytes),
    "large", "not regular" or "missing")."""
    os.makedirs(root, exist_ok=True)
    hit = msg_line("m1", "user", f"find {TEXT} here")
    out: Dict[str, Tuple[str, Any]] = {}

    def made(name: str, want: Any, *lines: bytes) -> None:
        path = os.path.join(str(root), name.replace(" ", "-") + ".jsonl")
        write_raw(path, *lines)
        out[name] = (path, want)

    made("transcript", ("read", True), meta_line(), hit, msg_line("m2", "tool", f"{TEXT}!"))
    # its session-meta line is longer than HEAD: the quick look cannot tell
    made("long meta", ("read", False), meta_line(payload={"title": "x" * 400}), hit)
    # blank lines before a session-meta line, and a torn last line longer than TAIL
    made("torn", ("read", True), b"\n \r\n", meta_line(), hit, b'{"id":"t","payload":' + b"y" * 100)
    # a last line without its newline longer than a MiB: its start is looked for further back
    made("torn long", ("read", True), meta_line(), hit, b'{"id":"t","payload":"' + b"z" * (1 << 20) + b"..")
    made("empty", ("read", False), b"")
    made("not a transcript", ("read", False), msg_line("m0", "user", TEXT), hit)
    made("not JSON", ("read", False), b"\xff" + meta_line(), b"plain " + TEXT.encode() + b"\n")
    made("other version", ("read", False), env_line("meta-0", "session-meta", {}, v=2), hit)
    made("large", "large", meta_line(), *[hit] * 40, b"x" * (1 << 20) + b"\n")
    os.mkdir(os.path.join(str(root), "dir.jsonl"))
    out["directory"] = (os.path.join(str(root), "dir.jsonl"), "not regular")
    if hasattr(os, "mkfifo"):  # a FIFO among transcripts: opened without waiting for a writer
        os.mkfifo(os.path.join(str(root), "fifo.jsonl"))
        out["fifo"] = (os.path.join(str(root), "fifo.jsonl"), "not regular")
    out["missing"] = (os.path.join(str(root), "gone.jsonl"), "missing")
    return out


LARGEST = (1 << 20) + 2000  # "large" is over it, every other file under


def one_by_one(path: str, needle: bytes, ignore_case: bool) -> Tuple[Any, ...]:
    """What the batch must say of a file it reads, from the calls one at a time."""
    with open(path, "rb") as f:
        data = f.read()
    fd = os.open(path, os.O_RDONLY)
    try:
        st = os.fstat(fd)
        lines, groups, after = _backend.core.find_hits(fd, needle, 0, st.st_size, ignore_case)
    finally:
        os.close(fd)
    identity = (st.st_dev, st.st_ino, st.st_size, st.st_mtime_ns, st.st_ctime_ns)
    # The obvious rule: the start of a last line without its newline, else the size.
    resume = len(data) if not data or data.endswith(b"\n") else data.rfind(b"\n") + 1
    return identity, data[:HEAD], lines, groups, after, resume, data[-TAIL:]


@pytest.mark.parametrize("ignore_case", [False, True])
def test_the_batch_answers_what_the_calls_one_by_one_answer(tmp_path, ignore_case):
    made = files(tmp_path / "fleet")
    needle = one_search.needle(TEXT, ignore_case)
    names = list(made)
    answers = _backend.core.search_files([made[n][0] for n in names], needle, LARGEST, ignore_case, HEAD, TAIL)
    assert len(answers) == len(names)
    seen_hits = 0
    for name, answer in zip(names, answers):
        path, want = made[name]
        if want == "missing":
            assert isinstance(answer, FileNotFoundError), name
            assert answer.args == (2, os.strerror(2)), name
            continue
        assert not isinstance(answer, OSError), (name, answer)
        identity, regular, part, tail = answer
        st = os.stat(path)
        assert identity[:3] == (st.st_dev, st.st_ino, st.st_size), name
        if want == "not regular":
            assert (regular, part, tail) == (False, None, None), name
            assert not stat.S_ISREG(st.st_mode)
            continue
        assert regular, name
        if want == "large":
            assert st.st_size > LARGEST and (part, tail) == (None, None)
            continue
        ident, head, lines, groups, after, resume, last = one_by_one(path, needle, ignore_case)
        assert identity == ident, name
        assert part == (head, want[1], lines, groups, after), name
        assert tail == (resume, last), name
        seen_hits += len(lines)
    assert seen_hits >= 6  # the files above hold hits: the comparison compared something


def test_without_a_tail_or_a_head(tmp_path):
    made = files(tmp_path / "fleet")
    path = made["transcript"][0]
    needle = one_search.needle(TEXT, False)
    (identity, regular, part, tail), = _backend.core.search_files([path], needle, LARGEST, False, 0, 0)
    assert regular and tail is None and part is not None
    head, meta, lines, _, after = part
    assert (head, meta, after) == (b"", False, os.path.getsize(path)) and len(lines) == 2


def test_a_bad_needle_is_refused_before_any_file_is_opened(tmp_path):
    missing = str(tmp_path / "gone.jsonl")  # opened, it would be an OSError, not a ValueError
    for needle in (b"", b"a\nb", b"\\x"):
        with pytest.raises(ValueError):
            _backend.core.search_files([missing], needle, LARGEST)
    assert _backend.core.search_files([], b"x", LARGEST) == []


def test_the_two_cores_agree_exception_for_exception(tmp_path, backend_name, other_backend):
    made = files(tmp_path / "fleet")
    paths = [path for path, _ in made.values()] + [made["transcript"][0] + "/below"]  # ENOTDIR

    def answers() -> List[Any]:
        got = []
        for ignore_case in (False, True):
            needle = one_search.needle(TEXT, ignore_case)
            for head, tail in ((HEAD, TAIL), (4096, 4096), (0, 0)):
                got.append([(type(a), a.args) if isinstance(a, OSError) else a
                            for a in _backend.core.search_files(paths, needle, LARGEST, ignore_case, head, tail)])
        return got

    mine = answers()
    _backend.use(other_backend)
    try:
        theirs = answers()
    finally:
        _backend.use(backend_name)
    assert mine == theirs
    assert mine[0][-1][0] is NotADirectoryError and mine[0][-2][0] is FileNotFoundError


FIRST_LINES = [
    (meta_line(), True),
    (b"\n \t\n" + meta_line(), True),  # blank lines before it
    (b"  " + meta_line(), True),  # spaces before it on its line: JSON allows them
    (meta_line().replace(b"\n", b"\r\n"), True),  # its line ends in \r
    (meta_line()[:-1], False),  # no newline yet: the look cannot tell
    (meta_line().replace(b'"session-meta"', b'"message"'), False),
    (env_line("meta-0", "session-meta", {}, v=2), False),
    (meta_line()[:-8] + b"\n", False),  # cut short
    (b'{"id":"x","payload":{},"ts":"t","type":"session-meta","extra":1}\n', False),  # not an envelope
    (b"\xff" + meta_line(), False),
    (b"\n\n", False),
    (b"", False),
]


@pytest.mark.parametrize("head,meta", FIRST_LINES, ids=range(len(FIRST_LINES)))
def test_the_quick_look_at_the_first_line(head, meta):
    assert _backend.core.first_line_is_meta(head) is meta
    assert _backend.core.first_line_is_meta(head + msg_line("m", "user", TEXT)) is meta
