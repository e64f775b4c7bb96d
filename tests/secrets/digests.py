"""The digests a transcript keeps, checked against what they cover (docs/FORMAT.md): each
dispatched call's ``arguments-digest``, each run-context section's ``digest`` (its text's,
or one a line before carries), and each settle's ``result-digest`` where the caller made
it of its tool message's text."""

from __future__ import annotations

import hashlib
import json
from typing import Dict, List

from llm_agent_session.canonical import dumps


def sha(text: str) -> str:
    return "sha256:" + hashlib.sha256(text.encode("utf-8")).hexdigest()


def problems(path: str, results: bool = True) -> List[str]:
    """What does not verify; `results`: also hold every settle's result-digest to its tool
    message's text (where the writer made them so)."""
    out: List[str] = []
    texts: Dict[str, str] = {}
    calls: Dict[str, str] = {}  # op id -> call id
    contents: Dict[str, str] = {}  # call id -> the last tool message's text
    with open(path, "rb") as fh:
        for n, line in enumerate(fh, 1):
            e = json.loads(line)
            p, kind = e["payload"], e["type"]
            if kind == "tool-dispatched":
                calls[e["id"]] = p["call-id"]
                if sha(dumps(p["arguments"])) != p["arguments-digest"]:
                    out.append(f"line {n}: arguments-digest")
            elif kind == "run-context":
                for s in p["sections"]:
                    if "text" in s:
                        if sha(s["text"]) != s["digest"]:
                            out.append(f"line {n}: section {s['name']} digest")
                        texts[s["digest"]] = s["text"]
                    elif s["digest"] not in texts:
                        out.append(f"line {n}: section {s['name']} names a digest no line carries")
            elif kind == "message" and p.get("role") == "tool" and isinstance(p.get("content"), str):
                contents[p["tool_call_id"]] = p["content"]
            elif kind == "tool-settled" and results and "result-digest" in p:
                text = contents.get(calls.get(p["op-id"], ""))
                if text is None or sha(text) != p["result-digest"]:
                    out.append(f"line {n}: result-digest")
    return out
