"""Issue #28: a transcript as OpenTelemetry GenAI spans (``llm_agent_session.otlp``, and
``llm-agent-session export FILE --format otlp``).

Every line is parsed as an ``ExportTraceServiceRequest`` by opentelemetry-proto's own
protobuf definitions, strictly (an unknown or misspelt field fails); the spans are held to
docs/otlp.md's mapping table; the OpenTelemetry SDK's own encoder, given the same spans as
SDK ``ReadableSpan``s, must produce the very same protobuf. A real ``kill -9`` of a writer
leaves a call that the export marks ``interrupted``.
"""

from __future__ import annotations

import base64
import hashlib
import json
import os
import re
import signal
import subprocess
import sys
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any, Dict, Iterator, List, Tuple

import pytest
from tests.support import hostile  # noqa: E402
from tests.support import import_fixtures as fx  # noqa: E402
from tests.support.cli import build_transcript, child_env, cli_argv  # noqa: E402

from llm_agent_session import Session, Usage, _backend, otlp, tool_message, usage  # noqa: E402
from llm_agent_session.canonical import dumps, envelope_line  # noqa: E402
from llm_agent_session.cli import main as cli_main  # noqa: E402
from llm_agent_session.importers import claude_code, codex  # noqa: E402
from llm_agent_session.otlp import names  # noqa: E402
from llm_agent_session.otlp.spans import nanos  # noqa: E402

trace_service = pytest.importorskip("opentelemetry.proto.collector.trace.v1.trace_service_pb2")
json_format = pytest.importorskip("google.protobuf.json_format")

DOCS = os.path.join(os.path.dirname(__file__), os.pardir, "docs", "otlp.md")
CONTENT_ATTRIBUTES = {names.INPUT_MESSAGES, names.OUTPUT_MESSAGES, names.TOOL_CALL_ARGUMENTS,
                      names.TOOL_CALL_RESULT, names.COMPACTION_SUMMARY}


# -- reading the export back ------------------------------------------------------------------------

def parse(line: str) -> Any:
    """One line as an ExportTraceServiceRequest, parsed strictly. OTLP/JSON writes ids as hex
    where protobuf's JSON mapping has base64 (the one deviation the OTLP spec makes): turn
    them back, checking their length, before the strict parse."""
    assert line.endswith("\n") and "\n" not in line[:-1] and line.isascii()
    data = json.loads(line)
    for rs in data["resourceSpans"]:
        for ss in rs["scopeSpans"]:
            for span in ss["spans"]:
                for key, size in (("traceId", 16), ("spanId", 8), ("parentSpanId", 8)):
                    if key in span:
                        assert re.fullmatch(f"[0-9a-f]{{{2 * size}}}", span[key]), span[key]
                        span[key] = base64.b64encode(bytes.fromhex(span[key])).decode()
    request = trace_service.ExportTraceServiceRequest()
    json_format.Parse(json.dumps(data), request)  # strict: ignore_unknown_fields=False
    return request


def value(any_value: Any) -> Any:
    kind = any_value.WhichOneof("value")
    if kind == "array_value":
        return [value(v) for v in any_value.array_value.values]
    return getattr(any_value, kind)


def attrs(keyvalues: Any) -> Dict[str, Any]:
    return {kv.key: value(kv.value) for kv in keyvalues}


def spans_of(lines: List[str]) -> List[Any]:
    return [span for line in lines for rs in parse(line).resource_spans for ss in rs.scope_spans for span in ss.spans]


def export(path: Any, content: bool = False) -> Tuple[List[str], List[Any]]:
    lines = list(otlp.trace(path, content=content).lines())
    return lines, spans_of(lines)


def by_name(spans: List[Any]) -> Dict[str, List[Any]]:
    out: Dict[str, List[Any]] = {}
    for s in spans:
        out.setdefault(s.name, []).append(s)
    return out


def documented_names() -> set:
    """Every attribute and event name in docs/otlp.md's mapping table."""
    with open(DOCS, encoding="utf-8") as f:
        text = f.read()
    table = text.split("## The mapping", 1)[1].split("\n## ", 1)[0]
    return set(re.findall(r"`((?:gen_ai|llm_agent_session|error|service)\.[a-z_.]+)`", table))


