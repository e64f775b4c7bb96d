"""Sending the export to a collector over OTLP/HTTP (the standard library's ``urllib``: no
dependency), one ``POST`` per request of the export: JSON bodies by default, protobuf ones
(``protobuf.py``) when ``OTEL_EXPORTER_OTLP_TRACES_PROTOCOL`` or ``OTEL_EXPORTER_OTLP_PROTOCOL``
says ``http/protobuf``, as every OpenTelemetry SDK reads them (Phoenix takes only protobuf).

The endpoint follows the OpenTelemetry exporter's rules: a URL with a path is used as it is
(like ``OTEL_EXPORTER_OTLP_TRACES_ENDPOINT``); a bare ``scheme://host:port`` gets
``/v1/traces`` (like ``OTEL_EXPORTER_OTLP_ENDPOINT``). Headers (an API key, say) come from
``OTEL_EXPORTER_OTLP_TRACES_HEADERS`` or ``OTEL_EXPORTER_OTLP_HEADERS``
(``key=value,key2=value2``, values percent-decoded), as every OpenTelemetry SDK reads them.

No redirect is followed: urllib's default would turn the ``POST`` of a 301, 302 or 303 into a
``GET`` without the body (the export would count as sent though no collector got a span) and
would carry the headers (an API key) to whatever origin the ``Location`` names. A 3xx is an
error that names it; the headers never leave the configured origin.
"""

from __future__ import annotations

import json
import os
import urllib.error
import urllib.request
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Dict, Mapping, Optional
from urllib.parse import unquote, urlsplit

from .encode import dumps
from .protobuf import request_bytes

if TYPE_CHECKING:
    from .spans import Trace

TRACES_PATH = "/v1/traces"
JSON, PROTOBUF = "http/json", "http/protobuf"
_CONTENT_TYPES = {JSON: "application/json", PROTOBUF: "application/x-protobuf"}
_EXCERPT = 300


class SendError(Exception):
    """The collector could not be reached or refused a request; the message says which."""


class _RefuseRedirects(urllib.request.HTTPRedirectHandler):
    """Follows no redirect: the 3xx reaches ``send`` as an HTTPError, and the request (its
    body, its headers) goes nowhere but the URL it was given."""

    def redirect_request(self, req: urllib.request.Request, fp: Any, code: int, msg: str,
                         headers: Any, newurl: str) -> None:
        return None


_OPENER = urllib.request.build_opener(_RefuseRedirects)


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


def protocol_from_environment(environ: Optional[Mapping[str, str]] = None) -> str:
    """``http/json`` unless the OpenTelemetry variables ask for ``http/protobuf``."""
    env = os.environ if environ is None else environ
    name = "OTEL_EXPORTER_OTLP_TRACES_PROTOCOL"
    if not env.get(name):
        name = "OTEL_EXPORTER_OTLP_PROTOCOL"
    protocol = env.get(name) or JSON
    if protocol not in _CONTENT_TYPES:
        raise SendError(f"{name}={protocol}: this export sends {JSON} or {PROTOBUF} "
                        "(for gRPC, put a collector in between)")
    return protocol


def send(trace: "Trace", endpoint: str, *, protocol: str = JSON, headers: Optional[Mapping[str, str]] = None,
         timeout: float = 30.0) -> Sent:
    """POST each request of `trace` (as ``Trace.lines`` splits them) to the collector at
    `endpoint`, as JSON or protobuf. Stops at the first request that fails, with a SendError
    that names the URL and why."""
    url = traces_url(endpoint)
    content_type = _CONTENT_TYPES[protocol]
    sent = Sent(url)
    for request in trace.requests():
        body = dumps(request).encode("ascii") if protocol == JSON else request_bytes(request)
        req = urllib.request.Request(url, data=body, method="POST",
                                     headers={**(headers or {}), "Content-Type": content_type})
        try:
            with _OPENER.open(req, timeout=timeout) as response:
                answer = response.read()
        except urllib.error.HTTPError as e:
            if 300 <= e.code < 400:
                raise SendError(_redirect_refused(url, e, sent.requests)) from None
            text = e.read()[:_EXCERPT].decode("utf-8", "replace")
            hint = (f"; this collector wants protobuf: set OTEL_EXPORTER_OTLP_PROTOCOL={PROTOBUF}"
                    if e.code == 415 and protocol == JSON else "")
            raise SendError(f"{url}: the collector answered HTTP {e.code} {e.reason} after {sent.requests} "
                            f"request(s) went through: {text}{hint}") from None
        except (urllib.error.URLError, OSError) as e:
            reason = getattr(e, "reason", e)
            raise SendError(f"{url}: cannot send ({reason}); is a collector listening there?") from None
        sent.requests += 1
        if protocol == JSON:
            _note_partial_success(sent, answer)
    return sent


def _redirect_refused(url: str, e: urllib.error.HTTPError, requests: int) -> str:
    location = e.headers.get("Location") if e.headers is not None else None
    to = f"to {ascii(location)}" if location else "without a Location"
    return (f"{url}: the collector answered HTTP {e.code} {e.reason}, a redirect {to}, after {requests} "
            "request(s) went through; redirects are not followed (the spans would not arrive, and the "
            "headers would go to another origin): point the endpoint at the URL the collector answers at")


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
