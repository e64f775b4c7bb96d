"""No circles among the project's modules: the Python package, the benches, the Rust
crate and the viewer's page (its JavaScript modules) each read downward (a module never
reaches, through any chain of imports, back to itself), and so do the package's folders.
Function-level imports count too: a lazy import hides a circle from the interpreter, not
from a reader. The library's services stand below every surface: no module outside
``cli/`` imports ``cli/``, and the viewer reads through the library's public names only."""

from __future__ import annotations

import ast
import os
import re
from typing import Dict, Iterable, List, Set, Tuple

import pytest
from tests.support.js_scan import imports as js_imports

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
PACKAGE_DIR = os.path.join(ROOT, "python", "llm_agent_session")
BENCHES_DIR = os.path.join(ROOT, "benches")
RUST_DIR = os.path.join(ROOT, "rust")

pytestmark = pytest.mark.skipif(not os.path.isdir(PACKAGE_DIR), reason="needs the source tree (python/)")


def _circles(graph: Dict[str, Set[str]]) -> List[List[str]]:
    """The strongly connected components of more than one module (Tarjan), sorted."""
    index: Dict[str, int] = {}
    low: Dict[str, int] = {}
    stack: List[str] = []
    on_stack: Set[str] = set()
    found: List[List[str]] = []

    def visit(v: str) -> None:
        # Iterative: the package has a few hundred modules, recursion would do too,
        # but a deep chain must not depend on the recursion limit.
        work = [(v, iter(sorted(graph.get(v, ()))))]
        index[v] = low[v] = len(index)
        stack.append(v)
        on_stack.add(v)
        while work:
            node, children = work[-1]
            for w in children:
                if w not in index:
                    index[w] = low[w] = len(index)
                    stack.append(w)
                    on_stack.add(w)
                    work.append((w, iter(sorted(graph.get(w, ())))))
                    break
                if w in on_stack:
                    low[node] = min(low[node], index[w])
            else:
                work.pop()
                if work:
                    low[work[-1][0]] = min(low[work[-1][0]], low[node])
                if low[node] == index[node]:
                    component = []
                    while True:
                        w = stack.pop()
                        on_stack.discard(w)
                        component.append(w)
                        if w == node:
                            break
                    if len(component) > 1:
                        found.append(sorted(component))

    for v in sorted(graph):
        if v not in index:
            visit(v)
    return sorted(found)


def _python_modules(top: str, prefix: str) -> Dict[str, str]:
    modules = {}
    for dirpath, dirnames, filenames in os.walk(top):
        dirnames[:] = [d for d in dirnames if not d.startswith((".", "__pycache__"))]
        for name in filenames:
            if name.endswith(".py"):
                rel = os.path.relpath(os.path.join(dirpath, name), top)[:-3].replace(os.sep, ".")
                rel = rel[: -len(".__init__")] if rel.endswith(".__init__") else ("" if rel == "__init__" else rel)
                modules[".".join(p for p in (prefix, rel) if p)] = os.path.join(dirpath, name)
    return modules


def _origin(module: str, is_package: bool, node: ast.ImportFrom) -> str:
    """The module a ``from ... import`` in `module` names, relative levels resolved."""
    if not node.level:
        return node.module or ""
    base = module.split(".")
    base = base[: len(base) - node.level + (1 if is_package else 0)]
    return ".".join(base + ([node.module] if node.module else []))


def _python_graph(modules: Dict[str, str]) -> Dict[str, Set[str]]:
    graph: Dict[str, Set[str]] = {m: set() for m in modules}
    for module, path in modules.items():
        is_package = path.endswith("__init__.py")
        tree = ast.parse(open(path, encoding="utf-8").read(), path)
        for node in ast.walk(tree):
            targets: Iterable[str] = ()
            if isinstance(node, ast.Import):
                targets = [alias.name for alias in node.names]
            elif isinstance(node, ast.ImportFrom):
                origin = _origin(module, is_package, node)
                # `from . import names` names the submodule, not the package it is in.
                targets = [f"{origin}.{a.name}" if f"{origin}.{a.name}" in modules else origin for a in node.names]
            for target in targets:
                # The deepest module named: `from .a import b` is a.b where b is a module.
                while target and target not in modules:
                    target = target.rpartition(".")[0]
                if target and target != module:
                    graph[module].add(target)
    return graph