def defined_names() -> set:
    return {v for k, v in vars(names).items()
            if k.isupper() and k != "SCOPE_NAME" and isinstance(v, str) and re.fullmatch(r"(gen_ai|llm_agent_session|error|service)\.[a-z_.]+", v)}


# -- the tests ------------------------------------------------------------------------------------------

def test_docs_table_and_the_names_agree() -> None:
    assert documented_names() == defined_names()
    with open(DOCS, encoding="utf-8") as f:
        text = f.read()
    assert names.SEMCONV_VERSION in text and names.SEMCONV_COMMIT in text and names.SCHEMA_URL in text


def test_spans_kinds_parents_and_attributes_as_the_table_says(tmp_path: Any) -> None:
    t = build_transcript(str(tmp_path / "run.jsonl"))
    lines, spans = export(t.path, content=True)
    root, = [s for s in spans if not s.parent_span_id]
    assert root.name == "invoke_agent cli-test" and root.kind == 1  # INTERNAL
    assert {s.trace_id for s in spans} == {root.trace_id} and len({s.span_id for s in spans}) == len(spans)
    assert all(s.parent_span_id == root.span_id for s in spans if s is not root)
    assert all(root.start_time_unix_nano <= s.start_time_unix_nano <= s.end_time_unix_nano <= root.end_time_unix_nano
               for s in spans)
    ra = attrs(root.attributes)
    assert ra[names.OPERATION_NAME] == "invoke_agent" and ra[names.REQUEST_MODEL] == "m-1"
    assert ra[names.CONVERSATION_ID] == ra[names.SESSION_ID] == Session.peek(t.path)["envelopes"][0].id
    named = by_name(spans)
    chats = named["chat m-1"]
    assert len(chats) == 5 and all(c.kind == 3 for c in chats)  # CLIENT, one per assistant message
    events = {e.id: e for e in Session.peek(t.path)["envelopes"]}
    first = attrs(chats[0].attributes)
    assert first[names.ENVELOPE_ID] == t.ids["a1"] and first[names.RESPONSE_FINISH_REASONS] == ["tool_calls"]
    assert chats[0].end_time_unix_nano == nanos(events[t.ids["a1"]].ts)
    assert chats[0].start_time_unix_nano == nanos(events[t.ids["user1"]].ts)  # the record before it
    tools = {attrs(s.attributes)[names.TOOL_CALL_ID]: s for s in spans if s.name.startswith("execute_tool ")}
    assert set(tools) == {"call_1", "call_2", "call_3", "call_4", "call_5"}
    assert all(s.kind == 1 for s in tools.values())
    state = {c: (attrs(s.attributes)[names.TOOL_STATE], attrs(s.attributes).get(names.ERROR_TYPE), s.status.code)
             for c, s in tools.items()}
    assert state == {"call_1": ("completed", None, 0), "call_2": ("failed", "failed", 2),
                     "call_3": ("completed", None, 0), "call_4": ("result-recorded", "interrupted", 2),
                     "call_5": ("dispatched", "interrupted", 2)}
    assert tools["call_2"].status.message == "exit 1"
    one = attrs(tools["call_1"].attributes)
    assert (one[names.TOOL_NAME], one[names.TOOL_TYPE], one[names.TOOL_DURATION], one[names.TOOL_IDEMPOTENCY],
            one[names.TOOL_ARTIFACT_FILE]) == ("bash", "function", 1.5, "read-only", "op1.txt")
    assert tools["call_1"].name == "execute_tool bash"
    assert [e.name for e in tools["call_1"].events] == [names.EVENT_TOOL_RESULT]
    # Never settled: it ends at the last time the transcript knows (the end of the run).
    assert tools["call_5"].end_time_unix_nano == root.end_time_unix_nano
    assert attrs(tools["call_5"].attributes)[names.GRANTS_ID] == attrs(tools["call_4"].attributes)[names.GRANTS_ID]
    compaction, elision, grants = root.events
    assert compaction.name == names.EVENT_COMPACTION and attrs(compaction.attributes) == {
        names.ENVELOPE_ID: t.ids["compaction"], names.COMPACTION_REPLACES_THROUGH_ID: t.ids["t2"],
        names.COMPACTION_TOKENS_BEFORE: 5200, names.COMPACTION_TOKENS_AFTER: 310, names.COMPACTION_FALLBACK: True,
        names.REMOVED_MESSAGES: 5, names.COMPACTION_SUMMARY: events[t.ids["compaction"]].payload["summary"]}
    assert compaction.time_unix_nano == nanos(events[t.ids["compaction"]].ts)
    assert attrs(elision.attributes)[names.ELISION_IDS] == [t.ids["t3"]]
    assert json.loads(attrs(grants.attributes)[names.GRANTS_SNAPSHOT]) == {"bash": {"allow": ["pytest"]}}
    # Every name used is in the table, and no attribute is empty.
    used = {kv.key for s in spans for kv in s.attributes} | {kv.key for s in spans for e in s.events for kv in e.attributes}
    used |= {e.name for s in spans for e in s.events}
    assert used <= documented_names()
    assert all(v not in ("", []) for s in spans for v in attrs(s.attributes).values())


