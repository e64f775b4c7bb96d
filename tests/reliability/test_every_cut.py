"""Every cut: the reference transcript truncated at every byte offset (long tier; a dense
sample in the fast tier), loaded, appended to and loaded again, on every backend."""

from __future__ import annotations

import pytest

from llm_agent_session import NotATranscript, Session, user_message
from tests.reliability.support import BACKENDS, LONG, line_spans, outcome, record, reference_transcript, using

COMMAND = "python tests/reliability/report.py"


def cuts(data: bytes) -> list:
    if LONG:
        return list(range(len(data) + 1))
    spans = line_spans(data)
    picked = set()
    for start, json_end, _ in spans:
        # Around every boundary densely, inside long lines sparsely.
        picked.update(range(start - 2, start + 16))
        picked.update(range(json_end - 16, json_end + 3))
        picked.update(range(start, json_end, 257))
    return sorted(c for c in picked if 0 <= c <= len(data))


def expected_ids(data: bytes, cut: int):
    """The ids a correct load of data[:cut] holds: every line whose JSON is complete."""
    spans = line_spans(data)
    kept = [id_ for start, json_end, id_ in spans if id_ is not None and json_end <= cut]
    first_end = spans[0][1]
    return None if cut < first_end else kept


@pytest.mark.parametrize("crlf", [False, True], ids=["lf", "crlf"])
def test_every_cut(tmp_path, crlf):
    data = reference_transcript(crlf=crlf)
    path = str(tmp_path / "cut.jsonl")
    offsets = cuts(data)
    wrong_prefix = outside_spec = append_failures = disagreements = 0
    failures = []
    for cut in offsets:
        want = expected_ids(data, cut)
        seen = {}
        for backend in BACKENDS:
            using(backend)
            with open(path, "wb") as f:
                f.write(data[:cut])
            try:
                got = outcome(path)
            except Exception as e:  # anything outside the spec's errors
                outside_spec += 1
                failures.append((cut, backend, repr(e)))
                continue
            seen[backend] = got
            if want is None:
                if got[0] != NotATranscript.__name__:
                    wrong_prefix += 1
                    failures.append((cut, backend, got))
                continue
            if got[0] != "ok" or got[1][0] != want:
                wrong_prefix += 1
                failures.append((cut, backend, got, want))
                continue
            try:
                with Session.load(path) as s:
                    new_id = s.append_message(user_message("after the cut"))
                with Session.load(path) as s:
                    assert [e.id for e in s.events] == want + [new_id]
                    assert s.warnings == []
            except Exception as e:
                append_failures += 1
                failures.append((cut, backend, "append", repr(e)))
        if len(set(map(repr, seen.values()))) > 1:
            disagreements += 1
            failures.append((cut, "disagree", seen))
    area = f"Every cut ({'CRLF' if crlf else 'LF'})"
    record(area, "cuts tried (x backends)", f"{len(offsets)} x {len(BACKENDS)}", "every byte offset (long tier)", COMMAND)
    record(area, "wrong prefix", wrong_prefix, "0", COMMAND)
    record(area, "exceptions outside the spec", outside_spec, "0", COMMAND)
    record(area, "post-repair append failures", append_failures, "0", COMMAND)
    record(area, "native/pure disagreements", disagreements, "0", COMMAND)
    assert not failures, failures[:5]
