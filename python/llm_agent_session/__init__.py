"""llm-agent-session: the durable, resumable JSONL transcript of an LLM agent run.

See SPEC.md (section 8) for the names exported here.
"""

from ._backend import backend
from .errors import (
    CorruptTranscript,
    DanglingReference,
    NotATranscript,
    SessionBroken,
    SessionClosed,
    SessionLocked,
    ToolOperationError,
    TranscriptConflict,
    TranscriptError,
    UnsupportedVersion,
)
from .messages import (
    Event,
    Message,
    PendingToolOperation,
    assistant_message,
    system_message,
    tool_message,
    user_message,
)
from .session import Session

__all__ = [
    "Session",
    "Message",
    "Event",
    "PendingToolOperation",
    "system_message",
    "user_message",
    "assistant_message",
    "tool_message",
    "backend",
    "TranscriptError",
    "NotATranscript",
    "CorruptTranscript",
    "UnsupportedVersion",
    "DanglingReference",
    "SessionLocked",
    "SessionClosed",
    "SessionBroken",
    "TranscriptConflict",
    "ToolOperationError",
]

__version__ = "0.1.0"