def test_the_sdk_encodes_the_same_spans(tmp_path: Any) -> None:
    """The OpenTelemetry SDK's own types and its own OTLP encoder, given the export's spans,
    give exactly the protobuf that our JSON parses to."""
    pytest.importorskip("opentelemetry.sdk")
    encoder = pytest.importorskip("opentelemetry.exporter.otlp.proto.common.trace_encoder")
    from opentelemetry.attributes import BoundedAttributes
    from opentelemetry.sdk.resources import Resource
    from opentelemetry.sdk.trace import Event, ReadableSpan
    from opentelemetry.sdk.util.instrumentation import InstrumentationScope
    from opentelemetry.trace import SpanContext, SpanKind, Status, StatusCode

    import llm_agent_session

    t = build_transcript(str(tmp_path / "run.jsonl"))
    trace = otlp.trace(t.path, content=True)
    resource = Resource(trace.resource, schema_url=names.SCHEMA_URL)
    scope = InstrumentationScope(names.SCOPE_NAME, llm_agent_session.__version__, names.SCHEMA_URL)
    tid = int.from_bytes(trace.trace_id, "big")

    def context(span_id: bytes) -> SpanContext:
        return SpanContext(tid, int.from_bytes(span_id, "big"), is_remote=False)

    def sdk(s: Any) -> ReadableSpan:
        status = Status(StatusCode.UNSET) if s.error is None else Status(StatusCode.ERROR, s.error or None)
        return ReadableSpan(
            name=s.name, context=context(s.span_id),
            parent=None if s.parent_span_id is None else context(s.parent_span_id),
            resource=resource, attributes=BoundedAttributes(attributes=s.attributes, immutable=True),
            events=[Event(e.name, BoundedAttributes(attributes=e.attributes, immutable=True), e.time) for e in s.events],
            kind={1: SpanKind.INTERNAL, 3: SpanKind.CLIENT}[s.kind], status=status,
            start_time=s.start, end_time=s.end, instrumentation_scope=scope,
        )

    lines = list(trace.lines(batch=4))  # several lines: each one request of its own
    assert len(lines) == 3
    for i, line in enumerate(lines):
        assert parse(line) == encoder.encode_spans([sdk(s) for s in trace.spans[4 * i: 4 * i + 4]])


def test_the_same_file_exports_identically_on_both_cores(tmp_path: Any) -> None:
    t = build_transcript(str(tmp_path / "run.jsonl"))
    before = _backend.core
    outputs = []
    try:
        for name in _backend.available():
            _backend.use(name)
            outputs += [list(otlp.trace(t.path, content=True).lines()), list(otlp.trace(t.path, content=True).lines())]
    finally:
        _backend.core = before
    assert all(o == outputs[0] for o in outputs)
    meta_id = Session.peek(t.path)["envelopes"][0].id
    expected = hashlib.sha256(b"llm-agent-session otlp\0trace\0" + meta_id.encode() + b"\0").hexdigest()[:32]
    assert json.loads(outputs[0][0])["resourceSpans"][0]["scopeSpans"][0]["spans"][0]["traceId"] == expected


