"""Issue #11: one output style. --json keys are the Python API's snake_case everywhere;
text rounds numbers for people and uses thousands separators."""

from __future__ import annotations

import json
import re

from llm_agent_session import Session

# Dicts keyed by data from the file (envelope types, roles, tool names, outcomes, meta,
# payloads), whose keys are as written, not ours.
DATA_KEYED = {"meta", "counts", "types", "roles", "tools", "outcomes", "arguments"}


def our_keys(value, path=""):
    if isinstance(value, dict):
        for k, v in value.items():
            yield f"{path}.{k}", k
            if k not in DATA_KEYED:
                yield from our_keys(v, f"{path}.{k}")
            elif k in ("tools", "types"):
                for name, inner in v.items():
                    yield from our_keys(inner, f"{path}.{k}.{name}")
    elif isinstance(value, list):
        for item in value:
            yield from our_keys(item, path + "[]")


def transcript(path: str) -> None:
    with Session.create(path, {"agent-name": "x"}) as s:
        s.append_message({"role": "assistant", "content": None, "tool_calls": [
            {"id": "c1", "type": "function", "function": {"name": "bash", "arguments": "{}"}}]})
        op = s.append_tool_dispatched("c1", "bash", {"cmd-line": "ls"})
        s.append_message({"role": "tool", "tool_call_id": "c1", "content": "x" * 12345})
        s.append_tool_settled(op, "completed", duration=28.634999999999998)
        s.append_compaction("summary", s.message_ids[-1], 1234567, 8910)
        s.append_tool_dispatched("c2", "grep", {"q": "y"}, run_id="r1", round=2)


def test_json_keys_are_snake_case_everywhere(cli, tmp_path):
    path = str(tmp_path / "run.jsonl")
    transcript(path)
    for command in (["peek", path, "--json"], ["stats", path, "--json"], ["check", path, "--json"]):
        r = cli(*command)
        assert r.returncode == 0, r.stderr
        report = json.loads(r.stdout)
        bad = [where for where, key in our_keys(report) if not re.fullmatch(r"[a-z0-9_]+", key)]
        assert not bad, (command[0], bad)
    peek = json.loads(cli("peek", path, "--json").stdout)
    assert peek["live_messages"] == 1 and peek["pending_tool_operations"][0]["run_id"] == "r1"
    assert peek["meta"] == {"agent-name": "x"}  # values from the file stay as written
    check = json.loads(cli("check", path, "--json").stdout)
    assert check["live_messages"] == peek["live_messages"] == peek["load"]["live_messages"]
    assert check["pending_tool_operations"] == peek["pending_tool_operations"]
    stats = json.loads(cli("stats", path, "--json").stdout)
    assert stats["compactions"]["tokens_before"] == 1234567


def test_text_rounds_numbers_and_separates_thousands(cli, tmp_path):
    path = str(tmp_path / "run.jsonl")
    transcript(path)
    tail = cli("tail", path).stdout
    assert "28.63 s" in tail and "28.634" not in tail
    assert "1,234,567 → 8,910 tokens" in tail
    stats = cli("stats", path).stdout
    assert "28.63 s" in stats and "1,234,567 → 8,910 tokens" in stats
    show = cli("show", path, "--raw", "--max-chars", "100").stdout
    assert re.search(r"\d,\d{3} more chars \(\d+,\d{3} in all", show)
