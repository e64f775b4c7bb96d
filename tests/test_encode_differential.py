"""The native write path (issue #17: ``_native.encode_envelope``, ``append_size``) against
the reference in ``canonical.py``: the same bytes for every value it serialises, and
``None`` (the reference's path, with its own refusal) for every value it does not.
"""

from __future__ import annotations

import math
import os
import re
from collections import OrderedDict
from typing import Any

import pytest

native = pytest.importorskip("llm_agent_session._native")

from hypothesis import HealthCheck, given, settings  # noqa: E402
from hypothesis import strategies as st  # noqa: E402

from llm_agent_session import Session, user_message  # noqa: E402
from llm_agent_session.canonical import copy_json, dumps, envelope_line, validate  # noqa: E402

UUID7 = re.compile(r"[0-9a-f]{8}-[0-9a-f]{4}-7[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}\Z")
TS = re.compile(r"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{6}Z\Z")


@pytest.fixture(autouse=True)
def backend_name() -> str:
    """These tests call the native functions directly: one run, not one per backend."""
    return "both"


def reference(type_: str, payload: Any) -> Any:
    """What the pure path writes, or the exception it raises."""
    try:
        validate(payload, "payload")
        return dumps(payload)
    except (TypeError, ValueError) as e:
        return type(e)


def assert_same(payload: Any, type_: str = "message") -> None:
    want = reference(type_, payload)
    got = native.encode_envelope(type_, payload, "the-id")
    if got is None:
        return  # declined: the reference's path runs (and raises, if it must)
    assert not isinstance(want, type), (payload, want)
    id_, ts, line, copy = got
    assert id_ == "the-id" and TS.match(ts)
    assert line == envelope_line(id_, type_, ts, want), payload
    assert copy == copy_json(payload) and type(copy) is dict
    assert copy is not payload


STRINGS = ["", "a", "é", "日本", "😀", "\u2028", "\u2029", "x\u2028y", "\x00\x01\x1f\x7f", '"\\/',
           "\b\f\n\r\t", "\ud800", "a\udc00b", "\U0010ffff", "\u00ad\ufeff"]


def test_strings_and_keys() -> None:
    for s in STRINGS:
        assert_same({"content": s, "role": "user"})
        assert_same({s: 1, "b": [s]})


def test_numbers() -> None:
    for v in [0, -1, 2**63 - 1, 2**63, -(2**63), -(2**63) - 1, 2**64, 10**40, -(10**4299),
              10**4300, 0.0, -0.0, 1.5, 1e16, 1e-5, 1e22, 1.7976931348623157e308, 5e-324,
              math.pi, float("nan"), float("inf"), -float("inf"), True, False, None]:
        assert_same({"v": v, "list": [v, [v]]})


def test_unusual_types_are_declined_or_refused() -> None:
    class S(str):
        pass

    class I(int):  # noqa: E742
        pass

    class D(dict):
        pass

    for v in [S("x"), I(3), D(a=1), OrderedDict(a=1), b"x", {1, 2}, object(), (1, 2), [(), ()],
              {1: "int key"}, {("t",): 1}]:
        assert_same({"v": v})
    assert native.encode_envelope("message", {"v": S("x")}, None) is None


def test_depth_limit() -> None:
    for depth in (98, 99, 100, 101):
        value: Any = "leaf"
        for _ in range(depth):
            value = [value]
        assert_same({"v": value})
    loop: Any = []
    loop.append(loop)
    assert native.encode_envelope("message", {"v": loop}, None) is None


def test_ids_and_order() -> None:
    ids = [native.encode_envelope("message", {}, None)[0] for _ in range(2000)]
    assert all(UUID7.match(i) for i in ids)
    assert ids == sorted(ids) and len(set(ids)) == len(ids)


json_values = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats() | st.text() | st.sampled_from(STRINGS),
    lambda children: st.lists(children, max_size=4)
    | st.tuples(children, children)
    | st.dictionaries(st.text(max_size=6) | st.sampled_from(STRINGS), children, max_size=5),
    max_leaves=30,
)


@settings(max_examples=500, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.dictionaries(st.text(max_size=8), json_values, max_size=6))
def test_hypothesis_payloads(payload: Any) -> None:
    assert_same(payload)


def test_session_lines_are_the_reference_bytes(tmp_path: Any) -> None:
    """Appends through the session: every line on disk re-serialises to itself."""
    import json

    from llm_agent_session import _backend

    previous = _backend.backend()
    try:
        for backend in _backend.available():
            _backend.use(backend)
            p = tmp_path / f"{backend}.jsonl"
            with Session.create(str(p), {"m": "é\u2028"}) as s:
                for text in STRINGS[:-4]:
                    s.append_message(user_message(text), extra={"x": [1.5, 2**70, None, text]})
                s.append_grants({"fs": {"\u2029": True}})
            for raw in p.read_bytes().splitlines():
                env = json.loads(raw)
                line = envelope_line(env["id"], env["type"], env["ts"], dumps(env["payload"]))
                assert line == raw + b"\n"
    finally:
        _backend.use(previous)


def test_append_size(tmp_path: Any) -> None:
    p = tmp_path / "t.jsonl"
    p.write_bytes(b"12345")
    fd = os.open(p, os.O_RDWR | os.O_APPEND)
    try:
        assert native.append_size(fd, str(p)) == 5
        os.rename(p, tmp_path / "moved")
        assert native.append_size(fd, str(p)) == -1
        p.write_bytes(b"other")
        assert native.append_size(fd, str(p)) == -1
        os.unlink(p)
        os.rename(tmp_path / "moved", p)
        assert native.append_size(fd, str(p)) == 5
        # Errors other than a missing path are raised, as os.stat raises them.
        with pytest.raises(NotADirectoryError):
            native.append_size(fd, str(fd_file(tmp_path) / "x"))
        os.unlink(p)
        assert native.append_size(fd, str(p)) == -1
    finally:
        os.close(fd)
    with pytest.raises(OSError):
        native.append_size(-1, str(p))


def fd_file(tmp_path: Any) -> Any:
    f = tmp_path / "a-file"
    f.write_bytes(b"")
    return f
