"""``secrets.scrub_file``: a seeded transcript scrubbed replays the same conversation,
pending operations and grants but for the masked spans, keeps every id and digest, gets
a ``scrub`` record, and a scan of it finds nothing; a file it cannot scrub is left as it
was; a SIGKILL at any moment leaves the old file or the new one (slow tier)."""

from __future__ import annotations

import json
import os
import random
import stat
import time

import pytest

from benches import secret_corpus
from tests.secrets.digests import problems
from tests.support.helpers import spawn_py
from llm_agent_session import CorruptTranscript, Session, SessionLocked
from llm_agent_session.secrets import Policy, scan_file, scrub_file
from llm_agent_session.secrets.redact import apply, structural
from llm_agent_session.secrets.scrub import SCRUB, scrub_path, transcripts_under
from llm_agent_session.secrets.walk import sites
from llm_agent_session.verdict import Kind, verdict
from tests.secrets.test_policy import on_disk


def masked(value, policy, type_="message"):
    return apply(value, sites(value, policy.rules, structural(type_)), policy.rules, policy.fingerprints)


def state(path):
    with Session.load(path) as s:
        return ([m.to_dict() for m in s.messages], list(s.message_ids), s.grants,
                [(o.op_id, o.call_id, o.tool, o.arguments, o.state) for o in s.pending_tool_operations()],
                [(e.id, e.type) for e in s.events])


def seeded(path, seed=1, **kw):
    placed = secret_corpus.write_seeded(str(path), random.Random(seed), **kw)
    with Session.load(str(path)) as s:  # a grant and a call left pending, to replay too
        s.append_grants({"shell": {"allow": ["cat"]}, "token": placed[0][0].seed.text})
        s.append_message({"role": "assistant", "content": None, "tool_calls": [
            {"id": "c-pending", "type": "function", "function": {"name": "bash", "arguments": "{}"}}]})
        s.append_tool_dispatched("c-pending", "bash", {"cmd": "deploy " + placed[1][0].seed.text})
    return placed


def test_a_scrubbed_transcript_replays_the_same_but_for_the_masked_spans(tmp_path):
    path = tmp_path / "run.jsonl"
    placed = seeded(path)
    os.chmod(path, 0o640)
    before = state(path)
    policy = Policy()
    report = scrub_file(str(path), policy)
    assert report.masked >= len(placed) and report.lines > 0 and report.kept is None
    assert sum(report.rules.values()) == report.masked
    after = state(path)
    messages, ids, grants, pending, events = after
    assert ids == before[1] and events == before[4] + [(events[-1][0], SCRUB)]
    assert messages == [masked(m, policy) for m in before[0]] != before[0]
    assert grants == masked(before[2], policy) != before[2]
    assert pending == [(op, call, tool, masked(args, policy, "x"), st) for op, call, tool, args, st in before[3]]
    assert verdict(str(path)).kind is Kind.CLEAN and problems(str(path)) == []
    assert scan_file(str(path), policy.rules, policy.fingerprints).findings == []
    assert on_disk(tmp_path, {p.seed.secret for p, _ in placed}) == set()
    assert stat.S_IMODE(os.stat(path).st_mode) == 0o640
    record = json.loads(open(path, "rb").read().splitlines()[-1])
    assert record["type"] == SCRUB and record["payload"]["masked"] == report.masked
    assert record["payload"]["rules"] == report.rules and record["payload"]["lines"] == report.lines
    assert not os.path.exists(scrub_path(str(path)))


def test_a_second_scrub_changes_nothing(tmp_path):
    path = tmp_path / "run.jsonl"
    seeded(path, forms=("tool-output",))
    scrub_file(str(path))
    data = path.read_bytes()
    report = scrub_file(str(path))
    assert (report.masked, report.lines) == (0, 0) and path.read_bytes() == data


def test_unchanged_lines_are_copied_byte_for_byte(tmp_path):
    path = tmp_path / "run.jsonl"
    seeded(path, forms=("split",), filler=2)
    old = path.read_bytes().splitlines()
    scrub_file(str(path))
    new = path.read_bytes().splitlines()[:-1]
    assert len(old) == len(new)
    rewritten = [n for n, (a, b) in enumerate(zip(old, new)) if a != b]
    assert rewritten and all(b"redacted:" in new[n] for n in rewritten)
    assert len(rewritten) < len(old) / 3


def test_keep_original_keeps_the_file_as_it_was(tmp_path):
    path = tmp_path / "run.jsonl"
    seeded(path, forms=("base64",))
    data = path.read_bytes()
    report = scrub_file(str(path), keep_original=True)
    assert report.kept == str(path) + ".unscrubbed" and open(report.kept, "rb").read() == data
    assert path.read_bytes() != data
    os.unlink(report.kept)
    open(report.kept, "wb").write(b"something else")
    seeded(tmp_path / "b.jsonl")
    other = tmp_path / "b.jsonl"
    os.rename(report.kept, str(other) + ".unscrubbed")
    with pytest.raises(FileExistsError):
        scrub_file(str(other), keep_original=True)


def test_a_file_held_by_a_session_is_refused_and_left_alone(tmp_path):
    path = tmp_path / "run.jsonl"
    seeded(path, forms=("tool-output",))
    data = path.read_bytes()
    with Session.load(str(path)):
        with pytest.raises(SessionLocked):
            scrub_file(str(path))
    assert path.read_bytes() == data and not os.path.exists(scrub_path(str(path)))


