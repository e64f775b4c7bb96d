"""docs/durability.md: one writer per file (flock), threads, fork, kill -9, failed writes,
files deleted or replaced under an open session, closing.

Eight threads appending at once and a second process knocking on a live writer's lock
are tested once, in tests/reliability/test_concurrency.py; a forked child's refused
append in tests/test_write_rules.py; the append handle's descriptor number and close-on-exec in
tests/reliability/test_security.py (both backends, recording their figures for
docs/RELIABILITY.md)."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import threading

import pytest

from llm_agent_session import (
    Session,
    SessionBroken,
    SessionClosed,
    SessionLocked,
    TranscriptError,
    user_message,
)

from tests.support.helpers import lines_of, read, run_py, spawn_py, write_raw


# --------------------------------------------------------------------------- locking


def test_second_writer_same_process(session, tpath):
    with pytest.raises(SessionLocked):
        Session.load(tpath)
    session.append_message(user_message("still fine"))
    session.close()
    with Session.load(tpath) as s:
        assert len(s.messages) == 1
        with pytest.raises(SessionLocked):
            Session.load(tpath)
        with pytest.raises(FileExistsError):
            Session.create(tpath, {})
    assert issubclass(SessionLocked, TranscriptError)


def test_lock_released_by_context_manager_and_close(tpath):
    with Session.create(tpath, {}) as s:
        s.append_message(user_message("a"))
    with pytest.raises(SessionClosed):
        s.append_message(user_message("b"))
    s2 = Session.load(tpath)
    s2.close()
    s2.close()  # closing twice is harmless
    with Session.load(tpath) as s3:
        assert len(s3.messages) == 1


def test_lock_released_when_holder_is_killed(tpath):
    with Session.create(tpath, {}):
        pass
    child = spawn_py("""
        s = Session.load(sys.argv[1])
        print("HOLDING", flush=True)
        import time
        while True:
            time.sleep(1)
    """, str(tpath))
    try:
        assert child.stdout.readline().strip() == "HOLDING"
        with pytest.raises(SessionLocked):
            Session.load(tpath)
    finally:
        child.kill()
        child.communicate(timeout=60)
    with Session.load(tpath) as s:
        assert s.messages == []


def test_every_append_refused_after_close(session, tpath):
    op = session.append_tool_dispatched("c", "t", {})
    mid = session.append_message(user_message("a"))
    session.close()
    before = read(tpath)
    calls = [
        lambda: session.append_message(user_message("x")),
        lambda: session.append_grants({}),
        lambda: session.append_compaction("s", mid, 1, 1),
        lambda: session.append_elision([(mid, "x")]),
        lambda: session.append_tool_dispatched("c2", "t", {}),
        lambda: session.append_tool_settled(op, "completed"),
        lambda: session.resolve_tool_operation(op),
        lambda: session.append_run_context([("a", "b")]),
        lambda: session.sync_messages([user_message("a"), user_message("b")]),
    ]
    for call in calls:
        with pytest.raises(SessionClosed):
            call()
    assert read(tpath) == before
    # reading what it held is still fine
    assert session.message_ids == [mid]


# --------------------------------------------------------------------------- file gone


def test_file_deleted_under_open_session(session, tpath):
    session.append_message(user_message("a"))
    os.unlink(tpath)
    with pytest.raises(SessionBroken):
        session.append_message(user_message("into the void"))
    assert not tpath.exists()


def test_file_replaced_under_open_session(session, tpath):
    session.append_message(user_message("a"))
    other = tpath.parent / "other.jsonl"
    data = write_raw(other, b"someone else's file\n")
    os.rename(other, tpath)
    with pytest.raises(SessionBroken):
        session.append_message(user_message("wrong file"))
    with pytest.raises(SessionBroken):
        session.append_grants({})
    assert read(tpath) == data


# --------------------------------------------------------------------------- kill -9

WRITER = """
import random
path, mode, big = sys.argv[1], sys.argv[2], int(sys.argv[3])
s = Session.create(path, {"writer": True}) if mode == "create" else Session.load(path)
rnd = random.Random(os.getpid())
i = 0
while True:
    k = i % 5
    if k == 0:
        mid = s.append_message(user_message("m%d " % i + "z" * rnd.randrange(big)), extra={"i": i})
    elif k == 1:
        mid = s.append_tool_dispatched("call-%d" % i, "tool", {"i": i})
        print(mid, flush=True)
        mid = s.append_message({"role": "tool", "tool_call_id": "call-%d" % i, "content": "r" * rnd.randrange(big)})
    elif k == 2:
        mid = s.append_grants({"n": i})
    elif k == 3:
        mid = s.append_run_context([("s%d" % (i % 3), "text %d" % (i % 3))], [("i", i)])
    else:
        mid = s.append_message(user_message("\\u2028日本 %d" % i))
    print(mid, flush=True)
    i += 1
