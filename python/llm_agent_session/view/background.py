"""The viewer's passes over whole files in the background, one at a time.

A transcript's history, verdict and secret count (``transcript.py``) and a big file's
token count (``tokens.py``) each read the whole file in a thread. Two at once on a machine
of two cores left the page's answers a share of the GIL and of a core: while a 1 GB
transcript's history was read, its token count beside it (the native core's pass: one
CPU of the two) and the history's Python work made a thread of the server wait up to
385 ms for its turn (benches/viewer_speed.py's jumps then, on a loaded machine: up to
224-717 ms, the worst of 7). Each pass takes ``PASS`` for its whole; the answers to the
page never do.

A search the page asks for reads whole files too, and a person waits for it: while one
runs, a pass that reads in blocks (the secret count) waits between two of them
(``give_way``). Beside the secret count, a search of the 10 GB transcript took 3.5 s, on a
quiet server 2.1 s (``grep -F -c``: 2.1 s; benches/viewer_speed.py).
"""

from __future__ import annotations

import contextlib
import ctypes
import gc
import os
import sys
import threading
from typing import Iterator

#: Held by the background pass under way (a reentrant lock: a pass may start another part).
PASS = threading.RLock()

#: Set once this server has answered a window of envelopes: a page's first screen is drawn.
FIRST_WINDOW = threading.Event()
#: A pass over a file this big waits for it (at most `FIRST_WINDOW_WAIT` seconds): begun
#: beside the first screen's requests on two cores, the 10 GB transcript's history read
#: and token count held its first screen, reopened, at 0.6-0.7 s. A smaller file's passes
#: take milliseconds and start at once.
WAIT_FROM = 32 << 20
FIRST_WINDOW_WAIT = 1.0


#: How many searches run now; `give_way` waits while any does.
_SEARCHES = threading.Condition()
_searching = 0


@contextlib.contextmanager
def searching() -> Iterator[None]:
    """A search of whole files the page waits for: passes give way to it (`give_way`)."""
    global _searching
    with _SEARCHES:
        _searching += 1
    try:
        yield
    finally:
        with _SEARCHES:
            _searching -= 1
            _SEARCHES.notify_all()


def give_way() -> None:
    """Called by a pass between two blocks: wait while a search runs."""
    with _SEARCHES:
        _SEARCHES.wait_for(lambda: _searching == 0)


@contextlib.contextmanager
def turn(size: int) -> Iterator[None]:
    """A pass over a whole file of `size` bytes: once the page has had its first screen,
    and while no other pass runs, on a thread of its own, which runs at the lowest
    priority from then on (see `_lowest_priority`)."""
    _lowest_priority()
    if size >= WAIT_FROM:
        FIRST_WINDOW.wait(FIRST_WINDOW_WAIT)
    with PASS:
        yield


def _lowest_priority() -> None:
    """Lower the calling thread, and the core's threads it starts (a history read, a token
    count: two each), to nice 19, so that the page's answers have the processors first:
    beside a token count on two cores, a jump while the 1 GB transcript's history was
    read took up to 156 ms (benches/viewer_speed.py). Linux gives each thread its own
    nice value; elsewhere nothing changes."""
    if sys.platform.startswith("linux"):
        with contextlib.suppress(OSError):
            os.setpriority(os.PRIO_PROCESS, threading.get_native_id(), 19)


def keep_for_good() -> None:
    """Move every object alive now (a transcript's history and index, the server's own)
    out of the reach of the cyclic collector's full passes (``gc.freeze``): while a pass
    allocates, each walked them all, 30-60 ms at 1 GB, and the page's answers waited
    (measured with ``gc.callbacks``). Their reference counts still free them; only a
    cycle among them is no longer collected."""
    gc.freeze()


def release_freed_memory() -> None:
    """Hand back to the system the heap that a pass freed: glibc keeps it otherwise (52 MB
    of the 412 MB a 1 GB transcript's viewer held after its history was built, measured)."""
    if sys.platform.startswith("linux"):
        try:
            ctypes.CDLL(None).malloc_trim(0)
        except (OSError, AttributeError):  # not glibc
            pass