def test_content_only_when_asked_and_each_message_once(tmp_path: Any) -> None:
    t = build_transcript(str(tmp_path / "run.jsonl"))
    plain, spans = export(t.path)
    assert not {kv.key for s in spans for kv in s.attributes} & CONTENT_ATTRIBUTES
    text = "".join(plain)
    for secret in ("careful coding agent", "date parser", "SECRET-BUILD-LOG", "SUMMARY-OF-EARLIER", "collected line"):
        assert secret not in text
    _, spans = export(t.path, content=True)
    values = [v for s in spans for k, v in attrs(s.attributes).items() if k in CONTENT_ATTRIBUTES]
    values += [v for s in spans for e in s.events for k, v in attrs(e.attributes).items() if k in CONTENT_ATTRIBUTES]
    blob = "\n".join(values)
    # Each message's text once: the system prompt, the user's, the assistant's, the tool results.
    for once in ("You are a careful coding agent.", "Please fix the date parser", "Running the tests first.",
                 "collected line 00399", "dates.py:12: month", "SUMMARY-OF-EARLIER-TURNS", "edited dates.py",
                 "Thanks — ship it", "The parser reads day-first"):
        assert blob.count(once) == 1, once
    chat = attrs(by_name(spans)["chat m-1"][0].attributes)
    assert json.loads(chat[names.INPUT_MESSAGES]) == [
        {"role": "system", "parts": [{"type": "text", "content": "You are a careful coding agent."}]},
        {"role": "user", "parts": [{"type": "text", "content": "Please fix the date parser in dates.py."}]}]
    assert json.loads(chat[names.OUTPUT_MESSAGES]) == [{"role": "assistant", "finish_reason": "tool_call", "parts": [
        {"type": "text", "content": "Running the tests first."},
        {"type": "tool_call", "id": "call_1", "name": "bash", "arguments": {"cmd": "pytest -x"}}]}]


def test_unknown_figures_are_absent_and_usage_counts_as_the_conventions_count(tpath: Any) -> None:
    with Session.create(tpath, {"agent": "a", "provider": "anthropic"}) as s:
        s.append_message({"role": "user", "content": [{"type": "image_url", "image_url": {"url": "data:image/png;base64,iVBO"}}]})
        s.append_message({"role": "assistant", "content": "one"}, extra={"model": "claude-x", "stop-reason": "end_turn", "usage": {
            "input_tokens": 10, "output_tokens": 5, "cache_read_input_tokens": 100, "cache_creation_input_tokens": 20}})
        s.append_message({"role": "assistant", "content": "two"}, extra={"usage": {
            "prompt_tokens": 50, "completion_tokens": 7, "prompt_tokens_details": {"cached_tokens": 30}}})
        last = s.append_message({"role": "assistant", "content": "three"}, extra={"usage": {"output_tokens": None}})
    with open(tpath, "ab") as f:  # an imported compaction that does not know its token counts
        f.write(envelope_line("c-null", "compaction", "2026-01-01T00:00:00.000000Z", dumps(
            {"summary": "s", "replaces-through-id": last, "tokens-before": None, "tokens-after": None, "fallback": False})))
    _, spans = export(tpath, content=True)
    one, two, three = (attrs(s.attributes) for s in spans[1:])
    usage = [names.USAGE_INPUT_TOKENS, names.USAGE_OUTPUT_TOKENS, names.USAGE_CACHE_READ_INPUT_TOKENS,
             names.USAGE_CACHE_CREATION_INPUT_TOKENS]
    assert [one.get(k) for k in usage] == [130, 5, 100, 20]  # Anthropic's input leaves the cache out
    assert [two.get(k) for k in usage] == [50, 7, 30, None]
    assert not set(usage) & set(three)
    assert one[names.PROVIDER_NAME] == "anthropic" and one[names.RESPONSE_MODEL] == "claude-x"
    assert spans[1].name == "chat claude-x" and spans[2].name == "chat"  # no model recorded: none guessed
    assert json.loads(one[names.OUTPUT_MESSAGES])[0]["finish_reason"] == "stop"
    assert "finish_reason" not in json.loads(two[names.OUTPUT_MESSAGES])[0]
    assert json.loads(one[names.INPUT_MESSAGES]) == [{"role": "user", "parts": [
        {"type": "blob", "modality": "image", "mime_type": "image/png", "content": "iVBO"}]}]
    compaction, = spans[0].events
    assert attrs(compaction.attributes) == {names.ENVELOPE_ID: "c-null", names.COMPACTION_REPLACES_THROUGH_ID: last,
                                            names.COMPACTION_FALLBACK: False, names.REMOVED_MESSAGES: 4,
                                            names.COMPACTION_SUMMARY: "s"}


