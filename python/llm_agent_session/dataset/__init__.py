"""Fleets of transcripts as Parquet tables that DuckDB, Polars, Spark and Ray Data read.

    from llm_agent_session.dataset import export, query
    report = export("~/transcripts", "fleet")      # incremental: run it again any time
    print(report.summary())
    query("fleet", "SELECT tool, count(*) FROM tool_calls GROUP BY tool").show()

Needs the ``dataset`` extra (``pip install 'llm-agent-session[dataset]'``: pyarrow, and
DuckDB for ``query``). ``docs/dataset.md`` gives the tables column by column
(``schema.py``), what a reader may rely on while an export runs, and the fleet questions
in SQL, Polars and PySpark.
"""

from __future__ import annotations

from .export import FileResult, Report, export
from .query import QueryRefused, check_statements, connect, query
from .schema import TABLE_NAMES, TABLES
from .errors import DatasetError, NoDatasetYet, NotADataset

__all__ = ["export", "query", "connect", "Report", "FileResult", "DatasetError", "NotADataset", "NoDatasetYet",
           "QueryRefused", "check_statements", "TABLES", "TABLE_NAMES"]
