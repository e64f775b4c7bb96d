"""A small reader of the page's JavaScript, enough for the checks on its shape: its tokens
(strings, template literals, regular expressions and comments skipped, so no brace in them
counts), every function with the lines it spans, and the modules a module imports.

Every kind of function is found: declarations (``function f() {}``, ``async``, generators),
function expressions, methods and accessors (``name() {}`` in a class or an object), and
arrow functions, with a block body or an expression body.
"""

from __future__ import annotations

import re
from typing import List, NamedTuple, Optional, Tuple

#: A ``(`` after one of these opens a condition or a loop's head, not parameters.
CONTROL = {"if", "for", "while", "switch", "catch", "with", "await"}
#: After one of these words a ``/`` starts a regular expression; after any other word, a division.
BEFORE_EXPRESSION = {"return", "typeof", "instanceof", "in", "of", "new", "delete", "void", "throw", "case",
                     "do", "else", "yield", "await"}
_WORD = re.compile(r"[A-Za-z0-9_$]+")


class Token(NamedTuple):
    text: str  # the token (a string: as written, quotes included; "re", "tpl": a regular expression, a template)
    line: int
    kind: str  # "word", "punct", "str", "re", "tpl"


class Function(NamedTuple):
    name: str
    first: int  # line
    last: int  # line

    @property
    def lines(self) -> int:
        return self.last - self.first + 1


def tokens(text: str) -> List[Token]:
    """The tokens of `text`, comments dropped; a template's `${...}` read as code."""
    out: List[Token] = []
    i, line, n = 0, 1, len(text)
    braces: List[int] = []  # per open `{`: 1 where it opened a template's `${`, else 0

    def template(i: int, line: int) -> Tuple[int, int]:
        """From inside a template literal to its end or to a `${` (pushed): the new place."""
        while i < n:
            c = text[i]
            if c == "\\":
                line += text[i + 1:i + 2] == "\n"
                i += 2
            elif c == "`":
                return i + 1, line
            elif text.startswith("${", i):
                braces.append(1)
                out.append(Token("{", line, "punct"))
                return i + 2, line
            else:
                line += c == "\n"
                i += 1
        raise ValueError(f"line {line}: a template literal is not closed")

    while i < n:
        c = text[i]
        if c == "\n":
            line += 1
            i += 1
        elif c.isspace():
            i += 1
        elif text.startswith("//", i):
            end = text.find("\n", i)
            i = n if end < 0 else end
        elif text.startswith("/*", i):
            end = text.find("*/", i + 2)
            if end < 0:
                raise ValueError(f"line {line}: a comment is not closed")
            line += text.count("\n", i, end)
            i = end + 2
        elif c in "'\"":
            j = i + 1
            while j < n and text[j] != c:
                if text[j] == "\n":
                    raise ValueError(f"line {line}: a string is not closed")
                j += 2 if text[j] == "\\" else 1
            out.append(Token(text[i:j + 1], line, "str"))
            i = j + 1
        elif c == "`":
            out.append(Token("tpl", line, "tpl"))
            i, line = template(i + 1, line)
        elif c == "/" and _regex_may_start(out[-1] if out else None):
            j, in_class = i + 1, False
            while j < n and (in_class or text[j] != "/"):
                if text[j] == "\n":
                    raise ValueError(f"line {line}: a regular expression is not closed")
                if text[j] == "\\":
                    j += 1
                elif text[j] == "[":
                    in_class = True
                elif text[j] == "]":
                    in_class = False
                j += 1
            j += 1
            while j < n and (text[j].isalnum() or text[j] == "$" or text[j] == "_"):  # its flags
                j += 1
            out.append(Token("re", line, "re"))
            i = j
        elif _WORD.match(c):
            m = _WORD.match(text, i)
            assert m is not None
            out.append(Token(m.group(), line, "word"))
            i = m.end()
        elif text.startswith("=>", i):
            out.append(Token("=>", line, "punct"))
            i += 2
        elif c == "{":
            braces.append(0)
            out.append(Token("{", line, "punct"))
            i += 1
        elif c == "}":
            out.append(Token("}", line, "punct"))
            i += 1
            if braces and braces.pop() == 1:  # the end of a template's `${...}`: the template goes on
                i, line = template(i, line)
        else:
            out.append(Token(c, line, "punct"))
            i += 1
    return out


