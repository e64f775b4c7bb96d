"""The page's own files (``view/static/``): as the server hands them to a browser, and the
script's shape (ES modules, no function over 150 lines; tests/support/js_scan.py reads it)."""

from __future__ import annotations

import os
import posixpath
import re

from tests.support import js_scan
import pytest
from tests.support.view import client_for

import llm_agent_session
from llm_agent_session.view.security import CSP

STATIC = os.path.join(os.path.dirname(llm_agent_session.__file__), "view", "static")


def _static_files():
    for folder, _, names in os.walk(STATIC):
        for name in sorted(names):
            yield os.path.relpath(os.path.join(folder, name), STATIC).replace(os.sep, "/")


def test_the_pages_files_are_asked_for_again_on_every_load(backend_name):
    """Each file of the page is revalidated on every load (``no-cache``; unchanged, it is a
    304 by its ETag). Without a Cache-Control, a browser kept each file for a time of its own
    guessing (a tenth of its age): after an upgrade, a page could run one module of the new
    version beside another of the old."""
    if backend_name != "pure":
        pytest.skip("backend-independent: checked once, in the pure run")
    client = client_for(["."], token=None)
    files = list(_static_files())
    assert "viewer.js" in files and "viewer.css" in files
    for name in files:
        first = client.get("/static/" + name)
        assert first.status_code == 200 and first.headers.get("cache-control") == "no-cache", name
        again = client.get("/static/" + name, headers={"if-none-match": first.headers["etag"]})
        assert again.status_code == 304 and again.headers.get("cache-control") == "no-cache", name


# -- the script: ES modules, one concern each ---------------------------------------------

ENTRY = "viewer.js"
LONGEST = 150  # lines of one JavaScript function, at most


def _modules():
    """The page's modules, from its entry through every import (the reader and the shelf
    are imported by ``import("./x.js")``): {file: the files it imports}."""
    graph, todo = {}, [ENTRY]
    while todo:
        name = todo.pop()
        if name in graph:
            continue
        with open(os.path.join(STATIC, name), encoding="utf-8") as f:
            text = f.read()
        graph[name] = set()
        for spec in js_scan.imports(text, dynamic=True):
            assert spec.startswith("./") or spec.startswith("../"), (name, spec)  # served here, no build step
            target = posixpath.normpath(posixpath.join(posixpath.dirname(name), spec))
            graph[name].add(target)
            todo.append(target)
    return graph


def test_the_page_runs_its_script_as_modules_and_each_is_in_the_package_and_served_as_javascript(backend_name):
    """One ``<script type="module">`` (nothing inline: the CSP allows none), every module it
    imports preloaded at once, every .js file of the package one of them (none left over),
    each served as JavaScript (a module script of another type does not run) under the CSP.
    Run against an installed wheel, this is the check that the wheel holds every module."""
    if backend_name != "pure":
        pytest.skip("backend-independent: checked once, in the pure run")
    with open(os.path.join(STATIC, "index.html"), encoding="utf-8") as f:
        page = f.read()
    scripts = re.findall(r"<script\b[^>]*>", page)
    assert scripts == [f'<script src="/static/{ENTRY}" type="module">'], scripts
    assert page.count("</script>") == 1 and f'<script src="/static/{ENTRY}" type="module"></script>' in page
    modules = _modules()
    preloaded = re.findall(r'<link rel="modulepreload" href="/static/([^"]+)">', page)
    assert sorted(preloaded) == sorted(set(modules) - {ENTRY})
    assert sorted(modules) == sorted(n for n in _static_files() if n.endswith(".js"))
    assert len(modules) > 10
    client = client_for(["."], token=None)
    for name in modules:
        r = client.get("/static/" + name)
        assert r.status_code == 200, name
        assert r.headers["content-type"].split(";")[0] in ("text/javascript", "application/javascript"), name
        assert r.headers["content-security-policy"] == CSP and r.headers["x-content-type-options"] == "nosniff"


def test_no_function_of_the_page_is_over_150_lines(backend_name):
    if backend_name != "pure":
        pytest.skip("backend-independent: checked once, in the pure run")
    found, longer = 0, []
    for name in _static_files():
        if name.endswith(".js"):
            with open(os.path.join(STATIC, name), encoding="utf-8") as f:
                functions = js_scan.functions(f.read())
            found += len(functions)
            longer += [f"{name}:{fn.first} {fn.name}: {fn.lines} lines" for fn in functions if fn.lines > LONGEST]
    assert found > 50 and longer == []


def _long_function(head: str, tail: str, lines: int) -> str:
    """`head`, then body lines (with braces in strings, comments, a regex and a template
    that must not count), then `tail`: `lines` lines in all."""
    noise = ['  const s = "}}{" + \'{\' + `${"}"}{` + String(/[}{]\\//g);',
             "  // } a brace in a comment",
             "  /* { another,", "  } over lines */",
             "  if (s) { x(s); }"]
    body = [noise[k % len(noise)] for k in range(lines - 2)]
    return "\n".join([head] + body + [tail])


@pytest.mark.parametrize("head,tail,name", [
    ("function drawAll(a, b) {", "}", "drawAll"),
    ("async function follow() {", "}", "follow"),
    ("export function* windows() {", "}", "windows"),
    ("const go = async (e) => {", "};", "go"),
    ("window.addEventListener('click', (e) => {", "});", "arrow function"),
    ("const f = x => {", "};", "f"),
    ("const o = { render(pass) {", "} };", "render"),
    ("class List { get height() {", "} }", "height"),
    ("const h = function () {", "};", "function"),
    ("const sum = (a) => (", ");", "sum"),
])
def test_the_length_check_sees_every_kind_of_function(backend_name, head, tail, name):
    """The check counts declarations, async functions and generators, arrow functions with a
    block or an expression body, methods and accessors, function expressions; a function of
    151 lines is over the limit, one of 150 is not."""
    if backend_name != "pure":
        pytest.skip("backend-independent: checked once, in the pure run")
    if tail == ");":  # an expression body: lines of an expression, not statements
        over = head + "\n" + "\n".join(["  a +"] * (LONGEST - 2)) + "\n  b\n" + tail
    else:
        over = _long_function(head, tail, LONGEST + 1)
    assert [(f.name, f.lines) for f in js_scan.functions("let x;\n" + over) if f.lines > 1] == [(name, LONGEST + 1)]
    at_limit = "\n".join(over.split("\n")[:1] + over.split("\n")[2:])
    assert [f.lines for f in js_scan.functions(at_limit) if f.lines > 1] == [LONGEST]
    blocks = "if (a) {\n" + "\n".join(["  for (const x of y) { while (z) { z--; } }"] * LONGEST) + "\n}\n"
    assert js_scan.functions(blocks) == []  # blocks are not functions
