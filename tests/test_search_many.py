"""Search across transcripts (``llm_agent_session.search_many``, issue #35): the hits of a
walk over many files held to a line-by-line reference, the walk's order and its rules
(nested directories, link loops, what is not a transcript, names that are not UTF-8), big
transcripts read in parts, limits, details, cancelling, and the cache: what a repeated
search reads of a transcript unchanged, grown, torn, rewritten or replaced. Real files,
both cores."""

from __future__ import annotations

import json
import os
import threading
from typing import Any, Dict, List, Optional, Tuple

import pytest

from tests.support.helpers import dispatched_line, env_line, meta_line, msg_line, settled_line, write_raw
from llm_agent_session import search as one_search
from llm_agent_session._pure import search as pure
from llm_agent_session._search_cache import SearchCache
from llm_agent_session.search_many import DEFAULT_GROUPS, FIRST_CHUNK, Found, search_many

TEXT = "Needle-7"
GROUP_BITS = {name: 1 << i for i, name in enumerate(one_search.GROUPS)}


def transcript(path: Any, *lines: bytes, torn: bytes = b"") -> str:
    """A transcript of raw lines after a session-meta line (and a torn last line)."""
    os.makedirs(os.path.dirname(str(path)), exist_ok=True)
    write_raw(path, meta_line(payload={"title": f"meta {TEXT} in extras"}), *lines, torn)
    return str(path)


def rich(prefix: str, n: int = 0) -> List[bytes]:
    """Lines with the text in every group, in keys, behind an escape, and in a line that
    is not JSON."""
    return [
        msg_line(f"{prefix}-u", "user", f"please find {TEXT} for me ({n})"),
        msg_line(f"{prefix}-plain", "user", "nothing to see"),
        msg_line(f"{prefix}-a", "assistant", None, tool_calls=[
            {"id": "c1", "type": "function", "function": {"name": "grep", "arguments": f'{{"q": "{TEXT}"}}'}}]),
        dispatched_line(f"{prefix}-d", "c1", "grep", {"q": TEXT.lower()}),
        msg_line(f"{prefix}-t", "tool", f"grep: {TEXT.upper()} found\nand more", tool_call_id="c1"),
        settled_line(f"{prefix}-s", f"{prefix}-d", "failed", error=f"exit 1 near {TEXT}"),
        msg_line(f"{prefix}-x", "user", "a plain message", **{"note": f"in an extra: {TEXT}"}),
        msg_line(f"{prefix}-k", "user", "in a key only", **{TEXT: 1}),
        msg_line(f"{prefix}-e", "user", "behind an escape:\n" + TEXT[1:]),
        b"not json at all " + TEXT.encode() + b"\n",
        env_line(f"{prefix}-n", "mystery", {"number": 12345, "text": f"{TEXT} in an unknown type"}),
    ]


def reference(paths: List[str], text: str, ignore_case: bool, groups=DEFAULT_GROUPS) -> List[Tuple[str, int, int, Tuple[str, ...]]]:
    """(path, line number, offset, groups) of every hit, line by line: a line that holds the
    text as the line format writes it, and in a string's characters of a group wanted."""
    needle = one_search.needle(text, ignore_case)
    folded = pure.text_of_needle(needle, ignore_case)
    wanted = sum(GROUP_BITS[g] for g in groups)
    out = []
    for path in paths:
        with open(path, "rb") as f:
            data = f.read()
        offset = 0
        for number, line in enumerate(data.split(b"\n"), 1):
            hay = line.lower() if ignore_case else line
            if needle in hay:
                bits = pure.line_groups(line, folded, ignore_case)
                if bits > 0 and bits & wanted:
                    out.append((path, number, offset, tuple(g for g in one_search.GROUPS if bits & wanted & GROUP_BITS[g])))
            offset += len(line) + 1
    return out


def found_hits(founds: List[Found]) -> List[Tuple[str, Optional[int], int, Tuple[str, ...]]]:
    return [(h.path, h.line, h.offset, h.groups) for f in founds for h in f.hits]


def run(text: str, paths: List[str], **kw: Any) -> List[Found]:
    return list(search_many(text, paths, **kw))


