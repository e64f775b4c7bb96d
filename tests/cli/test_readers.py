"""Issue #25, "what every reader shows", on the command line and in the exports: times are
the envelopes' own ``ts`` (an imported record's is the source's), tool durations come
from the dispatch and settle times where no duration was recorded, a token count that is
not recorded is unknown (``?``), never 0, a failed tool result is marked failed, extras
are collapsed unless asked for and a shortened tool result is never repeated in full
through one, and ``export --all`` is the whole history in file order, marked.

The commands run in this process (``cli.main``, on the backend under test) to keep the
inner loop quick; tests/cli/test_cli.py runs them as real processes."""

from __future__ import annotations

import contextlib
import io
import json
import re
from typing import Any, Dict, List, Tuple

import pytest

from llm_agent_session import Session
from llm_agent_session.canonical import dumps, envelope_line
from llm_agent_session.cli import main

from tests.support.cli import declared_exit_codes

IMPORTED_AT = "2026-12-02T09:00:00.500000Z"  # the import's own time: only its checkpoint carries it
RESULT = "".join(f"FAILED test_{i:04d}\n" for i in range(400)) + "END-OF-RESULT"
SIGNATURE = "SIG-" + "x" * 300


def run(*argv: str) -> Tuple[int, str, str]:
    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        code = main(list(argv))
    assert code in declared_exit_codes()[argv[0]], (argv, code)
    return code, out.getvalue(), err.getvalue()


def write_lines(path: str, lines: List[Tuple[str, str, str, Dict[str, Any]]]) -> None:
    with open(path, "wb") as f:
        for id_, type_, ts, payload in lines:
            f.write(envelope_line(id_, type_, ts, dumps(payload)))


@pytest.fixture
def imported(tmp_path) -> str:
    """A transcript as the importers write it: each envelope's ts is the source record's time."""
    path = str(tmp_path / "imported.jsonl")
    call = {"id": "call_1", "type": "function", "function": {"name": "bash", "arguments": '{"cmd": "pytest"}'}}
    call2 = {"id": "call_2", "type": "function", "function": {"name": "bash", "arguments": '{"cmd": "git diff"}'}}
    write_lines(path, [
        ("meta", "session-meta", IMPORTED_AT, {"source": {"format": "claude-code"}}),
        ("u1", "message", "2025-03-01T10:00:00.000000Z", {"role": "user", "content": "Find the failing test.",
                                                          "source-uuid": "uuid-u1"}),
        ("a1", "message", "2025-03-01T10:00:01.000000Z", {
            "role": "assistant", "content": "Running them.", "tool_calls": [call],
            "usage": {"input_tokens": 1200, "output_tokens": 30},
            "thinking": [{"type": "thinking", "thinking": "run pytest", "signature": SIGNATURE}],
            "source-uuids": ["uuid-a1a", "uuid-a1b"],
        }),
        ("op1", "tool-dispatched", "2025-03-01T10:00:01.000000Z", {
            "call-id": "call_1", "tool": "bash", "arguments": {"cmd": "pytest"}, "arguments-digest": "sha256:00",
            "idempotency": None, "run-id": None, "round": None}),
        ("t1", "message", "2025-03-01T10:00:04.500000Z", {
            "role": "tool", "tool_call_id": "call_1", "content": RESULT,
            "tool-use-result": {"stdout": RESULT, "interrupted": False}}),
        ("s1", "tool-settled", "2025-03-01T10:00:04.500000Z", {"op-id": "op1", "outcome": "failed"}),
        ("c1", "compaction", "2025-03-01T10:05:00.000000Z", {
            "summary": "SUMMARY: the user wants the failing test found.", "replaces-through-id": "u1",
            "tokens-before": 167094, "tokens-after": None, "fallback": False}),
        ("a2", "message", "2025-03-01T10:06:00.000000Z", {"role": "assistant", "content": None, "tool_calls": [call2]}),
        ("op2", "tool-dispatched", "2025-03-01T10:06:00.000000Z", {
            "call-id": "call_2", "tool": "bash", "arguments": {"cmd": "git diff"}, "arguments-digest": "sha256:01",
            "idempotency": None, "run-id": None, "round": None}),
        ("ck", "import-checkpoint", IMPORTED_AT, {"format": "claude-code", "bytes": 1234}),
    ])
    return path


def test_show_times_failed_mark_unknown_tokens_and_collapsed_extras(imported):
    code, out, _ = run("show", imported, "--max-chars", "200")
    assert code == 0
    [head] = [line for line in out.splitlines() if line.startswith("── tool")]
    assert "· failed" in head and head.endswith("t1  2025-03-01T10:00:04.500000Z")
    assert "2026-12-02" not in out  # the import's own time is nowhere in the conversation
    assert "167,094 → ? tokens" in out and "→ 0 tokens" not in out
    assert "extras: source-uuids, thinking, usage (--extras shows them)" in out
    assert "extras: tool-use-result (--extras shows them)" in out
    assert SIGNATURE not in out and "input_tokens" not in out and "END-OF-RESULT" not in out
    assert "pending tool operation op2: bash [call_2] is dispatched (dispatched at 2025-03-01T10:06:00.000000Z)" in out

    code, out, _ = run("show", imported, "--extras", "--max-chars", "200")
    assert '"input_tokens": 1200' in out and "uuid-a1b" in out and "SIG-xxx" in out
    # The shortened result is not printed again through the source's copy of it.
    assert "END-OF-RESULT" not in out and "tool-use-result = " in out
    code, out, _ = run("show", imported, "--extras", "--full")
    assert out.count("END-OF-RESULT") == 2 and SIGNATURE in out


