"""Assistant Markdown as HTML that holds no markup from the transcript.

markdown-it-py (CommonMark, plus tables and strikethrough) with raw HTML off, so a
``<script>`` in the text is escaped as text; images off (a transcript must not make the
browser fetch anything: the Content-Security-Policy refuses it too); links only to
``http``, ``https`` and ``mailto`` (no ``javascript:``, ``data:`` or ``file:``), opened
only by a click, in a new tab, with no referrer. The text first passes through the
command line's ``visible``, so control, bidi and invisible characters are shown as
``<U+202E>``, ``\\x1b``, ... instead of acting. A table column's alignment is a class
(``align-left``, ``align-center``, ``align-right``: viewer.css), not the inline style
markdown-it writes, which the page's Content-Security-Policy refuses.
"""

from __future__ import annotations

from typing import Sequence

from markdown_it import MarkdownIt
from markdown_it.renderer import RendererHTML
from markdown_it.token import Token
from markdown_it.utils import EnvType, OptionsDict

from ..visible import visible

LINK_SCHEMES = ("http:", "https:", "mailto:")
ALIGN_CLASSES = {"text-align:left": "align-left", "text-align:center": "align-center", "text-align:right": "align-right"}


def _validate_link(url: str) -> bool:
    return url.strip().lower().startswith(LINK_SCHEMES)


def _link_open(self: RendererHTML, tokens: Sequence[Token], idx: int, options: OptionsDict, env: EnvType) -> str:
    token = tokens[idx]
    token.attrSet("rel", "noopener noreferrer nofollow")
    token.attrSet("target", "_blank")
    return self.renderToken(tokens, idx, options, env)


def _cell_open(self: RendererHTML, tokens: Sequence[Token], idx: int, options: OptionsDict, env: EnvType) -> str:
    token = tokens[idx]
    style = token.attrs.pop("style", None)
    if isinstance(style, str) and style in ALIGN_CLASSES:
        token.attrJoin("class", ALIGN_CLASSES[style])
    return self.renderToken(tokens, idx, options, env)


def _parser() -> MarkdownIt:
    md = MarkdownIt("commonmark", {"html": False, "linkify": False, "typographer": False})
    md.enable(["table", "strikethrough"])
    md.disable(["image", "html_block", "html_inline"])
    md.validateLink = _validate_link  # type: ignore[method-assign]
    md.add_render_rule("link_open", _link_open)
    md.add_render_rule("th_open", _cell_open)
    md.add_render_rule("td_open", _cell_open)
    return md


_MD = _parser()


def render(text: str) -> str:
    """`text` (Markdown from the transcript) as safe HTML."""
    return str(_MD.render(visible(text, multiline=True)))
