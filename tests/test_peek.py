"""docs/FORMAT.md's peek: Session.peek — reading without writing, locking or repairing; follow mode."""

from __future__ import annotations

import os

import pytest

from llm_agent_session import Event, Message, Session, user_message, assistant_message

from tests.support.helpers import (
    append_raw,
    compaction_line,
    env_line,
    lines_of,
    meta_line,
    msg_line,
    read,
    write_raw,
)

KEYS = {"path", "size", "meta", "envelopes", "messages", "warnings", "end", "pending", "identity", "restarted"}


def _snapshot(path):
    st = os.stat(path)
    return read(path), st.st_ino, st.st_mtime_ns, st.st_size


def _ident(path):
    st = os.stat(path)
    return (st.st_dev, st.st_ino)


def test_peek_clean_file_matches_load(session, tpath):
    session.append_message(user_message("u1"), extra={"finish-reason": "stop"})
    a = session.append_message(assistant_message("a1"))
    session.append_grants({"g": 1})
    session.append_compaction("S", a, 10, 1)
    snap = _snapshot(tpath)
    p = Session.peek(tpath)  # works while a session holds the lock
    assert _snapshot(tpath) == snap
    assert isinstance(p, dict)
    assert set(p) == KEYS  # no "error" when there is something to read
    assert os.fspath(p["path"]) == os.fspath(tpath)
    assert p["size"] == len(snap[0]) == p["end"]
    assert p["pending"] == 0
    assert p["meta"] == {"agent": "test"}
    assert p["warnings"] == []
    assert p["restarted"] is False
    assert tuple(p["identity"]) == _ident(tpath)
    assert list(p["envelopes"]) == session.events
    assert all(isinstance(e, Event) for e in p["envelopes"])
    # no replay: every message line, compaction not applied, extras dropped
    assert list(p["messages"]) == [user_message("u1"), assistant_message("a1")]


def test_peek_sequences(session, tpath):
    ids = [session.append_message(user_message(str(i))) for i in range(10)]
    p = Session.peek(tpath)
    env, msgs = p["envelopes"], p["messages"]
    assert len(env) == 11 and len(msgs) == 10
    assert env[0].type == "session-meta"
    assert env[-1].id == ids[-1] and env[3].id == ids[2]
    assert [e.id for e in env[1:4]] == ids[:3]
    assert [e.id for e in env[::5]] == [env[0].id, ids[4], ids[9]]
    assert msgs[-1] == user_message("9")
    assert list(msgs[2:4]) == [user_message("2"), user_message("3")]
    assert [m.content for m in msgs] == [str(i) for i in range(10)]
    with pytest.raises(IndexError):
        env[11]


def test_peek_no_replay_of_elision(tpath):
    write_raw(tpath, meta_line(), msg_line("m1", content="orig"),
              env_line("e1", "elision", {"items": [{"id": "m1", "stub": "stub"}]}))
    p = Session.peek(tpath)
    assert list(p["messages"]) == [user_message("orig")]
    assert [e.type for e in p["envelopes"]] == ["session-meta", "message", "elision"]


def test_peek_reads_file_load_refuses(tpath):
    data = write_raw(tpath, meta_line("meta", {"a": 1}), msg_line("m1"), compaction_line("c1", "nothing"),
                     b"not json\n", msg_line("m2"),
                     env_line("x", "message", {"content": "no role"}), msg_line("m3"))
    p = Session.peek(tpath)
    assert "error" not in p
    assert p["meta"] == {"a": 1}
    assert [e.id for e in p["envelopes"]] == ["meta", "m1", "c1", "m2", "m3"] or \
        [e.id for e in p["envelopes"]] == ["meta", "m1", "c1", "m2", "x", "m3"]
    assert [m.content for m in p["messages"]] == ["hi", "hi", "hi"]
    assert len(p["warnings"]) == 2  # the malformed line and the role-less message
    assert all(isinstance(w, str) for w in p["warnings"])
    assert any("4" in w for w in p["warnings"])
    assert read(tpath) == data


def test_peek_torn_tail_left_alone(session, tpath):
    session.append_message(user_message("u1"))
    good = read(tpath)
    torn = b'{"id":"half","payload":{"role":"us'
    append_raw(tpath, torn)
    leftover = tpath.parent / (tpath.name + ".repair")
    write_raw(leftover, b"someone else's repair in progress")
    snap = _snapshot(tpath)
    p = Session.peek(tpath)
    assert _snapshot(tpath) == snap
    assert leftover.exists()  # peek never deletes a .repair
    assert p["warnings"] == []  # a writer mid-line is not malformed
    assert p["pending"] == len(torn)
    assert p["end"] == len(good)
    assert p["size"] == len(good) + len(torn)
    assert len(p["envelopes"]) == 2


def test_peek_torn_multibyte_and_nul_tail(session, tpath):
    session.append_message(user_message("u1"))
    good = read(tpath)
    append_raw(tpath, "{\"x\":\"日".encode()[:-1])
    p = Session.peek(tpath)
    assert (p["end"], p["pending"]) == (len(good), len(read(tpath)) - len(good))
    write_raw(tpath, good + b"\x00" * 300)
    p = Session.peek(tpath)
    assert (p["end"], p["pending"]) == (len(good), 300)