WRITER = """
import sys
from llm_agent_session import Session, assistant_message, user_message
call = {"id": "call_9", "type": "function", "function": {"name": "bash", "arguments": '{"cmd": "make"}'}}
s = Session.create(sys.argv[1], {"agent": "killed-agent", "model": "m-2"})
s.append_message(user_message("build it"))
s.append_message(assistant_message(None, [call]))
print(s.append_tool_dispatched("call_9", "bash", '{"cmd": "make"}'), flush=True)
sys.stdin.read()  # the call is running: wait to be killed
"""


def test_a_writer_killed_mid_tool_leaves_an_interrupted_span(tmp_path: Any, backend_name: str) -> None:
    path = str(tmp_path / "run.jsonl")
    child = subprocess.Popen([sys.executable, "-c", WRITER, path], stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                             text=True, env=child_env(backend_name))
    assert child.stdout is not None
    op_id = child.stdout.readline().strip()
    os.kill(child.pid, signal.SIGKILL)
    assert child.wait(timeout=30) == -signal.SIGKILL
    _, spans = export(path)
    root, = [s for s in spans if not s.parent_span_id]
    tool, = [s for s in spans if s.name == "execute_tool bash"]
    a = attrs(tool.attributes)
    assert (a[names.TOOL_OP_ID], a[names.TOOL_STATE], a[names.ERROR_TYPE], tool.status.code) == (
        op_id, "dispatched", "interrupted", 2)
    assert tool.end_time_unix_nano == root.end_time_unix_nano == nanos(Session.peek(path)["envelopes"][-1].ts)
    # The resume settles it outcome-unknown: still interrupted, now ending at that settle.
    with Session.load(path) as s:
        s.append_message(tool_message("call_9", "[interrupted]"))
        settled = s.resolve_tool_operation(op_id, reason="the agent was killed")
        s.append_message({"role": "user", "content": "go on"})
    _, spans = export(path)
    tool, = [s for s in spans if s.name == "execute_tool bash"]
    a = attrs(tool.attributes)
    assert (a[names.TOOL_STATE], a[names.ERROR_TYPE], tool.status.message) == (
        "outcome-unknown", "interrupted", "the agent was killed")
    assert tool.end_time_unix_nano == nanos({e.id: e for e in Session.peek(path)["envelopes"]}[settled].ts)


def test_hostile_content_is_carried_as_data(tmp_path: Any) -> None:
    corpus = hostile.build(str(tmp_path / "corpus"))
    lines, spans = export(corpus.path, content=True)
    assert all(line.isascii() for line in lines)  # every other character is a \\u escape
    root = spans[0]
    ra = attrs(root.attributes)
    assert ra[names.REQUEST_MODEL] == hostile.H and spans[1].name == "chat " + hostile.H  # byte for byte
    assert ra[names.TRANSCRIPT_UNFINISHED_BYTES] > 0  # the torn hostile last line, left out
    results = [attrs(s.attributes).get(names.TOOL_CALL_RESULT) for s in spans]
    assert hostile.H in results
    # The copy a load refuses (a malformed line, a duplicate id) still exports, the verdict recorded.
    _, spans = export(corpus.broken)
    problems = attrs(spans[0].attributes)[names.TRANSCRIPT_PROBLEMS]
    assert len(problems) == 2 and any("malformed" in p or "JSON" in p for p in problems)


