"""The line format's exact serialisation (docs/FORMAT.md, "How a writer serialises"), digests, ids and timestamps.

Writing is per append and shared by both backends: the bytes a value becomes must
never depend on which core reads them back.
"""

from __future__ import annotations

import hashlib
import json
import math
import os
import sys
import threading
import time
from datetime import datetime, timezone
from typing import Any, Callable, Iterator, List, Optional, Tuple

# Containers deeper than this (counting the payload itself as 1) are refused on write.
MAX_WRITE_DEPTH = 100

_encoder = json.JSONEncoder(
    ensure_ascii=False,
    allow_nan=False,
    sort_keys=True,
    separators=(",", ":"),
    check_circular=False,  # validate() already refuses cycles (as too deep)
)


def _where(path: List[Any]) -> str:
    if not path:
        return "the value"
    out = ""
    for part in path:
        out += f"[{part!r}]"
    return out


def validate(value: Any, what: str = "payload") -> None:
    """Refuse anything that JSON cannot carry exactly, naming the key where it is.

    Accepts dicts with str keys, lists and tuples, str without lone surrogates, int,
    finite float, bool and None. Raises TypeError or ValueError before anything is written.
    """
    # Iterative walk: a 10^6-deep value must give a clean error, not a RecursionError.
    stack: List[Any] = [(value, [], 1)]
    pop, push = stack.pop, stack.append
    while stack:
        v, path, depth = pop()
        t = type(v)
        if t is str:
            if not v.isascii():
                try:
                    v.encode("utf-8")
                except UnicodeEncodeError:
                    raise ValueError(
                        f"{what}{_where(path)}: string holds a lone surrogate, which UTF-8 "
                        "cannot encode; pass valid text (decode bytes with errors='replace')"
                    ) from None
        elif t is int or t is bool or v is None:
            pass
        elif t is float:
            if not math.isfinite(v):
                raise ValueError(
                    f"{what}{_where(path)}: {v!r} is not a JSON number; "
                    "store it as a string or as null"
                )
        elif t is dict or t is list or t is tuple:
            if depth > MAX_WRITE_DEPTH:
                raise ValueError(
                    f"{what}{_where(path)}: nested deeper than {MAX_WRITE_DEPTH} levels "
                    "(or a container that contains itself)"
                )
            if t is dict:
                for k, item in v.items():
                    if type(k) is not str:
                        raise TypeError(
                            f"{what}{_where(path)}: key {k!r} is a {type(k).__name__}; "
                            "JSON object keys must be str"
                        )
                    if not k.isascii():
                        push((k, path + [k], depth))  # keys need valid UTF-8 too
                    push((item, path + [k], depth + 1))
            else:
                for i, item in enumerate(v):
                    push((item, path + [i], depth + 1))
        elif isinstance(v, str):
            push((str.__str__(v), path, depth))
        elif isinstance(v, bool) or isinstance(v, int):
            pass
        elif isinstance(v, float):
            push((float(v), path, depth))
        elif isinstance(v, dict):
            push((dict(v), path, depth))
        elif isinstance(v, (list, tuple)):
            push((list(v), path, depth))
        else:
            raise TypeError(
                f"{what}{_where(path)}: a value of type {type(v).__name__} is not JSON; "
                "convert it to str, int, float, bool, None, list or dict first"
            )


def dumps(value: Any) -> str:
    """Canonical JSON text of an already validated value (the line format's rules)."""
    try:
        text = _encoder.encode(value)
    except ValueError:
        # An int past CPython's int-to-str digit limit (4300): the slow encoder, exact digits.
        text = "".join(_big_int_encoder(value, 0))
    if "\u2028" in text or "\u2029" in text:
        text = text.replace("\u2028", "\\u2028").replace("\u2029", "\\u2029")
    return text


_CHUNK_DIGITS = 4000


def int_to_str(n: int) -> str:
    """Exact decimal digits of any int, past CPython's int-to-str limit too."""
    step = _chunk_digits()
    if n.bit_length() < step * 3:  # fewer than `step` digits
        return int.__repr__(n)
    sign, n = ("-", -n) if n < 0 else ("", n)
    unit = 10**step
    chunks = []
    while n:
        n, low = divmod(n, unit)
        chunks.append(low)
    chunks.reverse()
    head = int.__repr__(chunks[0])
    return sign + head + "".join(int.__repr__(c).rjust(step, "0") for c in chunks[1:])


def _chunk_digits() -> int:
    """Digits int() may convert at once here: the interpreter's limit can be lowered to 640."""
    limit = getattr(sys, "get_int_max_str_digits", lambda: 0)()
    return min(_CHUNK_DIGITS, limit) if limit else _CHUNK_DIGITS


def str_to_int(digits: str) -> int:
    """The int of a JSON integer literal of any length (json.loads stops at 4300 digits)."""
    step = _chunk_digits()
    if len(digits) <= step:
        return int(digits)
    sign = -1 if digits[0] == "-" else 1
    digits = digits.lstrip("-")
    value = 0
    for start in range(0, len(digits), step):
        chunk = digits[start : start + step]
        value = value * 10 ** len(chunk) + int(chunk)
    return sign * value


