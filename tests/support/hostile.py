"""A hostile corpus: every character a terminal or a viewer would act on, plus ANSI
sequences and rich markup, in every field a transcript has, and in its file name.

``FORBIDDEN`` lists what must never reach the output raw; the list is written out here
(not derived from the code under test), so a gap in the CLI's neutraliser fails a test.
"""

from __future__ import annotations

import json
import os
import re
import shutil
from dataclasses import dataclass
from typing import Any, Dict, List

from llm_agent_session import Session
from llm_agent_session.canonical import dumps, envelope_line

# C0 controls but \t and \n, DEL, C1 controls.
CONTROLS = [chr(c) for c in range(0x20) if chr(c) not in "\t\n"] + ["\x7f"] + [chr(c) for c in range(0x80, 0xA0)]
BIDI = [chr(c) for c in range(0x202A, 0x202F)] + [chr(c) for c in range(0x2066, 0x206A)] + ["\u200e", "\u200f", "\u061c"]
INVISIBLE = ["\u200b", "\u200c", "\u200d", "\u2060", "\ufeff", "\u00ad", "\u2028", "\u2029", "\u180e", "\U000e0041"]
FORBIDDEN = CONTROLS + BIDI + INVISIBLE

MARKUP = "[bold red]MARKUP[/bold red] [link=https://evil.example]click[/link] :warning:"
ANSI = "\x1b[2J\x1b[H\x1b]0;PWNED-TITLE\x07\x1b[31mred\x1b[0m\x1bP1;2qDCS\x1b\\\x1b]8;;https://evil.example\x1b\\link"
# Every forbidden character once, the ANSI sequences, a forged line, and the markup.
H = (
    ANSI
    + "over\rloads clean\x08\x08\x07\x7f\x9b2J\x9d0;c1-osc\x9c\x85"
    + "".join(FORBIDDEN)
    + "\nloads clean: forged line\n"
    + MARKUP
)
# For names and short fields (the excerpt of a torn line is cut at 60 bytes: start hot).
SHORT = "\x1b[2J\x1b]0;T\x07\u202e\u2066\u200b\x9b\r" + MARKUP
# The file name: everything above that a file name can hold (no "/", no NUL).
FILE_NAME = "run-\x1b[2J\x1b]0;T\x07\u202eevil\u2066\u200b\x9b\r\n[bold]B[link=evil]L.jsonl"


def assert_clean(data: bytes, where: str, coloured: bool = False) -> None:
    """None of FORBIDDEN appears raw in `data`; with `coloured`, rich's own SGR
    sequences (ESC [ digits m) are the only escapes allowed."""
    text = data.decode("utf-8", "surrogateescape")
    if coloured:
        text = re.sub(r"\x1b\[[0-9;]*m", "", text)
    found = sorted({f"U+{ord(c):04X}" for c in text if c in FORBIDDEN or 0xDC80 <= ord(c) <= 0xDCFF})
    # ascii(): the failure message itself must not drive the terminal running the tests.
    assert not found, f"{ascii(where)}: raw {', '.join(found)} in the output:\n{ascii(text[:3000])}"


@dataclass
class Corpus:
    path: str  # loads (hostile everywhere), with a torn hostile last line
    broken: str  # the same with a malformed hostile line in the middle: load refuses it
    through: str  # an envelope id for fork
    meta: Dict[str, str]


def _raw_line(id_: str, type_: str, payload: object) -> bytes:
    return envelope_line(id_, type_, "2026-11-30T12:00:00.000000Z", dumps(payload))