@pytest.fixture
def shelf(tmp_path) -> Dict[str, Any]:
    """Transcripts in nested directories, with what the walk passes over and link loops."""
    root = tmp_path / "root"
    files = {
        "a": transcript(root / "a.jsonl", *rich("a", 1)),
        "c": transcript(root / "sub1" / "c.jsonl", msg_line("c-1", "user", "no text here")),
        "d": transcript(root / "sub1" / "deep" / "d.jsonl", *rich("d", 2), torn=b'{"id":"torn","payload":{"content":"' + TEXT.encode()),
        "e": transcript(root / "sub2" / "e.jsonl", *rich("e", 3)),
        "z": transcript(root / "z.jsonl", msg_line("z-1", "user", TEXT)),
    }
    (root / "notes.jsonl").write_bytes(b'{"not": "a transcript ' + TEXT.encode() + b'"}\n')
    (root / "b.txt").write_text(TEXT)
    transcript(root / "x.artifacts" / "f.jsonl", msg_line("f-1", "user", TEXT))
    os.symlink(root, root / "sub2" / "loop")  # a link back to an ancestor
    os.symlink(root / "sub1", root / "alias")  # a link to a directory walked anyway
    outside = transcript(tmp_path / "outside" / "o.jsonl", msg_line("o-1", "user", TEXT))
    os.symlink(os.path.dirname(outside), root / "out")  # a link that leads out of the PATH
    os.symlink(outside, root / "out-file.jsonl")
    files["order"] = [files[k] for k in ("a", "z", "c", "d", "e")]  # a dir's files, then its dirs, by name
    files["root"] = str(root)
    return files


def test_hits_are_the_reference_s_in_walk_order(shelf):
    for ignore_case in (False, True):
        for groups in (DEFAULT_GROUPS, one_search.GROUPS, ("results",)):
            founds = run(TEXT, [shelf["root"]], ignore_case=ignore_case, groups=groups)
            want = reference(shelf["order"], TEXT, ignore_case, groups)
            assert found_hits(founds) == want, (ignore_case, groups)
            assert want  # the case is not empty
    # Case: only ignore_case finds the upper-case tool result and the lower-case dispatch.
    strict = {h[2] for h in found_hits(run(TEXT, [shelf["root"]], groups=one_search.GROUPS))}
    folded = {h[2] for h in found_hits(run(TEXT, [shelf["root"]], ignore_case=True, groups=one_search.GROUPS))}
    assert strict < folded


def test_the_walk_passes_over_what_the_shelf_passes_over(shelf):
    """Only transcripts are searched; one without a hit yields nothing (c.jsonl); the
    progress counts every file the walk found."""
    search = search_many(TEXT, [shelf["root"]])
    founds = list(search)
    assert [f.path for f in founds] == [shelf[k] for k in ("a", "z", "d", "e")]
    assert all(f.problem is None and f.done and f.hits for f in founds)
    assert [f.relative for f in founds] == ["a.jsonl", "z.jsonl", "sub1/deep/d.jsonl", "sub2/e.jsonl"]
    assert search.progress()[:5] == (6, 6, sum(os.path.getsize(p) for p in shelf["order"]) + os.path.getsize(
        os.path.join(shelf["root"], "notes.jsonl")), len(found_hits(founds)), True)


def test_every_transcript_is_searched_once_through_links(tmp_path):
    """A link to a directory not walked otherwise is walked, under the link's name, after
    the real directories; a link to one walked already, or to an ancestor, is not."""
    root = tmp_path / "r"
    transcript(root / "zz-real" / "one.jsonl", msg_line("m", "user", TEXT))
    transcript(root / "store.artifacts" / "kept" / "two.jsonl", msg_line("m", "user", TEXT))
    os.symlink(root / "zz-real", root / "a-link")
    os.symlink(root / "store.artifacts" / "kept", root / "b-link")
    os.symlink(root, root / "zz-real" / "up")
    founds = run(TEXT, [str(root)])
    assert [f.relative for f in founds] == ["zz-real/one.jsonl", "b-link/two.jsonl"]
    assert founds[1].path == os.path.join(str(root), "b-link", "two.jsonl") and len(founds[1].hits) == 1


