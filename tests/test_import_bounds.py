"""The importers read with bounds (issue #24, items 8 and 9), on both backends: a file that
is not a regular file, or that passes a bound, fails with a reason while the rest of the
tree is imported, and never hangs the import; an OUT inside SRC is refused."""

from __future__ import annotations

import os

import pytest
from tests.support.import_fixtures import claude_code_session, codex_rollout, write

from llm_agent_session.importers import _source, claude_code, codex


def _tree(root) -> None:
    write(str(root / "2025" / "good.jsonl"), codex_rollout())
    write(str(root / "z-last.jsonl"), codex_rollout())


@pytest.mark.skipif(not hasattr(os, "mkfifo"), reason="no FIFOs here")
def test_fifos_devices_and_symlinks_to_them_fail_and_the_rest_is_imported(tmp_path):
    root = tmp_path / "sessions"
    _tree(root)
    os.mkfifo(root / "2025" / "fifo.jsonl")  # opened blocking, this would hang the import
    os.symlink("/dev/zero", root / "zero.jsonl")
    os.symlink(str(root / "2025" / "good.jsonl"), root / "link.jsonl")  # a link to a regular file is read
    reports = {os.path.relpath(r["source"], root): r for r in codex.import_tree(root, tmp_path / "out")}
    assert reports["2025/fifo.jsonl"]["status"] == "failed"
    assert "a FIFO, not a regular file" in reports["2025/fifo.jsonl"]["error"]
    assert reports["zero.jsonl"]["status"] == "failed"
    assert "a character device, not a regular file" in reports["zero.jsonl"]["error"]
    for rel in ("2025/good.jsonl", "link.jsonl", "z-last.jsonl"):
        assert reports[rel]["status"] == "imported", reports[rel]
    assert not (tmp_path / "out" / "2025" / "fifo.jsonl").exists()


def test_a_zstd_bomb_fails_and_the_rest_is_imported(tmp_path, monkeypatch):
    zstandard = pytest.importorskip("zstandard")
    monkeypatch.setattr(_source, "MAX_SOURCE_BYTES", 4 << 20)
    root = tmp_path / "sessions"
    _tree(root)
    # 64 MiB of newlines in a few KiB (the real bound is 1 GiB; the same code stops either).
    (root / "bomb.jsonl.zst").write_bytes(zstandard.ZstdCompressor().compress(b"\n" * (64 << 20)))
    reports = {os.path.basename(r["source"]): r for r in codex.import_tree(root, tmp_path / "out")}
    assert reports["bomb.jsonl.zst"]["status"] == "failed"
    assert "more than 4 MiB (decompressed)" in reports["bomb.jsonl.zst"]["error"]
    assert reports["good.jsonl"]["status"] == reports["z-last.jsonl"]["status"] == "imported"


@pytest.mark.parametrize("bound,value,says", [
    ("MAX_SOURCE_BYTES", 1000, "holds more than 1,000 bytes"),
    ("MAX_LINES", 5, "has more than 5 lines"),
    ("MAX_LINE_BYTES", 250, "line 2 (byte "),
])
def test_a_source_past_a_bound_fails_with_the_reason(tmp_path, monkeypatch, bound, value, says):
    monkeypatch.setattr(_source, bound, value)
    text = claude_code_session()
    assert len(text.splitlines()[1]) > 250 > len(text.splitlines()[0])
    report = claude_code.import_transcript(write(str(tmp_path / "s.jsonl"), text), str(tmp_path / "o.jsonl"))
    assert report["status"] == "failed" and says in report["error"], report["error"]
    assert not (tmp_path / "o.jsonl").exists()


@pytest.mark.parametrize("out", ["sessions", "sessions/imported", "sessions/2025/deeper"])
def test_out_inside_src_is_refused(tmp_path, capsys, out):
    from llm_agent_session.cli import main

    root = tmp_path / "sessions"
    _tree(root)
    with pytest.raises(ValueError, match="inside SRC"):
        codex.import_tree(root, tmp_path / out)
    with pytest.raises(ValueError, match="inside SRC"):
        claude_code.import_tree(root, tmp_path / out)
    assert main(["import", "codex", str(root), str(tmp_path / out)]) == 2
    assert "is inside SRC" in capsys.readouterr().err
    assert sorted(os.listdir(root)) == ["2025", "z-last.jsonl"]  # nothing written
    # Beside SRC, even with a name that starts like it, is fine.
    assert main(["import", "codex", str(root), str(tmp_path / "sessions-out")]) == 0
