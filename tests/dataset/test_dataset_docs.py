"""docs/dataset.md is true: its tables are the schema (``schema.py``), and each fleet
question's SQL, Polars and PySpark (in test_dataset_spark.py) give the answer the page
shows, on the example fleet it says how to make; the import -> dataset pipeline prints
what the page shows."""

from __future__ import annotations

import os
import re
from typing import Any, Dict, List, Tuple

import pytest

from tests.support import import_fixtures as fx
from benches.generate import fleet
from llm_agent_session.cli import main as cli_main
from llm_agent_session.dataset import TABLE_NAMES, export, query
from llm_agent_session.dataset.schema import markdown

DOC = os.path.join(os.path.dirname(__file__), "..", "..", "docs", "dataset.md")
FENCE = re.compile(r"```(\w*)\n(.*?)\n```", re.S)


def page() -> str:
    with open(DOC, encoding="utf-8") as f:
        return f.read()


def questions() -> List[Tuple[str, str, str, str, str]]:
    """(title, sql, polars, pyspark, answer) of each fleet question."""
    section = page().split("## The fleet questions", 1)[1].split("\n## ", 1)[0]
    out = []
    for part in section.split("\n### ")[1:]:
        title = part.split("\n", 1)[0]
        blocks = FENCE.findall(part)
        assert [lang for lang, _ in blocks] == ["sql", "python", "python", "text"], title
        (_, sql), (_, polars), (_, spark), (_, answer) = blocks
        assert polars.startswith("# Polars") and spark.startswith("# PySpark"), title
        out.append((title, sql, polars, spark, answer))
    assert len(out) == 5
    return out


def example_fleet(tmp: Any) -> str:
    """The page's example fleet, made and exported as the page says; OUT under key=value
    directories, which no reader the page shows may take for partitions."""
    src, out = str(tmp / "fleet-example"), str(tmp / "date=2020-01-01" / "team=infra" / "fleet")
    fleet(src, 12, 1 << 20, seed=21)
    assert export(src, out).count("exported") == 12
    return out


def as_rows(frame_rows: List[Dict[str, Any]]) -> List[Tuple[Any, ...]]:
    return [tuple(float(v) if isinstance(v, (int, float)) and not isinstance(v, bool) else v for v in r.values())
            for r in frame_rows]


def cli_text(capsys: Any, *args: str) -> str:
    capsys.readouterr()
    assert cli_main([args[0], "--color", "never", *args[1:]]) == 0
    return capsys.readouterr().out.rstrip()


def test_the_tables_on_the_page_are_the_schema() -> None:
    text = page()
    for table in TABLE_NAMES:
        m = re.search(rf"<!-- table: {table} -->\n(.*?)\n<!-- /table -->", text, re.S)
        assert m, table
        assert m.group(1) == markdown(table), f"docs/dataset.md's {table} table is not schema.markdown('{table}')"


@pytest.mark.slow
def test_each_fleet_question_gives_the_answer_shown(tmp_path: Any, capsys: Any) -> None:
    out = example_fleet(tmp_path)
    # What the page says of the fleet: one crashed in a tool call, one resumed, one torn, one corrupt.
    assert {r["verdict"]: r["n"] for r in query(out, "SELECT verdict, count(*) AS n FROM sessions GROUP BY ALL")
            .to_pylist()} == {"clean": 10, "torn-tail": 1, "would-fail": 1}
    for title, sql, polars, _, answer in questions():
        assert cli_text(capsys, "query", out, sql) == answer, title
        duck = as_rows(query(out, sql).to_pylist())
        scope: Dict[str, Any] = {"fleet": out}
        exec(polars, scope)
        assert as_rows(scope["answer"].to_dicts()) == duck, title


@pytest.mark.slow
def test_the_import_then_dataset_pipeline_prints_what_the_page_shows(tmp_path: Any, capsys: Any,
                                                                    monkeypatch: Any) -> None:
    from llm_agent_session.importers import claude_code, codex

    monkeypatch.chdir(tmp_path)
    fx.write("claude-projects/-home-dev-proj/sess-1.jsonl", fx.claude_code_session())
    fx.write("codex-sessions/2025/09/10/rollout-2025-09-10T12-00-00-0199-sess.jsonl", fx.codex_rollout())
    claude_code.import_tree("claude-projects", "transcripts/claude")
    codex.import_tree("codex-sessions", "transcripts/codex")
    assert export("transcripts", "fleet").count("exported") == 2
    section = page().split("## Pipelines from other agents", 1)[1].split("\n## ", 1)[0]
    blocks = FENCE.findall(section)
    commands = [b for lang, b in blocks if lang == ""]
    shown = [b for lang, b in blocks if lang == "text"]
    queries = [line for c in commands for line in c.splitlines() if line.startswith("llm-agent-session query")]
    assert len(queries) == len(shown) == 3
    for command, expected in zip(queries, shown):
        sql = command.split(" fleet ", 1)[1].strip().strip('"')
        assert cli_text(capsys, "query", "fleet", sql) == expected
