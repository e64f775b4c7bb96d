"""Big transcripts, exported on each core: above every size threshold the export has, with
every line type there is, from two writers (``benches/generate.py``'s three corpora and
the library's own Session API), each equal to what the library says of the file.

The thresholds, each crossed here:

- ``rows.CHUNK``: the core's pass cuts its rows into runs of about this many bytes of
  lines (several runs here), and past ``2 * CHUNK`` the next run is made on a thread of
  its own while this one is written (``rows.read_ahead``);
- the Rust pass reads a range of 8 MiB or more in two threads (``rust/columns/lines.rs``);
- ``grow.GROW_MIN``: a transcript this big keeps what a later run needs to read only what
  it grew by; ``grow.GROW_MAX``: growth past it since the last whole export is exported
  whole again (the second test grows one a little, then past it);
- ``batches.ROW_GROUP_BYTES``: each transcript's messages hold more bytes than a row group.
"""

from __future__ import annotations

import os
import shutil
from typing import Any, Dict

import pytest

from benches.generate import BASE_MS, FleetStyle, generate
from llm_agent_session import Session, assistant_message, tool_message, user_message
from llm_agent_session.dataset import export, grow
from llm_agent_session.dataset.batches import ROW_GROUP_BYTES
from llm_agent_session.dataset.rows import CHUNK
from tests.support.big_transcripts import build
from tests.support.cli import call
from tests.support.dataset import agrees_with_library, grow_state, rows

#: The smallest size above every threshold: the cost of this module is in these bytes.
SIZE = 2 * CHUNK + (1 << 20)
#: The Rust pass's two-thread split (``SPLIT_MIN`` in rust/replay/stream.rs).
TWO_THREADS = 8 << 20

LINE_TYPES = {"session-meta", "message", "grants", "compaction", "elision", "rewind", "tool-dispatched",
              "tool-settled", "run-context", "import-checkpoint"}


@pytest.fixture(scope="module")
def src(tmp_path_factory: Any) -> Dict[str, str]:
    """SRC: generate.py's long run (realistic corpus, its fixed last turn), its fleet style
    with rewinds on the other two corpora (one crashed mid call: a pending operation; one
    resumed, then torn: a load cuts its last line), and the Session API's transcript with
    every line type (an import's checkpoint, lines of an unknown type)."""
    root = tmp_path_factory.mktemp("big")
    paths = {name: str(root / "src" / where) for name, where in (
        ("realistic", "generated/realistic.jsonl"), ("nonascii", "generated/nonascii.jsonl"),
        ("escapes", "generated/escapes.jsonl"), ("session-api", "built/session.jsonl"))}
    for path in paths.values():
        os.makedirs(os.path.dirname(path), exist_ok=True)
    generate(paths["realistic"], SIZE, seed=1)
    generate(paths["nonascii"], SIZE, seed=2, corpus="nonascii",
             style=FleetStyle("review-bot", "claude-bench", BASE_MS, ending="crash", rewinds=True))
    generate(paths["escapes"], SIZE, seed=3, corpus="escapes", torn=True,
             style=FleetStyle("ci-fixer", "local-bench", BASE_MS, ending="resumed", rewinds=True))
    build(paths["session-api"], SIZE)
    return paths


def test_big_transcripts_export_as_the_library_reads_them(src: Dict[str, str], tmp_path: Any,
                                                          backend_name: str) -> None:
    assert SIZE > 2 * CHUNK and SIZE > grow.GROW_MIN and SIZE > TWO_THREADS
    counts = {name: Session.peek(path, survey=True)["survey"]["counts"] for name, path in src.items()}
    assert LINE_TYPES | {"x-telemetry"} <= set(counts["session-api"])  # every type, one unknown
    assert {"rewind", "compaction", "elision", "grants"} <= set(counts["nonascii"]) & set(counts["escapes"])
    out = str(tmp_path / "out")
    report = export(os.path.dirname(os.path.dirname(src["realistic"])), out)
    assert report.count("exported") == len(src) and report.count("failed") == 0, report.files
    for name, path in src.items():
        assert os.path.getsize(path) >= SIZE
        row = agrees_with_library(out, path, str(tmp_path))
        assert row["verdict"] == ("torn-tail" if name == "escapes" else "clean")
        state = grow_state(out, path)
        assert (state is not None) == (name != "escapes"), name  # kept where it is clean
        [held] = rows(out, f"""SELECT sum(strlen(content)) + coalesce(sum(strlen(text)), 0) AS n
                               FROM messages WHERE session_id = '{row["session_id"]}'""")
        assert held["n"] > ROW_GROUP_BYTES, name
        assert row["pending_operations"] == {"nonascii": 1, "session-api": 2}.get(name, 0), name


def test_a_big_transcript_grown_a_little_then_past_grow_max(src: Dict[str, str], tmp_path: Any,
                                                            backend_name: str) -> None:
    path = str(tmp_path / "src" / "session.jsonl")
    os.makedirs(os.path.dirname(path))
    shutil.copyfile(src["session-api"], path)
    out = str(tmp_path / "out")
    export(os.path.dirname(path), out)
    first = grow_state(out, path)
    assert first is not None and first["base"] == first["size"] == os.path.getsize(path)
    agrees_with_library(out, path, str(tmp_path))
    # A little: the call answered before settles, a new turn; only these bytes are read.
    with Session.load(path) as s:
        recorded = [op for op in s.pending_tool_operations() if op.state == "result-recorded"]
        assert recorded
        s.append_tool_settled(recorded[0].op_id, "completed", duration=3.5)
        s.append_message(user_message("and now?"))
        s.append_message(assistant_message(None, [call("late_1", "grep", '{"q": "y"}')]))
        op = s.append_tool_dispatched("late_1", "grep", {"q": "y"})
        s.append_message(tool_message("late_1", "y: 2"))
        s.append_tool_settled(op, "failed", error="exit 2")
    export(os.path.dirname(path), out)
    grown = grow_state(out, path)
    assert grown is not None and grown["base"] == first["base"] and grown["size"] == os.path.getsize(path)
    agrees_with_library(out, path, str(tmp_path))
    # Past GROW_MAX: exported whole again.
    build(path, os.path.getsize(path) + grow.GROW_MAX + (1 << 20), seed=2)
    export(os.path.dirname(path), out)
    whole = grow_state(out, path)
    assert whole is not None and whole["base"] == whole["size"] == os.path.getsize(path)
    agrees_with_library(out, path, str(tmp_path))
