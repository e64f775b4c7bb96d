"""Sending the export to a collector over OTLP/HTTP with JSON bodies (the standard library's
``urllib``: no dependency), one ``POST`` per line of the export.

The endpoint follows the OpenTelemetry exporter's rules: a URL with a path is used as it is
(like ``OTEL_EXPORTER_OTLP_TRACES_ENDPOINT``); a bare ``scheme://host:port`` gets
``/v1/traces`` (like ``OTEL_EXPORTER_OTLP_ENDPOINT``). Headers (an API key, say) come from
``OTEL_EXPORTER_OTLP_TRACES_HEADERS`` or ``OTEL_EXPORTER_OTLP_HEADERS``
(``key=value,key2=value2``, values percent-decoded), as every OpenTelemetry SDK reads them.
"""

from __future__ import annotations

import json
import os
import urllib.error
import urllib.request
from dataclasses import dataclass
from typing import Dict, Iterable, Mapping, Optional
from urllib.parse import unquote, urlsplit

TRACES_PATH = "/v1/traces"
_EXCERPT = 300


class SendError(Exception):
    """The collector could not be reached or refused a request; the message says which."""


@dataclass
class Sent:
    url: str
    requests: int = 0
    rejected_spans: int = 0  # what the collector's partialSuccess said it dropped
    message: str = ""  # the collector's partialSuccess errorMessage, if any


def traces_url(endpoint: str) -> str:
    parts = urlsplit(endpoint)
    if parts.scheme not in ("http", "https") or not parts.netloc:
        raise SendError(f"{endpoint}: not an http:// or https:// URL of a collector (e.g. http://localhost:4318)")
    if parts.path in ("", "/"):
        return endpoint.rstrip("/") + TRACES_PATH
    return endpoint


def headers_from_environment(environ: Optional[Mapping[str, str]] = None) -> Dict[str, str]:
    """The headers the OpenTelemetry environment variables name (the traces-only one first)."""
    env = os.environ if environ is None else environ
    text = env.get("OTEL_EXPORTER_OTLP_TRACES_HEADERS") or env.get("OTEL_EXPORTER_OTLP_HEADERS") or ""
    headers: Dict[str, str] = {}
    for item in text.split(","):
        key, sep, value = item.partition("=")
        if sep and key.strip():
            headers[unquote(key.strip())] = unquote(value.strip())
    return headers


def send(lines: Iterable[str], endpoint: str, *, headers: Optional[Mapping[str, str]] = None,
         timeout: float = 30.0) -> Sent:
    """POST each line (one ``ExportTraceServiceRequest`` as JSON) to the collector at `endpoint`.
    Stops at the first request that fails, with a SendError that names the URL and why."""
    url = traces_url(endpoint)
    sent = Sent(url)
    for line in lines:
        body = line.rstrip("\n").encode("utf-8")
        req = urllib.request.Request(url, data=body, method="POST",
                                     headers={**(headers or {}), "Content-Type": "application/json"})
        try:
            with urllib.request.urlopen(req, timeout=timeout) as response:
                answer = response.read()
        except urllib.error.HTTPError as e:
            text = e.read()[:_EXCERPT].decode("utf-8", "replace")
            raise SendError(f"{url}: the collector answered HTTP {e.code} {e.reason} after {sent.requests} "
                            f"request(s) went through: {text}") from None
        except (urllib.error.URLError, OSError) as e:
            reason = getattr(e, "reason", e)
            raise SendError(f"{url}: cannot send ({reason}); is a collector listening there?") from None
        sent.requests += 1
        _note_partial_success(sent, answer)
    return sent


def _note_partial_success(sent: Sent, answer: bytes) -> None:
    try:
        partial = json.loads(answer or b"{}").get("partialSuccess") or {}
    except (ValueError, AttributeError):
        return  # an empty or non-JSON 2xx body: accepted, nothing to note
    if not isinstance(partial, dict):
        return
    try:
        sent.rejected_spans += int(partial.get("rejectedSpans") or 0)
    except (TypeError, ValueError):
        pass
    if isinstance(partial.get("errorMessage"), str) and partial["errorMessage"]:
        sent.message = partial["errorMessage"]