def test_paths_given_come_in_order_and_a_file_given_must_be_a_transcript(shelf, tmp_path):
    missing = str(tmp_path / "missing")
    plain = tmp_path / "plain.jsonl"
    plain.write_text("just text " + TEXT + "\n")
    empty = tmp_path / "empty.jsonl"
    empty.write_bytes(b"")
    founds = run(TEXT, [shelf["z"], missing, str(plain), str(empty), shelf["a"]])
    assert [(f.root, f.path) for f in founds] == [(0, shelf["z"]), (1, missing), (2, str(plain)), (3, str(empty)),
                                                  (4, shelf["a"])]
    problems = [f.problem for f in founds]
    assert problems[0] is None and problems[4] is None
    assert problems[1] == "cannot read it: No such file or directory"
    assert problems[2].startswith("not a transcript: the first line is not a session-meta envelope")
    assert problems[3] == "not a transcript: the file is empty"
    assert found_hits(founds) == reference([shelf["z"], shelf["a"]], TEXT, False)


def test_a_name_that_is_not_utf8(tmp_path):
    root = tmp_path / "r"
    root.mkdir()
    name = os.fsdecode(b"run-\xff\xfe.jsonl")
    path = transcript(os.path.join(str(root), name), msg_line("m", "user", TEXT))
    founds = run(TEXT, [str(root)])
    assert [f.path for f in founds] == [path] and len(founds[0].hits) == 1
    assert founds[0].hits[0].path == path


def test_details_of_a_hit(shelf):
    founds = run(TEXT, [shelf["root"]], groups=one_search.GROUPS, ignore_case=True)
    hits = [h for f in founds for h in f.hits]
    lines_by_path: Dict[str, List[bytes]] = {}
    for hit in hits:
        lines = lines_by_path.setdefault(hit.path, open(hit.path, "rb").read().split(b"\n"))
        value = json.loads(lines[hit.line - 1])
        assert sum(len(line) + 1 for line in lines[: hit.line - 1]) == hit.offset
        assert (hit.id, hit.ts, hit.type) == (value["id"], value["ts"], value["type"])
        assert hit.role == (value["payload"].get("role") if value["type"] == "message" else None)
        start, end = hit.match
        assert hit.snippet[start:end].lower() == TEXT.lower()
        assert hit.snippet.strip("…") in _strings(value)
    assert {h.role for h in hits} >= {"user", "assistant", "tool"}
    assert {h.type for h in hits} >= {"message", "tool-dispatched", "tool-settled", "mystery", "session-meta"}
    # A snippet is cut around the match, marked where it was.
    long = transcript(os.path.join(shelf["root"], "..", "long", "l.jsonl"),
                      msg_line("l", "user", "x" * 500 + TEXT + "y" * 500))
    (hit,) = [h for f in run(TEXT, [long]) for h in f.hits]
    assert hit.snippet.startswith("…x") and hit.snippet.endswith("y…") and len(hit.snippet) < 200
    assert hit.snippet[hit.match[0]:hit.match[1]] == TEXT


def _strings(value: Any) -> str:
    out: List[str] = []
    stack = [value]
    while stack:
        v = stack.pop()
        if isinstance(v, str):
            out.append(v)
        elif isinstance(v, dict):
            stack.extend(v.values())
        elif isinstance(v, list):
            stack.extend(v)
    return "\n".join(out)


def test_details_only_for_the_first_hits_of_each_transcript(shelf):
    every = [h for f in run(TEXT, [shelf["root"]]) for h in f.hits]
    for details in (0, 1, 2):
        hits = [h for f in run(TEXT, [shelf["root"]], details=details) for h in f.hits]
        assert [(h.path, h.offset, h.groups) for h in hits] == [(h.path, h.offset, h.groups) for h in every]
        per_path: Dict[str, int] = {}
        for h in hits:
            n = per_path[h.path] = per_path.get(h.path, 0) + 1
            assert (h.snippet is not None) == (n <= details), (details, h)
            assert (h.line is not None) == (n <= details)


