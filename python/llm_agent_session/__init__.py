"""llm-agent-session: the durable, resumable JSONL transcript of an LLM agent run.

``Session`` creates, loads (repairing a torn tail), appends to and peeks at a
transcript; ``Message`` and its helpers (``system_message``, ``user_message``,
``assistant_message``, ``tool_message``) are what it records; ``Event`` and
``PendingToolOperation`` are what it reads back; ``Usage`` is a response's token
usage (``llm_agent_session.usage`` counts it); every error about a transcript
inherits ``TranscriptError``. ``backend()`` says which core runs; ``index_file(path)``
where a transcript's side index is kept. See
``help(llm_agent_session.Session)``, the README, and docs/FORMAT.md for the file.
"""

from ._backend import backend
from ._index import index_file
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
from ._token_usage import Usage, UsageTotals

__all__ = [
    "Session",
    "Message",
    "Event",
    "PendingToolOperation",
    "system_message",
    "user_message",
    "assistant_message",
    "tool_message",
    "Usage",
    "UsageTotals",
    "backend",
    "index_file",
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
