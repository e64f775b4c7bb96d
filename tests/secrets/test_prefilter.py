"""The byte scan keeps every line the matcher finds a secret in (so a scan's result is
the matcher's alone), and the two cores' scans keep exactly the same lines: on lines
made from the seeds' texts cut, escaped, split between text parts, base64-encoded and
nested in JSON strings, among the look-alikes of clean transcripts."""

from __future__ import annotations

import base64
import json
import random

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from benches import secret_corpus
from llm_agent_session import _backend
from llm_agent_session._pure.secrets import Prefilter
from llm_agent_session.secrets import BUILTIN, Fingerprints, Policy, load_rules
from llm_agent_session.secrets.match import Rules
from llm_agent_session.secrets.prefilter import spec_of
from llm_agent_session.secrets.scan import JSONL, TEXT, TRANSCRIPT, line_findings, prefilter

from tests.secrets.test_rules import CLEAN

FILLER = CLEAN + ["plain words", "ünïcode 日本語 ✅", "C:\\Users\\dev", "tab\there", "quote \" and \\ slash /",
                  "\u2028", "\x1b[31mred\x1b[0m"]


def _pieces(rng, seeds):
    seed = rng.choice(seeds)
    kind = rng.randrange(7)
    if kind == 0:
        return seed.text
    if kind == 1:  # cut somewhere: a prefix or a suffix of a seed
        cut = rng.randrange(len(seed.text) + 1)
        return seed.text[:cut] if rng.random() < 0.5 else seed.text[cut:]
    if kind == 2:  # right after what JSON escapes, or not
        return rng.choice(["", " ", "\n", "é", "\\", "\t"]) + base64.b64encode(seed.text.encode()).decode()
    if kind == 3:
        return json.dumps({"env": seed.text})
    if kind == 4:
        return rng.choice(FILLER)
    if kind == 5:
        return seed.secret
    name = rng.choice(["password", "api_key", "TOKEN", "secret"])
    return name + rng.choice(["=", ": ", '": "', "=>"]) + seed.secret


def make_line(rng, seeds):
    """A line: an envelope, a JSON value or text, holding pieces of seeds."""
    texts = ["".join(_pieces(rng, seeds) for _ in range(rng.randint(1, 3))) for _ in range(rng.randint(1, 3))]
    shape = rng.randrange(5)
    if shape == 0:  # split between text parts, at random places
        joined = "".join(texts)
        cuts = sorted(rng.sample(range(len(joined) + 1), min(2, len(joined) + 1)))
        parts = [joined[a:b] for a, b in zip([0] + cuts, cuts + [len(joined)])]
        content = [{"type": rng.choice(["text", "output_text"]), "text": p} for p in parts]
        value = {"id": "e1", "payload": {"role": "assistant", "content": content}, "ts": "t", "type": "message", "v": 1}
    elif shape == 1:
        value = {"id": "e2", "payload": {"call-id": "c", "tool": "bash", "arguments": {"cmd": texts[0], "api_key": texts[-1]}},
                 "ts": "t", "type": "tool-dispatched", "v": 1}
    elif shape == 2:
        value = {"type": "assistant", "message": {"content": [{"type": "tool_use", "input": {"command": texts[0]}}]}}
    elif shape == 3:
        value = {"tool_calls": [{"function": {"arguments": json.dumps({"cmd": t}), "name": "x"}} for t in texts]}
    else:
        return "\n".join(texts).replace("\n", " ").encode("utf-8", "surrogatepass"), TEXT
    text = json.dumps(value, ensure_ascii=rng.random() < 0.3, separators=rng.choice([(",", ":"), (", ", ": ")]))
    if rng.random() < 0.2:
        text = text.replace("/", "\\/")
    if rng.random() < 0.1:
        text = text.replace("A", "\\u0041", 1)
    fmt = TRANSCRIPT if shape in (0, 1) else JSONL
    return text.encode("utf-8", "surrogatepass"), fmt


def check(lines, rules, fingerprints):
    pure = Prefilter(spec_of(rules))
    native = prefilter(rules) if _backend.core.name == "native" else None
    for line, fmt in lines:
        if b"\n" in line:
            continue
        kept = pure.keeps(line)
        if native is not None:
            assert native.keeps(line) == kept, line
        found = line_findings(line, fmt, rules, fingerprints)[2]
        if found:
            assert kept, (line, found)


def test_the_scan_keeps_every_line_with_a_secret_and_the_cores_agree(rules, fingerprints, seeds):
    rng = random.Random(11)
    lines = [make_line(rng, seeds) for _ in range(400)]
    assert sum(1 for line, fmt in lines if line_findings(line, fmt, rules, fingerprints)[2]) > 150
    check(lines, rules, fingerprints)


def test_known_values_with_escaped_characters_keep_their_lines(fingerprints):
    policy = Policy(Rules(BUILTIN), values=["pässwörd-ünïcode", 'quote"and\\slash', "tab\tand\x1bcontrol"])
    lines = []
    for value in ("pässwörd-ünïcode", 'quote"and\\slash', "tab\tand\x1bcontrol"):
        for ensure_ascii in (False, True):
            lines.append((json.dumps({"x": f"the value {value} here"}, ensure_ascii=ensure_ascii).encode(), JSONL))
            lines.append((base64.b64encode(value.encode()) + b" in base64", TEXT))
    for line, fmt in lines:
        assert line_findings(line, fmt, policy.rules, fingerprints)[2], line
    check(lines, policy.rules, fingerprints)


def test_whole_buffers_give_the_lines_one_by_one_gives(rules, seeds):
    rng = random.Random(5)
    lines = [make_line(rng, seeds)[0] for _ in range(200)]
    buf = b"\n".join(lines) + b"\n\n   \n" + lines[0]
    expect, at = [], 0
    for line in buf.split(b"\n"):
        if Prefilter(spec_of(rules)).keeps(line):
            expect.append((at, at + len(line)))
        at += len(line) + 1
    assert Prefilter(spec_of(rules)).lines(buf) == expect
    assert prefilter(rules).lines(buf) == expect
    big = buf * (2 << 20 // len(buf) + 1)  # past the size read by two threads
    assert prefilter(rules).lines(big) == Prefilter(spec_of(rules)).lines(big)


@settings(max_examples=300, deadline=None, suppress_health_check=list(HealthCheck))
@given(st.randoms(use_true_random=False))
def test_hypothesis_the_scan_keeps_every_line_with_a_secret(rng):
    rules, fingerprints = load_rules(), Fingerprints(b"k" * 32)
    seeds = secret_corpus.seeds(random.Random(rng.randrange(1 << 30)))
    check([make_line(rng, seeds) for _ in range(5)], rules, fingerprints)


@settings(max_examples=300, deadline=None, suppress_health_check=list(HealthCheck))
@given(st.binary(max_size=300), st.sampled_from([t.keyword for t in spec_of(Rules(BUILTIN)).triggers]))
def test_hypothesis_the_cores_keep_the_same_bytes(data, keyword):
    if _backend.core.name != "native":
        pytest.skip("compares the native scan with the pure one")
    rules = Rules(BUILTIN)
    line = (data[: len(data) // 2] + keyword + data[len(data) // 2:]).replace(b"\n", b" ")
    assert prefilter(rules).keeps(line) == Prefilter(spec_of(rules)).keeps(line)
