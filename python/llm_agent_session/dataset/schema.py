"""The dataset's tables, column by column, written once.

Every other form is made from ``TABLES``: the Arrow schema a Parquet file is written with
(``write_schema``) and the one every engine reads back (``arrow_schema``), the table of
``docs/dataset.md`` (``markdown``; a test holds the page to it), and the check that a
file has its table's schema (``validate``). No type is ever inferred from the data, so a
column has the same type in every file of every run.

Every table carries ``session_id``, ``agent`` and ``model`` in its files and ``date`` in
its directory name (``date=YYYY-MM-DD``, hive style), so the common questions need no join.
"""

from __future__ import annotations

import functools
from dataclasses import dataclass
from typing import Any, Dict, List, Tuple

#: Arrow type of each kind of column, by name (pyarrow is imported only when a schema is made).
KINDS = ("string", "json", "int64", "float64", "bool", "timestamp", "date")


@dataclass(frozen=True)
class Field:
    """One column: its name, kind (``KINDS``; ``json`` is a string holding JSON text) and
    what it holds."""

    name: str
    kind: str
    description: str


@dataclass(frozen=True)
class SchemaError:
    """A way a file's schema differs from its table's: which column, and how."""

    table: str
    column: str
    problem: str

    def __str__(self) -> str:
        return f"{self.table}.{self.column}: {self.problem}"


_ID = "the envelope's id"
_LINE = "its 1-based line number in the transcript"
_TS = "its `ts` (UTC); null where it is not a well-formed time"

COMMON: Tuple[Field, ...] = (
    Field("session_id", "string",
          "The transcript file's id in the dataset: 32 hex digits of the SHA-256 of `host:path`, the same in "
          "every run (a copy or a salvaged file beside the original is a session of its own; "
          "`sessions.meta_id` is the id the transcript gives itself)."),
    Field("agent", "string",
          "The meta's `agent`, else its `imported-from` (`claude-code`, `codex`), else its `app`; "
          "null where it has none of them as a string."),
    Field("model", "string",
          "The meta's `model`, else the first string `model` extra of a message line, or `model` fact "
          "of a `run-context` line, in file order; null where there is none."),
)

#: The partition column: in the directory names, not in the files.
DATE = Field("date", "date",
             "The UTC date of the `session-meta` line's `ts` (when the transcript was created; for an "
             "import, the source's first time), `1970-01-01` where it is not a well-formed time. "
             "Hive partition: `OUT/<table>/date=YYYY-MM-DD/`.")

