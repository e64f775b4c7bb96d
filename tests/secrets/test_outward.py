"""Every outward surface masks by default: each export format (and OTLP, written and as
the library makes it) of a seeded transcript holds none of its secrets, and all of them
with ``--no-redact``; the count is said; the files are private (0600) unless
``--shared``; and a clean transcript comes out byte for byte as ``--no-redact`` writes it
(over-redaction is a bug too)."""

from __future__ import annotations

import contextlib
import io
import os
import random
import re
import stat

import pytest

from benches import generate
from benches import secret_corpus
from llm_agent_session import otlp
from llm_agent_session.cli import main
from llm_agent_session.secrets import Redactor

from tests.secrets.test_policy import forms, on_disk
from tests.test_otlp import receiver  # noqa: F401  (a fixture: a collector on a loopback port)

#: Every export: the format and its options (html and markdown whole too; otlp with and
#: without the messages).
EXPORTS = [("html", ()), ("html", ("--all",)), ("markdown", ()), ("markdown", ("--all",)), ("openai", ()),
           ("otlp", ("--content",)), ("otlp", ())]


def run(*argv: str):
    """``main(argv)`` in this process, on the core under test: (exit code, stderr)."""
    err = io.StringIO()
    with contextlib.redirect_stderr(err), contextlib.redirect_stdout(io.StringIO()):
        code = main(list(argv))
    return code, err.getvalue()


def export(src, out, fmt, options, *flags):
    code, err = run("export", str(src), "--format", fmt, "-o", str(out), *options, *flags)
    assert code == 0, err
    return err


@pytest.fixture(scope="module")
def seeded(tmp_path_factory):
    path = tmp_path_factory.mktemp("seeded") / "run.jsonl"
    placed = secret_corpus.write_seeded(str(path), random.Random(4), filler=0)
    return path, {p.seed.secret for p, _ in placed}, len(placed)


@pytest.mark.parametrize("fmt,options", EXPORTS, ids=[f + "".join(o) for f, o in EXPORTS])
def test_an_export_holds_no_seeded_secret_unless_told(tmp_path, seeded, fmt, options):
    path, secrets, _ = seeded
    masked, kept = tmp_path / "masked", tmp_path / "kept"
    said = export(path, masked, fmt, options)
    assert on_disk(masked.parent, secrets) == set()
    n = int(re.search(r"masked ([\d,]+) secrets", said).group(1).replace(",", ""))
    assert n >= len(secrets) and "--no-redact keeps them" in said
    said = export(path, kept, fmt, options, "--no-redact")
    assert "masked" not in said
    found = on_disk(kept.parent, secrets)
    if fmt == "otlp" and not options:
        assert found == set()  # no --content: no message in the spans, either way
    else:
        assert found == secrets
    for out in (masked, kept):
        assert stat.S_IMODE(os.stat(out).st_mode) == 0o600


def test_shared_writes_as_the_umask_allows(tmp_path, seeded):
    path = seeded[0]
    old = os.umask(0o022)
    try:
        export(path, tmp_path / "page.html", "html", (), "--shared")
        export(path, tmp_path / "spans.jsonl", "otlp", (), "--shared")
    finally:
        os.umask(old)
    assert stat.S_IMODE(os.stat(tmp_path / "page.html").st_mode) == 0o644
    assert stat.S_IMODE(os.stat(tmp_path / "spans.jsonl").st_mode) == 0o644


def test_the_library_trace_is_masked_and_counts(tmp_path, seeded):
    path, secrets, _ = seeded
    def held(trace):
        data = "".join(trace.lines()).encode()
        return {s for s in secrets if any(f in data for f in forms(s))}

    trace = otlp.trace(path, content=True)
    assert trace.masked >= len(secrets) and held(trace) == set()
    kept = otlp.trace(path, content=True, redact=False)
    assert kept.masked == 0 and held(kept) == secrets
    mine = Redactor()
    assert otlp.trace(path, redact=mine).masked == mine.masked == trace.masked


def test_a_transcript_grown_by_a_secret_while_it_is_read_is_read_again_masked(tmp_path, seeds):
    path = tmp_path / "run.jsonl"
    generate.generate(str(path), 1 << 16, seed=5)
    secret = next(s.secret for s in seeds if s.rule == "aws-access-key-id")
    redactor = Redactor()

    def reader(readable):
        data = open(readable, "rb").read()
        if readable == str(path) and secret.encode() not in data:
            with open(path, "ab") as f:  # a writer appends while it is read
                f.write(b'{"not": "an envelope", "text": "export TOKEN=' + secret.encode() + b'"}\n')
        return data

    got = redactor.read(str(path), reader)
    assert secret.encode() not in got and redactor.masked == 1


#: Clean corpora of several seeds and sizes (the slow tier: about 3 s each on a core).
CLEAN = [("realistic", 1 << 20, 1), ("realistic", 3 << 20, 2), ("nonascii", 1 << 20, 3), ("escapes", 1 << 20, 4)]


def test_a_clean_transcript_comes_out_as_no_redact_writes_it(tmp_path):
    assert_same_either_way(tmp_path, "realistic", 1 << 18, 5)


@pytest.mark.parametrize("corpus,size,seed", CLEAN)
def test_clean_corpora_come_out_as_no_redact_writes_them(tmp_path, corpus, size, seed):
    assert_same_either_way(tmp_path, corpus, size, seed)


def assert_same_either_way(tmp_path, corpus, size, seed):
    path = tmp_path / "clean.jsonl"
    generate.generate(str(path), size, seed=seed, corpus=corpus)
    for fmt, options in EXPORTS:
        a, b = tmp_path / f"{fmt}{''.join(options)}.default", tmp_path / f"{fmt}{''.join(options)}.kept"
        said = export(path, a, fmt, options)
        assert "masked 0 secrets" in said, said
        export(path, b, fmt, options, "--no-redact")
        assert a.read_bytes() == b.read_bytes(), (fmt, options)


def test_what_is_sent_to_a_collector_holds_no_seeded_secret_unless_told(seeded, receiver):
    path, secrets, _ = seeded
    url, handler = receiver
    said = run("export", str(path), "--format", "otlp", "--content", "--endpoint", url)[1]
    assert "masked" in said and "sent" in said
    sent = b"".join(body for _, _, body in handler.received)
    assert sent and not {s for s in secrets if any(f in sent for f in forms(s))}
    handler.received.clear()
    run("export", str(path), "--format", "otlp", "--content", "--endpoint", url, "--no-redact")
    sent = b"".join(body for _, _, body in handler.received)
    assert {s for s in secrets if any(f in sent for f in forms(s))} == secrets
