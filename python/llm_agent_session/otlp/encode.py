"""OTLP/JSON: spans as the ``ExportTraceServiceRequest`` JSON that the OpenTelemetry file
exporter writes (one compact object per line) and OTLP/HTTP receivers take.

The rules are protobuf's JSON mapping with OTLP's deviations, as opentelemetry-python's
JSON encoders apply them: keys in lowerCamelCase; trace and span ids as lowercase hex (not
proto3's base64); 64-bit integers (times, ``intValue``) as decimal strings; enums (span
kind, status code) as integers; a double that is not finite as ``"NaN"``/``"Infinity"``;
fields at their default value left out. Output is ASCII: every other character is a
``\\u`` escape, so a line carries any transcript text as data and is safe on a terminal.
"""

from __future__ import annotations

import json
import math
from dataclasses import dataclass, field
from typing import Any, Dict, Iterable, List, Optional

from ..canonical import int_to_str
from . import names

_INT64 = (-(1 << 63), (1 << 63) - 1)


@dataclass
class SpanEvent:
    name: str
    time: int  # Unix nanoseconds
    attributes: Dict[str, Any] = field(default_factory=dict)


@dataclass
class Span:
    span_id: bytes  # 8 bytes
    parent_span_id: Optional[bytes]  # None: the root
    name: str
    kind: int  # names.KIND_*
    start: int  # Unix nanoseconds
    end: int
    attributes: Dict[str, Any] = field(default_factory=dict)
    events: List[SpanEvent] = field(default_factory=list)
    error: Optional[str] = None  # not None: status ERROR, with this message ("": none)


def any_value(value: Any) -> Dict[str, Any]:
    """An attribute value as an OTLP ``AnyValue`` (bool before int: bool is an int in Python)."""
    if isinstance(value, bool):
        return {"boolValue": value}
    if isinstance(value, int):
        if _INT64[0] <= value <= _INT64[1]:
            return {"intValue": str(value)}
        return {"stringValue": int_to_str(value)}  # past int64: its exact digits
    if isinstance(value, float):
        if math.isnan(value):
            return {"doubleValue": "NaN"}
        if math.isinf(value):
            return {"doubleValue": "Infinity" if value > 0 else "-Infinity"}
        return {"doubleValue": value}
    if isinstance(value, str):
        return {"stringValue": value}
    if isinstance(value, (list, tuple)):
        return {"arrayValue": {"values": [any_value(v) for v in value]}}
    if isinstance(value, dict):
        return {"kvlistValue": {"values": attributes(value)}}
    if value is None:
        return {}
    raise TypeError(f"an attribute value of type {type(value).__name__} has no OTLP form")


def attributes(attrs: Dict[str, Any]) -> List[Dict[str, Any]]:
    return [{"key": key, "value": any_value(value)} for key, value in attrs.items()]


def span(s: Span, trace_id: bytes) -> Dict[str, Any]:
    out: Dict[str, Any] = {"traceId": trace_id.hex(), "spanId": s.span_id.hex()}
    if s.parent_span_id is not None:
        out["parentSpanId"] = s.parent_span_id.hex()
    out["flags"] = names.FLAGS_CONTEXT_HAS_IS_REMOTE
    out["name"] = s.name
    out["kind"] = s.kind
    out["startTimeUnixNano"] = str(s.start)
    out["endTimeUnixNano"] = str(s.end)
    if s.attributes:
        out["attributes"] = attributes(s.attributes)
    if s.events:
        out["events"] = [_event(e) for e in s.events]
    status: Dict[str, Any] = {}
    if s.error:
        status["message"] = s.error
    if s.error is not None:
        status["code"] = names.STATUS_ERROR
    out["status"] = status
    return out


def _event(e: SpanEvent) -> Dict[str, Any]:
    out: Dict[str, Any] = {"timeUnixNano": str(e.time), "name": e.name}
    if e.attributes:
        out["attributes"] = attributes(e.attributes)
    return out


def request(trace_id: bytes, resource: Dict[str, Any], scope_version: str, spans: Iterable[Span]) -> Dict[str, Any]:
    """One ``ExportTraceServiceRequest``: one resource, one instrumentation scope, `spans`."""
    return {
        "resourceSpans": [{
            "resource": {"attributes": attributes(resource)},
            "scopeSpans": [{
                "scope": {"name": names.SCOPE_NAME, "version": scope_version},
                "spans": [span(s, trace_id) for s in spans],
                "schemaUrl": names.SCHEMA_URL,
            }],
            "schemaUrl": names.SCHEMA_URL,
        }]
    }


def dumps(value: Dict[str, Any]) -> str:
    """One line of OTLP/JSON (without its newline): compact, ASCII, no NaN literals."""
    return json.dumps(value, ensure_ascii=True, separators=(",", ":"), allow_nan=False)
