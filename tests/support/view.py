"""Helpers for the viewer's tests: transcripts with every kind of line, and the application
in process (Starlette's TestClient: no socket, the Host header set per request)."""

from __future__ import annotations

import json
import os
import sys
from dataclasses import dataclass
from typing import Dict, Optional, Tuple

from tests.support.cli import build_transcript  # noqa: E402

from llm_agent_session import Session, user_message  # noqa: E402

PORT = 8731
TOKEN = "t0ken-for-tests"


@dataclass
class Shelf:
    root: str  # a directory PATH
    run: str  # its transcript with every line type
    ids: Dict[str, str]


def build_shelf(root: str) -> Shelf:
    """A directory with the command line's every-line-type transcript (plus a rewind), a
    second transcript in a subdirectory, and files that are not transcripts."""
    os.makedirs(os.path.join(root, "sub"), exist_ok=True)
    t = build_transcript(os.path.join(root, "run.jsonl"))
    ids = dict(t.ids)
    with Session.load(t.path) as s:
        ids["oops"] = s.append_message(user_message("OOPS-REWOUND: a message taken back"))
        ids["rewind"] = s.append_rewind(ids["user_last"])
    with Session.create(os.path.join(root, "sub", "other.jsonl"), {"title": "the other one"}) as s:
        s.append_message(user_message("hello from the other transcript"))
    with open(os.path.join(root, "notes.jsonl"), "w") as f:
        f.write('{"not": "a transcript"}\n')
    with open(os.path.join(root, "readme.txt"), "w") as f:
        f.write("not a transcript either\n")
    return Shelf(root, t.path, ids)


def verdict_cases(root: str, run: str, suffix: str = "") -> Dict[str, Tuple[int, str]]:
    """A torn and a failing copy of the transcript `run` beside it (and the directory's
    notes.jsonl, no transcript): each name with load's verdict, its code and the shelf's words."""
    with open(run, "rb") as f:
        whole = f.read()
    label = os.path.basename(root)
    with open(os.path.join(root, f"torn{suffix}.jsonl"), "wb") as f:
        f.write(whole + b'{"id":"torn')
    with open(os.path.join(root, f"failing{suffix}.jsonl"), "wb") as f:
        f.write(whole + whole.split(b"\n")[1] + b"\n")  # an id again: only a replay refuses it
    return {f"{label}/{os.path.basename(run)}": (0, "clean"), f"{label}/torn{suffix}.jsonl": (4, "torn tail"),
            f"{label}/failing{suffix}.jsonl": (5, "would fail"), f"{label}/notes.jsonl": (3, "not a transcript")}


def client_for(paths, host: str = f"127.0.0.1:{PORT}", token: Optional[str] = TOKEN, import_workers: int = 0):
    """Starlette's TestClient on the viewer of `paths`, as if reached at `host`, sending
    `token` as the page does (None: no token). Sources are imported in this process
    (`import_workers` 0), on the backend under test, unless asked otherwise."""
    from starlette.testclient import TestClient

    from llm_agent_session.view.app import app
    from llm_agent_session.view.model import Viewer
    from llm_agent_session.view.security import resolve_policy
    from llm_agent_session.view.shelf import Roots

    policy = resolve_policy("127.0.0.1", PORT, TOKEN)
    headers = {"authorization": f"Bearer {token}"} if token is not None else {}
    return TestClient(app(Viewer(Roots(paths), import_workers=import_workers), policy), base_url=f"http://{host}",
                      follow_redirects=False, headers=headers)


@dataclass
class Sources:
    """Claude Code and Codex sessions as their tools lay them out (tests/support/import_fixtures.py's
    lines), and a folder of transcripts beside them."""

    projects: str  # ~/.claude/projects
    sessions: str  # ~/.codex/sessions
    transcripts: str
    claude: str  # a session with a subagent
    subagent: str
    sidechained: str  # a session with a sidechain in its own file
    rollout: str


def build_sources(root: str) -> Sources:
    from tests.support import import_fixtures as fx

    projects, sessions = os.path.join(root, "projects"), os.path.join(root, "sessions")
    project = os.path.join(projects, "-home-dev-proj")
    found = Sources(
        projects, sessions, os.path.join(root, "transcripts"),
        fx.write(os.path.join(project, "sess-1.jsonl"), fx.claude_code_session()),
        fx.write(os.path.join(project, "sess-1", "subagents", "agent-a1b2.jsonl"), fx.claude_code_subagent()),
        fx.write(os.path.join(project, "sess-2.jsonl"), fx.claude_code_with_sidechain()),
        fx.write(os.path.join(sessions, "2025", "09", "10", "rollout-2025-09-10T12-00-00-0199.jsonl"), fx.codex_rollout()),
    )
    with Session.create(os.path.join(found.transcripts, "run.jsonl"), {"title": "a transcript of my own"}) as s:
        s.append_message(user_message("hello from a transcript"))
    return found