@pytest.mark.parametrize("cached", [False, True])
def test_hits_without_details_read_as_the_list_of_them(tmp_path, cached):
    """details=0 (a count): a transcript's hits are made as they are read, and read as the
    list of them: length, items, slices, iteration and equality, whether every line found is
    a hit or some are not (not JSON, the text in a key or an unwanted group), read or from
    the cache."""
    every_line = transcript(tmp_path / "all.jsonl", *[msg_line(f"m{i}", "user", f"{TEXT} {i}") for i in range(5)])
    some_lines = transcript(tmp_path / "some.jsonl", *rich("r"))
    cache = SearchCache(settle=0) if cached else None
    if cached:
        run(TEXT, [every_line, some_lines], cache=cache)
    founds = run(TEXT, [every_line, some_lines], details=0, cache=cache)
    assert [f.read for f in founds] == ["cached" if cached else "whole"] * 2
    want = reference([every_line, some_lines], TEXT, False)
    assert [(h.path, h.offset, h.groups) for f in founds for h in f.hits] == [(p, o, g) for p, _, o, g in want]
    for found in founds:
        hits, listed = found.hits, list(found.hits)
        assert len(hits) == len(listed) >= 3 and bool(hits)
        assert hits == listed and listed == hits and hits == tuple(listed) and hits != listed[:-1]
        assert [hits[i] for i in range(len(hits))] == listed and hits[-1] == listed[-1]
        assert hits[1:3] == listed[1:3] and hits[::-1] == listed[::-1]
        assert hits + listed[:1] == listed + listed[:1] and listed[:1] + hits == listed[:1] + listed
        assert all(h.line is None and h.snippet is None and h.id is None for h in listed)
    assert len(founds[1].hits) < len(pure_lines_holding(some_lines))  # some lines found were no hits


def pure_lines_holding(path: str) -> List[bytes]:
    with open(path, "rb") as f:
        return [line for line in f if TEXT.encode() in line]


def test_limit_gives_the_first_hits_in_order(shelf):
    every = found_hits(run(TEXT, [shelf["root"]]))
    for limit in (0, 1, 2, 5, len(every), len(every) + 10):
        for workers in (1, 3):
            assert found_hits(run(TEXT, [shelf["root"]], limit=limit, workers=workers)) == every[:limit]


def test_the_order_does_not_depend_on_the_threads(tmp_path):
    paths = [transcript(tmp_path / f"d{i % 7}" / f"t{i:03d}.jsonl", *rich(f"t{i}", i)[: 1 + i % 5]) for i in range(60)]
    order = sorted(paths, key=lambda p: (os.path.dirname(p), os.path.basename(p)))
    want = reference(order, TEXT, True)
    for workers in (1, 2, 5):
        founds = run(TEXT, [str(tmp_path)], ignore_case=True, workers=workers)
        assert found_hits(founds) == want
        assert [f.path for f in founds if f.done] == order


def test_a_big_transcript_comes_in_parts_as_read(tmp_path):
    chunk = "lorem ipsum " * 9000  # about 100 KB a line
    lines = [msg_line(f"m{i}", "user", chunk + (TEXT if i % 4 == 0 else "")) for i in range(40)]
    path = transcript(tmp_path / "big.jsonl", *lines)
    assert os.path.getsize(path) > 3 * FIRST_CHUNK
    founds = run(TEXT, [path])
    assert len(founds) > 2 and [f.done for f in founds] == [False] * (len(founds) - 1) + [True]
    scanned = [f.scanned for f in founds]
    assert scanned == sorted(scanned) and scanned[-1] == os.path.getsize(path) == founds[0].size
    assert found_hits(founds) == reference([path], TEXT, False)


def test_cancel_from_another_thread_ends_it(tmp_path):
    for i in range(40):
        transcript(tmp_path / f"t{i:02d}.jsonl", msg_line("m", "user", TEXT))
    search = search_many(TEXT, [str(tmp_path)])
    got = []
    for found in search:
        got.append(found)
        if len(got) == 3:
            threading.Thread(target=search.cancel).start()
            threading.Event().wait(0.3)
    assert 3 <= len(got) < 40
    progress = search.progress()
    assert progress.hits == sum(len(f.hits) for f in got) and progress.searched == len(got)


def test_progress_counts_what_was_handed_over(shelf):
    search = search_many(TEXT, [shelf["root"]])
    founds = list(search)
    progress = search.progress()
    notes = os.path.join(shelf["root"], "notes.jsonl")  # searched: it is not a transcript
    assert progress.walked and progress.found == progress.searched == len(shelf["order"]) + 1
    assert progress.bytes == sum(os.path.getsize(p) for p in shelf["order"] + [notes])
    assert progress.hits == sum(len(f.hits) for f in founds)


def test_bad_arguments(tmp_path):
    with pytest.raises(ValueError, match="empty"):
        search_many("", [str(tmp_path)])
    with pytest.raises(ValueError, match="groups"):
        search_many("x", [str(tmp_path)], groups=("content", "nope"))
    with pytest.raises(ValueError, match="limit"):
        search_many("x", [str(tmp_path)], limit=-1)
    search = search_many("x", [str(tmp_path)])
    list(search)
    with pytest.raises(RuntimeError):
        list(search)


