"""Every name the OTLP export writes, defined once: the semantic conventions it follows
(pinned below), the span kinds and status codes as OTLP numbers them, and this project's own
attributes and events for what the conventions have no name for (``llm_agent_session.*``).

``docs/otlp.md`` has the table of what each transcript record becomes; a test holds that
table and these constants together, and checks that an export uses no other name.
"""

from __future__ import annotations

# The OpenTelemetry semantic conventions followed: release v1.41.0 of
# open-telemetry/semantic-conventions (the last release that carried the GenAI conventions
# before they moved to their own repository), GenAI spans at "Development" stability.
SEMCONV_VERSION = "1.41.0"
SEMCONV_COMMIT = "e018fe6f91862f5ed63c082f87697cddac596784"
SCHEMA_URL = "https://opentelemetry.io/schemas/1.41.0"

SCOPE_NAME = "llm_agent_session.otlp"

# Span kinds and status codes: the numbers of opentelemetry-proto's trace.proto (OTLP/JSON
# writes enums as integers).
KIND_INTERNAL = 1
KIND_CLIENT = 3
STATUS_ERROR = 2
# trace.proto's SpanFlags: the parent is known to be local (or there is none), as the
# OpenTelemetry SDK marks the spans it makes.
FLAGS_CONTEXT_HAS_IS_REMOTE = 0x100

# gen_ai.operation.name values (and the first word of each span's name).
INVOKE_AGENT = "invoke_agent"
CHAT = "chat"
EXECUTE_TOOL = "execute_tool"
TOOL_TYPE_FUNCTION = "function"  # gen_ai.tool.type: a tool the application itself runs

# error.type values this export reports (the conventions ask each instrumentation to list its own).
ERROR_FAILED = "failed"  # the operation was settled `failed`
ERROR_INTERRUPTED = "interrupted"  # no outcome: never settled, or settled `outcome-unknown`

# -- resource ----------------------------------------------------------------------------------
SERVICE_NAME = "service.name"
DEFAULT_SERVICE_NAME = "llm-agent-session"

# -- semantic-conventions attributes ---------------------------------------------------------
OPERATION_NAME = "gen_ai.operation.name"
PROVIDER_NAME = "gen_ai.provider.name"
CONVERSATION_ID = "gen_ai.conversation.id"
AGENT_NAME = "gen_ai.agent.name"
AGENT_ID = "gen_ai.agent.id"
AGENT_VERSION = "gen_ai.agent.version"
REQUEST_MODEL = "gen_ai.request.model"
RESPONSE_MODEL = "gen_ai.response.model"
RESPONSE_ID = "gen_ai.response.id"
RESPONSE_FINISH_REASONS = "gen_ai.response.finish_reasons"
USAGE_INPUT_TOKENS = "gen_ai.usage.input_tokens"
USAGE_OUTPUT_TOKENS = "gen_ai.usage.output_tokens"
USAGE_CACHE_READ_INPUT_TOKENS = "gen_ai.usage.cache_read.input_tokens"
USAGE_CACHE_CREATION_INPUT_TOKENS = "gen_ai.usage.cache_creation.input_tokens"
TOOL_NAME = "gen_ai.tool.name"
TOOL_CALL_ID = "gen_ai.tool.call.id"
TOOL_TYPE = "gen_ai.tool.type"
ERROR_TYPE = "error.type"
# Opt-in content (only with --content).
INPUT_MESSAGES = "gen_ai.input.messages"
OUTPUT_MESSAGES = "gen_ai.output.messages"
TOOL_CALL_ARGUMENTS = "gen_ai.tool.call.arguments"
TOOL_CALL_RESULT = "gen_ai.tool.call.result"

# -- this project's attributes ------------------------------------------------------------------
SESSION_ID = "llm_agent_session.session.id"  # the session-meta envelope's id
ENVELOPE_ID = "llm_agent_session.envelope.id"  # the record a span or event comes from
TRANSCRIPT_PROBLEMS = "llm_agent_session.transcript.problems"  # what a load would refuse
TRANSCRIPT_UNFINISHED_BYTES = "llm_agent_session.transcript.unfinished_bytes"  # a torn last line
TOOL_OP_ID = "llm_agent_session.tool.op_id"
TOOL_STATE = "llm_agent_session.tool.state"
TOOL_IDEMPOTENCY = "llm_agent_session.tool.idempotency"
TOOL_RUN_ID = "llm_agent_session.tool.run_id"
TOOL_ROUND = "llm_agent_session.tool.round"
TOOL_ARGUMENTS_DIGEST = "llm_agent_session.tool.arguments_digest"
TOOL_DURATION = "llm_agent_session.tool.duration"
TOOL_REASON = "llm_agent_session.tool.reason"
TOOL_RESULT_DIGEST = "llm_agent_session.tool.result_digest"
TOOL_ARTIFACT_FILE = "llm_agent_session.tool.artifact.file"
TOOL_ARTIFACT_BYTES = "llm_agent_session.tool.artifact.bytes"
GRANTS_ID = "llm_agent_session.grants.id"  # on execute_tool: the grants in force at dispatch
GRANTS_SNAPSHOT = "llm_agent_session.grants.snapshot"
COMPACTION_REPLACES_THROUGH_ID = "llm_agent_session.compaction.replaces_through_id"
COMPACTION_TOKENS_BEFORE = "llm_agent_session.compaction.tokens_before"
COMPACTION_TOKENS_AFTER = "llm_agent_session.compaction.tokens_after"
COMPACTION_FALLBACK = "llm_agent_session.compaction.fallback"
COMPACTION_SUMMARY = "llm_agent_session.compaction.summary"  # content: only with --content
REMOVED_MESSAGES = "llm_agent_session.removed_messages"  # by a compaction or a rewind
ELISION_IDS = "llm_agent_session.elision.ids"
REWIND_TO_ID = "llm_agent_session.rewind.to_id"

# -- this project's span events --------------------------------------------------------------------
EVENT_COMPACTION = "llm_agent_session.compaction"
EVENT_ELISION = "llm_agent_session.elision"
EVENT_REWIND = "llm_agent_session.rewind"
EVENT_GRANTS = "llm_agent_session.grants"
EVENT_TOOL_RESULT = "llm_agent_session.tool.result"  # on execute_tool: the tool message's time
