"""Content in the OpenAI chat shape the rest of the library shows and exports: a string,
or a list of ``{"type": "text", "text": ...}`` and ``{"type": "image_url", ...}`` parts."""

from __future__ import annotations

from typing import Any, Dict, List


def text_part(text: str) -> Any:
    return {"type": "text", "text": text}


def image_part(url: str) -> Any:
    return {"type": "image_url", "image_url": {"url": url}}


def simplest(parts: List[Any]) -> Any:
    """No part: None; one text part: its string; else the list."""
    if not parts:
        return None
    if len(parts) == 1 and isinstance(parts[0], dict) and parts[0].get("type") == "text":
        return parts[0]["text"]
    return parts


def as_str(value: Any) -> str:
    return value if isinstance(value, str) else ""


def as_dict(value: Any) -> Dict[str, Any]:
    return value if isinstance(value, dict) else {}
