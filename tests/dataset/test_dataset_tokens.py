"""Token usage, exact (issue #35, item 3): a Claude Code project and a tree of Codex rollouts
in the sources' real line shapes, imported, then read by every surface that shows usage
(``stats --json``, the dataset's ``sessions`` and ``messages``, ``llm_agent_session.usage``),
each held to a ground truth computed from the sources themselves, keyed by the unique
response ids: Claude Code writes one line per streamed content block, each repeating the
response's ``message.id`` and ``usage`` (only the last line's ``output_tokens`` final), and
a continued session starts with a copy of its predecessor's lines; Codex writes a
``token_count`` after each response, and repeats one when only its rate limits change. The
naive sum over the source lines is shown to overcount, so the tests can fail. On both
cores (the importers, the dataset pass and ``stats`` run in this process)."""

from __future__ import annotations

import json
import os
from typing import Any, Dict, Iterable, List, Optional, Tuple

from tests.support import import_fixtures as fx
from tests.support.import_fixtures import cc_assistant, cc_usage, cc_user, cx, cx_msg, cx_tokens, jsonl, tool_result, tool_use

from llm_agent_session import UsageTotals, usage
from llm_agent_session.cli import main as cli_main
from llm_agent_session.dataset import export, query
from llm_agent_session.importers import claude_code, codex

Figures = Tuple[Optional[int], Optional[int], Optional[int], Optional[int]]


# -- the sources ---------------------------------------------------------------------------------


class Lines:
    """Claude Code lines of one file, each parented on the last (a conversation without forks)."""

    def __init__(self, session: str, minute: int, side: bool = False, prefix: str = "") -> None:
        self.recs: List[Dict[str, Any]] = []
        self.last: Optional[str] = None
        self.session, self.minute, self.side, self.n = session, minute, side, 0
        self.prefix = prefix or session

    def _next(self) -> Tuple[str, str]:
        self.n += 1
        return f"{self.prefix}-u{self.n}", f"2025-10-01T08:{self.minute:02d}:{self.n:02d}.000Z"

    def _add(self, rec: Dict[str, Any]) -> None:
        rec["sessionId"] = self.session
        if self.side:
            rec["isSidechain"] = True
        self.recs.append(rec)
        self.last = rec["uuid"]

    def user(self, content: Any, **kw: Any) -> None:
        uuid, ts = self._next()
        self._add(cc_user(uuid, self.last, content, ts, **kw))

    def response(self, mid: str, blocks: List[Dict[str, Any]], output: int, input_: int, read: int, write: int) -> None:
        """One response streamed a content block per line: every line repeats the id and the
        usage, the output count not final until the last line."""
        for i, block in enumerate(blocks):
            uuid, ts = self._next()
            rec = cc_assistant(uuid, self.last, mid, block, ts)
            last = i == len(blocks) - 1
            rec["message"]["usage"] = cc_usage(output if last else 1 + i, input_, read, write)
            rec["message"]["stop_reason"] = "tool_use" if last and block["type"] == "tool_use" else None
            self._add(rec)

    def text(self) -> str:
        return jsonl(self.recs)


def claude_project(root: str) -> Dict[str, str]:
    """~/.claude/projects/<project>/: two sessions, the second with a sidechain (older
    Claude Code's subagent, in the same file) and a subagent file; a third session continued
    from the first (its lines copied first, as Claude Code does); every response streamed
    over several lines. The source files by name."""
    think = {"type": "thinking", "thinking": "Let me look.", "signature": "sig"}

    def say(text: str) -> Dict[str, Any]:
        return {"type": "text", "text": text}

    first = Lines("sess-a", 0)
    first.user("fix the date parser")
    first.response("msg_a1", [think, say("Reading it."), tool_use("toolu_a1", "Read", {"file_path": "dates.py"}),
                              tool_use("toolu_a2", "Bash", {"command": "pytest -x"})], 211, 3, 61608, 1024)
    first.user([tool_result("toolu_a1", "def parse(s): ..."), tool_result("toolu_a2", "1 failed", is_error=True)])
    first.response("msg_a2", [think, say("Found it: the month comes first.")], 87, 5, 62900, 700)
    first.user("thanks")
    first.response("msg_a3", [say("You are welcome.")], 9, 2, 63600, 0)

    second = Lines("sess-b", 10)
    second.user("review the repo")
    second.response("msg_b1", [say("I will ask a subagent."), tool_use("toolu_task", "Task", {"prompt": "Review it"})],
                    140, 4, 20000, 5000)
    side = Lines("sess-b", 20, side=True, prefix="sess-b-side")
    side.user("Review it")
    side.response("msg_s1", [think, tool_use("toolu_grep", "Grep", {"pattern": "TODO"})], 60, 8, 0, 9000)
    side.user([tool_result("toolu_grep", "3 matches")])
    side.response("msg_s2", [say("Found 3 TODOs.")], 15, 2, 9000, 120)
    second.recs.extend(side.recs)  # the sidechain's lines in the session's own file
    second.user([tool_result("toolu_task", "Found 3 TODOs.")])
    second.response("msg_b2", [think, say("The review found 3 TODOs.")], 33, 6, 25000, 300)

    agent = Lines("sess-b", 30, side=True, prefix="agent-a1b2")
    agent.user("Count the TODOs", agentId="a1b2")
    agent.response("msg_x1", [think, say("3")], 5, 10, 0, 4000)

    third = Lines("sess-c", 40)
    for rec in first.recs:  # a continued session starts with its predecessor's lines
        third._add(dict(rec, sessionId="sess-c"))
    third.user("and add a test")
    third.response("msg_c1", [say("Adding one."), tool_use("toolu_c1", "Write", {"file_path": "test_dates.py"})],
                   420, 7, 64000, 2048)
    third.user([tool_result("toolu_c1", "written")])
    third.response("msg_c2", [say("Done.")], 4, 2, 66000, 0)

    project = os.path.join(root, "-home-dev-proj")
    files = {"sess-a.jsonl": first.text(), "sess-b.jsonl": second.text(), "sess-c.jsonl": third.text(),
             os.path.join("sess-b", "subagents", "agent-a1b2.jsonl"): agent.text()}
    return {name: fx.write(os.path.join(project, name), text) for name, text in files.items()}