def test_a_file_that_does_not_replay_is_refused_and_left_alone(tmp_path):
    path = tmp_path / "run.jsonl"
    seeded(path, forms=("tool-output",))
    lines = path.read_bytes().splitlines(keepends=True)
    broken = b"".join(lines[:5] + [b"not json\n"] + lines[5:])
    path.write_bytes(broken)
    with pytest.raises(CorruptTranscript):
        scrub_file(str(path))
    assert path.read_bytes() == broken


def test_a_torn_tail_is_repaired_first_and_a_killed_scrubs_copy_removed(tmp_path):
    path = tmp_path / "run.jsonl"
    placed = seeded(path, forms=("tool-output",))
    with open(path, "ab") as fh:
        fh.write(b'{"id":"torn","payload":{"role":"user","content":"' + placed[0][0].seed.text.encode()[:20])
    open(scrub_path(str(path)), "wb").write(b"what a killed scrub left")
    report = scrub_file(str(path))
    assert any("torn" in w for w in report.warnings)
    assert not os.path.exists(scrub_path(str(path)))
    assert on_disk(tmp_path, {p.seed.secret for p, _ in placed}) == set()


def test_an_import_of_a_scrubbed_transcript_keeps_its_masks(tmp_path):
    from llm_agent_session.importers import claude_code

    data, placed = secret_corpus.claude_code_seeded(random.Random(8), forms=("tool-output", "arguments"))
    src, out = tmp_path / "src.jsonl", tmp_path / "out" / "run.jsonl"
    src.write_bytes(data)
    assert claude_code.import_transcript(str(src), str(out))["status"] == "imported"
    scrub_file(str(out))
    assert claude_code.import_transcript(str(src), str(out))["status"] == "unchanged"
    last = json.loads(data.splitlines()[-1])
    more = dict(last, parentUuid=last["uuid"], uuid="u-more", type="user",
                message={"role": "user", "content": "also " + placed[0][0].seed.text})
    with open(src, "ab") as fh:
        fh.write(json.dumps(more).encode() + b"\n")
    assert claude_code.import_transcript(str(src), str(out))["status"] == "appended"
    assert on_disk(tmp_path / "out", {p.seed.secret for p, _ in placed}) == set()
    with Session.load(str(out)) as s:
        assert not any(e.type == "rewind" for e in s.events)


# -- SIGKILL at any moment (slow tier) ------------------------------------------------------

SCRUB_CHILD = """
from llm_agent_session.secrets import scrub_file
from llm_agent_session.secrets.scrub import transcripts_under
print("GO", flush=True)
for p in sys.argv[1:]:
    for f in (transcripts_under(p) if os.path.isdir(p) else [p]):
        scrub_file(f)
print("DONE", flush=True)
import time
time.sleep(60)
"""


def _big_seeded(path, seed):
    import generate

    generate.generate(str(path), 6 << 20, seed=seed)
    placed = secret_corpus.placed(random.Random(seed), ("tool-output",))
    with Session.load(str(path)) as s:
        for p in placed:
            s.append_message({"role": "tool", "tool_call_id": f"call_{seed:x}00000001", "content": p.seed.text})
    return [p.seed.secret for p in placed]


def test_sigkill_during_a_scrub_leaves_the_old_file_or_the_new_one(tmp_path, config_dir):
    originals = {}
    for n in range(2):
        path = tmp_path / "d" / f"run{n}.jsonl"
        path.parent.mkdir(exist_ok=True)
        secrets = _big_seeded(path, n + 1)
        originals[str(path)] = path.read_bytes()
    # How long the whole scrub takes here, on this core and this machine's load: the kills
    # fall within it (a fixed window saw no scrub finish on the pure core under load).
    child = spawn_py("import os\n" + SCRUB_CHILD, str(tmp_path / "d"))
    assert child.stdout.readline().strip() == "GO"
    started = time.monotonic()
    assert child.stdout.readline().strip() == "DONE"
    whole = time.monotonic() - started
    child.kill()
    child.communicate(timeout=60)
    rng = random.Random(3)
    outcomes = set()
    for _ in range(8):
        for p, data in originals.items():
            open(p, "wb").write(data)
        child = spawn_py("import os\n" + SCRUB_CHILD, str(tmp_path / "d"))
        assert child.stdout.readline().strip() == "GO"
        time.sleep(rng.uniform(0, 1.2 * whole))
        child.kill()
        child.communicate(timeout=60)
        for p, data in originals.items():
            now = open(p, "rb").read()
            if now == data:
                outcomes.add("old")
                continue
            outcomes.add("new")  # whole: it loads, holds its record, and no secret
            assert verdict(p).kind is Kind.CLEAN
            assert json.loads(now.splitlines()[-1])["type"] == SCRUB
            assert not any(s.encode() in now for s in secrets)
        for p in originals:  # the next scrub finishes the job
            scrub_file(p)
            assert not os.path.exists(scrub_path(p))
            assert verdict(p).kind is Kind.CLEAN
    assert outcomes == {"old", "new"}
    assert transcripts_under(str(tmp_path / "d")) == sorted(originals)
