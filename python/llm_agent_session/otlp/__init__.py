"""A transcript as OpenTelemetry GenAI spans, in the OTLP/JSON file format (``docs/otlp.md``).

    from llm_agent_session import otlp

    trace = otlp.trace("run.jsonl")                  # one trace: otlp.Trace
    with open("run.otlp.jsonl", "x") as f:
        f.writelines(trace.lines())                  # one ExportTraceServiceRequest per line
    otlp.send(trace, "http://localhost:4318")        # or to a collector: OTLP/HTTP, JSON
    otlp.send(trace, "http://localhost:6006", protocol="http/protobuf")  # or protobuf

``trace(path, content=True)`` adds the messages (opt-in, as the conventions ask: they hold
whatever the conversation held). What the secret rules find is masked before anything is
made (``redact=False`` keeps it; ``trace.masked`` says how many were masked). Nothing here needs a dependency: the JSON is written by
``encode.py`` following the OTLP/JSON rules (``protobuf.py`` writes the same requests in
protobuf for collectors that take nothing else), the HTTP by the standard library.
"""

from __future__ import annotations

import os
from typing import Any, Union

from ..errors import NotATranscript
from .names import SCHEMA_URL, SEMCONV_VERSION
from .send import SendError, Sent, headers_from_environment, protocol_from_environment, send
from .spans import BATCH, Trace, from_envelopes

__all__ = ["BATCH", "SCHEMA_URL", "SEMCONV_VERSION", "SendError", "Sent", "Trace", "from_envelopes",
           "from_peek", "headers_from_environment", "protocol_from_environment", "send", "trace"]


def trace(path: Union[str, "os.PathLike[str]"], *, content: bool = False, redact: Any = True) -> Trace:
    """The trace of the transcript at `path`, read as ``Session.peek`` reads it (no lock,
    nothing written: a live transcript exports as far as it is written). ``redact``:
    True masks what the built-in rules and the user's configuration find (docs/secrets.md),
    a ``secrets.Redactor`` masks with it, False keeps everything; ``masked`` of the trace
    counts what was masked."""
    from ..secrets import Redactor
    from ..session import Session

    redactor = redact if isinstance(redact, Redactor) else Redactor(enabled=bool(redact))
    made = redactor.read(os.fspath(path), lambda readable: from_peek(Session.peek(readable), content=content))
    made.masked = redactor.masked
    return made


def from_peek(view: Any, *, content: bool = False) -> Trace:
    """The trace of what a ``Session.peek`` returned; NotATranscript when it found none."""
    if "error" in view:
        raise NotATranscript(f"{view['path']}: not a transcript: {view['error']}")
    return from_envelopes(view["envelopes"], content=content, warnings=view["warnings"],
                          unfinished_bytes=view["pending"])
