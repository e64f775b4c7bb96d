"""docs/FORMAT.md's tail check: leftover .repair, the tail check and the verbatim-prefix repair."""

from __future__ import annotations

import os
import stat

import pytest

from llm_agent_session import (
    CorruptTranscript,
    NotATranscript,
    Session,
    user_message,
)

from tests.support.helpers import (
    append_raw,
    compaction_line,
    lines_of,
    meta_line,
    msg_line,
    read,
    write_raw,
)


def _good(tpath, n=3):
    """A valid transcript written by the library; returns (bytes, message ids)."""
    with Session.create(tpath, {"agent": "t"}) as s:
        ids = [s.append_message(user_message(f"m{i} héllo 日本")) for i in range(n)]
    return read(tpath), ids


def _no_repair_files(*dirs):
    for d in dirs:
        assert not [n for n in os.listdir(d) if n.endswith(".repair")], os.listdir(d)


def _check_repaired(tpath, good, ids, torn_len, s):
    assert read(tpath) == good
    assert s.message_ids == ids
    assert len(s.warnings) >= 1
    w = s.warnings[0]
    assert isinstance(w, str)
    assert str(len(good)) in w  # the offset of the removed line
    assert str(torn_len) in w  # its length
    _no_repair_files(tpath.parent)


def test_torn_tail_mid_line_is_removed(tpath):
    good, ids = _good(tpath)
    torn = b'{"id":"0194","payload":{"role":"user","content":"half a li'
    append_raw(tpath, torn)
    ino = os.stat(tpath).st_ino
    with Session.load(tpath) as s:
        _check_repaired(tpath, good, ids, len(torn), s)
        assert '{"id":"0194"' in s.warnings[0]  # a short excerpt of what went
        new = s.append_message(user_message("after repair"))
    assert os.stat(tpath).st_ino != ino  # replaced by rename, not edited in place
    with Session.load(tpath) as s:
        assert s.message_ids == ids + [new]
        assert s.warnings == []


def test_torn_tail_inside_multibyte_character(tpath):
    good, ids = _good(tpath)
    with Session.create(tpath.parent / "x.jsonl", {}) as s2:
        s2.append_message(user_message("日本語のテキスト"))
    line = lines_of(tpath.parent / "x.jsonl")[-1]
    cut = line.index("本".encode()) + 1  # one byte into a three-byte character
    torn = line[:cut]
    with pytest.raises(UnicodeDecodeError):
        torn.decode("utf-8")
    append_raw(tpath, torn)
    with Session.load(tpath) as s:
        _check_repaired(tpath, good, ids, len(torn), s)


@pytest.mark.parametrize("n,newline", [(1, False), (4096, False), (100, True)])
def test_torn_tail_of_nul_bytes(tpath, n, newline):
    good, ids = _good(tpath)
    torn = b"\x00" * n + (b"\n" if newline else b"")
    append_raw(tpath, torn)
    with Session.load(tpath) as s:
        assert read(tpath) == good
        assert s.message_ids == ids
        assert len(s.warnings) >= 1


def test_torn_tail_followed_by_blank_lines(tpath):
    good, ids = _good(tpath)
    append_raw(tpath, b'{"id":"x","payl' + b"\n\n  \t\n")
    with Session.load(tpath) as s:
        assert read(tpath) == good
        assert s.message_ids == ids


def test_torn_tail_after_blank_lines(tpath):
    good, ids = _good(tpath)
    append_raw(tpath, b"\n \n" + b'{"id":"x')
    with Session.load(tpath) as s:
        assert read(tpath) in (good, good + b"\n \n")  # the good prefix, byte for byte
        assert s.message_ids == ids


def test_torn_tail_right_after_meta(tpath):
    with Session.create(tpath, {"a": 1}) as s:
        pass
    good = read(tpath)
    append_raw(tpath, b'{"id":')
    with Session.load(tpath) as s:
        assert read(tpath) == good
        assert s.messages == [] and s.meta == {"a": 1}


def test_valid_last_line_without_newline_then_append(tpath):
    good, ids = _good(tpath)
    data = good[:-1]
    write_raw(tpath, data)
    ino = os.stat(tpath).st_ino
    with Session.load(tpath) as s:
        assert s.message_ids == ids
        assert read(tpath) == good  # the newline appended, nothing rewritten
        assert os.stat(tpath).st_ino == ino
        new = s.append_message(user_message("next"))
    assert read(tpath).startswith(good)
    assert len(lines_of(tpath)) == len(ids) + 2
    with Session.load(tpath) as s:
        assert s.message_ids == ids + [new]


def test_valid_last_line_without_newline_crlf(tpath):
    good, ids = _good(tpath)
    write_raw(tpath, good[:-1] + b"\r")
    with Session.load(tpath) as s:
        new = s.append_message(user_message("next"))
    with Session.load(tpath) as s:
        assert s.message_ids == ids + [new]