# --------------------------------------------------------------------------- the cache


def reads(founds: List[Found]) -> List[Tuple[str, str]]:
    return [(os.path.basename(f.path), f.read) for f in founds if f.done]


def read_how(text: str, paths: List[str], **kw: Any) -> Tuple[int, int, int]:
    """How many transcripts were searched, of them answered by the cache, and read grown."""
    search = search_many(text, paths, **kw)
    list(search)
    progress = search.progress()
    return progress.searched, progress.cached, progress.grown


def test_a_repeated_search_reads_no_transcript_unchanged(shelf):
    cache = SearchCache(settle=0)
    first = run(TEXT, [shelf["root"]], cache=cache)
    again = run(TEXT, [shelf["root"]], cache=cache)
    assert {r for _, r in reads(first)} == {"whole"} and {r for _, r in reads(again)} == {"cached"}
    assert [h for f in again for h in f.hits] == [h for f in first for h in f.hits]
    every = len(shelf["order"]) + 1  # and notes.jsonl, which is not a transcript
    assert read_how(TEXT, [shelf["root"]], cache=cache) == (every, every, 0)
    # Another text, or another case rule, is another query; the groups are not.
    assert read_how(TEXT, [shelf["root"]], cache=cache, ignore_case=True) == (every, 0, 0)
    assert read_how(TEXT, [shelf["root"]], cache=cache, groups=("extras",)) == (every, every, 0)
    assert found_hits(run(TEXT, [shelf["root"]], cache=cache, groups=("extras",))) == \
        reference(shelf["order"], TEXT, False, ("extras",))


def test_a_file_given_that_is_not_a_transcript_stays_a_problem_from_the_cache(tmp_path):
    plain = tmp_path / "plain.jsonl"
    plain.write_text(TEXT + "\n")
    cache = SearchCache(settle=0)
    for read in ("whole", "cached"):
        (found,) = run(TEXT, [str(plain)], cache=cache)
        assert found.read == read and found.problem.startswith("not a transcript")


def test_a_grown_transcript_is_read_from_its_old_end(tmp_path):
    path = transcript(tmp_path / "t.jsonl", *rich("a"))
    cache = SearchCache(settle=0)
    first = run(TEXT, [path], cache=cache)
    with open(path, "ab") as f:
        f.write(msg_line("new", "user", f"a new {TEXT}"))
    grown = run(TEXT, [path], cache=cache)
    assert reads(grown) == [("t.jsonl", "grown")]
    assert found_hits(grown) == reference([path], TEXT, False) == found_hits(first) + [found_hits(grown)[-1]]
    assert grown[-1].hits[-1].id == "new" and grown[-1].hits[-1].snippet == f"a new {TEXT}"
    assert grown[-1].scanned == os.path.getsize(path)


def test_a_torn_last_line_is_searched_again_once_complete(tmp_path):
    line = msg_line("late", "user", f"the {TEXT} at last")
    path = transcript(tmp_path / "t.jsonl", msg_line("m", "user", "first"), torn=line[:40])
    cache = SearchCache(settle=0)
    assert found_hits(run(TEXT, [path], cache=cache)) == []
    with open(path, "ab") as f:
        f.write(line[40:])
    grown = run(TEXT, [path], cache=cache)
    assert reads(grown) == [("t.jsonl", "grown")]
    assert [h.id for h in grown[-1].hits] == ["late"]
    # The same once it is torn inside the text.
    cut = line.index(TEXT.encode()) + 3
    path = transcript(tmp_path / "u.jsonl", msg_line("m", "user", "first"), torn=line[:cut])
    assert found_hits(run(TEXT, [path], cache=cache)) == []
    with open(path, "ab") as f:
        f.write(line[cut:])
    assert [h.id for f in run(TEXT, [path], cache=cache) for h in f.hits] == ["late"]