def codex_rollouts(root: str) -> List[str]:
    """Two rollouts: each response's items, then its token_count (one repeated with only its
    rate limits changed, one before any response with no count at all)."""
    def call(name: str, call_id: str, second: int) -> Dict[str, Any]:
        return cx("response_item", {"type": "function_call", "name": name, "arguments": "{}", "call_id": call_id}, second)

    def output(call_id: str, second: int) -> Dict[str, Any]:
        return cx("response_item", {"type": "function_call_output", "call_id": call_id, "output": "ok"}, second)

    reasoning = cx("response_item", {"type": "reasoning", "summary": [], "content": None, "encrypted_content": "gA"}, 2)
    one = [
        cx("session_meta", {"id": "rollout-1", "cwd": "/home/dev/proj"}, 0),
        cx("event_msg", {"type": "token_count", "info": None, "rate_limits": {"primary": {"used_percent": 1.0}}}, 0),
        cx_msg("user", "list the files", 1),
        reasoning, call("shell", "c1", 2), call("shell", "c2", 2),
        cx_tokens(last=(5000, 4096, 90, 64), total=(5000, 4096, 90, 64), second=3),
        output("c1", 4), output("c2", 4),
        cx_msg("assistant", "Two files.", 5),
        cx_tokens(last=(5300, 4992, 20, 0), total=(10300, 9088, 110, 64), second=5),
        cx_tokens(last=(5300, 4992, 20, 0), total=(10300, 9088, 110, 64), second=6, used=3.0),  # rate limits only
        cx("event_msg", {"type": "task_complete"}, 6),
        cx_msg("user", "and the tests?", 7),
        cx_msg("assistant", "Running them.", 8),  # one response: a message, then a call
        call("shell", "c3", 8),
        cx_tokens(last=(5600, 5248, 140, 100), total=(15900, 14336, 250, 164), second=9),
        output("c3", 10),
        cx_msg("assistant", "They pass.", 11),
        cx_tokens(last=(5800, 5632, 12, 0), total=(21700, 19968, 262, 164), second=11),
    ]
    two = [
        cx("session_meta", {"id": "rollout-2", "cwd": "/home/dev/other"}, 0),
        cx_msg("user", "hello", 1),
        cx_msg("assistant", "Hi.", 2),
        cx_tokens(last=(3000, 0, 3, 0), total=(3000, 0, 3, 0), second=2),
        cx_msg("user", "bye", 3),
        cx_msg("assistant", "Bye.", 4),
        cx_tokens(last=(3100, 2944, 2, 0), total=(6100, 2944, 5, 0), second=4),
        cx_tokens(last=(3100, 2944, 2, 0), total=(6100, 2944, 5, 0), second=5, used=2.0),
    ]
    return [fx.write(os.path.join(root, "2025", "09", "10", f"rollout-{n}.jsonl"), jsonl(recs))
            for n, recs in ((1, one), (2, two))]


# -- the ground truth, from the sources ----------------------------------------------------------


def _lines(path: str) -> List[Dict[str, Any]]:
    with open(path, encoding="utf-8") as f:
        return [json.loads(line) for line in f if line.strip()]


