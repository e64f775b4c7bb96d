"""OTLP's protobuf wire form of the export, for collectors that take OTLP/HTTP only as
protobuf (Arize Phoenix answers a JSON body with 415), without a protobuf dependency.

It encodes the very ``ExportTraceServiceRequest`` dicts that ``encode.py`` writes as JSON,
field by field, following opentelemetry-proto's ``trace.proto`` (the field numbers below),
fields in number order and defaults left out, as protobuf itself serialises: a test holds
the bytes equal to opentelemetry-proto's own ``SerializeToString`` of the parsed JSON.
"""

from __future__ import annotations

import struct
from typing import Any, Dict, List, Tuple

# message -> (JSON key, field number, kind) in field-number order. A kind is a scalar
# ("string", "hex" for ids, "fixed64" and "int64" for decimal strings, "fixed32", "enum",
# "bool", "double") or the name of a message; a trailing "*" is a repeated field.
_SCHEMA: Dict[str, List[Tuple[str, int, str]]] = {
    "ExportTraceServiceRequest": [("resourceSpans", 1, "ResourceSpans*")],
    "ResourceSpans": [("resource", 1, "Resource"), ("scopeSpans", 2, "ScopeSpans*"), ("schemaUrl", 3, "string")],
    "Resource": [("attributes", 1, "KeyValue*")],
    "ScopeSpans": [("scope", 1, "InstrumentationScope"), ("spans", 2, "Span*"), ("schemaUrl", 3, "string")],
    "InstrumentationScope": [("name", 1, "string"), ("version", 2, "string"), ("attributes", 3, "KeyValue*")],
    "Span": [
        ("traceId", 1, "hex"), ("spanId", 2, "hex"), ("parentSpanId", 4, "hex"), ("name", 5, "string"),
        ("kind", 6, "enum"), ("startTimeUnixNano", 7, "fixed64"), ("endTimeUnixNano", 8, "fixed64"),
        ("attributes", 9, "KeyValue*"), ("events", 11, "Event*"), ("status", 15, "Status"), ("flags", 16, "fixed32"),
    ],
    "Event": [("timeUnixNano", 1, "fixed64"), ("name", 2, "string"), ("attributes", 3, "KeyValue*")],
    "Status": [("message", 2, "string"), ("code", 3, "enum")],
    "KeyValue": [("key", 1, "string"), ("value", 2, "AnyValue")],
    "AnyValue": [  # a oneof: the member that is set is written even at its default
        ("stringValue", 1, "string!"), ("boolValue", 2, "bool!"), ("intValue", 3, "int64!"),
        ("doubleValue", 4, "double!"), ("arrayValue", 5, "ArrayValue"), ("kvlistValue", 6, "KeyValueList"),
    ],
    "ArrayValue": [("values", 1, "AnyValue*")],
    "KeyValueList": [("values", 1, "KeyValue*")],
}
_VARINT, _FIXED64, _LENGTH, _FIXED32 = 0, 1, 2, 5
_DOUBLES = {"NaN": float("nan"), "Infinity": float("inf"), "-Infinity": float("-inf")}


def request_bytes(request: Dict[str, Any]) -> bytes:
    """One ``ExportTraceServiceRequest`` (as ``encode.request`` builds it) in protobuf."""
    return _message("ExportTraceServiceRequest", request)


def _varint(n: int) -> bytes:
    n &= (1 << 64) - 1  # a negative int64 is its two's complement, ten bytes long
    out = bytearray()
    while True:
        byte, n = n & 0x7F, n >> 7
        if n:
            out.append(byte | 0x80)
        else:
            out.append(byte)
            return bytes(out)


def _key(number: int, wire: int) -> bytes:
    return _varint(number << 3 | wire)


def _length_delimited(number: int, data: bytes) -> bytes:
    return _key(number, _LENGTH) + _varint(len(data)) + data


def _message(name: str, value: Dict[str, Any]) -> bytes:
    out = bytearray()
    for key, number, kind in _SCHEMA[name]:
        if key not in value:
            continue
        item = value[key]
        if kind.endswith("*"):
            for element in item:
                out += _length_delimited(number, _message(kind[:-1], element))
        elif kind in _SCHEMA:
            out += _length_delimited(number, _message(kind, item))
        else:
            out += _scalar(number, kind, item)
    return bytes(out)


def _scalar(number: int, kind: str, value: Any) -> bytes:
    always = kind.endswith("!")  # a oneof member: written even at its default
    kind = kind.rstrip("!")
    if kind == "double":
        number_ = _DOUBLES[value] if isinstance(value, str) else float(value)
        return _key(number, _FIXED64) + struct.pack("<d", number_)
    if kind in ("string", "hex"):
        data = value.encode("utf-8") if kind == "string" else bytes.fromhex(value)
        return _length_delimited(number, data) if data or always else b""
    n = int(value)  # fixed64 and int64 come as decimal strings; enum and bool as numbers
    if not n and not always:
        return b""  # proto3 leaves a scalar at its default out
    if kind == "fixed64":
        return _key(number, _FIXED64) + struct.pack("<Q", n)
    if kind == "fixed32":
        return _key(number, _FIXED32) + struct.pack("<I", n)
    return _key(number, _VARINT) + _varint(n)  # enum, bool, int64