def test_the_python_package_has_no_import_circle(backend_name):
    if backend_name != "pure":
        pytest.skip("backend-independent: checked once, in the pure run")
    modules = _python_modules(PACKAGE_DIR, "llm_agent_session")
    graph = _python_graph(modules)
    # A package's __init__ re-exports its children; a child importing a sibling through
    # the package name is an edge to that sibling, found above. The root __init__ is a
    # facade every module may be reached through, so edges into it are not counted.
    for edges in graph.values():
        edges.discard("llm_agent_session")
    assert _circles(graph) == []


def _folder_of(module: str) -> str:
    """A module's folder in the package (``llm_agent_session.view``); a module of the
    package's top folder is a room of its own."""
    parts = module.split(".")
    return ".".join(parts[:2])


def test_the_python_package_has_no_circle_of_folders(backend_name):
    if backend_name != "pure":
        pytest.skip("backend-independent: checked once, in the pure run")
    modules = _python_modules(PACKAGE_DIR, "llm_agent_session")
    folders: Dict[str, Set[str]] = {}
    for module, edges in _python_graph(modules).items():
        mine = _folder_of(module)
        folders.setdefault(mine, set()).update(_folder_of(e) for e in edges if e != "llm_agent_session"
                                               and _folder_of(e) != mine)
    assert _circles(folders) == []


def test_no_module_outside_cli_imports_cli(backend_name):
    """The command line is one surface over the library, like the viewer, the dataset and
    the traces: what they share (the verdict, the visible text) is the library's. Only
    ``python -m llm_agent_session`` (``__main__``) starts the command line."""
    if backend_name != "pure":
        pytest.skip("backend-independent: checked once, in the pure run")
    modules = _python_modules(PACKAGE_DIR, "llm_agent_session")
    cli = "llm_agent_session.cli"
    reaching = sorted(f"{module} -> {target}" for module, edges in _python_graph(modules).items()
                      if _folder_of(module) != cli and module != "llm_agent_session.__main__"
                      for target in edges if _folder_of(target) == cli)
    assert reaching == []


def _private_uses(module: str, path: str, folder: str) -> List[str]:
    """What `module` (of `folder`) takes from the package outside `folder` that is private:
    a module or a name that starts with ``_`` (``__dunder__`` aside), imported, or read
    as an attribute of a name imported from there (``History._of_read``)."""
    package = "llm_agent_session"
    is_package = path.endswith("__init__.py")
    tree = ast.parse(open(path, encoding="utf-8").read(), path)
    private = lambda name: name.startswith("_") and not name.startswith("__")  # noqa: E731
    outside: Set[str] = set()  # local names bound to something from outside `folder`
    found: List[str] = []
    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom):
            origin = _origin(module, is_package, node)
            if origin != package and not origin.startswith(package + "."):
                continue
            if origin == folder or origin.startswith(folder + "."):
                continue
            for alias in node.names:
                dotted = f"{origin}.{alias.name}"
                if any(private(part) for part in dotted.split(".")):
                    found.append(f"{module}: from {origin} import {alias.name}")
                outside.add(alias.asname or alias.name)
        elif isinstance(node, ast.Import):
            for alias in node.names:
                if alias.name.startswith(package + ".") and any(private(p) for p in alias.name.split(".")):
                    found.append(f"{module}: import {alias.name}")
    for node in ast.walk(tree):
        if (isinstance(node, ast.Attribute) and private(node.attr) and isinstance(node.value, ast.Name)
                and node.value.id in outside):
            found.append(f"{module}: {node.value.id}.{node.attr}")
    return sorted(set(found))


def test_the_viewer_reads_only_the_librarys_public_names(backend_name):
    """``view/`` is a surface over the library like any program: it reads through public
    calls (``Session.peek``, ``History.read``, ``verdict``, ``search``, ``visible``), not
    the private modules and names behind them (it called ``History._of_read``,
    ``_peek.read_history`` and ``_history_fold.passing_items``)."""
    if backend_name != "pure":
        pytest.skip("backend-independent: checked once, in the pure run")
    folder = "llm_agent_session.view"
    modules = _python_modules(PACKAGE_DIR, "llm_agent_session")
    found = [use for module, path in sorted(modules.items()) if module == folder or module.startswith(folder + ".")
             for use in _private_uses(module, path, folder)]
    assert found == []


