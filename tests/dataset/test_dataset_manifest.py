"""The manifest (``OUT/_dataset.json``, format 3) read and written as typed records: one an
earlier version of this code wrote reads, and is written again byte for byte; an export
writes, for the same fleet, the manifest that version wrote (its shape: every key, every
value that does not depend on the machine or the moment); a manifest with a value of the
wrong type is a ``NotADataset`` that names the key, not a traceback; one of an earlier
format is refused, saying so.

The fixtures of format 2 were written by the code before the manifest became records
(``python tests/dataset/test_dataset_manifest.py --capture DIR`` with that code); those of
format 3 (format 2 with the sessions row's token columns) were captured again when the
token columns came (the fleet's every-kind transcript then gained three messages with
token usage), and differ from them only in the format's name, those columns and counts."""

from __future__ import annotations

import json
import os
import re
import socket
import sys
import tempfile
from typing import Any, Dict, List, Tuple

import pytest

from llm_agent_session import Session, assistant_message, tool_message, user_message
from llm_agent_session.dataset import NotADataset, export, grow, query
from tests.support.cli import call
from tests.support.dataset import every_kind, small

HERE = os.path.dirname(os.path.abspath(__file__))
FIXTURES = os.path.join(HERE, "fixtures")
#: The manifest the earlier code wrote for ``build_fleet`` (paths and host made neutral).
OLD_MANIFEST = os.path.join(FIXTURES, "manifest-format-3.json")
#: Its shape (``shape``), as that code wrote it.
OLD_SHAPE = os.path.join(FIXTURES, "manifest-format-3-shape.json")
NEUTRAL_ROOT, NEUTRAL_HOST = "/fleet/src", "fleet-host"


def build_fleet(root: str) -> str:
    """A fleet exported twice into ``root/out``: transcripts clean, torn, pending and with
    grants, a file that is no transcript; then one grown (a pending call answered and
    settled, another dispatched), one grown plainly, one gone, one new. Every kind of
    manifest entry is there: skipped, exported, with a grow state and open operations,
    grown (``appended``), and retired files and views. Its OUT."""
    src, out = os.path.join(root, "src"), os.path.join(root, "out")
    every = every_kind(os.path.join(src, "every.jsonl"))
    pending = small(os.path.join(src, "pending.jsonl"), "wait for it")
    with Session.load(pending) as s:
        s.append_message(assistant_message(None, [call("late", "bash", '{"cmd": "make"}')]))
        s.append_tool_dispatched("late", "bash", {"cmd": "make"})
    gone = small(os.path.join(src, "gone.jsonl"), "soon gone")
    torn = small(os.path.join(src, "torn.jsonl"), "torn")
    with open(torn, "ab") as f:
        f.write(b'{"v":1,"id":"x","ty')
    with open(os.path.join(src, "notes.txt"), "w") as f:
        f.write("not a transcript\n")
    export(src, out)
    with Session.load(pending) as s:
        s.append_message(tool_message("late", "done"))
        s.append_tool_settled(s.pending_tool_operations()[0].op_id, "completed", duration=2.0)
        s.append_message(assistant_message(None, [call("later", "grep", '{"q": "y"}')]))
        s.append_tool_dispatched("later", "grep", {"q": "y"})
    with Session.load(every) as s:
        s.append_message(user_message("grown"))
    os.unlink(gone)
    small(os.path.join(src, "new.jsonl"), "new")
    export(src, out)
    return out


# -- the shape of a manifest: what must not change, whatever the machine and the moment ------

#: Values that depend on the machine, the moment or a random draw: only their type is kept.
VOLATILE = {"mtime_ns", "ctime_ns", "dev", "ino", "size", "base", "bytes", "host", "session_id", "date", "ends",
            "ids", "meta_id", "meta", "first_ts", "last_ts", "in_force", "tag", "bucket"}


def _type(value: Any) -> str:
    return "null" if value is None else type(value).__name__