@pytest.mark.parametrize("setup", ["missing", "empty", "not-meta", "junk", "blank"])
def test_peek_error_when_nothing_to_read(tpath, setup):
    if setup == "empty":
        write_raw(tpath, b"")
    elif setup == "not-meta":
        write_raw(tpath, msg_line("m1"), msg_line("m2"))
    elif setup == "junk":
        write_raw(tpath, b"\x7fELF\x00\x01binary\n")
    elif setup == "blank":
        write_raw(tpath, b"\n  \n")
    before = read(tpath) if tpath.exists() else None
    p = Session.peek(tpath)
    assert isinstance(p["error"], str) and p["error"]
    assert KEYS <= set(p)
    assert p["meta"] == {}
    assert len(p["envelopes"]) == 0 or setup == "not-meta"
    assert len(p["messages"]) == 0 or setup == "not-meta"
    assert isinstance(p["warnings"], list)
    if before is None:
        assert not tpath.exists()
    else:
        assert read(tpath) == before


def test_peek_follow_mode(session, tpath):
    session.append_message(user_message("u1"))
    p1 = Session.peek(tpath)
    ids = [session.append_message(user_message("u2")), session.append_grants({"x": True})]
    p2 = Session.peek(tpath, offset=p1["end"], identity=p1["identity"])
    assert "error" not in p2
    assert p2["restarted"] is False
    assert p2["meta"] == {}
    assert [e.id for e in p2["envelopes"]] == ids
    assert list(p2["messages"]) == [user_message("u2")]
    assert p2["end"] == os.path.getsize(tpath) == p2["size"]
    assert p2["warnings"] == []
    # nothing new
    p3 = Session.peek(tpath, offset=p2["end"], identity=p2["identity"])
    assert len(p3["envelopes"]) == 0 and p3["end"] == p2["end"] and p3["restarted"] is False


def test_peek_follow_a_writer_mid_line(session, tpath):
    p1 = Session.peek(tpath)
    # a writer halfway through a line (written by hand, as a slow writer would)
    session.close()
    line = msg_line("slow-1", content="slow")
    append_raw(tpath, line[:15])
    p2 = Session.peek(tpath, offset=p1["end"], identity=p1["identity"])
    assert len(p2["envelopes"]) == 0 and p2["pending"] == 15 and p2["end"] == p1["end"]
    assert p2["warnings"] == []
    append_raw(tpath, line[15:])
    p3 = Session.peek(tpath, offset=p2["end"], identity=p2["identity"])
    assert [e.id for e in p3["envelopes"]] == ["slow-1"]
    assert p3["pending"] == 0 and p3["end"] == os.path.getsize(tpath)


def test_peek_restarted_after_repair(tpath):
    with Session.create(tpath, {}) as s:
        ids = [s.append_message(user_message(str(i))) for i in range(3)]
    append_raw(tpath, b'{"id":"torn')
    p1 = Session.peek(tpath)
    with Session.load(tpath) as s:  # renames a repaired file over the path
        new = s.append_message(user_message("new"))
    assert tuple(p1["identity"]) != _ident(tpath)
    p2 = Session.peek(tpath, offset=p1["end"], identity=p1["identity"])
    assert p2["restarted"] is True
    assert [e.id for e in p2["envelopes"]][1:] == ids + [new]
    assert p2["envelopes"][0].type == "session-meta"
    assert tuple(p2["identity"]) == _ident(tpath)


def test_peek_restarted_when_shorter_than_offset(tpath):
    with Session.create(tpath, {"k": "v"}) as s:
        s.append_message(user_message("x"))
    p1 = Session.peek(tpath)
    p2 = Session.peek(tpath, offset=p1["end"] + 100, identity=p1["identity"])
    assert p2["restarted"] is True
    assert len(p2["envelopes"]) == 2


def test_peek_offset_without_identity(session, tpath):
    p1 = Session.peek(tpath)
    mid = session.append_message(user_message("later"))
    p2 = Session.peek(tpath, offset=p1["end"])
    assert [e.id for e in p2["envelopes"]] == [mid]
    assert p2["meta"] == {}


def test_peek_identity_is_dev_ino(session, tpath):
    p = Session.peek(tpath)
    st = os.stat(tpath)
    assert tuple(p["identity"]) == (st.st_dev, st.st_ino)


def test_peek_crlf_and_blank_lines(tpath):
    raw = (b"\n" + meta_line() + b"   \n" + msg_line("m1") + msg_line("m2")).replace(b"\n", b"\r\n")
    write_raw(tpath, raw)
    p = Session.peek(tpath)
    assert [e.id for e in p["envelopes"]] == ["meta-0", "m1", "m2"]
    assert p["warnings"] == []
    assert p["end"] == len(raw) and p["pending"] == 0


def test_peek_valid_line_without_newline_is_pending(session, tpath):
    session.append_message(user_message("a"))
    good = read(tpath)
    line = msg_line("m-nonl")[:-1]
    append_raw(tpath, line)
    p = Session.peek(tpath)
    assert p["end"] == len(good)
    assert p["pending"] == len(line)
    assert read(tpath) == good + line


