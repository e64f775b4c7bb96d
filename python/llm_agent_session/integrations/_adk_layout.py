"""Where the ADK session service keeps each session: ``<root>/<app>/<user>/<session>.jsonl``
(docs/integrations.md, "Google ADK"), each name escaped so that any string is a safe,
distinct file name on every common file system, and a person can still read it.

The escaping (``escape_name``), applied to the app name, the user id and the session id:

* ``a``-``z``, ``0``-``9``, ``-``, ``_`` and ``.`` stay as they are;
* an upper-case letter becomes ``!`` and its lower-case form (``Alice`` -> ``!alice``), so
  that names differing only in case never meet on a case-insensitive file system;
* every other byte of the name's UTF-8 form is ``%`` and two upper-case hex digits (``/``
  -> ``%2F``, ``é`` -> ``%C3%A9``), as is a ``.`` that starts or ends the name (no hidden
  files, no ``.``/``..``, no name Windows trims);
* a name Windows reserves for a device (``con``, ``nul``, ``com1``, ... before any dot)
  has its first letter written ``%XX``; the empty name is ``%``;
* an escaped name longer than ``MAX_NAME`` bytes is cut, at a byte boundary of the
  escaped form, and ends in ``~`` and the first 16 hex digits of the SHA-256 of the
  original name. ``~`` appears in no other escaped name, so such a name is known as cut;
  the session's own file says its full names (its session-meta line).

``unescape_name`` reverses it (None for a cut name). The service's own files start with
a ``.``, which no escaped name does: ``.app-state.json`` in an app's directory,
``.user-state.json`` in a user's, ``.<session>.adk.json`` beside each transcript.
"""

from __future__ import annotations

import hashlib
import os
import re
from typing import Iterator, Optional, Tuple

# Longest escaped name kept whole: with ".<name>.adk.json" (the longest file made of one)
# well under the 255 bytes most file systems take.
MAX_NAME = 200
_HASH_DIGITS = 16
_PLAIN = frozenset(b"abcdefghijklmnopqrstuvwxyz0123456789-_.")
_RESERVED = frozenset(
    ["con", "prn", "aux", "nul"] + [f"com{i}" for i in range(10)] + [f"lpt{i}" for i in range(10)]
)
TRANSCRIPT_SUFFIX = ".jsonl"
SIDE_SUFFIX = ".adk.json"
APP_STATE = ".app-state.json"
USER_STATE = ".user-state.json"


def escape_name(name: str) -> str:
    """`name` as one file-name component (see the module's docstring)."""
    if not isinstance(name, str):
        raise TypeError(f"an ADK name must be a str, not {type(name).__name__}")
    if name == "":
        return "%"
    raw = name.encode("utf-8", "surrogatepass")
    out = []
    last = len(raw) - 1
    for i, b in enumerate(raw):
        if 0x41 <= b <= 0x5A:  # A-Z
            out.append("!" + chr(b + 0x20))
        elif b in _PLAIN and not (b == 0x2E and i in (0, last)):
            out.append(chr(b))
        else:
            out.append(f"%{b:02X}")
    escaped = "".join(out)
    if escaped.split(".", 1)[0] in _RESERVED:
        escaped = f"%{ord(escaped[0]):02X}" + escaped[1:]
    if len(escaped) > MAX_NAME:
        digest = hashlib.sha256(raw).hexdigest()[:_HASH_DIGITS]
        cut = escaped[: MAX_NAME - _HASH_DIGITS - 1]
        cut = re.sub(r"(%[0-9A-F]?|!)$", "", cut)  # never half an escape
        escaped = cut + "~" + digest
    return escaped


_TOKEN = re.compile(r"%([0-9A-F]{2})|!([a-z])|([a-z0-9._-])")


def unescape_name(escaped: str) -> Optional[str]:
    """The name `escaped` stands for; None when it was cut (its file says the name) or is
    not an escaped name at all."""
    if escaped == "%":
        return ""
    raw = bytearray()
    pos = 0
    for m in _TOKEN.finditer(escaped):
        if m.start() != pos:
            return None
        pos = m.end()
        hex_, upper, plain = m.groups()
        if hex_ is not None:
            raw.append(int(hex_, 16))
        elif upper is not None:
            raw.append(ord(upper) - 0x20)
        else:
            raw.append(ord(plain))
    if pos != len(escaped):
        return None
    try:
        name = raw.decode("utf-8", "surrogatepass")
    except UnicodeDecodeError:
        return None
    return name if escape_name(name) == escaped else None


class Layout:
    """The paths of one service root."""

    def __init__(self, root: str) -> None:
        self.root = os.path.abspath(root)

    def app_dir(self, app: str) -> str:
        return os.path.join(self.root, escape_name(app))

    def user_dir(self, app: str, user: str) -> str:
        return os.path.join(self.app_dir(app), escape_name(user))

    def transcript(self, app: str, user: str, session_id: str) -> str:
        return os.path.join(self.user_dir(app, user), escape_name(session_id) + TRANSCRIPT_SUFFIX)

    def app_state(self, app: str) -> str:
        return os.path.join(self.app_dir(app), APP_STATE)

    def user_state(self, app: str, user: str) -> str:
        return os.path.join(self.user_dir(app, user), USER_STATE)

    def user_dirs(self, app: str) -> Iterator[Tuple[Optional[str], str]]:
        """(user id or None where the directory's name was cut, directory) of every user
        directory of `app`."""
        try:
            entries = list(os.scandir(self.app_dir(app)))
        except (FileNotFoundError, NotADirectoryError):
            return
        for entry in entries:
            if not entry.name.startswith(".") and entry.is_dir(follow_symlinks=False):
                yield unescape_name(entry.name), entry.path

    @staticmethod
    def transcripts(user_dir: str) -> Iterator[Tuple[Optional[str], str]]:
        """(session id or None where the file's name was cut, path) of every transcript in
        a user directory."""
        try:
            entries = list(os.scandir(user_dir))
        except (FileNotFoundError, NotADirectoryError):
            return
        for entry in entries:
            name = entry.name
            if name.startswith(".") or not name.endswith(TRANSCRIPT_SUFFIX):
                continue
            if entry.is_file(follow_symlinks=False):
                yield unescape_name(name[: -len(TRANSCRIPT_SUFFIX)]), entry.path


def side_path(transcript: str) -> str:
    """The service's small file beside a transcript (what `sidecar` describes)."""
    head, name = os.path.split(transcript)
    return os.path.join(head, "." + name[: -len(TRANSCRIPT_SUFFIX)] + SIDE_SUFFIX)