TABLES: Dict[str, Tuple[Field, ...]] = {
    "sessions": (
        Field("path", "string", "The transcript's absolute path on the machine that exported it (always UTF-8: a "
              "file whose name is not is reported failed, not exported)."),
        Field("host", "string", "The name of that machine (several machines may export into one OUT)."),
        Field("meta_id", "string",
              "The `session-meta` line's envelope id: the transcript's own id (a copy, a salvaged file and "
              "the original share it); null where the first line is no session-meta envelope."),
        Field("meta", "json", "The `session-meta` payload."),
        Field("verdict", "string",
              "What `Session.load` would do, read-only (as `llm-agent-session check` says): `clean`, "
              "`torn-tail` (a load first removes an unfinished last line) or `would-fail`."),
        Field("reason", "string",
              "For `torn-tail`, the line a load removes; for `would-fail`, the error a load raises, with its "
              "line and byte offset. Null when `clean`."),
        Field("bytes", "int64", "The file's size when it was exported."),
        Field("envelopes", "int64",
              "Envelope lines exported: every line a load reads (the torn tail excluded); for a file that "
              "would fail, every line that parses, a repeated id's later lines excluded, as `salvage` reads it."),
        Field("skipped_lines", "int64",
              "Lines not exported: malformed, not an envelope, or repeating an earlier id (0 unless `would-fail`)."),
        Field("messages", "int64", "`message` lines (rows in `messages`)."),
        Field("live_messages", "int64",
              "`len(Session.load(path).messages)`: the conversation the model would be sent next "
              "(`messages` rows with `live`, plus `compactions` rows with `live`); null when `would-fail`."),
        Field("tool_calls", "int64", "Tool operations (rows in `tool_calls`)."),
        Field("completed", "int64", "Operations settled `completed`."),
        Field("failed", "int64", "Operations settled `failed`."),
        Field("outcome_unknown", "int64", "Operations settled `outcome-unknown`."),
        Field("dispatched", "int64", "Pending operations that may or may not have run (no tool message, no settle)."),
        Field("result_recorded", "int64", "Pending operations a tool message answered, not yet settled."),
        Field("pending_operations", "int64",
              "`len(Session.load(path).pending_tool_operations())`: `dispatched` plus `result_recorded`."),
        Field("compactions", "int64", "`compaction` lines."),
        Field("rewinds", "int64", "`rewind` lines."),
        Field("elisions", "int64", "`elision` lines."),
        Field("grants", "int64", "`grants` lines."),
        Field("input_tokens", "int64",
              "Its provider responses' `input` tokens (`messages.input_tokens` summed over the rows with "
              "`usage_counted`: each response once, however many lines it was streamed over); null where no "
              "response states it. `llm_agent_session.usage.of_transcript(path)` gives the same."),
        Field("output_tokens", "int64", "Its responses' `output` tokens, each response once; null where none states it."),
        Field("cache_read_tokens", "int64", "Its responses' `cache-read` tokens, each response once; null where none states it."),
        Field("cache_write_tokens", "int64",
              "Its responses' `cache-write` tokens, each response once; null where none states it."),
        Field("responses", "int64", "Provider responses whose usage it records (`messages` rows with `usage_counted`)."),
        Field("unmeasured_responses", "int64",
              "Responses the token totals leave out: those whose usage states no figure, and assistant messages "
              "that record no usage at all."),
        Field("first_ts", "timestamp", "The earliest well-formed `ts` of its envelopes."),
        Field("last_ts", "timestamp", "The latest well-formed `ts` of its envelopes."),
    ),
    "messages": (
        Field("id", "string", _ID),
        Field("ordinal", "int64", "Its position among the transcript's `message` lines (0 = the first)."),
        Field("line", "int64", _LINE),
        Field("ts", "timestamp", _TS),
        Field("role", "string", "`role`; null where it is not a string (a line a load refuses)."),
        Field("text", "string",
              "The content as text: a string as it is; of a list of parts, the string `text` of each part "
              "that has one, joined by newlines; null where the content is null or absent; any other value, "
              "its JSON."),
        Field("content", "json", "`content` as JSON; null where it is null or absent."),
        Field("tool_calls", "json", "`tool_calls` as JSON (OpenAI shape); null where absent."),
        Field("tool_call_id", "string", "`tool_call_id`: the call a `tool` message answers."),
        Field("name", "string", "`name`."),
        Field("sticky", "bool", "Whether compaction keeps it (`sticky` or `sysprompt` true, or a `depth`)."),
        Field("live", "bool",
              "Whether it is in the conversation after replay (`Session.load(path).message_ids` holds its "
              "id); false for every row of a transcript that would fail to load."),
        Field("removed_by", "string", "The id of the compaction or rewind that took it out of the conversation."),
        Field("removed_kind", "string", "`compaction` or `rewind`: what `removed_by` is."),
        Field("elided_by", "string", "The id of the last elision that replaced its content with a stub."),
        Field("extras", "json",
              "The payload's keys besides the message's own (`finish-reason`, `usage`, an importer's source "
              "fields ...) as a JSON object; null where there are none, or when exported with `--no-extras`."),
        Field("bytes", "int64", "The length of its line in bytes."),
        Field("response_id", "string",
              "The `token-usage` extra's `response-id`: the provider response this message is (a part of). "
              "Lines naming one id are one response (Claude Code streams one line per content block)."),
        Field("input_tokens", "int64",
              "The `token-usage` extra's `input`: prompt tokens neither read from nor written to the cache; null "
              "where the line states none (never 0 for an unknown count). A response streamed over several lines "
              "states it on each: sum only the rows with `usage_counted`."),
        Field("output_tokens", "int64", "`token-usage`'s `output`: tokens generated, reasoning included; null where not stated."),
        Field("cache_read_tokens", "int64", "`token-usage`'s `cache-read`: prompt tokens read from the cache; null where not stated."),
        Field("cache_write_tokens", "int64",
              "`token-usage`'s `cache-write`: prompt tokens written to the cache; null where not stated."),
        Field("usage_counted", "bool",
              "Whether the session's totals count its response's usage at this row: true on the last row naming "
              "its `response_id` (a streamed response's last line carries its final count) and on every row with "
              "usage and no id; false on the response's other rows; null where the line records no usage."),
    ),
    "tool_calls": (
        Field("op_id", "string", "The operation id (its `tool-dispatched` envelope's id)."),
        Field("line", "int64", "The 1-based line number of its `tool-dispatched` line."),
        Field("call_id", "string", "`call-id`: the model's tool call id."),
        Field("tool", "string", "`tool`."),
        Field("arguments", "json", "`arguments` as JSON."),
        Field("arguments_digest", "string", "`arguments-digest`."),
        Field("idempotency", "string", "`idempotency`."),
        Field("run_id", "string", "`run-id`."),
        Field("round", "int64", "`round`."),
        Field("dispatched_at", "timestamp", "The `tool-dispatched` line's `ts`."),
        Field("outcome", "string",
              "`completed`, `failed` or `outcome-unknown` once settled; while pending `dispatched` (may or "
              "may not have run) or `result-recorded` (a tool message answered it)."),
        Field("settled_id", "string", "The `tool-settled` line's id; null while pending."),
        Field("settled_at", "timestamp", "The `tool-settled` line's `ts`; null while pending."),
        Field("duration", "float64", "The settle's `duration` in seconds; null where it states none."),
        Field("error", "string", "The settle's `error`."),
        Field("reason", "string", "The settle's `reason` (`interrupted` for a call a crash cut short)."),
        Field("answered", "bool", "Whether a `tool` message with its `call_id` came after the dispatch."),
        Field("answered_by", "string", "The id of the first such message."),
        Field("grants_id", "string", "The id of the `grants` line in force when it was dispatched."),
        Field("grants", "json", "That grants snapshot; null where none had been written."),
    ),
    "compactions": (
        Field("id", "string", _ID + " (also the id of its summary in the conversation)"),
        Field("line", "int64", _LINE),
        Field("ts", "timestamp", _TS),
        Field("summary", "string", "`summary`."),
        Field("replaces_through_id", "string", "`replaces-through-id`: the last message it folded in."),
        Field("tokens_before", "int64", "`tokens-before`; null where absent (an import that states none), never 0."),
        Field("tokens_after", "int64", "`tokens-after`; null where absent, never 0."),
        Field("fallback", "bool", "`fallback`: the middle was hard-trimmed, no summarizer was reached."),
        Field("live", "bool", "Whether its summary is in the conversation after replay."),
        Field("removed_by", "string", "The id of the later compaction or rewind that took its summary out."),
        Field("removed_kind", "string", "`compaction` or `rewind`."),
        Field("elided_by", "string", "The id of the last elision that replaced its summary with a stub."),
    ),
    "rewinds": (
        Field("id", "string", _ID),
        Field("line", "int64", _LINE),
        Field("ts", "timestamp", _TS),
        Field("to_id", "string", "`to-id`: the live message the conversation went back to; null: to the start."),
        Field("rewound", "int64", "How many messages (and summaries) it took out of the conversation."),
    ),
    "grants": (
        Field("id", "string", _ID),
        Field("line", "int64", _LINE),
        Field("ts", "timestamp", _TS),
        Field("grants", "json", "The whole permission snapshot."),
        Field("in_force", "bool", "Whether it is the last one (`Session.load(path).grants`)."),
    ),
}