def test_imported_histories_export_with_their_models_and_usage(tmp_path: Any) -> None:
    _, out, _ = fx.import_into(claude_code, tmp_path, fx.claude_code_session(), "cc.jsonl")
    _, spans = export(out)
    root = spans[0]
    assert root.name == "invoke_agent claude-code"
    assert attrs(root.attributes)[names.CONVERSATION_ID] == "sess-1"
    chats = [attrs(s.attributes) for s in spans if s.name.startswith("chat")]
    assert chats and all(c[names.RESPONSE_MODEL] == "claude-opus-4-1" for c in chats)
    # Anthropic's input leaves the cache out; the conventions' count includes reads and writes.
    assert {c.get(names.USAGE_INPUT_TOKENS) for c in chats} >= {12 + 14000 + 1500}
    assert {c.get(names.USAGE_OUTPUT_TOKENS) for c in chats} >= {7}
    assert any(attrs(s.attributes).get(names.ERROR_TYPE) == "interrupted" for s in spans)  # the unanswered call
    events = {e.id: e for e in Session.peek(out)["envelopes"]}
    for s in spans:  # every chat span ends at its message's own time (the source's, once the importer writes it)
        a = attrs(s.attributes)
        if s.name.startswith("chat"):
            assert s.end_time_unix_nano == nanos(events[a[names.ENVELOPE_ID]].ts)

    _, out, _ = fx.import_into(codex, tmp_path, fx.codex_rollout(), "cx.jsonl")
    _, spans = export(out)
    assert spans[0].name == "invoke_agent codex"
    models = [attrs(s.attributes).get(names.REQUEST_MODEL) for s in spans if s.name.startswith("chat")]
    assert models[0] == "gpt-5-codex" and models[-1] == "gpt-5"  # from each turn's context
    assert any(attrs(s.attributes).get(names.ERROR_TYPE) == "interrupted" for s in spans)  # call_rm, cut off
    # token-usage: each response's counts once, however many chat spans it spread over.
    chats = [attrs(s.attributes) for s in spans if s.name.startswith("chat")]
    totals = usage.of_transcript(out)
    assert sum(c.get(names.USAGE_OUTPUT_TOKENS, 0) for c in chats) == totals.output
    assert sum(c.get(names.USAGE_INPUT_TOKENS, 0) for c in chats) == totals.input + totals.cache_read
    assert sum(c.get(names.USAGE_CACHE_READ_INPUT_TOKENS, 0) for c in chats) == totals.cache_read


def test_a_response_over_several_messages_has_its_usage_on_one_chat_span(tpath: Any) -> None:
    with Session.create(tpath, {"agent": "a"}) as s:
        s.append_message({"role": "user", "content": "go"})
        s.append_message({"role": "assistant", "content": "part"}, usage=Usage(10, 1, 500, response_id="r1"))
        s.append_message({"role": "assistant", "content": "whole"}, usage=Usage(10, 30, 500, response_id="r1"))
        s.append_message({"role": "assistant", "content": "raw"}, extra={"usage": {"input_tokens": 4, "output_tokens": 2}})
    _, spans = export(tpath)
    first, second, third = (attrs(s.attributes) for s in spans if s.name.startswith("chat"))
    assert not {names.USAGE_INPUT_TOKENS, names.USAGE_OUTPUT_TOKENS} & set(first)  # counted at the response's last
    assert (second[names.USAGE_INPUT_TOKENS], second[names.USAGE_OUTPUT_TOKENS]) == (510, 30)
    assert second[names.USAGE_CACHE_READ_INPUT_TOKENS] == 500 and first[names.RESPONSE_ID] == second[names.RESPONSE_ID] == "r1"
    assert (third[names.USAGE_INPUT_TOKENS], third[names.USAGE_OUTPUT_TOKENS]) == (4, 2)  # a provider-shaped usage


# -- the command line -----------------------------------------------------------------------------------