def test_two_malformed_tail_lines_fatal_and_untouched(tpath):
    good, ids = _good(tpath)
    append_raw(tpath, b'{"id":"broken",\n{"id":"torn')
    data = read(tpath)
    with pytest.raises(CorruptTranscript) as ei:
        Session.load(tpath)
    e = ei.value
    assert (e.line, e.offset) in [(len(ids) + 2, len(good)), (len(ids) + 3, len(good) + len(b'{"id":"broken",\n'))]
    assert f"line {e.line}" in str(e)
    assert read(tpath) == data
    _no_repair_files(tpath.parent)


def test_two_malformed_tail_lines_separated_by_blank(tpath):
    good, ids = _good(tpath)
    append_raw(tpath, b"garbage\n\n   \n\x00\x00")
    data = read(tpath)
    with pytest.raises(CorruptTranscript):
        Session.load(tpath)
    assert read(tpath) == data


def test_malformed_middle_line_names_it(tpath):
    good, ids = _good(tpath)
    lines = lines_of(tpath)
    bad = b'{"id":"x","payload":{"role":"user"}, oops}\n'
    data = write_raw(tpath, lines[0], lines[1], bad, *lines[2:])
    with pytest.raises(CorruptTranscript) as ei:
        Session.load(tpath)
    e = ei.value
    assert e.line == 3 and e.offset == len(lines[0]) + len(lines[1])
    assert "line 3" in str(e) and f"byte {e.offset}" in str(e) and str(tpath) in str(e)
    assert read(tpath) == data


def test_invalid_utf8_mid_file(tpath):
    good, ids = _good(tpath)
    lines = lines_of(tpath)
    bad = lines[2].replace("héllo".encode(), b"h\xe9llo")  # latin-1 byte, invalid UTF-8
    assert bad != lines[2]
    data = write_raw(tpath, lines[0], lines[1], bad, *lines[3:])
    with pytest.raises(CorruptTranscript) as ei:
        Session.load(tpath)
    assert ei.value.line == 3 and ei.value.offset == len(lines[0]) + len(lines[1])
    assert read(tpath) == data


def test_overlong_utf8_and_encoded_surrogate_mid_file(tpath):
    good, ids = _good(tpath)
    lines = lines_of(tpath)
    for junk in [b"\xc0\xaf", b"\xed\xa0\x80"]:
        bad = lines[2].replace("héllo".encode(), junk)
        data = write_raw(tpath, lines[0], lines[1], bad, *lines[3:])
        with pytest.raises(CorruptTranscript) as ei:
            Session.load(tpath)
        assert ei.value.line == 3
        assert read(tpath) == data


@pytest.mark.parametrize("last", [b'{"foo":1}\n', b"[1,2,3]\n", b"42\n", b'"a string"\n', b"null\n",
                                  b'{"id":"x","payload":{},"ts":"t","type":"message","v":1}\n'])
def test_whole_json_last_line_is_never_removed(tpath, last):
    good, ids = _good(tpath)
    data = good + last
    write_raw(tpath, data)
    with pytest.raises(CorruptTranscript) as ei:
        Session.load(tpath)
    assert ei.value.line == len(ids) + 2
    assert read(tpath) == data


def test_repair_happens_before_replay(tpath):
    data = write_raw(tpath, meta_line(), msg_line("m1"), compaction_line("c1", "nope"), msg_line("m2"))
    append_raw(tpath, b'{"id":"torn')
    with pytest.raises(CorruptTranscript) as ei:
        Session.load(tpath)
    assert ei.value.line == 3
    assert read(tpath) == data  # the garbage tail is gone even though the load failed


def test_leftover_repair_deleted_clean_file(tpath):
    good, ids = _good(tpath)
    leftover = tpath.parent / (tpath.name + ".repair")
    write_raw(leftover, good[:10])
    with Session.load(tpath) as s:
        assert s.message_ids == ids
        assert not leftover.exists()
    assert read(tpath) == good


def test_leftover_repair_deleted_with_torn_tail(tpath):
    good, ids = _good(tpath)
    append_raw(tpath, b'{"id":"to')
    leftover = tpath.parent / (tpath.name + ".repair")
    write_raw(leftover, b"stale half-copied repair")
    with Session.load(tpath) as s:
        assert s.message_ids == ids
    assert read(tpath) == good
    assert not leftover.exists()


def test_missing_path_with_repair_is_file_not_found(tpath):
    leftover = tpath.parent / (tpath.name + ".repair")
    data = write_raw(leftover, meta_line() + msg_line("m1"))
    with pytest.raises(FileNotFoundError) as ei:
        Session.load(tpath)
    assert ".repair" in str(ei.value)
    assert read(leftover) == data
    assert not tpath.exists()


def test_missing_path_is_file_not_found(tpath):
    with pytest.raises(FileNotFoundError):
        Session.load(tpath)
    assert not tpath.exists()