def test_a_file_rewritten_in_place_with_its_size_and_time_kept_is_searched_again(tmp_path):
    """cp -p, rsync -t and touch -r put the modification time back; the change time they
    cannot, and the cache's identity holds it."""
    path = transcript(tmp_path / "t.jsonl", msg_line("m", "user", "Needle-0 here"))
    cache = SearchCache(settle=0)
    assert found_hits(run(TEXT, [path], cache=cache)) == []
    before = os.stat(path)
    data = open(path, "rb").read().replace(b"Needle-0", TEXT.encode())
    with open(path, "r+b") as f:
        f.write(data)
    os.utime(path, ns=(before.st_atime_ns, before.st_mtime_ns))
    after = os.stat(path)
    assert (after.st_size, after.st_mtime_ns, after.st_ino) == (before.st_size, before.st_mtime_ns, before.st_ino)
    again = run(TEXT, [path], cache=cache)
    assert reads(again) == [("t.jsonl", "whole")] and len(found_hits(again)) == 1


def test_an_entry_made_while_the_file_was_changing_is_not_trusted(tmp_path):
    """A file changed within the settling time of its search may change again within one
    tick of the file system's clock, its identity unchanged: it is read again whole."""
    path = transcript(tmp_path / "t.jsonl", msg_line("m", "user", TEXT))
    cache = SearchCache(settle=3600)
    run(TEXT, [path], cache=cache)
    assert reads(run(TEXT, [path], cache=cache)) == [("t.jsonl", "whole")]
    with open(path, "ab") as f:  # but it may have grown: that is checked by its bytes
        f.write(msg_line("n", "user", TEXT))
    assert reads(run(TEXT, [path], cache=cache)) == [("t.jsonl", "grown")]