"""


def _kill_writer_after(tpath, mode, n, big):
    child = spawn_py(WRITER, str(tpath), mode, str(big))
    printed = []
    try:
        while len(printed) < n:
            line = child.stdout.readline()
            if not line:
                break
            printed.append(line.strip())
        os.kill(child.pid, signal.SIGKILL)
    finally:
        # read through the same buffered reader: communicate() would skip what it holds
        out = child.stdout.read()
        err = child.stderr.read()
        child.wait(timeout=60)
    assert child.returncode == -signal.SIGKILL, err
    printed += [l.strip() for l in out.splitlines() if l.strip()]
    assert len(printed) >= n, err
    return printed


@pytest.mark.parametrize("n,big", [(1, 10), (9, 50), (60, 2000), (200, 200_000)])
def test_sigkill_loses_nothing_that_returned(tpath, n, big):
    printed = _kill_writer_after(tpath, "create", n, big)
    with Session.load(tpath) as s:
        ids = {e.id for e in s.events}
        missing = [i for i in printed if i not in ids]
        assert not missing
        wanted = set(printed)
        assert [e.id for e in s.events if e.id in wanted] == printed  # in the order they returned
        assert len(ids) - len(printed) <= 2  # the meta line, and at most one line in flight
        live = (s.messages, s.message_ids, s.grants, s.pending_tool_operations())
    with Session.load(tpath) as s:  # a second load is clean and identical
        assert s.warnings == []
        assert (s.messages, s.message_ids, s.grants, s.pending_tool_operations()) == live


def test_sigkill_repeatedly_resumed(tpath):
    with Session.create(tpath, {}):
        pass
    seen = []
    for n in (3, 17, 40):
        seen += _kill_writer_after(tpath, "load", n, 30_000)
        with Session.load(tpath) as s:
            ids = {e.id for e in s.events}
            assert [i for i in seen if i not in ids] == []


def test_sigkill_during_create_never_leaves_half_a_transcript(tmp_path):
    code = """
        import itertools
        for i in itertools.count():
            Session.create(os.path.join(sys.argv[1], "t%d.jsonl" % i), {"pad": "p" * 5000}).close()
            print(i, flush=True)
    """
    child = spawn_py(code, str(tmp_path))
    try:
        for _ in range(30):
            if not child.stdout.readline():
                break
        os.kill(child.pid, signal.SIGKILL)
    finally:
        child.communicate(timeout=60)
    transcripts = [n for n in os.listdir(tmp_path) if n.endswith(".jsonl")]
    assert len(transcripts) >= 30
    for name in transcripts:
        with Session.load(tmp_path / name) as s:
            assert s.meta == {"pad": "p" * 5000}
            assert s.warnings == []


# --------------------------------------------------------------------------- failed writes


@pytest.mark.parametrize("kind", ["message", "grants"])
def test_partial_write_rolled_back_rlimit_fsize(tpath, kind):
    with Session.create(tpath, {}) as s:
        s.append_message(user_message("before"))
    before = read(tpath)
    r = run_py("""
        import errno, resource, signal
        signal.signal(signal.SIGXFSZ, signal.SIG_IGN)
        path, kind = sys.argv[1], sys.argv[2]
        s = Session.load(path)
        size = os.path.getsize(path)
        soft, hard = resource.getrlimit(resource.RLIMIT_FSIZE)
        resource.setrlimit(resource.RLIMIT_FSIZE, (size + 1000, hard))
        out = {}
        try:
            if kind == "message":
                s.append_message(user_message("y" * 20000))
            else:
                s.append_grants({"big": "g" * 20000})
            out["raised"] = None
        except OSError as e:
            out["raised"] = e.errno
        except BaseException as e:
            out["raised"] = repr(e)
        out["size_after"] = os.path.getsize(path)
        out["size_before"] = size
        out["messages"] = len(s.messages)
        out["grants"] = s.grants
        out["id"] = s.append_message(user_message("small"))
        s.close()
        print(json.dumps(out))
    """, str(tpath), kind)
    out = json.loads(r.stdout.strip().splitlines()[-1])
    assert out["raised"] == 27  # EFBIG, after a partial write of the first 1000 bytes
    assert out["size_after"] == out["size_before"] == len(before)
    assert out["messages"] == 1 and out["grants"] == {}
    data = read(tpath)
    assert data.startswith(before)
    assert len(lines_of(tpath)) == 3
    with Session.load(tpath) as s:
        assert s.warnings == []
        assert [m.content for m in s.messages] == ["before", "small"]
        assert s.message_ids[-1] == out["id"]
        assert s.grants == {}


def test_racing_creates_exactly_one_wins(tmp_path):
    path = tmp_path / "race" / "run.jsonl"
    code = """
        import time
        start = float(sys.argv[2])
        while time.time() < start:
            pass
        try:
            with Session.create(sys.argv[1], {"winner": sys.argv[3]}) as s:
                s.append_message(user_message(sys.argv[3]))
            print("WON")
        except FileExistsError:
            print("EXISTS")
        except SessionLocked:
            print("LOCKED")
    """
    import time
    start = str(time.time() + 1.0)
    children = [spawn_py(code, str(path), start, str(i)) for i in range(4)]
    outs = []
    for c in children:
        out, err = c.communicate(timeout=60)
        assert c.returncode == 0, err
        outs.append(out.strip())
    assert outs.count("WON") == 1, outs
    winner = str(outs.index("WON"))
    with Session.load(path) as s:
        assert s.meta == {"winner": winner}
        assert [m.content for m in s.messages] == [winner]
    assert os.listdir(path.parent) == ["run.jsonl"]


def test_lock_is_on_the_file_not_the_name(tmp_path):
    target = tmp_path / "t.jsonl"
    link = tmp_path / "l.jsonl"
    with Session.create(target, {}):
        pass
    os.symlink(target, link)
    with Session.load(link):
        with pytest.raises(SessionLocked):
            Session.load(target)
    with Session.load(target):
        with pytest.raises(SessionLocked):
            Session.load(link)


# --------------------------------------------------------------------------- fsync policy (seen with strace)


def _strace_phases(tmp_path, code):
    import re
    import shutil as _sh
    import textwrap as _tw
    from tests.support.helpers import PRELUDE, child_env
    if not _sh.which("strace"):
        pytest.skip("strace not installed")
    log = tmp_path / "strace.log"
    script = tmp_path / "child.py"
    script.write_text(PRELUDE + _tw.dedent(code))
    r = subprocess.run(["strace", "-f", "-qq", "-o", str(log), "-e", "trace=fsync,fdatasync,newfstatat,stat,statx,rename,renameat,renameat2",
                        sys.executable, str(script), str(tmp_path)],
                       env=child_env(), capture_output=True, text=True, timeout=120)
    if r.returncode != 0 and "ptrace" in r.stderr:
        pytest.skip("ptrace not permitted here")
    assert r.returncode == 0, r.stderr
    phases = {}
    current = None
    for line in log.read_text().splitlines():
        m = re.search(r'"/MARK-([A-Z]+)"', line)
        if m:
            current = m.group(1)
            phases.setdefault(current, 0)
        elif current and re.search(r"\b(fsync|fdatasync)\(", line):
            phases[current] += 1
        elif current and re.search(r"\brename(at2?)?\(", line):
            phases[current + "-renames"] = phases.get(current + "-renames", 0) + 1
    return phases


def test_fsync_policy(tmp_path):
    phases = _strace_phases(tmp_path, """
        def mark(name):
            try:
                os.stat("/MARK-" + name)
            except OSError:
                pass
        d = sys.argv[1]
        mark("CREATE")
        s = Session.create(os.path.join(d, "a.jsonl"), {})
        mark("MESSAGES")
        for i in range(5):
            s.append_message(user_message(str(i)))
        s.append_tool_dispatched("c", "t", {})
        mark("GRANTS")
        s.append_grants({"write": False})
        mark("AFTER")
        s.append_message(user_message("x"))
        mark("CLOSE")
        s.close()
        mark("FSYNCCREATE")
        t = Session.create(os.path.join(d, "b.jsonl"), {}, fsync=True)
        mark("FSYNCMESSAGES")
        for i in range(4):
            t.append_message(user_message(str(i)))
        mark("END")
        t.close()
        with open(os.path.join(d, "b.jsonl"), "ab") as f:
            f.write(b'{"id":"torn')
        mark("REPAIR")
        u = Session.load(os.path.join(d, "b.jsonl"))
        mark("DONE")
        u.close()
    """)
    assert phases["MESSAGES"] == 0  # no fsync unless opened with fsync=True
    assert phases["AFTER"] == 0
    assert phases["GRANTS"] >= 1  # a grants line is always fsynced
    assert phases["FSYNCCREATE"] >= 2  # the file and the directory
    assert phases["FSYNCMESSAGES"] >= 4  # one per line
    assert phases["REPAIR"] >= 2  # the repair copy, then the directory
    assert phases.get("REPAIR-renames") == 1  # the only mutation
    assert phases.get("MESSAGES-renames") is None and phases.get("CREATE-renames") is None


def test_relative_path_survives_chdir(tmp_path, monkeypatch):
    """A session opened with a relative path names the file it opened; an agent that changes
    its working directory has not deleted or replaced its transcript (docs/durability.md)."""
    (tmp_path / "work").mkdir()
    (tmp_path / "elsewhere").mkdir()
    monkeypatch.chdir(tmp_path / "work")
    with Session.create("rel.jsonl", {}) as s:
        a = s.append_message(user_message("a"))
        monkeypatch.chdir(tmp_path / "elsewhere")
        b = s.append_message(user_message("b"))
    with Session.load(tmp_path / "work" / "rel.jsonl") as s:
        assert s.message_ids == [a, b]


def test_unicode_and_space_in_path(tmp_path):
    p = tmp_path / "dir with space" / "日本 run.v2.jsonl"
    with Session.create(p, {"名": "値"}) as s:
        s.append_message(user_message("x"))
        assert os.fspath(s.artifacts_dir) == os.path.join(os.fspath(p.parent), "日本 run.v2.artifacts")
    append = b'{"id":"torn'
    with open(p, "ab") as f:
        f.write(append)
    with Session.load(p) as s:
        assert s.meta == {"名": "値"} and len(s.messages) == 1 and len(s.warnings) == 1


def test_close_while_threads_append(tpath):
    s = Session.create(tpath, {})
    returned, unexpected = [], []
    started = threading.Barrier(5)

    def work(t):
        started.wait()
        for i in range(10_000):
            try:
                returned.append(s.append_message(user_message(f"{t}-{i}")))
            except SessionClosed:
                return
            except BaseException as e:  # pragma: no cover - reported below
                unexpected.append(e)
                return

    threads = [threading.Thread(target=work, args=(t,)) for t in range(4)]
    for th in threads:
        th.start()
    started.wait()
    while len(returned) < 200 and any(th.is_alive() for th in threads):
        pass
    s.close()
    for th in threads:
        th.join()
    assert unexpected == []
    with Session.load(tpath) as s2:
        assert s2.warnings == []
        assert sorted(s2.message_ids) == sorted(returned)


def test_failed_rollback_breaks_the_session(tpath):
    """docs/durability.md: if the truncate back after a partial write fails too, every later append is
    refused (SessionBroken), so nothing is ever written after garbage; the next load repairs."""
    import shutil as _sh
    if not _sh.which("chattr"):
        pytest.skip("chattr not installed")
    with Session.create(tpath, {}) as s:
        s.append_message(user_message("before"))
    before = read(tpath)
    probe = tpath.parent / "probe"
    probe.write_bytes(b"x")
    r = subprocess.run(["chattr", "+a", str(probe)], capture_output=True)
    subprocess.run(["chattr", "-a", str(probe)], capture_output=True)
    if r.returncode != 0:
        pytest.skip(f"chattr +a not supported here: {r.stderr!r}")
    try:
        r = run_py("""
            import resource, signal, subprocess
            signal.signal(signal.SIGXFSZ, signal.SIG_IGN)
            s = Session.load(sys.argv[1])
            # append-only from now on: O_APPEND writes work, ftruncate fails with EPERM
            subprocess.run(["chattr", "+a", sys.argv[1]], check=True)
            size = os.path.getsize(sys.argv[1])
            resource.setrlimit(resource.RLIMIT_FSIZE, (size + 1000, resource.RLIM_INFINITY))
            out = {}
            try:
                s.append_message(user_message("y" * 20000))
                out["first"] = "no error"
            except OSError as e:
                out["first"] = e.errno
            resource.setrlimit(resource.RLIMIT_FSIZE, (resource.RLIM_INFINITY, resource.RLIM_INFINITY))
            for name, call in [("message", lambda: s.append_message(user_message("small"))),
                               ("grants", lambda: s.append_grants({}))]:
                try:
                    call()
                    out[name] = "written"
                except SessionBroken:
                    out[name] = "broken"
            out["messages"] = len(s.messages)
            print(json.dumps(out))
        """, str(tpath))
    finally:
        subprocess.run(["chattr", "-a", str(tpath)], capture_output=True)
    out = json.loads(r.stdout.strip().splitlines()[-1])
    assert out == {"first": 27, "message": "broken", "grants": "broken", "messages": 1}
    data = read(tpath)
    assert data.startswith(before) and len(data) == len(before) + 1000  # the garbage, nothing after it
    with Session.load(tpath) as s:
        assert [m.content for m in s.messages] == ["before"]
        assert len(s.warnings) == 1
    assert read(tpath) == before


def test_transcript_with_append_only_attribute(tpath):
    """An append-only file (chattr +a) is a natural hardening of an append-only log:
    loading it and appending to it only ever appends."""
    import shutil as _sh
    if not _sh.which("chattr"):
        pytest.skip("chattr not installed")
    with Session.create(tpath, {}) as s:
        s.append_message(user_message("a"))
    r = subprocess.run(["chattr", "+a", str(tpath)], capture_output=True)
    if r.returncode != 0:
        pytest.skip(f"chattr +a not supported here: {r.stderr!r}")
    try:
        with Session.load(tpath) as s:
            s.append_message(user_message("b"))
        p = Session.peek(tpath)
        assert [m.content for m in p["messages"]] == ["a", "b"]
    finally:
        subprocess.run(["chattr", "-a", str(tpath)], capture_output=True)


def test_forgotten_session_releases_lock_when_collected(tpath):
    import gc
    s = Session.create(tpath, {})
    s.append_message(user_message("a"))
    del s
    gc.collect()
    with Session.load(tpath) as s2:
        assert len(s2.messages) == 1


def test_state_readable_after_close_and_after_file_is_gone(tpath):
    with Session.create(tpath, {"m": 1}) as s:
        ids = [s.append_message(user_message(str(i))) for i in range(50)]
    s = Session.load(tpath)
    s.close()
    os.unlink(tpath)
    assert [e.id for e in s.events][1:] == ids
    assert s.events[-1].payload == {"role": "user", "content": "49"}
    assert s.message_ids == ids and s.meta == {"m": 1}
    assert len(s.messages) == 50