# A Markdown table with every alignment (markdown-it writes it as inline style).
ALIGNED_TABLE = "| left | centre | right | none |\n|:--|:-:|--:|---|\n| 1 | 2 | 3 | 4 |\n"

# Outcomes a settle's line may name that are none of the known ones: each would spoof a
# badge's classes if its text became them.
SPOOFED_OUTCOMES = ["failed x-spoof", "completed pending", "state-completed", " failed", "failed\u202e", "<b>failed</b>"]


def write_spoofed_outcomes(path: str) -> None:
    """A transcript whose first settle is a real `failed` and the others name one of
    SPOOFED_OUTCOMES (written over the line: Session refuses them, a file may hold anything)."""
    with Session.create(path, {"title": "spoofed outcomes"}) as s:
        for k in range(len(SPOOFED_OUTCOMES) + 1):
            op = s.append_tool_dispatched(f"call_{k}", "bash", "{}")
            s.append_tool_settled(op, "failed")
    with open(path) as f:
        lines = [json.loads(line) for line in f]
    settles = [line for line in lines if line["type"] == "tool-settled"]
    for line, outcome in zip(settles[1:], SPOOFED_OUTCOMES):
        line["payload"]["outcome"] = outcome
    with open(path, "w") as f:
        f.writelines(json.dumps(line, separators=(",", ":"), sort_keys=True, ensure_ascii=False) + "\n" for line in lines)


@dataclass
class Imported:
    """Transcripts imported from the importers' fixtures (the real line shapes of Claude
    Code and Codex), under one directory PATH."""

    root: str
    session: str  # Claude Code: tool calls (one failed, one pending), thinking, a compaction, 4 checkpoints at its end
    subagent: str  # its subagent, in <stem>/subagents/
    sidechained: str  # an older session whose subagent was a sidechain in the same file
    sidechain: str  # that sidechain, in <stem>/sidechains/
    lonely: str  # a copy of the subagent whose parent is not on the shelf
    codex: str  # a Codex rollout: function, custom and local-shell calls, reasoning


def build_imported(root: str, sources: str) -> Imported:
    """Claude Code's project (a session with a subagent, a session with a sidechain) and
    a Codex rollout, written as their tools write them under `sources` and imported under
    `root` (`root/claude`, `root/codex`), plus a subagent copied where its parent is not."""
    import shutil
    from tests.support import import_fixtures as fixtures

    from llm_agent_session.importers import claude_code, codex

    project = os.path.join(sources, "claude", "-home-dev-proj")
    fixtures.write(os.path.join(project, "sess-1.jsonl"), fixtures.claude_code_session())
    fixtures.write(os.path.join(project, "sess-1", "subagents", "agent-a1b2.jsonl"), fixtures.claude_code_subagent())
    fixtures.write(os.path.join(project, "side.jsonl"), fixtures.claude_code_with_sidechain())
    rollout = os.path.join(sources, "codex", "2025", "09", "10", "rollout-2025-09-10T12-00-00-0199-sess.jsonl")
    fixtures.write(rollout, fixtures.codex_rollout())
    for report in claude_code.import_tree(os.path.join(sources, "claude"), os.path.join(root, "claude")):
        assert report["status"] == "imported", report
    for report in codex.import_tree(os.path.join(sources, "codex"), os.path.join(root, "codex")):
        assert report["status"] == "imported", report
    # Three imports more of the session, each after Claude Code wrote only a progress line
    # (nothing of the conversation): four import checkpoints side by side at its end.
    for k in range(3):
        with open(os.path.join(project, "sess-1.jsonl"), "a") as f:
            f.write(json.dumps({"type": "progress", "uuid": f"p-{k}", "parentUuid": "a9", "data": {"type": "bash_progress"},
                                "timestamp": f"2025-08-20T09:01:0{k}.000Z"}) + "\n")
        for report in claude_code.import_tree(os.path.join(sources, "claude"), os.path.join(root, "claude")):
            assert report["status"] in ("appended", "unchanged"), report
    out = os.path.join(root, "claude", "-home-dev-proj")
    lonely = os.path.join(root, "lonely", "sess-9", "subagents", "agent-a1b2.jsonl")
    os.makedirs(os.path.dirname(lonely))
    shutil.copyfile(os.path.join(out, "sess-1", "subagents", "agent-a1b2.jsonl"), lonely)
    return Imported(root, os.path.join(out, "sess-1.jsonl"), os.path.join(out, "sess-1", "subagents", "agent-a1b2.jsonl"),
                    os.path.join(out, "side.jsonl"), os.path.join(out, "side", "sidechains", "s1.jsonl"), lonely,
                    os.path.join(root, "codex", "2025", "09", "10", "rollout-2025-09-10T12-00-00-0199-sess.jsonl"))