TABLE_NAMES: Tuple[str, ...] = tuple(TABLES)

#: Columns the Rust and Python cores build (the rest are added per transcript).
CORE_COLUMNS: Dict[str, Tuple[str, ...]] = {
    table: tuple(f.name for f in fields) for table, fields in TABLES.items() if table != "sessions"
}

#: Columns written dictionary-encoded: one value repeated over many rows (a snapshot).
DICTIONARY_COLUMNS = {("tool_calls", "grants")}


def fields(table: str) -> Tuple[Field, ...]:
    """Every column of `table` in its files, in order (the partition column is not one)."""
    return COMMON + TABLES[table]


def _arrow_type(kind: str, large: bool = False) -> Any:
    import pyarrow as pa

    return {
        "string": pa.large_string() if large else pa.string(),
        "json": pa.large_string() if large else pa.string(),
        "int64": pa.int64(),
        "float64": pa.float64(),
        "bool": pa.bool_(),
        "timestamp": pa.timestamp("us", tz="UTC"),
        "date": pa.date32(),
    }[kind]


@functools.lru_cache(maxsize=None)
def arrow_schema(table: str) -> Any:
    """The ``pyarrow.Schema`` every engine reads a file of `table` with."""
    import pyarrow as pa

    return pa.schema([pa.field(f.name, _arrow_type(f.kind)) for f in fields(table)])