def test_the_private_use_finder_finds_them(tmp_path):
    module = tmp_path / "reader.py"
    module.write_text("from .. import _backend, search\nfrom .._peek import peek\nfrom ..history import History\n"
                      "from . import _own\nimport llm_agent_session._files\n"
                      "History._of_read(None)\nHistory.read('x')\nsearch.__name__\n")
    assert _private_uses("llm_agent_session.view.reader", str(module), "llm_agent_session.view") == [
        "llm_agent_session.view.reader: History._of_read",
        "llm_agent_session.view.reader: from llm_agent_session import _backend",
        "llm_agent_session.view.reader: from llm_agent_session._peek import peek",
        "llm_agent_session.view.reader: import llm_agent_session._files",
    ]


def test_the_benches_have_no_import_circle(backend_name):
    if backend_name != "pure":
        pytest.skip("backend-independent: checked once, in the pure run")
    modules = {m: p for m, p in _python_modules(BENCHES_DIR, "").items() if "." not in m}
    assert _circles(_python_graph(modules)) == []


_RUST_PATH = re.compile(r"\b(crate|super|self)((?:::[A-Za-z_][A-Za-z0-9_]*)+)")
_USE_GROUP = re.compile(r"\buse\s+((?:crate|super|self)(?:::[A-Za-z_][A-Za-z0-9_]*)*)::\{([^;]*)\};", re.S)


def _rust_modules() -> Dict[str, str]:
    """Module path ("json::grammar") -> file, for every file of the crate."""
    modules = {}
    for dirpath, _, filenames in os.walk(RUST_DIR):
        for name in filenames:
            if name.endswith(".rs"):
                rel = os.path.relpath(os.path.join(dirpath, name), RUST_DIR)[:-3].split(os.sep)
                if rel[-1] in ("mod", "lib"):
                    rel = rel[:-1]
                modules["::".join(rel)] = os.path.join(dirpath, name)
    return modules


def _rust_graph(modules: Dict[str, str]) -> Dict[str, Set[str]]:
    graph: Dict[str, Set[str]] = {m: set() for m in modules}
    for module, path in modules.items():
        text = open(path, encoding="utf-8").read()
        text = re.sub(r"//[^\n]*", "", text)  # comments (doc links included) are not uses
        here = module.split("::") if module else []
        is_dir_module = os.path.basename(path) in ("mod.rs", "lib.rs")
        paths = [m.group(1) + m.group(2) for m in _RUST_PATH.finditer(text)]
        for group in _USE_GROUP.finditer(text):
            paths += [f"{group.group(1)}::{item.strip().split(' ')[0]}" for item in group.group(2).split(",") if item.strip()]
        for p in paths:
            parts = p.split("::")
            if parts[0] == "crate":
                resolved = parts[1:]
            else:
                base = here if is_dir_module else here[:-1]
                while parts and parts[0] in ("super", "self"):
                    if parts[0] == "super":
                        base = base[:-1]
                    parts = parts[1:]
                resolved = base + parts
            target = resolved
            while target and "::".join(target) not in modules:
                target = target[:-1]
            name = "::".join(target)
            if target and name != module:
                graph[module].add(name)
    return graph


def test_the_rust_crate_has_no_module_circle(backend_name):
    if backend_name != "pure":
        pytest.skip("backend-independent: checked once, in the pure run")
    if not os.path.isdir(RUST_DIR):
        pytest.skip("needs the Rust sources (rust/)")
    graph = _rust_graph(_rust_modules())
    # A parent module declaring its children (`mod x;`) and re-exporting them is how
    # Rust lays files out; a child reaching back into its parent's own items is a circle.
    assert _circles(graph) == []