def claude_truth(paths: Iterable[str], side: Optional[bool] = None) -> Dict[str, Figures]:
    """Each unique response id's usage (its last line's, the final count), over the
    assistant lines of `paths` (only sidechain lines, or none of them, if `side` says so)."""
    out: Dict[str, Figures] = {}
    for path in paths:
        for rec in _lines(path):
            if rec.get("type") != "assistant" or (side is not None and bool(rec.get("isSidechain")) != side):
                continue
            u = rec["message"]["usage"]
            out[rec["message"]["id"]] = (u["input_tokens"], u["output_tokens"], u["cache_read_input_tokens"],
                                         u["cache_creation_input_tokens"])
    return out


def codex_truth(path: str) -> Dict[Any, Figures]:
    """Each response's usage: one per token_count whose cumulative total moved (input less
    cached is input, cached is cache read; Codex states no cache writes)."""
    out: Dict[Any, Figures] = {}
    for rec in _lines(path):
        p = rec.get("payload", {})
        if p.get("type") == "token_count" and p.get("info"):
            last, total = p["info"]["last_token_usage"], p["info"]["total_token_usage"]
            out[json.dumps(total, sort_keys=True)] = (last["input_tokens"] - last["cached_input_tokens"],
                                                      last["output_tokens"], last["cached_input_tokens"], None)
    return out


def totals_of(responses: Dict[Any, Figures]) -> Tuple[Any, ...]:
    """(input, output, cache_read, cache_write, responses): a count none states is None."""
    def total(i: int) -> Optional[int]:
        known = [f[i] for f in responses.values() if f[i] is not None]
        return sum(known) if known else None

    return (total(0), total(1), total(2), total(3), len(responses))


def naive_claude(paths: Iterable[str]) -> Tuple[int, int, int, int]:
    """What summing every assistant line's usage gives (the per-line tools' way)."""
    sums = [0, 0, 0, 0]
    for path in paths:
        for rec in _lines(path):
            if rec.get("type") == "assistant":
                u = rec["message"]["usage"]
                for i, key in enumerate(("input_tokens", "output_tokens", "cache_read_input_tokens",
                                         "cache_creation_input_tokens")):
                    sums[i] += u[key]
    return sums[0], sums[1], sums[2], sums[3]


# -- what every surface says ---------------------------------------------------------------------


def stats_usage(path: str, capsys: Any) -> Tuple[Any, ...]:
    capsys.readouterr()
    assert cli_main(["stats", "--json", path]) == 0
    u = json.loads(capsys.readouterr().out)["usage"]
    return (u["input"], u["output"], u["cache_read"], u["cache_write"], u["responses"])


def row_usage(row: Dict[str, Any]) -> Tuple[Any, ...]:
    return (row["input_tokens"], row["output_tokens"], row["cache_read_tokens"], row["cache_write_tokens"],
            row["responses"])


def library_usage(totals: UsageTotals) -> Tuple[Any, ...]:
    return (*totals.figures, totals.responses)


def every_surface_agrees(out: str, fleet: str, want: Dict[str, Tuple[Any, ...]], capsys: Any) -> None:
    """Per transcript (by its path under `out`): stats --json, usage.of_transcript, the
    dataset's sessions row, and its messages rows summed where ``usage_counted`` (each
    response once: as many counted rows as responses, every other row of one a repeat)."""
    sessions = {r["path"]: r for r in query(fleet, "SELECT * FROM sessions").to_pylist()}
    assert {os.path.relpath(p, out) for p in sessions} == set(want)
    for rel, truth in want.items():
        path = os.path.join(out, rel)
        assert stats_usage(path, capsys) == truth, rel
        assert library_usage(usage.of_transcript(path)) == truth, rel
        row = sessions[path]
        assert row_usage(row) == truth, rel
        assert row["unmeasured_responses"] == 0, rel
        counted = query(fleet, "SELECT sum(input_tokens) AS i, sum(output_tokens) AS o, sum(cache_read_tokens) AS r, "
                               "sum(cache_write_tokens) AS w, count(*) AS n FROM messages "
                               f"WHERE usage_counted AND session_id = '{row['session_id']}'").to_pylist()[0]
        assert tuple(None if v is None else int(v) for v in counted.values()) == truth, rel


def mid_response(path: str) -> int:
    """How many lines of `path` end inside a streamed response (after its second line)."""
    recs = _lines(path)
    for i in range(1, len(recs)):
        if recs[i].get("type") == recs[i - 1].get("type") == "assistant" and \
                recs[i]["message"]["id"] == recs[i - 1]["message"]["id"]:
            return i
    raise AssertionError(f"{path} streams no response over two lines")