def test_repair_keeps_file_mode(tpath):
    good, ids = _good(tpath)
    append_raw(tpath, b"{")
    os.chmod(tpath, 0o640)
    with Session.load(tpath):
        pass
    assert read(tpath) == good
    assert stat.S_IMODE(os.stat(tpath).st_mode) == 0o640


def test_meta_only_torn_is_not_a_transcript_and_untouched(tpath):
    data = write_raw(tpath, meta_line()[:25])
    with pytest.raises(NotATranscript):
        Session.load(tpath)
    assert read(tpath) == data


def test_repair_then_load_is_clean(tpath):
    good, ids = _good(tpath, 20)
    append_raw(tpath, lines_of(tpath)[-1][:-7])
    with Session.load(tpath) as s:
        assert len(s.warnings) == 1
    with Session.load(tpath) as s:
        assert s.warnings == []
        assert s.message_ids == ids


def test_crlf_file_with_torn_tail(tpath):
    good, ids = _good(tpath)
    crlf = good.replace(b"\n", b"\r\n")
    write_raw(tpath, crlf + b'{"id":"x","pay')
    with Session.load(tpath) as s:
        assert s.message_ids == ids
    assert read(tpath) == crlf


def test_deep_last_line_is_corrupt_not_repaired(tpath):
    good, ids = _good(tpath)
    deep = b'{"id":"d","payload":{"x":' + b"[" * 600 + b"]" * 600 + b'},"ts":"t","type":"x","v":1}\n'
    data = good + deep
    write_raw(tpath, data)
    with pytest.raises(CorruptTranscript) as ei:
        Session.load(tpath)
    assert ei.value.line == len(ids) + 2
    assert read(tpath) == data


def test_load_while_locked_neither_repairs_nor_deletes_repair(tpath):
    s = Session.create(tpath, {})
    try:
        s.append_message(user_message("a"))
        append_raw(tpath, b'{"id":"someone writing')
        leftover = tpath.parent / (tpath.name + ".repair")
        write_raw(leftover, b"in progress elsewhere")
        data = read(tpath)
        from llm_agent_session import SessionLocked
        with pytest.raises(SessionLocked):
            Session.load(tpath)
        assert read(tpath) == data
        assert read(leftover) == b"in progress elsewhere"
    finally:
        s.close()


@pytest.mark.skipif(os.geteuid() != 0, reason="needs root to drop to another user")
def test_unwritable_transcript_is_refused_not_replaced(tmp_path):
    import tempfile
    from tests.support.helpers import run_py
    d = tempfile.mkdtemp(prefix="las-ro-")
    try:
        os.chmod(d, 0o777)  # the directory is writable by anyone: only the file is not
        path = os.path.join(d, "run.jsonl")
        with Session.create(path, {}) as s:
            s.append_message(user_message("a"))
        append_raw(path, b'{"id":"torn')
        os.chmod(path, 0o644)  # owned by root, read-only for the child below
        data = read(path)
        ino = os.stat(path).st_ino
        r = run_py("""
            os.setgid(65534)
            os.setuid(65534)
            try:
                Session.load(sys.argv[1])
                print("LOADED")
            except (OSError, TranscriptError) as e:
                print("REFUSED", type(e).__name__)
        """, path)
        assert r.stdout.split()[0] == "REFUSED", r.stdout
        assert read(path) == data
        assert os.stat(path).st_ino == ino
        assert sorted(os.listdir(d)) == ["run.jsonl"]
    finally:
        import shutil
        shutil.rmtree(d)


def test_sigkill_during_repair_loses_nothing(tmp_path):
    """The rename is the only mutation: a repair killed at any moment leaves either the
    original or the repaired file, and the next load finishes the job."""
    import time
    from tests.support.helpers import spawn_py
    path = tmp_path / "big.jsonl"
    lines = [meta_line()] + [msg_line(f"m{i}", content="x" * 200_000) for i in range(60)]
    good = b"".join(lines)
    torn = b'{"id":"torn","payload":{"role":"user","content":"xxxx'
    for delay in (0.0, 0.02, 0.05, 0.1, 0.2):
        write_raw(path, good, torn)
        child = spawn_py("""
            print("GO", flush=True)
            s = Session.load(sys.argv[1])
            print("LOADED", flush=True)
            import time
            time.sleep(60)
        """, str(path))
        assert child.stdout.readline().strip() == "GO"
        time.sleep(delay)
        child.kill()
        child.communicate(timeout=60)
        assert read(path) in (good, good + torn)
        with Session.load(path) as s:
            assert len(s.messages) == 60
        assert read(path) == good
        assert not os.path.exists(str(path) + ".repair")


def test_meta_only_without_newline_loads_and_appends(tpath):
    write_raw(tpath, meta_line("m0", {"a": 1})[:-1])
    with Session.load(tpath) as s:
        assert s.meta == {"a": 1} and s.messages == []
        new = s.append_message(user_message("x"))
    assert read(tpath) == meta_line("m0", {"a": 1}) + lines_of(tpath)[1]
    with Session.load(tpath) as s:
        assert s.message_ids == [new]