def test_the_viewers_page_has_no_module_circle(backend_name):
    """The page's modules (view/static/) import downward too: the virtual list never reaches
    back into what is built on it (search, jumps, follow); a window that arrives redraws the
    list through the callback the list hands it."""
    if backend_name != "pure":
        pytest.skip("backend-independent: checked once, in the pure run")
    static = os.path.join(PACKAGE_DIR, "view", "static")
    graph: Dict[str, Set[str]] = {}
    for dirpath, _, filenames in os.walk(static):
        for name in filenames:
            if name.endswith(".js"):
                module = os.path.relpath(os.path.join(dirpath, name), static).replace(os.sep, "/")
                with open(os.path.join(dirpath, name), encoding="utf-8") as f:
                    graph[module] = {os.path.normpath(os.path.join(os.path.dirname(module), spec)).replace(os.sep, "/")
                                     for spec in js_imports(f.read())}
    assert len(graph) > 10 and all(target in graph for targets in graph.values() for target in targets)
    assert _circles(graph) == []


def test_the_circle_finder_finds_a_circle():
    assert _circles({"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}}) == [["a", "b", "c"]]
    assert _circles({"a": {"b"}, "b": set()}) == []


TESTS_DIR = os.path.join(ROOT, "tests")
# A statement or a child's snippet that puts a folder on the import path by hand.
_PATH_EDIT = re.compile(r"sys\.path\s*(\.\s*(insert|append|extend)\b|\[[^\]]*\]\s*=|\s*\+=)")


def _python_lines(top: str) -> Iterable[Tuple[str, int, str]]:
    """Every line of every Python file below `top`: its place and its text."""
    for folder, dirs, files in os.walk(top):
        dirs[:] = [d for d in dirs if d not in ("artifacts", "__pycache__", "target")]
        for name in files:
            if name.endswith(".py"):
                path = os.path.join(folder, name)
                with open(path, encoding="utf-8") as f:
                    for n, text in enumerate(f, 1):
                        yield f"{os.path.relpath(path, ROOT)}:{n}", n, text


def _path_edits(top: str) -> List[str]:
    return [f"{place}: {text.strip()}" for place, _, text in _python_lines(top) if _PATH_EDIT.search(text)]


def _bare_imports(top: str) -> List[str]:
    """Imports of a module of the test tree by its bare name (``import helpers``, ``from
    test_x import y``), which only a path edit would let Python find."""
    names = {os.path.splitext(f)[0] for _, _, files in os.walk(top) for f in files
             if f.endswith(".py") and f not in ("__init__.py", "conftest.py")}
    bare = re.compile(r"^\s*(?:from|import)\s+(%s)\b(?!\.)" % "|".join(map(re.escape, sorted(names))))
    return [f"{place}: {text.strip()}" for place, _, text in _python_lines(top) if bare.match(text)]


def test_the_tests_are_a_package_without_path_edits(backend_name):
    """tests/ is a package: everything is imported as ``tests.…`` (tests.support for what
    the surfaces share), so no test, helper or child snippet edits ``sys.path``."""
    if backend_name != "pure":
        pytest.skip("backend-independent: checked once, in the pure run")
    for folder, dirs, files in os.walk(TESTS_DIR):
        dirs[:] = [d for d in dirs if d not in ("artifacts", "__pycache__", "target", "fixtures", "corpus")]
        if any(f.endswith(".py") for f in files):
            assert "__init__.py" in files, f"{os.path.relpath(folder, ROOT)} holds Python but is not a package"
    assert _path_edits(TESTS_DIR) == []
    assert _bare_imports(TESTS_DIR) == []


def test_the_path_edit_finder_finds_them(tmp_path):
    for edit in (".insert(0, here)", "[:0] = [a]", ".append(x)", " += [x]"):
        text = "sys.path" + edit  # spelled in two, so that this file is not a finding itself
        (tmp_path / "t.py").write_text(f"import sys\n{text}\n")
        assert len(_path_edits(str(tmp_path))) == 1, text
    (tmp_path / "t.py").write_text("import sys\nprint(sys.path)\n")
    assert _path_edits(str(tmp_path)) == []
    (tmp_path / "test_a.py").write_text("from test_b import x\n")
    (tmp_path / "test_b.py").write_text("from tests.test_a import y\nimport test_bb\n")
    assert [f.rsplit(": ", 1)[1] for f in _bare_imports(str(tmp_path))] == ["from test_b import x"]