def test_peek_many_lines_and_u2028(session, tpath):
    ids = [session.append_message(user_message(f"{i}\u2028{i}")) for i in range(500)]
    p = Session.peek(tpath)
    assert [e.id for e in p["envelopes"]][1:] == ids
    assert p["messages"][250] == user_message("250\u2028250")


def test_follow_a_live_writer_process(tpath):
    """A viewer following a transcript another process is writing sees every line exactly
    once, in order, and never reports a half-written line as malformed."""
    from tests.support.helpers import spawn_py
    with Session.create(tpath, {}) as s:
        pass
    writer = spawn_py("""
        import random
        s = Session.load(sys.argv[1])
        rnd = random.Random(7)
        for i in range(300):
            s.append_message(user_message("%d " % i + "w" * rnd.choice([0, 10, 1000, 60000, 300000])))
        s.close()
    """, str(tpath))
    p = Session.peek(tpath)
    seen = [e.id for e in p["envelopes"]]
    rounds = 0
    while True:
        done = writer.poll() is not None
        p = Session.peek(tpath, offset=p["end"], identity=p["identity"])
        assert p["warnings"] == [], p["warnings"]
        assert p["restarted"] is False
        assert p["end"] + p["pending"] == p["size"]
        seen += [e.id for e in p["envelopes"]]
        rounds += 1
        if done:
            break
    out, err = writer.communicate(timeout=60)
    assert writer.returncode == 0, err
    with Session.load(tpath) as s:
        assert seen == [e.id for e in s.events]
        assert len(s.messages) == 300


PEEK_LOOP = """
import time
t0 = time.time()
n = 0
while time.time() - t0 < float(sys.argv[2]):
    p = Session.peek(sys.argv[1])
    assert "error" not in p, p["error"]
    n += 1
print("PEEKS", n, flush=True)
"""

ROLLBACK_WRITER = """
import resource, signal, time
signal.signal(signal.SIGXFSZ, signal.SIG_IGN)
s = Session.load(sys.argv[1])
size = os.path.getsize(sys.argv[1])
resource.setrlimit(resource.RLIMIT_FSIZE, (size + 2_000_000, resource.RLIM_INFINITY))
big = user_message("y" * 4_000_000)
print("READY", flush=True)
t0 = time.time()
n = 0
while time.time() - t0 < float(sys.argv[2]):
    try:
        s.append_message(big)
    except OSError:
        n += 1  # a partial write, rolled back by truncating (docs/durability.md)
print("ROLLBACKS", n, flush=True)
"""


def test_viewer_survives_writer_rollbacks(tpath):
    """docs/durability.md: a failed append truncates the file back; docs/FORMAT.md's peek: peek is for files still
    being written. A viewer peeking while the writer rolls back must not be killed
    (e.g. by SIGBUS from a mapping that outlives the bytes it maps)."""
    from tests.support.helpers import spawn_py
    with Session.create(tpath, {}) as s:
        s.append_message(user_message("first"))
    good = read(tpath)
    writer = spawn_py(ROLLBACK_WRITER, str(tpath), "2.0")
    try:
        assert writer.stdout.readline().strip() == "READY"
        viewer = spawn_py(PEEK_LOOP, str(tpath), "1.5")
        vout, verr = viewer.communicate(timeout=120)
    finally:
        wout = writer.stdout.read()
        werr = writer.stderr.read()
        writer.wait(timeout=120)
    assert writer.returncode == 0, werr
    assert int(wout.split()[-1]) > 0  # rollbacks really happened
    assert viewer.returncode == 0, f"viewer died with {viewer.returncode}: {verr[-500:]}"
    assert read(tpath) == good


def test_peek_survives_a_file_shrinking_under_it(tpath):
    """The spec expects a followed file to become shorter (peek restarts then); peek must
    never crash the viewing process when it does."""
    from tests.support.helpers import spawn_py
    lines = [meta_line()] + [msg_line(f"m{i}", content="x" * 100_000) for i in range(100)]
    data = write_raw(tpath, *lines)
    viewer = spawn_py(PEEK_LOOP, str(tpath), "1.5")
    shrinks = 0
    while viewer.poll() is None:
        fd = os.open(tpath, os.O_WRONLY)
        try:
            os.ftruncate(fd, len(lines[0]))
            os.pwrite(fd, data[len(lines[0]):], len(lines[0]))
        finally:
            os.close(fd)
        shrinks += 1
    out, err = viewer.communicate(timeout=60)
    assert shrinks > 0
    assert viewer.returncode == 0, f"viewer died with {viewer.returncode}: {err[-500:]}"


def test_peek_of_a_directory_reports_instead_of_raising(tmp_path):
    # "error only when there is nothing to read at all (no file, ...); the other keys are
    # still there and safe": a directory is no transcript file, and peek is for tools that
    # report what they find rather than throw
    p = Session.peek(tmp_path)
    assert isinstance(p.get("error"), str) and p["error"]
    assert KEYS <= set(p)
    assert p["meta"] == {} and len(p["envelopes"]) == 0