@pytest.mark.parametrize("change", ["replaced", "head", "tail", "truncated"])
def test_a_transcript_changed_otherwise_is_searched_whole(tmp_path, change):
    path = transcript(tmp_path / "t.jsonl", *rich("a"), msg_line("m", "user", "the end"))
    cache = SearchCache(settle=0)
    run(TEXT, [path], cache=cache)
    data = open(path, "rb").read()
    extra = msg_line("new", "user", f"more {TEXT}")
    if change == "replaced":  # a repair renames a new file over it
        write_raw(path + ".new", data + extra)
        os.replace(path + ".new", path)
    elif change == "head":
        write_raw(path, data.replace(b"meta ", b"Meta ", 1) + extra)
    elif change == "tail":
        write_raw(path, data.replace(b"the end", b"THE END") + extra)
    else:
        write_raw(path, data[: len(data) // 2] + data[len(data) // 2:].replace(TEXT.encode(), b"Other-7") + extra * 3)
    again = run(TEXT, [path], cache=cache)
    assert reads(again) == [("t.jsonl", "whole")]
    assert found_hits(again) == reference([path], TEXT, False)


def test_the_cache_on_disk(tmp_path, shelf):
    where = str(tmp_path / "cache")
    first = run(TEXT, [shelf["root"]], cache=SearchCache(where, settle=0))
    assert not os.path.exists(where)  # written only when saved
    cache = SearchCache(where, settle=0)
    run(TEXT, [shelf["root"]], cache=cache)
    cache.save()
    (name,) = os.listdir(where)
    assert os.stat(os.path.join(where, name)).st_mode & 0o777 == 0o600
    assert os.stat(where).st_mode & 0o777 == 0o700
    again = run(TEXT, [shelf["root"]], cache=SearchCache(where, settle=0))
    assert {r for _, r in reads(again)} == {"cached"} and found_hits(again) == found_hits(first)
    # A file this module did not write is not believed: the search reads the transcripts.
    saved = json.loads(open(os.path.join(where, name), "rb").read())
    at = saved["paths"].index(os.path.abspath(shelf["a"]))
    numbers = saved["numbers"][10 * at:10 * at + 10]
    count, resume, size = numbers[9], numbers[8], numbers[2]
    before = sum(saved["numbers"][9:10 * at:10])  # a.jsonl's lines start there
    assert count  # a.jsonl has lines: its entry is the one spoiled below

    def spoiled(column: str, index: int, value: Any) -> bytes:
        """The file as saved, but one of a.jsonl's values (its identity kept: trusted if read)."""
        values = list(saved[column])
        values[index] = value
        return json.dumps(dict(saved, **{column: values})).encode()

    old_format = {"format": 1, "key": saved["key"], "files": {}}
    for damage in (b"", b"{", b'{"format": 1}', b"[]", json.dumps(old_format).encode(),
                   spoiled("lines", before, resume + 5), spoiled("groups", before, 99),
                   spoiled("lines", before, "7"), spoiled("numbers", 10 * at + 6, "0"),
                   spoiled("numbers", 10 * at + 8, size + 1), spoiled("numbers", 10 * at + 9, count - 1),
                   spoiled("numbers", 10 * at + 5, True), spoiled("numbers", 10 * at + 1, -1),
                   spoiled("numbers", 10 * at, 1 << 64), spoiled("paths", at, 7),
                   json.dumps(dict(saved, problems={str(at): "a problem with lines"})).encode()):
        with open(os.path.join(where, name), "wb") as f:
            f.write(damage)
        again = run(TEXT, [shelf["root"]], cache=SearchCache(where, settle=0))
        assert {r for _, r in reads(again)} == {"whole"} and found_hits(again) == found_hits(first), damage


def test_the_cache_keeps_the_newest_queries(tmp_path, shelf):
    from llm_agent_session import _search_cache

    where = str(tmp_path / "cache")
    for i in range(_search_cache.QUERIES + 3):
        cache = SearchCache(where)
        run(f"text {i}", [shelf["z"]], cache=cache)
        cache.save()
    assert len(os.listdir(where)) == _search_cache.QUERIES


def test_the_walk_finds_what_the_viewer_s_shelf_lists(shelf, tmp_path):
    """walk.py is the shelf's walk without its look at each file: the same transcripts,
    by the same names, in the same order (and so is the search's)."""
    from llm_agent_session.view.shelf import Roots
    from llm_agent_session.walk import first_line_problem, walk

    os.symlink(shelf["z"], os.path.join(shelf["root"], "sub2", "zz-link.jsonl"))  # a link to a file inside
    single = transcript(tmp_path / "single.jsonl", msg_line("m", "user", TEXT))
    paths = [shelf["root"], single, shelf["root"]]
    roots = Roots(paths)
    labels = list(roots.roots)
    listed = [found.name for found in roots.walk() if found.unreadable is None]

    def is_transcript(path: str) -> bool:
        fd = os.open(path, os.O_RDONLY)
        try:
            return first_line_problem(fd, os.pread(fd, 4096, 0)) is None
        finally:
            os.close(fd)

    walked = [labels[w.root] + ("/" + w.relative if w.relative else "") for w in walk(paths)
              if w.problem is None and (w.given or is_transcript(w.path))]
    assert walked == listed and len(listed) == 2 * len(shelf["order"]) + 3
    hits = {labels[f.root] + ("/" + f.relative if f.relative else "") for f in run(TEXT, paths)}
    assert hits <= set(listed) and len(hits) == 2 * 5 + 1


FIRST_LINES = [
    meta_line(),
    b"\n \t\n" + meta_line(),  # blank lines before it
    b"  " + meta_line(),  # a blank lead on its own line
    meta_line().replace(b"\n", b"\r\n"),  # its line ends in \r
    meta_line().replace(b'"session-meta"', b'"message"'),  # another type
    env_line("meta-0", "session-meta", {}, v=2),  # another version
    meta_line()[:-8] + b"\n",  # cut short
    b'{"id":"x","payload":{},"ts":"t","type":"session-meta","extra":1}\n',  # not an envelope
    b'{"id":"x","payload":' + b"[" * 600 + b"]" * 600 + b',"ts":"t","type":"session-meta","v":1}\n',  # too deep
    b"\xff" + meta_line(),  # not UTF-8
    b'{"a": 1}\n',
    b"\n\n",
    b"",
]


@pytest.mark.parametrize("first", FIRST_LINES, ids=range(len(FIRST_LINES)))
def test_the_first_line_look_says_what_the_scan_of_it_says(tmp_path, first):
    """walk.first_line_problem takes a session-meta line from the quick look at it
    (``Core.first_line_is_meta``), without building it through a scan: the same answer."""
    from llm_agent_session import _backend, _peek
    from llm_agent_session.walk import first_line_problem

    path = tmp_path / "t.jsonl"
    path.write_bytes(first + msg_line("m", "user", TEXT))
    fd = os.open(str(path), os.O_RDONLY)
    try:
        head = os.pread(fd, 4096, 0)
        body = head.lstrip(b" \t\r\n")
        newline = head.find(b"\n", len(head) - len(body)) if body else -1
        end = len(head) if newline < 0 else newline + 1
        want = _peek._first_line_error(_backend.core.scan(fd, 0, end, True), end) if head else "the file is empty"
        assert first_line_problem(fd, head) == want
    finally:
        os.close(fd)
