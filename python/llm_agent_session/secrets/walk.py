"""Where the rules find secrets in a JSON value: every string (never a key), each object
member that is an assignment (``"api_key": "..."``), and consecutive text parts of a
message's content read as the one text the model was shown, so a secret split between
two parts is found whole.

The walk is iterative (a value read from a file may nest 512 deep) and answers
:class:`Site` s: a string, or a run of text parts, with its hits. ``redact.py`` masks
them; ``scan.py`` reports them.
"""

from __future__ import annotations

from typing import Any, Callable, List, NamedTuple, Optional, Tuple, Union

from .match import Hit, Rules, resolve

PathPart = Union[str, int]
Path = Tuple[PathPart, ...]
#: Whether the string (or container) at a path is left alone: an id, a digest, a reference.
Skip = Callable[[Path], bool]

#: A content part whose ``text`` joins its neighbours' into one text.
TEXT_PART_TYPES = frozenset({"text", "input_text", "output_text"})


class Site(NamedTuple):
    """Secrets in one string at `path`, or (`parts` set) in the text of the consecutive
    text parts ``path[-1] .. path[-1] + len(parts) - 1`` of the list at ``path[:-1]``,
    whose texts are `parts` long: the hits' offsets are then into their concatenation."""

    path: Path
    hits: List[Hit]
    parts: Optional[Tuple[int, ...]] = None

    def spans(self, hit: Hit) -> Tuple[Path, int, int, int]:
        """Where `hit` is, as the report says it: the path of the string it starts in, its
        start there, its end in the string it ends in, and how many strings it reaches."""
        if self.parts is None:
            return self.path, hit.start, hit.end, 1
        first, at = _locate(self.parts, hit.start, starting=True)
        last, end = _locate(self.parts, hit.end, starting=False)
        base, start = self.path[:-1], self.path[-1]
        assert isinstance(start, int)
        return base + (start + first, "text"), at, end, last - first + 1


def _locate(lengths: Tuple[int, ...], offset: int, starting: bool) -> Tuple[int, int]:
    """(part, offset in it) of an offset into the concatenation; an end offset on a
    boundary belongs to the part before it, a start offset to the part after."""
    for k, n in enumerate(lengths):
        if offset < n or (not starting and offset == n):
            return k, offset
        offset -= n
    return len(lengths) - 1, lengths[-1] if lengths else 0


def _is_text_part(item: Any) -> bool:
    return type(item) is dict and item.get("type") in TEXT_PART_TYPES and type(item.get("text")) is str


def sites(value: Any, rules: Rules, skip: Optional[Skip] = None, path: Path = ()) -> List[Site]:
    """Every place in `value` where `rules` find a secret, in document order."""
    out: List[Site] = []
    if type(value) is str:
        hits = rules.find(value)
        if hits:
            out.append(Site(path, hits))
        return out
    # (container, its path, whether its "text" member was read as part of a run)
    stack: List[Tuple[Any, Path, bool]] = [(value, path, False)]
    while stack:
        node, where, text_done = stack.pop()
        found: List[Tuple[Path, Any, bool]] = []  # pushed in reverse, to keep document order
        if type(node) is dict:
            for key, item in node.items():
                here = where + (key,)
                if skip is not None and skip(here):
                    continue
                if type(item) is str:
                    if text_done and key == "text":
                        continue
                    hits = rules.find(item)
                    member = rules.member(key, item)
                    if member:
                        hits = resolve(hits + member)
                    if hits:
                        out.append(Site(here, hits))
                elif type(item) in (dict, list):
                    found.append((here, item, False))
        elif type(node) is list:
            i, n = 0, len(node)
            while i < n:
                item = node[i]
                if _is_text_part(item):
                    j = i + 1
                    while j < n and _is_text_part(node[j]):
                        j += 1
                    if j - i >= 2 and (skip is None or not skip(where + (i,))):
                        texts = [node[k]["text"] for k in range(i, j)]
                        hits = rules.find("".join(texts))
                        if hits:
                            out.append(Site(where + (i,), hits, tuple(len(t) for t in texts)))
                        for k in range(i, j):
                            found.append((where + (k,), node[k], True))
                        i = j
                        continue
                here = where + (i,)
                if skip is not None and skip(here):
                    pass
                elif type(item) is str:
                    hits = rules.find(item)
                    if hits:
                        out.append(Site(here, hits))
                elif type(item) in (dict, list):
                    found.append((here, item, False))
                i += 1
        # Sites of a container's own strings come before those of what it holds: fine for
        # a report, and redaction does not depend on the order.
        for here, item, done in reversed(found):
            stack.append((item, here, done))
    return out
