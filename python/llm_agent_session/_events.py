"""``Session.events``: every envelope in file order, read lazily where the core allows."""

from __future__ import annotations

from typing import Any, Iterator, List, Sequence, Union, overload

from .messages import Event


class EventLog(Sequence[Event]):
    """What replay read (a list, or the native core's lazy index) plus what was appended since.

    Indexing, slicing, ``len`` and iteration work as on a list; items the native
    core has not built yet are built on access, so a long transcript opens without
    turning every line into Python objects.
    """

    __slots__ = ("_read", "_appended")

    def __init__(self, read: Sequence[Event], appended: List[Event]) -> None:
        self._read = read
        self._appended = appended

    def __len__(self) -> int:
        return len(self._read) + len(self._appended)

    @overload
    def __getitem__(self, i: int) -> Event: ...

    @overload
    def __getitem__(self, i: slice) -> List[Event]: ...

    def __getitem__(self, i: Union[int, slice]) -> Union[Event, List[Event]]:
        if isinstance(i, slice):
            return [self[j] for j in range(*i.indices(len(self)))]
        n = len(self)
        if i < 0:
            i += n
        if not 0 <= i < n:
            raise IndexError("event index out of range")
        k = len(self._read)
        return self._read[i] if i < k else self._appended[i - k]

    def __iter__(self) -> Iterator[Event]:
        yield from self._read
        yield from self._appended

    def __eq__(self, other: Any) -> bool:
        if not isinstance(other, Sequence) or isinstance(other, (str, bytes)):
            return NotImplemented
        return len(self) == len(other) and all(a == b for a, b in zip(self, other))

    __hash__ = None  # type: ignore[assignment]

    def __repr__(self) -> str:
        return f"<EventLog of {len(self)} events>"