class _Receiver(BaseHTTPRequestHandler):
    answer = (200, b"{}")
    received: List[Tuple[str, Any, bytes]] = []

    def do_POST(self) -> None:
        body = self.rfile.read(int(self.headers["Content-Length"]))
        self.received.append((self.path, self.headers, body))  # headers: case-insensitive
        code, reply = self.answer
        self.send_response(code)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(reply)))
        self.end_headers()
        self.wfile.write(reply)

    def log_message(self, *args: Any) -> None:
        pass


@pytest.fixture
def receiver() -> Iterator[Tuple[str, Any]]:
    """A collector's OTLP/HTTP endpoint on a loopback port the kernel picks."""
    handler = type("Receiver", (_Receiver,), {"received": []})
    server = ThreadingHTTPServer(("127.0.0.1", 0), handler)
    thread = threading.Thread(target=server.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}", handler
    finally:
        server.shutdown()
        server.server_close()
        thread.join()


def test_cli_writes_the_file_and_sends_the_same_spans(tmp_path: Any, backend_name: str, receiver: Any) -> None:
    url, handler = receiver
    t = build_transcript(str(tmp_path / "run.jsonl"))
    out = tmp_path / "run.otlp.jsonl"
    env = child_env(backend_name, {"OTEL_EXPORTER_OTLP_HEADERS": "x-api-key=s%3Dcret"})
    done = subprocess.run(cli_argv("export", t.path, "--format", "otlp", "-o", str(out), "--endpoint", url),
                          capture_output=True, text=True, env=env, timeout=60)
    assert done.returncode == 0, done.stderr
    assert done.stdout == "" and "11 spans" in done.stderr and url + "/v1/traces" in done.stderr
    lines = out.read_text(encoding="ascii").splitlines(keepends=True)
    assert lines == list(otlp.trace(t.path).lines())
    assert [(path, body.decode() + "\n") for path, _, body in handler.received] == [("/v1/traces", line) for line in lines]
    assert all(h["Content-Type"] == "application/json" and h["x-api-key"] == "s=cret" for _, h, _ in handler.received)
    # Protobuf, for collectors that take nothing else (Phoenix): the same requests.
    otlp.send(otlp.trace(t.path), url + "/custom/path", protocol="http/protobuf")
    path, headers, body = handler.received[-1]
    assert (path, headers["Content-Type"]) == ("/custom/path", "application/x-protobuf")
    assert trace_service.ExportTraceServiceRequest.FromString(body) == parse(lines[0])
    # The collector refuses: it says why.
    handler.answer = (415, b"Unsupported content type")
    with pytest.raises(otlp.SendError, match="HTTP 415.*OTEL_EXPORTER_OTLP_PROTOCOL=http/protobuf"):
        otlp.send(otlp.trace(t.path), url)


class _Recorder(BaseHTTPRequestHandler):
    """Another origin: records every request, whatever its method, and accepts it."""
    received: List[Tuple[str, str, Any, bytes]] = []

    def _record(self) -> None:
        body = self.rfile.read(int(self.headers.get("Content-Length") or 0))
        self.received.append((self.command, self.path, self.headers, body))
        self.send_response(200)
        self.send_header("Content-Length", "2")
        self.end_headers()
        self.wfile.write(b"{}")

    do_GET = do_POST = do_PUT = do_HEAD = _record

    def log_message(self, *args: Any) -> None:
        pass


class _Redirector(_Receiver):
    """The configured collector, answering every POST with a redirect."""
    redirect: Tuple[int, str] = (302, "")

    def do_POST(self) -> None:
        body = self.rfile.read(int(self.headers["Content-Length"]))
        self.received.append((self.path, self.headers, body))
        code, location = self.redirect
        self.send_response(code)
        self.send_header("Location", location)
        self.send_header("Content-Length", "0")
        self.end_headers()


def _serve(handler: Any) -> Tuple[str, Any]:
    server = ThreadingHTTPServer(("127.0.0.1", 0), handler)
    threading.Thread(target=server.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True).start()
    return f"http://127.0.0.1:{server.server_address[1]}", server


