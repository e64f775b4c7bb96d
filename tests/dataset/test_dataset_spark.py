"""Beyond one machine: PySpark (``local[2]``, the real JVM) reads OUT as it is and answers
fleet questions with the numbers DuckDB gives (``query``)."""

from __future__ import annotations

import os
import shutil
from typing import Any

import pytest

from benches.generate import generate
from llm_agent_session.dataset import export, query
from tests.support.dataset import every_kind, rows, small
from tests.dataset.test_dataset_docs import as_rows, example_fleet, questions

pytestmark = [pytest.mark.slow,
              pytest.mark.skipif(shutil.which("java") is None and not os.environ.get("JAVA_HOME"),
                                 reason="no Java runtime (PySpark needs one: Debian's openjdk-17-jre-headless)")]


@pytest.fixture(autouse=True)
def backend_name() -> str:
    """Spark reads files: one run, whichever core wrote them."""
    return "default"


def test_spark_reads_out_and_agrees_with_duckdb(tmp_path: Any) -> None:
    from pyspark.sql import SparkSession, functions as F

    src, out = tmp_path / "src", str(tmp_path / "out")
    every_kind(str(src / "every.jsonl"))
    for i in range(3):
        small(str(src / f"small{i}.jsonl"), model=f"m{i % 2}")
    os.makedirs(src / "gen")
    generate(str(src / "gen" / "g.jsonl"), 300_000, seed=11)
    assert export(str(src), out).count("exported") == 5
    spark = (SparkSession.builder.master("local[2]").appName("llm-agent-session-dataset")
             .config("spark.ui.enabled", "false").config("spark.sql.session.timeZone", "UTC").getOrCreate())
    try:
        calls = spark.read.parquet(os.path.join(out, "tool_calls"))
        # Which tools fail most, per tool and model.
        failing = (calls.groupBy("tool", "model")
                   .agg(F.count("*").alias("calls"), F.sum(F.when(F.col("outcome") == "failed", 1).otherwise(0)).alias("failed"))
                   .orderBy("tool", "model").collect())
        duck = rows(out, "SELECT tool, model, count(*) AS calls, count(*) FILTER (WHERE outcome = 'failed') AS failed "
                         "FROM tool_calls GROUP BY tool, model ORDER BY tool, model")
        assert [r.asDict() for r in failing] == duck and duck
        # How many runs ended with calls that may or may not have run.
        sessions = spark.read.parquet(os.path.join(out, "sessions"))
        uncertain = sessions.where(F.col("dispatched") > 0).count()
        assert uncertain == rows(out, "SELECT count(*) AS n FROM sessions WHERE dispatched > 0")[0]["n"] == 1
        # Every table, every partition, as DuckDB counts it.
        for table in ("sessions", "messages", "tool_calls", "compactions", "rewinds", "grants"):
            frame = spark.read.parquet(os.path.join(out, table))
            assert "date" in frame.columns
            assert frame.count() == rows(out, f"SELECT count(*) AS n FROM {table}")[0]["n"], table
        # docs/dataset.md's PySpark answers to the fleet questions, on its example fleet.
        example = example_fleet(tmp_path)
        for title, sql, _, code, _ in questions():
            scope = {"spark": spark, "fleet": example}
            exec(code, scope)
            got = as_rows([r.asDict() for r in scope["answer"].collect()])
            assert got == as_rows(query(example, sql).to_pylist()), title
    finally:
        spark.stop()