def _leaves(value: Any, key: str = "") -> Any:
    if key in VOLATILE:
        return _type(value) if not isinstance(value, list) else [_type(v) for v in value]
    if key == "path":
        return os.path.basename(value)
    if key == "open":  # [op id (random), call id, outcome, answered, home]
        return sorted([_type(op[0]), *op[1:]] for op in value)
    if isinstance(value, dict):
        return {k: _leaves(v, k) for k, v in value.items()}
    return value


def _file(rel: str) -> str:
    """A retired path without its date, bucket and tag."""
    rel = re.sub(r"date=[0-9-]+/part-([0-9]+)-[0-9a-f]+\.parquet$",
                 lambda m: "part-" + ("appendix" if m.group(1) == "7" else "home"), rel)
    return re.sub(r"_ids/[0-9a-f]+-[0-9a-f]+\.ids$", "_ids/*.ids", rel)


def shape(manifest: Dict[str, Any]) -> Dict[str, Any]:
    """`manifest` with what depends on the machine or the moment reduced to its type, and
    sources and buckets by the names of the files (not their paths or hashed ids)."""
    out = {k: _leaves(v, k) for k, v in manifest.items() if k not in ("sources", "buckets", "retired")}
    name = {key: os.path.basename(e["path"]) for key, e in manifest["sources"].items()}
    out["sources"] = {name[key]: _leaves(e) for key, e in manifest["sources"].items()}
    # Which bucket a source is in depends on its path (hashed): kept is only the kind of each.
    kinds: Dict[str, List[str]] = {}
    for key, b in manifest["buckets"].items():
        for s in b["sources"]:
            kinds.setdefault(name[s], []).append("appendix" if key.endswith("/7") else "home")
    out["buckets"] = {"keys": sorted({k for b in manifest["buckets"].values() for k in b}),
                      "sources": {s: sorted(k) for s, k in kinds.items()}}
    # How many files were retired depends on which sources share a bucket: kept is each form.
    out["retired"] = sorted({(_file(p), _type(when)) for p, when in manifest["retired"]})
    return out


def neutral(manifest: Dict[str, Any], root: str) -> Dict[str, Any]:
    """`manifest` with the fleet's root and this machine's name replaced by neutral ones."""
    host = socket.gethostname()

    def path(p: str) -> str:
        assert p.startswith(root + os.sep)
        return NEUTRAL_ROOT + p[len(root):]

    def entry(e: Dict[str, Any]) -> Dict[str, Any]:
        e = dict(e, path=path(e["path"]), host=NEUTRAL_HOST)
        if e.get("grow"):
            e["grow"] = dict(e["grow"], session=dict(e["grow"]["session"], path=e["path"], host=NEUTRAL_HOST))
        return e

    keys = {}
    for key, e in manifest["sources"].items():
        assert key == f"{host}:{e['path']}"
        keys[key] = f"{NEUTRAL_HOST}:{path(e['path'])}"
    sources = {keys[key]: entry(e) for key, e in manifest["sources"].items()}
    buckets = {key: dict(b, sources=[keys[s] for s in b["sources"]]) for key, b in manifest["buckets"].items()}
    return dict(manifest, sources=sources, buckets=buckets)


def manifest_text(manifest: Dict[str, Any]) -> bytes:
    """The manifest's bytes as the export writes them."""
    return json.dumps(manifest, ensure_ascii=True, sort_keys=True, separators=(",", ":")).encode("ascii")


def capture(directory: str) -> None:
    """Write the fixtures (with the code of the time) into `directory`."""
    grow.GROW_MIN = 0
    with tempfile.TemporaryDirectory() as tmp:
        out = build_fleet(tmp)
        with open(os.path.join(out, "_dataset.json"), "rb") as f:
            manifest = json.loads(f.read())
        os.makedirs(directory, exist_ok=True)
        with open(os.path.join(directory, os.path.basename(OLD_MANIFEST)), "wb") as f:
            f.write(manifest_text(neutral(manifest, os.path.join(tmp, "src"))))
        with open(os.path.join(directory, os.path.basename(OLD_SHAPE)), "w") as f:
            json.dump(shape(manifest), f, indent=1, sort_keys=True)
            f.write("\n")