def _float_str(f: float) -> str:
    return float.__repr__(f)


_big_int_encoder = json.encoder._make_iterencode(  # type: ignore[attr-defined]
    None,
    _encoder.default,
    json.encoder.encode_basestring,
    None,
    _float_str,
    ":",
    ",",
    True,
    False,
    True,
    _intstr=int_to_str,
)


def sha256_digest(data: bytes) -> str:
    return "sha256:" + hashlib.sha256(data).hexdigest()


def envelope_line(id_: str, type_: str, ts: str, payload_json: str) -> bytes:
    """One whole line, ``\\n`` included, keys in sorted order (id, payload, ts, type, v)."""
    return (
        '{"id":'
        + _encoder.encode(id_)
        + ',"payload":'
        + payload_json
        + ',"ts":"'
        + ts
        + '","type":'
        + _encoder.encode(type_)
        + ',"v":1}\n'
    ).encode("utf-8")


def now_ts() -> str:
    """UTC, ``YYYY-MM-DDTHH:MM:SS.ffffffZ``, always six fractional digits."""
    return datetime.now(timezone.utc).strftime("%Y-%m-%dT%H:%M:%S.%fZ")


_native_new_id: Optional[Callable[[], str]]
try:
    from ._native import new_id as _native_new_id
except ImportError:
    _native_new_id = None

_uuid_lock = threading.Lock()
_last_ms = -1
_last_seq = 0


def new_id() -> str:
    """A lowercase canonical UUIDv7; ids made by one process sort by creation order.

    Where the native extension is built, its generator makes every id of the process
    (the lines it serialises take theirs from it too), so there is one order."""
    if _native_new_id is not None:
        return _native_new_id()
    return _new_id_here()


def _new_id_here() -> str:
    global _last_ms, _last_seq
    with _uuid_lock:
        ms = time.time_ns() // 1_000_000
        if ms <= _last_ms:
            # Same millisecond (or the clock stepped back): count up in rand_a so order holds.
            ms = _last_ms
            _last_seq += 1
            if _last_seq > 0xFFF:
                ms += 1
                _last_seq = 0
        else:
            _last_seq = int.from_bytes(os.urandom(2), "big") & 0x3FF
        _last_ms = ms
        seq = _last_seq
    rand_b = int.from_bytes(os.urandom(8), "big") & ((1 << 62) - 1)
    value = (ms & ((1 << 48) - 1)) << 80 | 0x7 << 76 | seq << 64 | 0b10 << 62 | rand_b
    h = f"{value:032x}"
    return f"{h[:8]}-{h[8:12]}-{h[12:16]}-{h[16:20]}-{h[20:]}"


def parse_arguments(arguments: Any) -> Any:
    """Tool arguments (docs/FORMAT.md, `tool-dispatched`): a string that parses as JSON is stored parsed; anything else as given."""
    if isinstance(arguments, str):
        try:
            # parse_int: integers of any size (json.loads alone stops at 4,300 digits).
            return json.loads(arguments, parse_constant=refuse_constant, parse_int=str_to_int)
        except (ValueError, RecursionError):
            return arguments
    return arguments


class NotJSON(ValueError):
    """NaN, Infinity and -Infinity: Python's json reads them, JSON has no such thing."""


def refuse_constant(name: str) -> Any:
    """``parse_constant`` for json.loads: refuse what JSON does not have."""
    raise NotJSON(f"{name} is not JSON")


_CONTAINERS = (dict, list, tuple)


def rebuild_json(
    value: Any, make_list: Callable[[List[Any]], Any] = list, make_dict: Callable[[List[Any]], Any] = dict
) -> Any:
    """A deep copy of a JSON value whose lists (and tuples) are ``make_list(items)`` and
    whose dicts are ``make_dict(pairs)``, built children first; other values as they are.
    Without recursion: a value read from a file may nest 512 deep."""
    if not isinstance(value, _CONTAINERS):
        return value
    # Each open container: its remaining items, what was built of them, whether a dict.
    stack: List[Tuple[Iterator[Any], List[Any], bool]] = [_opened(value)]
    keys: List[Any] = []  # the key each open container (but the first) goes under
    while True:
        items, built, is_dict = stack[-1]
        for item in items:
            v = item[1] if is_dict else item
            if isinstance(v, _CONTAINERS):
                keys.append(item[0] if is_dict else None)
                stack.append(_opened(v))
                break
            built.append(item if is_dict else v)
        else:
            stack.pop()
            done = make_dict(built) if is_dict else make_list(built)
            if not stack:
                return done
            key, (_, parent, parent_is_dict) = keys.pop(), stack[-1]
            parent.append((key, done) if parent_is_dict else done)


def _opened(container: Any) -> Tuple[Iterator[Any], List[Any], bool]:
    if isinstance(container, dict):
        return iter(container.items()), [], True
    return iter(container), [], False


def copy_json(value: Any) -> Any:
    """A fresh copy of a JSON value in plain lists and dicts (what a reader would get back)."""
    return rebuild_json(value)