def test_a_claude_code_project_counts_each_response_once(tmp_path: Any, capsys: Any) -> None:
    sources = claude_project(str(tmp_path / "projects"))
    out, fleet = str(tmp_path / "transcripts"), str(tmp_path / "fleet")
    # First imported while each session was still streaming a response (its first line,
    # its count not final yet), then again: that response is written twice, counted once
    # with its final count.
    whole = {}
    for path in sources.values():
        with open(path, encoding="utf-8") as f:
            whole[path] = f.read()
        fx.write(path, "".join(whole[path].splitlines(keepends=True)[:mid_response(path)]))
    claude_code.import_tree(str(tmp_path / "projects"), out)
    for path, text in whole.items():
        fx.write(path, text)
    reports = claude_code.import_tree(str(tmp_path / "projects"), out)
    assert all(r["status"] == "appended" for r in reports)
    assert export(out, fleet).count("exported") == 5  # three sessions, a sidechain, a subagent
    a, b, c = sources["sess-a.jsonl"], sources["sess-b.jsonl"], sources["sess-c.jsonl"]
    agent = sources[os.path.join("sess-b", "subagents", "agent-a1b2.jsonl")]
    side = claude_code.sidechain_path(os.path.join(out, "-home-dev-proj", "sess-b.jsonl"), "sess-b-side-u1")
    want = {
        os.path.join("-home-dev-proj", "sess-a.jsonl"): totals_of(claude_truth([a])),
        os.path.join("-home-dev-proj", "sess-b.jsonl"): totals_of(claude_truth([b], side=False)),
        os.path.relpath(side, out): totals_of(claude_truth([b], side=True)),
        os.path.join("-home-dev-proj", "sess-b", "subagents", "agent-a1b2.jsonl"): totals_of(claude_truth([agent])),
        os.path.join("-home-dev-proj", "sess-c.jsonl"): totals_of(claude_truth([c])),
    }
    every_surface_agrees(out, fleet, want, capsys)
    rewritten = query(fleet, "SELECT count(*) AS n FROM messages WHERE NOT usage_counted").to_pylist()[0]["n"]
    assert rewritten >= 3  # each session's half-streamed response, written again
    # The project as a whole: sess-c repeats sess-a's responses, counted once.
    project = claude_truth(sources.values())
    transcripts = [os.path.join(out, rel) for rel in want]
    assert library_usage(usage.of_transcripts(transcripts)) == totals_of(project)
    [fleet_once] = query(fleet, "SELECT sum(i) AS i, sum(o) AS o, sum(r) AS r, sum(w) AS w, count(*) AS n FROM ("
                                "SELECT any_value(input_tokens) AS i, any_value(output_tokens) AS o, any_value("
                                "cache_read_tokens) AS r, any_value(cache_write_tokens) AS w FROM messages WHERE "
                                "usage_counted GROUP BY coalesce(response_id, session_id || '/' || id))").to_pylist()
    assert tuple(int(v) for v in fleet_once.values()) == totals_of(project)
    assert sum(t[4] for t in want.values()) == totals_of(project)[4] + 3  # sess-c's copies of sess-a's three
    # Summing every source line counts each streamed response once per line (and sess-c's copies):
    # here 2.5x the input, 3.1x the cache reads, 2.3x the cache writes, 1.3x the output.
    naive, truth = naive_claude(sources.values()), totals_of(project)
    assert all(n > 2 * t for n, t in zip(naive[:1] + naive[2:], truth[:1] + truth[2:]))
    assert naive[1] > truth[1]  # the output too, though the earlier lines' counts are small


def test_codex_rollouts_count_each_token_count_once(tmp_path: Any, capsys: Any) -> None:
    sources = codex_rollouts(str(tmp_path / "sessions"))
    out, fleet = str(tmp_path / "transcripts"), str(tmp_path / "fleet")
    reports = codex.import_tree(str(tmp_path / "sessions"), out)
    assert all(r["status"] == "imported" for r in reports) and not any(r["warnings"] for r in reports)
    assert export(out, fleet).count("exported") == 2
    want = {os.path.relpath(src, str(tmp_path / "sessions")): totals_of(codex_truth(src)) for src in sources}
    every_surface_agrees(out, fleet, want, capsys)
    both = {k: v for src in sources for k, v in codex_truth(src).items()}
    assert library_usage(usage.of_transcripts(os.path.join(out, rel) for rel in want)) == totals_of(both)
    # Every token_count event summed: each repeated one counted twice.
    events = [rec["payload"]["info"]["last_token_usage"] for src in sources for rec in _lines(src)
              if rec.get("payload", {}).get("type") == "token_count" and rec["payload"].get("info")]
    assert sum(e["output_tokens"] for e in events) > totals_of(both)[1]
    assert len(events) == totals_of(both)[4] + 2