def test_stats_durations_from_ts_and_unknown_token_totals(imported):
    code, out, _ = run("stats", imported, "--json")
    report = json.loads(out)
    bash = report["tools"]["bash"]
    assert bash["outcomes"] == {"failed": 1, "pending": 1}
    assert bash["median_duration"] == pytest.approx(3.5)  # settle ts - dispatch ts: no duration was recorded
    assert report["compactions"]["tokens_before"] == 167094 and report["compactions"]["tokens_after"] is None
    code, out, _ = run("stats", imported)
    assert "167,094 → ? tokens" in out and "3.50 s" in out
    code, out, _ = run("export", imported, "--format", "markdown", "--all")
    assert "bash [call_1]: failed, result t1, settled at 2025-03-01T10:00:04.500000Z after 3.50 s" in out


def test_tail_shows_the_source_times(imported):
    code, out, _ = run("tail", imported, "-n", "20")
    assert "10:00:04.500 tool-settled" in out
    assert "through u1: 167,094 → ? tokens" in out


@pytest.mark.parametrize("fmt", ["markdown", "html"])
def test_exports_mark_failed_results_unknown_tokens_times_and_extras(imported, fmt):
    code, out, _ = run("export", imported, "--format", fmt, "--max-chars", "200")
    assert code == 0
    assert "167,094 → ? tokens" in out and "→ 0 tokens" not in out
    assert "from `2025-03-01T10:00:01.000000Z` to `2025-03-01T10:06:00.000000Z`" in out if fmt == "markdown" \
        else "from 2025-03-01T10:00:01.000000Z to 2025-03-01T10:06:00.000000Z" in out
    assert ("· **failed**" in out) if fmt == "markdown" else ('<span class="note failed-note">failed</span>' in out)
    assert "dispatched at" in out and "2025-03-01T10:06:00.000000Z" in out
    assert "2026-12-02" not in out  # the import's own time is only in its checkpoint
    assert "END-OF-RESULT" not in out  # neither in the result nor in its tool-use-result extra
    assert "extras: " in out and '\\"input_tokens\\"' not in out


def history_fixture(transcript) -> Tuple[str, Dict[str, str]]:
    """The every-line transcript of tests.support.cli, then a rewind that cuts its last message."""
    ids = dict(transcript.ids)
    with Session.load(transcript.path) as s:
        ids["rewind"] = s.append_rewind(ids["t4"])
    return transcript.path, ids


def file_ids(path: str) -> List[str]:
    with open(path, "rb") as f:
        return [json.loads(line)["id"] for line in f.read().splitlines()]


def test_export_all_is_the_whole_history_in_file_order_marked(transcript):
    path, ids = history_fixture(transcript)
    code, live, _ = run("export", path, "--format", "markdown")
    assert "Please fix the date parser" not in live and "SECRET-BUILD-LOG" not in live  # live: unchanged
    code, md, _ = run("export", path, "--format", "markdown", "--all", "--max-chars", "500")
    assert code == 0
    every = file_ids(path)[1:]  # the meta is the header
    assert re.findall(r"\*line [\d,]+\* `([^`]+)`", md) == every
    assert "Please fix the date parser" in md and f"Compacted by `{ids['compaction']}`" in md
    assert "Thanks — ship it" in md and f"Rewound by `{ids['rewind']}`" in md
    assert "SECRET-BUILD-LOG" in md and "stub sent instead:" in md and "[elided: 3,400 chars of build log]" in md
    assert "## tool ← `call_2` · **failed**" in md
    assert "replaced 5 message(s) of the conversation with this summary" in md
    assert "it may or may not have run" in md  # call_5: dispatched, never answered

    code, page, _ = run("export", path, "--format", "html", "--all")
    assert re.findall(r' id="m-([^"]+)"', page) == every
    assert page.count('class="note compacted-note"') == 5 and page.count('class="note rewound-note"') == 1


def test_export_all_reads_a_file_load_refuses(tmp_path):
    path = str(tmp_path / "dangling.jsonl")
    write_lines(path, [
        ("meta", "session-meta", "2025-01-01T00:00:00.000000Z", {}),
        ("m1", "message", "2025-01-01T00:00:01.000000Z", {"role": "user", "content": "KEPT"}),
        ("c1", "compaction", "2025-01-01T00:00:02.000000Z", {"summary": "S", "replaces-through-id": "nope",
                                                             "tokens-before": 1, "tokens-after": 1}),
    ])
    assert run("export", path, "--format", "markdown")[0] == 1  # the live conversation needs a load
    code, md, _ = run("export", path, "--format", "markdown", "--all")
    assert code == 0 and "KEPT" in md and "not applied" in md and "names no message in the live conversation" in md
    assert "1 line(s) a load would refuse" in md
