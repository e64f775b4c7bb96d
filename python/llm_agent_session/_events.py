"""What the native core builds on access: ``Session.events``, peek's sequences and the
run-context section texts of a replay."""

from __future__ import annotations

from typing import Any, Callable, Dict, Iterator, List, Mapping, Optional, Sequence, Tuple, TypeVar, Union, overload

from .canonical import copy_json
from .messages import Event

T = TypeVar("T")


class _ListLike(Sequence[T]):
    """Slices (as lists), iteration and equality with any sequence, from ``__len__`` and
    ``_at`` (a non-negative index in range): what both list-like views share."""

    __slots__ = ()

    def _at(self, i: int) -> T:
        raise NotImplementedError

    @overload
    def __getitem__(self, i: int) -> T: ...

    @overload
    def __getitem__(self, i: slice) -> List[T]: ...

    def __getitem__(self, i: Union[int, slice]) -> Union[T, List[T]]:
        n = len(self)
        if isinstance(i, slice):
            return [self._at(j) for j in range(*i.indices(n))]
        if i < 0:
            i += n
        if not 0 <= i < n:
            raise IndexError("index out of range")
        return self._at(i)

    def __iter__(self) -> Iterator[T]:
        for j in range(len(self)):
            yield self._at(j)

    def __eq__(self, other: Any) -> bool:
        if not isinstance(other, Sequence) or isinstance(other, (str, bytes)):
            return NotImplemented
        return len(self) == len(other) and all(a == b for a, b in zip(self, other))

    __hash__ = None  # type: ignore[assignment]


class LazyList(_ListLike[T]):
    """A list-like view of a native index whose items are built on access.

    The native index (``_native.LineIndex``) answers ``len`` and integer indexing;
    this adds slices, iteration and equality with any sequence, so peek's
    ``envelopes`` and ``messages`` compare equal to the lists the pure core returns.
    """

    __slots__ = ("_index",)

    def __init__(self, index: Any) -> None:
        self._index = index

    def __len__(self) -> int:
        return len(self._index)

    def _at(self, i: int) -> T:
        return self._index[i]  # type: ignore[no-any-return]

    def __iter__(self) -> Iterator[T]:
        return iter(self._index)  # native: reads a window of lines at a time

    def __repr__(self) -> str:
        return f"<LazyList of {len(self)} items, built on access>"


class Concatenated(_ListLike[T]):
    """Two sequences one after the other (peek's envelopes: a side index's, then those
    scanned after it), items built on access where theirs are."""

    __slots__ = ("_first", "_second")

    def __init__(self, first: Sequence[T], second: Sequence[T]) -> None:
        self._first = first
        self._second = second

    def __len__(self) -> int:
        return len(self._first) + len(self._second)

    def _at(self, i: int) -> T:
        k = len(self._first)
        return self._first[i] if i < k else self._second[i - k]

    def __iter__(self) -> Iterator[T]:
        yield from self._first
        yield from self._second

    def __repr__(self) -> str:
        return f"<Concatenated of {len(self)} items, built on access>"


class TypesOf(_ListLike[str]):
    """Each envelope's type: from a side index's kinds where it knows them (a byte an
    envelope: an index into `kind_table`), else from the envelope (its line read)."""

    __slots__ = ("_kinds", "_names", "_events")

    def __init__(self, kinds: bytes, kind_table: Sequence[Tuple[str, Optional[str]]], events: Sequence[Event]) -> None:
        self._kinds = kinds
        self._names = [type_ for type_, _ in kind_table]
        self._events = events

    def __len__(self) -> int:
        return len(self._events)

    def _at(self, i: int) -> str:
        if i < len(self._kinds) and self._kinds[i] < len(self._names):
            return self._names[self._kinds[i]]
        return self._events[i].type


class ShiftedSpans(_ListLike[Tuple[int, int, int]]):
    """A scan's ``(line, offset, length)`` spans with `lines` added to each line number
    (a scan that started after a side index's `lines` lines)."""

    __slots__ = ("_spans", "_lines")

    def __init__(self, spans: Sequence[Tuple[int, int, int]], lines: int) -> None:
        self._spans = spans
        self._lines = lines

    def __len__(self) -> int:
        return len(self._spans)

    def _at(self, i: int) -> Tuple[int, int, int]:
        line, offset, length = self._spans[i]
        return line + self._lines, offset, length


class EventLog(_ListLike[Event]):
    """What replay read (a list, or the native core's lazy index) plus what was appended since.

    Indexing, slicing, ``len`` and iteration work as on a list; items the native
    core has not built yet are built on access, so a long transcript opens without
    turning every line into Python objects. Every Event it hands out is new, with a
    payload of its own: the session's Events (what it appended, what the pure core
    read, and the native one when `copy_read` says its read sequence is a list) are
    copied, so that nothing a caller edits reaches the session's state.
    """

    __slots__ = ("_read", "_appended", "_copy_read")

    def __init__(self, read: Sequence[Event], appended: List[Event], copy_read: bool = True) -> None:
        self._read = read
        self._appended = appended
        self._copy_read = copy_read

    def __len__(self) -> int:
        return len(self._read) + len(self._appended)

    def _at(self, i: int) -> Event:
        k = len(self._read)
        if i < k:
            return _copy(self._read[i]) if self._copy_read else self._read[i]
        return _copy(self._appended[i - k])

    def __iter__(self) -> Iterator[Event]:
        if self._copy_read:
            yield from map(_copy, self._read)
        else:
            yield from self._read
        yield from map(_copy, self._appended)

    def __repr__(self) -> str:
        return f"<EventLog of {len(self)} events>"


def _copy(event: Event) -> Event:
    return Event(event.id, event.type, event.ts, event.v, copy_json(event.payload))


class LazyTexts(Mapping[str, str]):
    """``FoldState.sections`` (digest -> text) or ``FoldState.section_lines`` (digest ->
    id of the line carrying the text) after a native replay: values for the sections
    the file holds come from ``lookup`` (``_native.SectionTexts.get``, which reads the
    text from its line when first asked for, or ``.line_of``); values appended since
    are kept here. Supports what the fold and the session use (``get``, ``setdefault``)
    and the rest of a read-only mapping."""

    __slots__ = ("_index", "_lookup", "_added")

    def __init__(self, index: Any, lookup: Callable[[str], Optional[str]]) -> None:
        self._index = index  # _native.SectionTexts: its digests, in order
        self._lookup = lookup
        self._added: Dict[str, str] = {}

    def get(self, digest: str, default: Any = None) -> Any:
        if digest in self._added:
            return self._added[digest]
        text: Optional[str] = self._lookup(digest) if isinstance(digest, str) else None
        return default if text is None else text

    def __getitem__(self, digest: str) -> str:
        text = self.get(digest)
        if text is None:
            raise KeyError(digest)
        return text  # type: ignore[no-any-return]

    def setdefault(self, digest: str, text: str) -> str:
        known = self.get(digest)
        if known is not None:
            return known  # type: ignore[no-any-return]
        self._added[digest] = text
        return text

    def __contains__(self, digest: object) -> bool:
        return isinstance(digest, str) and self.get(digest) is not None

    def __iter__(self) -> Iterator[str]:
        yield from self._index.keys()
        yield from self._added

    def __len__(self) -> int:
        return len(self._index) + len(self._added)

    def __repr__(self) -> str:
        return f"<LazyTexts of {len(self)} section texts, read on access>"