# -- the tests ---------------------------------------------------------------------------------


def test_the_fixture_holds_every_kind_of_entry(backend_name: str) -> None:
    """What the tests below rely on: the old manifest has each kind of entry and value."""
    if backend_name != "pure":
        pytest.skip("backend-independent: checked once, in the pure run")
    with open(OLD_MANIFEST) as f:
        manifest = json.load(f)
    entries = list(manifest["sources"].values())
    assert any("skipped" in e for e in entries)
    assert any("appended" in e for e in entries) and any(e.get("grow") for e in entries)
    assert any(e.get("grow") and e["grow"]["open"] for e in entries)
    assert any(e.get("grow") and e["grow"]["in_force"] for e in entries)
    assert any(e.get("verdict") == "torn-tail" for e in entries)
    assert manifest["retired"] and manifest["view"] and any(k.endswith("/7") for k in manifest["buckets"])


def test_a_manifest_the_earlier_code_wrote_reads_and_is_written_again_byte_for_byte(tmp_path: Any,
                                                                                     backend_name: str) -> None:
    if backend_name != "pure":
        pytest.skip("backend-independent: checked once, in the pure run")
    from llm_agent_session.dataset.layout import MANIFEST
    from llm_agent_session.dataset.manifest import Exported, Skipped, read_manifest, write_manifest

    with open(OLD_MANIFEST, "rb") as f:
        old = f.read()
    out = str(tmp_path / "out")
    staging = os.path.join(out, "staging")
    os.makedirs(staging)
    with open(os.path.join(out, MANIFEST), "wb") as f:
        f.write(old)
    manifest = read_manifest(out)
    assert manifest.to_json() == json.loads(old)
    grown = [e for e in manifest.sources.values() if isinstance(e, Exported) and e.appended is not None]
    assert grown and all(e.grow is not None and e.grow.ids and e.grow.open is not None for e in grown)
    assert any(isinstance(e, Skipped) for e in manifest.sources.values())
    write_manifest(out, staging, manifest)
    with open(os.path.join(out, MANIFEST), "rb") as f:
        assert f.read() == old


def test_an_export_writes_the_manifest_the_earlier_code_wrote(tmp_path: Any, monkeypatch: Any) -> None:
    """Same fleet, same manifest: every key, every value but those of the machine and the
    moment (their types the same); on each core."""
    monkeypatch.setattr(grow, "GROW_MIN", 0)
    out = build_fleet(str(tmp_path))
    with open(os.path.join(out, "_dataset.json"), "rb") as f:
        written = f.read()
    manifest = json.loads(written)
    assert manifest_text(manifest) == written  # the same serialisation: sorted keys, no spaces, ASCII
    with open(OLD_SHAPE) as f:
        assert json.loads(json.dumps(shape(manifest))) == json.load(f)
    assert len(query(out, "SELECT * FROM sessions")) == 4


def test_the_sessions_row_record_has_the_sessions_columns(backend_name: str) -> None:
    if backend_name != "pure":
        pytest.skip("backend-independent: checked once, in the pure run")
    import dataclasses

    from llm_agent_session.dataset.manifest import SessionRow
    from llm_agent_session.dataset.schema import fields

    assert [f.name for f in dataclasses.fields(SessionRow)] == [f.name for f in fields("sessions")]


def _set(manifest: Dict[str, Any], where: Tuple[Any, ...], value: Any) -> None:
    at = manifest
    for step in where[:-1]:
        at = at[step]
    at[where[-1]] = value


def _first(manifest: Dict[str, Any], test: Any) -> str:
    return next(k for k, e in manifest["sources"].items() if test(e))