def build(directory: str) -> Corpus:
    os.makedirs(directory, exist_ok=True)
    path = os.path.join(directory, FILE_NAME)
    meta = {"agent" + SHORT: H, "model": H}
    call: Dict[str, Any] = {"id": "call" + SHORT, "type": "function", "function": {"name": "tool" + SHORT, "arguments": json.dumps({"q": H})}}
    odd_call: Dict[str, Any] = {"id": "c2" + SHORT, "type": "function", "function": {"name": H, "arguments": H}}
    with Session.create(path, meta) as s:
        s.append_run_context([("sec" + SHORT, H)], facts=[("fact" + SHORT, H)])
        s.append_message({"role": "system", "content": H, "sysprompt": True})
        s.append_message({"role": "user", "content": H, "name": "who" + SHORT}, extra={"note" + SHORT: H})
        s.append_message({"role": "user", "content": [
            {"type": "text", "text": H},
            {"type": "image_url", "image_url": {"url": "javascript:alert(1)//" + SHORT}},
            {"type": "other" + SHORT, "value": H},
        ]})
        a = s.append_message({"role": "assistant", "content": H, "tool_calls": [call, odd_call]})
        op = s.append_tool_dispatched(call["id"], "tool" + SHORT, {"q": H}, idempotency=H, run_id=H, round=1)
        s.append_message({"role": "tool", "tool_call_id": call["id"], "content": H})
        s.append_tool_settled(op, "failed", reason=H, error=H, duration=28.634999999999998)
        s.append_tool_dispatched(odd_call["id"], H, H, idempotency="read-only")  # left open: pending
        s.append_message({"role": "role" + SHORT, "content": H})
        summary_of = s.append_message({"role": "assistant", "content": H})
        s.append_compaction(H, a, 123456, 7890, fallback=True)
        s.append_message({"role": "tool", "tool_call_id": "t" + SHORT, "content": "x" * 3000 + H})
        s.append_elision([(s.message_ids[-1], H)])
        s.append_grants({"g" + SHORT: H})
        through = s.append_message({"role": "user", "content": "plain"})
    assert summary_of
    with open(path, "ab") as f:
        # Hand-written lines: fields the library never writes but a file can hold.
        f.write(_raw_line("id" + SHORT, "message", {"role": "user", "content": H}))
        f.write(_raw_line("id2" + SHORT, "type" + SHORT, {"k" + SHORT: H}))
        f.write(b'{"id":"torn' + SHORT.encode() + b'","payload":{"role":"user","content":"' + H.encode()[:200])
    broken = os.path.join(directory, "broken-" + FILE_NAME)
    shutil.copyfile(path, broken)
    with open(broken, "rb") as f:
        lines = f.read().split(b"\n")
    lines.insert(3, b'{"id": ' + SHORT.encode() + b" not json")  # malformed, in the middle
    lines.insert(5, _raw_line("id" + SHORT, "message", {"role": "user", "content": "duplicate"}).rstrip(b"\n"))
    with open(broken, "wb") as f:
        f.write(b"\n".join(lines))
    return Corpus(path, broken, through, meta)


def commands(path: str, out_dir: str, through: str) -> List[List[str]]:
    """Every command that prints transcript text, on `path`; new files go in `out_dir`."""
    n = len(os.listdir(out_dir))
    new = lambda what: os.path.join(out_dir, f"{n}-{what}{FILE_NAME}")  # noqa: E731
    return [
        ["peek", path], ["peek", path, "--json"],
        ["show", path], ["show", path, "--full", "--extras"], ["show", path, "--raw"], ["show", path, "--raw", "--full"],
        ["show", path, "--from", "no" + SHORT],
        ["tail", path, "-n", "100"], ["tail", path, "-n", "100", "--json"],
        ["stats", path], ["stats", path, "--json"],
        ["check", path], ["check", path, "--json"],
        ["export", path, "--format", "markdown"], ["export", path, "--format", "openai"],
        ["export", path, "--format", "html"], ["export", path, "--format", "markdown", "--all"],
        ["export", path, "--format", "html", "--all"], ["export", path, "--format", "otlp", "--content"],
        ["search", "forged", path, "--extras"], ["search", "forged", path, "--extras", "--json"],
        ["search", "forged", os.path.dirname(path), "-i", "--count"],
        ["salvage", path, new("salvaged")], ["fork", path, new("fork"), "--through", through],
        ["fork", path, new("fork2"), "--through", "no" + SHORT],
        ["repair", path],  # last: it changes the file
    ]