def _regex_may_start(prev: Optional[Token]) -> bool:
    if prev is None:
        return True
    if prev.kind == "word":
        return prev.text in BEFORE_EXPRESSION
    if prev.kind in ("str", "re", "tpl"):
        return False
    return prev.text not in (")", "]", "}")


def _partners(toks: List[Token]) -> List[int]:
    """For each bracket, the index of its partner (-1 for other tokens)."""
    partner = [-1] * len(toks)
    stack: List[int] = []
    for k, t in enumerate(toks):
        if t.kind != "punct":
            continue
        if t.text in "([{":
            stack.append(k)
        elif t.text in ")]}":
            if not stack or toks[stack[-1]].text != {")": "(", "]": "[", "}": "{"}[t.text]:
                raise ValueError(f"line {t.line}: {t.text} closes nothing")
            partner[k] = stack.pop()
            partner[partner[k]] = k
    if stack:
        raise ValueError(f"line {toks[stack[-1]].line}: {toks[stack[-1]].text} is not closed")
    return partner


def functions(text: str) -> List[Function]:
    """Every function in `text`, with the lines from its head to its end."""
    toks = tokens(text)
    partner = _partners(toks)
    found: List[Function] = []
    for k, t in enumerate(toks):
        if t.kind != "punct" or k == 0:
            continue
        prev = toks[k - 1]
        if t.text == "{" and prev.kind == "punct" and prev.text == "=>":  # (...) => {
            found.append(Function(_arrow_name(toks, partner, k - 1), prev.line, toks[partner[k]].line))
        elif t.text == "{" and prev.kind == "punct" and prev.text == ")":  # name(...) {, function (...) {
            opening = partner[k - 1]
            before = toks[opening - 1] if opening > 0 else None
            if before is None or before.kind != "word":
                continue
            if before.text in CONTROL:
                continue  # if (...) {, for (...) {: a block
            head = toks[opening - 2] if opening > 1 and toks[opening - 2].text == "function" else before
            found.append(Function(before.text, head.line, toks[partner[k]].line))
        elif t.text == "=>" and k + 1 < len(toks) and not (toks[k + 1].kind == "punct" and toks[k + 1].text == "{"):
            found.append(Function(_arrow_name(toks, partner, k), t.line, _expression_end(toks, partner, k + 1).line))
    return found


def _arrow_name(toks: List[Token], partner: List[int], arrow: int) -> str:
    """`name = (...) =>` or `name = x =>`: name; else "arrow function"."""
    params = arrow - 1
    start = partner[params] if toks[params].text == ")" and toks[params].kind == "punct" else params
    if start > 0 and toks[start - 1].text == "async":
        start -= 1
    if start > 1 and toks[start - 1].text in ("=", ":") and toks[start - 2].kind == "word":
        return toks[start - 2].text
    return "arrow function"


def _expression_end(toks: List[Token], partner: List[int], k: int) -> Token:
    """The last token of the expression starting at `k` (an arrow's expression body)."""
    last = toks[k]
    while k < len(toks):
        t = toks[k]
        if t.kind == "punct" and t.text in ",;)]}":
            break
        if t.kind == "punct" and t.text in "([{":
            k = partner[k]
        last = toks[k]
        k += 1
    return last


def imports(text: str, dynamic: bool = False) -> List[str]:
    """The modules a module imports statically (``import ... from "./x.js"``,
    ``import "./x.js"``, ``export ... from "./x.js"``), as written; with `dynamic`, and
    those it imports by ``import("./x.js")`` (a string literal), anywhere in it."""
    toks = tokens(text)
    found: List[str] = []
    depth = 0
    for k, t in enumerate(toks):
        if t.kind == "punct" and t.text in "{}":
            depth += 1 if t.text == "{" else -1
        if (dynamic and t.kind == "word" and t.text == "import" and k + 2 < len(toks)
                and toks[k + 1].text == "(" and toks[k + 2].kind == "str"):
            found.append(toks[k + 2].text[1:-1])
            continue
        if depth or t.kind != "word" or t.text not in ("import", "export"):
            continue
        if t.text == "import" and k + 1 < len(toks) and toks[k + 1].text in ("(", "."):
            continue  # import(...), import.meta
        for j in range(k + 1, len(toks)):
            if toks[j].text == ";" and toks[j].kind == "punct":
                break
            if toks[j].kind == "str" and toks[j - 1].text in ("from", "import"):
                found.append(toks[j].text[1:-1])
                break
    return found