@functools.lru_cache(maxsize=None)
def write_schema(table: str) -> Any:
    """The schema the writer is given: strings with 64-bit offsets (built without a copy) and
    the snapshot column dictionary-encoded; the file stores no Arrow schema of its own, so
    every reader sees ``arrow_schema`` (Parquet's own types: string, int64, ...)."""
    import pyarrow as pa

    out = []
    for f in fields(table):
        t = _arrow_type(f.kind, large=True)
        if (table, f.name) in DICTIONARY_COLUMNS:
            t = pa.dictionary(pa.int32(), pa.large_string())
        out.append(pa.field(f.name, t))
    return pa.schema(out)


def validate(table: str, schema: Any) -> List[SchemaError]:
    """How `schema` (a file's, as read back) differs from `table`'s: a list, empty when it
    matches. The partition column may be there (a hive reader adds it) or not."""
    want = arrow_schema(table)
    errors: List[SchemaError] = []
    got = {f.name: f for f in schema}
    for f in want:
        if f.name not in got:
            errors.append(SchemaError(table, f.name, "missing"))
        elif not got[f.name].type.equals(f.type):
            errors.append(SchemaError(table, f.name, f"is {got[f.name].type}, not {f.type}"))
    names = [f.name for f in schema if f.name != DATE.name]
    for name in names:
        if name not in want.names:
            errors.append(SchemaError(table, name, "is not a column of the table"))
    if not errors and names != want.names:
        errors.append(SchemaError(table, "*", f"columns in the order {names}, not {want.names}"))
    return errors


_SQL = {"string": "VARCHAR", "json": "VARCHAR (JSON)", "int64": "BIGINT", "float64": "DOUBLE",
        "bool": "BOOLEAN", "timestamp": "TIMESTAMP WITH TIME ZONE", "date": "DATE"}


def markdown(table: str) -> str:
    """The docs table of `table`: column, type (as DuckDB names it), what it holds."""
    rows = ["| column | type | what it holds |", "|---|---|---|"]
    for f in fields(table) + (DATE,):
        rows.append(f"| `{f.name}` | {_SQL[f.kind]} | {f.description} |")
    return "\n".join(rows)