def test_a_redirect_is_an_error_and_nothing_leaves_the_configured_origin(
        tmp_path: Any, capsys: Any, monkeypatch: Any) -> None:
    """Issue #33: urllib followed 301/302/303 as a GET without the body (and "sent 11 spans",
    exit 0, though no collector got one) and took the Authorization header to the other
    origin. No redirect is followed: exit 1, the status and the Location said, and the
    other origin (a real server on another port) receives nothing at all."""
    t = build_transcript(str(tmp_path / "run.jsonl"))
    redirector = type("Redirector", (_Redirector,), {"received": []})
    recorder = type("Recorder", (_Recorder,), {"received": []})
    (url, first), (elsewhere, second) = _serve(redirector), _serve(recorder)
    monkeypatch.setenv("OTEL_EXPORTER_OTLP_HEADERS", "Authorization=Bearer%20s3cret")
    try:
        for code in (301, 302, 303, 307, 308):
            redirector.redirect = (code, elsewhere + "/v1/traces")
            assert cli_main(["export", t.path, "--format", "otlp", "--endpoint", url]) == 1, code
            captured = capsys.readouterr()
            assert captured.out == "" and "sent" not in captured.err, captured.err
            assert f"HTTP {code}" in captured.err and repr(elsewhere + "/v1/traces") in captured.err, captured.err
            assert "after 0 request(s) went through" in captured.err and "not followed" in captured.err
            assert recorder.received == [], (code, recorder.received)
            path, headers, _ = redirector.received[-1]
            assert (path, headers["Authorization"]) == ("/v1/traces", "Bearer s3cret")  # to its own origin only
        assert len(redirector.received) == 5
        # The Location is the other server's text: escaped in the message, never raw.
        redirector.redirect = (301, elsewhere + "/\x1b]0;owned\x07\x9b2J")
        with pytest.raises(otlp.SendError) as raised:
            otlp.send(otlp.trace(t.path), url, headers={"Authorization": "Bearer s3cret"})
        message = str(raised.value)
        assert "\\x1b]0;owned\\x07\\x9b2J" in message and not any(c in message for c in "\x1b\x07\x9b")
        assert recorder.received == []
    finally:
        for server in (first, second):
            server.shutdown()
            server.server_close()


def test_protobuf_form_is_the_protobuf_libraries_own(tmp_path: Any) -> None:
    """Our dependency-free protobuf writer gives the bytes opentelemetry-proto serialises
    from the parsed JSON: the two forms carry the same requests."""
    from llm_agent_session.otlp.protobuf import request_bytes

    t = build_transcript(str(tmp_path / "run.jsonl"))
    corpus = hostile.build(str(tmp_path / "corpus"))
    for path in (t.path, corpus.path, corpus.broken):
        trace = otlp.trace(path, content=True)
        for request, line in zip(trace.requests(batch=5), trace.lines(batch=5)):
            assert request_bytes(request) == parse(line).SerializeToString(deterministic=True)


def test_cli_exit_codes(tmp_path: Any, capsys: Any, monkeypatch: Any) -> None:
    t = build_transcript(str(tmp_path / "run.jsonl"))
    assert cli_main(["export", t.path, "--format", "otlp", "--content"]) == 0
    assert [parse(line) for line in capsys.readouterr().out.splitlines(keepends=True)]
    assert cli_main(["export", t.path, "--format", "otlp", "-o", t.path]) == 1  # never over an existing file
    assert cli_main(["export", t.path, "--format", "markdown", "--content"]) == 2
    assert cli_main(["export", t.path, "--format", "otlp", "--endpoint", "ftp://collector"]) == 1
    not_one = tmp_path / "notes.txt"
    not_one.write_text("hello\n")
    assert cli_main(["export", str(not_one), "--format", "otlp"]) == 3
    assert "not an http:// or https:// URL" in capsys.readouterr().err
    monkeypatch.setenv("OTEL_EXPORTER_OTLP_PROTOCOL", "grpc")
    assert cli_main(["export", t.path, "--format", "otlp", "--endpoint", "http://127.0.0.1:9"]) == 1
    assert "OTEL_EXPORTER_OTLP_PROTOCOL=grpc" in capsys.readouterr().err