def _wrong_values(manifest: Dict[str, Any]) -> List[Tuple[Tuple[Any, ...], Any, str]]:
    """(where, a wrong value, what the error must name) for a spread of the manifest's keys."""
    grown = _first(manifest, lambda e: "appended" in e)
    skipped = _first(manifest, lambda e: "skipped" in e)
    bucket = sorted(manifest["buckets"])[0]
    return [
        (("version",), "3", "version"),
        (("sources",), [], "sources"),
        (("buckets", bucket, "tag"), 7, "tag"),
        (("buckets", bucket, "sources"), "abc", "sources"),
        (("retired",), [["_views/sessions/1"]], "retired"),
        (("retired",), [[1, 2.0]], "retired"),
        (("publishing",), "yes", "publishing"),
        (("view",), None, "view"),
        (("sources", skipped, "skipped"), 1, "skipped"),
        (("sources", skipped, "ino"), "12", "ino"),
        (("sources", grown, "rows"), {"messages": "3"}, "rows"),
        (("sources", grown, "bucket"), True, "bucket"),
        (("sources", grown, "extras"), "yes", "extras"),
        (("sources", grown, "grow", "open"), [["op", "call", "dispatched", "no", True]], "open"),
        (("sources", grown, "grow", "open"), [["op"]], "open"),
        (("sources", grown, "grow", "in_force"), "grants", "in_force"),
        (("sources", grown, "grow", "session", "messages"), None, "messages"),
        (("sources", grown, "grow", "session", "verdict"), 1, "verdict"),
        (("sources", grown, "grow", "session"), [], "session"),
        (("sources", grown, "grow", "lines"), 1.5, "lines"),
        (("sources", grown, "appended"), None, "appended"),
    ]


def test_a_manifest_with_a_value_of_the_wrong_type_is_not_a_dataset_naming_the_key(tmp_path: Any,
                                                                                   backend_name: str) -> None:
    if backend_name != "pure":
        pytest.skip("backend-independent: checked once, in the pure run")
    src = small(str(tmp_path / "src" / "a.jsonl"))
    with open(OLD_MANIFEST, "rb") as f:
        old = f.read()
    for where, value, key in _wrong_values(json.loads(old)):
        manifest = json.loads(old)
        _set(manifest, where, value)
        out = tmp_path / f"out-{len(os.listdir(tmp_path))}"
        os.makedirs(out)
        (out / "_dataset.json").write_bytes(manifest_text(manifest))
        with pytest.raises(NotADataset) as e:
            query(str(out), "SELECT 1")
        message = str(e.value)
        assert f"'{key}'" in message and "_dataset.json" in message, (where, message)
        assert "export into a new OUT" in message, message
        with pytest.raises(NotADataset, match="_dataset.json"):
            export(src, str(out))
        assert json.loads((out / "_dataset.json").read_bytes()) == manifest  # nothing written


def test_a_manifest_of_an_earlier_format_is_refused_saying_so(tmp_path: Any, backend_name: str) -> None:
    """Format 2 (no token columns) and 1: an OUT whose tables lack columns is never mixed
    with new files; the message says which version made it and what to do."""
    if backend_name != "pure":
        pytest.skip("backend-independent: checked once, in the pure run")
    src = small(str(tmp_path / "src" / "a.jsonl"))
    with open(OLD_MANIFEST, "rb") as f:
        manifest = json.loads(f.read())
    for earlier, why in (("llm-agent-session dataset 2", "no token usage columns"),
                         ("llm-agent-session dataset 1", "8 buckets")):
        out = tmp_path / earlier.replace(" ", "-")
        os.makedirs(out)
        (out / "_dataset.json").write_bytes(manifest_text(dict(manifest, format=earlier)))
        for attempt in (lambda: query(str(out), "SELECT 1"), lambda: export(src, str(out))):
            with pytest.raises(NotADataset) as e:
                attempt()
            message = str(e.value)
            assert "earlier version" in message and why in message and "export into a new OUT" in message, message


if __name__ == "__main__":
    if sys.argv[1:2] == ["--capture"] and len(sys.argv) == 3:
        capture(sys.argv[2])
    else:
        sys.exit("usage: python tests/dataset/test_dataset_manifest.py --capture DIR")
