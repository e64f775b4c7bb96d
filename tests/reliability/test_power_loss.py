"""Power loss, simulated: images of a transcript the way an OS crash leaves them.

Everything up to the last fsync (a line boundary) is intact; each 4 KiB page after it
is kept, zeroed or junk, and the size the file system recorded may stop anywhere at or
after the fsync point, past the data too (zero-filled). Anything that loads must be a
prefix of the truth (no silent holes), and damage made of zero bytes must be named as a
probable power loss in the error.
"""

from __future__ import annotations

import json
import random

from llm_agent_session import CorruptTranscript, Session, TranscriptError
from tests.reliability.support import BACKENDS, LONG, line, record, using

COMMAND = "python tests/reliability/report.py"
IMAGES = 10_000 if LONG else 300
PAGE = 4096


def truth() -> bytes:
    rng = random.Random(7)
    lines = [line("meta", "session-meta", {"agent": "power"})]
    for i in range(160):
        text = "".join(rng.choice("abcdef ✓é\n\"\\") for _ in range(rng.randrange(20, 3000)))
        lines.append(line(f"m{i}", "message", {"role": "user" if i % 2 else "assistant", "content": text}))
    return b"".join(lines)


def image(data: bytes, rng: random.Random) -> tuple:
    boundaries = [i + 1 for i, b in enumerate(data) if b == 0x0A]
    synced = rng.choice(boundaries[: len(boundaries) - 1])
    size = rng.randrange(synced, len(data) + 2 * PAGE)
    padded = data + b"\0" * (size - len(data)) if size > len(data) else data[:size]
    zeros = junk = False
    page_start = synced - synced % PAGE
    out = bytearray(padded[:page_start])
    for start in range(page_start, size, PAGE):
        page = bytearray(padded[start : min(size, start + PAGE)])
        fate = rng.choice(("kept", "zeroed", "junk"))
        lo = max(0, synced - start)  # bytes before the fsync point are never damaged
        if fate == "zeroed":
            page[lo:] = b"\0" * (len(page) - lo)
            zeros = zeros or len(page) > lo
        elif fate == "junk":
            page[lo:] = bytes(rng.randrange(256) for _ in range(len(page) - lo))
            junk = junk or len(page) > lo
        out += page
    return bytes(out), zeros and not junk


def test_power_loss_images(tmp_path):
    data = truth()
    truth_ids = [json.loads(row)["id"] for row in data.splitlines()]
    rng = random.Random(2026)
    path = str(tmp_path / "image.jsonl")
    holes = outside = disagreements = loaded = zero_unnamed = zero_failed = 0
    problems = []
    for n in range(IMAGES):
        img, only_zeros = image(data, rng)
        seen = []
        for backend in BACKENDS:
            using(backend)
            with open(path, "wb") as f:
                f.write(img)
            try:
                with Session.load(path) as s:
                    ids = [e.id for e in s.events]
                seen.append(("ok", ids))
                loaded += 1
                if ids != truth_ids[: len(ids)]:
                    holes += 1
                    problems.append((n, backend, "not a prefix of the truth"))
            except TranscriptError as e:
                seen.append((type(e).__name__, getattr(e, "line", None)))
                if only_zeros and isinstance(e, CorruptTranscript):
                    zero_failed += 1
                    if "power loss" not in str(e):
                        zero_unnamed += 1
                        problems.append((n, backend, "zero damage not named as power loss", str(e)[:200]))
            except Exception as e:  # outside the spec
                outside += 1
                problems.append((n, backend, repr(e)))
        if len(set(map(repr, seen))) > 1:
            disagreements += 1
            problems.append((n, "backends disagree", seen))
    area = "Power loss, simulated"
    record(area, "images (x backends)", f"{IMAGES} x {len(BACKENDS)}", "10,000 in the long tier", COMMAND)
    record(area, "loads that are not a prefix of the truth (silent holes)", holes, "0", COMMAND)
    record(area, "images that loaded (after repairing a torn tail)", loaded, "reported", COMMAND)
    record(area, "refusals of all-zero damage not named as probable power loss", f"{zero_unnamed} of {zero_failed}", "0", COMMAND)
    record(area, "exceptions outside the spec", outside, "0", COMMAND)
    record(area, "native/pure disagreements", disagreements, "0", COMMAND)
    assert not problems, problems[:5]
