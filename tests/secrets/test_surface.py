"""``secrets.Redactor``, the call every outward surface makes: every seeded secret masked
in values and envelope lines, the counts right, clean text handed back as the very same
objects (the clean corpora byte for byte), and ``enabled=False`` changing nothing."""

from __future__ import annotations

import json
import random

from benches import generate
from benches import secret_corpus
from llm_agent_session import Session
from llm_agent_session.secrets import MARKER, Redactor, scrub_file


def test_values_are_masked_and_counted(seeds):
    r = Redactor()
    for seed in seeds:
        cut = seed.text.index(seed.secret) + 3  # inside the secret
        message = {"role": "tool", "content": [{"type": "text", "text": "log: " + seed.text[:cut]},
                                               {"type": "text", "text": seed.text[cut:]}]}
        masked = r.value(message)
        joined = "".join(p["text"] for p in masked["content"])
        assert seed.secret not in joined and MARKER.search(masked["content"][0]["text"])
        assert message["content"][1]["text"] == seed.text[cut:]  # the given value is never changed
    assert r.masked == len(seeds) and set(r.counts) == {s.rule for s in seeds}
    assert r.text("nothing here") == "nothing here"


def test_clean_values_come_back_as_the_same_objects():
    r = Redactor()
    value = {"role": "assistant", "content": "12 passed, password must be long", "n": [1, 2.5, None]}
    assert r.value(value) is value and r.value("x") == "x" and r.masked == 0


def test_disabled_passes_everything_through(seeds):
    r = Redactor(enabled=False)
    assert r.value(seeds[0].text) == seeds[0].text and r.line(b"x" + seeds[0].text.encode()) == b"x" + \
        seeds[0].text.encode() and r.masked == 0


def test_envelope_lines_are_masked_as_a_scrub_masks_them(tmp_path):
    path = tmp_path / "run.jsonl"
    secret_corpus.write_seeded(str(path), random.Random(3), filler=1)
    lines = path.read_bytes().splitlines(keepends=True)
    r = Redactor()
    out = [r.line(line) for line in lines]
    scrub_file(str(path))
    assert out == path.read_bytes().splitlines(keepends=True)[:-1]
    assert r.masked == json.loads(path.read_bytes().splitlines()[-1])["payload"]["masked"]


def test_a_masked_copy_is_the_scrubbed_file_without_its_record(tmp_path):
    """``Redactor.copy`` (what an export reads where there is something to mask) reads only
    the lines the byte scan keeps, and those whose digests follow a masked text."""
    import os

    path = tmp_path / "run.jsonl"
    secret_corpus.write_seeded(str(path), random.Random(5), filler=1)
    r = Redactor()
    fd = os.open(str(path), os.O_RDONLY)
    out = os.open(str(tmp_path / "copy.jsonl"), os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
    try:
        assert not r.clean(fd, 0, os.fstat(fd).st_size)
        r.copy(fd, os.fstat(fd).st_size, out)
    finally:
        os.close(fd)
        os.close(out)
    scrub_file(str(path))
    assert (tmp_path / "copy.jsonl").read_bytes().splitlines() == path.read_bytes().splitlines()[:-1]
    assert r.masked == json.loads(path.read_bytes().splitlines()[-1])["payload"]["masked"]


def test_the_clean_corpora_come_out_byte_for_byte(tmp_path):
    r = Redactor()
    for corpus in generate.CORPORA:
        path = tmp_path / f"{corpus}.jsonl"
        generate.generate(str(path), 1 << 19, seed=9, corpus=corpus)
        lines = path.read_bytes().splitlines(keepends=True)
        assert [r.line(x) for x in lines] == lines
        with open(path, "rb") as f:
            assert r.clean(f.fileno(), 0, len(b"".join(lines)))  # so a surface reads the file itself
        with Session.load(str(path)) as s:
            messages = [m.to_dict() for m in s.messages]
        assert all(r.value(m) is m for m in messages)
    assert r.masked == 0
