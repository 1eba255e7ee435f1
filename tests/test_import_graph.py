"""The import graph of armnn_import/ and frontends/ (installed as armnn_import_frontends):
no cycles, and no ``from x import _private`` of another module's private name.

Every import counts, at the top of a module or inside a function: an import put off into a
function still ties the two modules together. A package's __init__ importing its own
submodules (to fill a registry) and a submodule reading its package's names (the registry)
are one thing: the edge from a module up to a package that holds it is left out.
"""
from __future__ import annotations

import ast
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
PACKAGES = {"armnn_import": ROOT / "armnn_import", "armnn_import_frontends": ROOT / "frontends"}
#: generated FlatBuffers bindings import each other by design
GENERATED = "_generated"


def _modules(packages=None) -> dict[str, tuple[Path, bool]]:
    """dotted name -> (file, is_package)"""
    found = {}
    for top, folder in (packages or PACKAGES).items():
        for f in sorted(folder.rglob("*.py")):
            parts = f.relative_to(folder).with_suffix("").parts
            is_pkg = parts[-1] == "__init__"
            name = ".".join((top, *(parts[:-1] if is_pkg else parts)))
            found[name] = (f, is_pkg)
    return found


def _resolve(module: str, is_pkg: bool, node: ast.ImportFrom) -> str:
    if not node.level:
        return node.module or ""
    base = module.split(".")
    base = base if is_pkg else base[:-1]
    base = base[:len(base) - node.level + 1]
    return ".".join(base + ([node.module] if node.module else []))


def _imports(modules):
    """module -> {imported module: line}, and the list of private names imported from others."""
    edges, private = {}, []
    for name, (path, is_pkg) in modules.items():
        out = edges.setdefault(name, {})
        for node in ast.walk(ast.parse(path.read_text(), str(path))):
            if isinstance(node, ast.Import):
                for a in node.names:
                    if a.name in modules:
                        out.setdefault(a.name, node.lineno)
            elif isinstance(node, ast.ImportFrom):
                target = _resolve(name, is_pkg, node)
                for a in node.names:
                    sub = f"{target}.{a.name}"
                    if sub in modules:  # from pkg import submodule
                        out.setdefault(sub, node.lineno)
                    elif target in modules:
                        out.setdefault(target, node.lineno)
                        if a.name.startswith("_") and not a.name.startswith("__") and target != name:
                            private.append(f"{path.name}:{node.lineno}: {a.name} from {target}")
    return edges, private


def _cycles(modules, edges) -> list[list[str]]:
    def counts(a, b):
        if GENERATED in a or GENERATED in b:
            return False
        # a submodule reading its own package's names (ops/x.py: from . import REGISTRY)
        return not (modules[b][1] and a.startswith(b + "."))

    graph = {a: [b for b in bs if b != a and counts(a, b)] for a, bs in edges.items()}
    # Tarjan's strongly connected components
    index, low, stack, on, comps = {}, {}, [], set(), []

    def visit(v):
        index[v] = low[v] = len(index)
        stack.append(v)
        on.add(v)
        for w in graph.get(v, ()):
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            comp = []
            while True:
                w = stack.pop()
                on.discard(w)
                comp.append(w)
                if w == v:
                    break
            if len(comp) > 1:
                comps.append(sorted(comp))

    for v in sorted(graph):
        if v not in index:
            visit(v)
    return comps


def test_no_import_cycles():
    modules = _modules()
    edges, _ = _imports(modules)
    cycles = _cycles(modules, edges)
    assert not cycles, "import cycles:\n" + "\n".join(" <-> ".join(c) for c in cycles)


def test_no_private_names_imported_from_other_modules():
    _, private = _imports(_modules())
    assert not private, "private names imported across modules:\n" + "\n".join(private)


def test_the_check_sees_a_cycle_and_a_private_import(tmp_path):
    pkg = tmp_path / "pkg"
    pkg.mkdir()
    (pkg / "__init__.py").write_text("from . import a\n")
    (pkg / "a.py").write_text("def f():\n    from .b import _g\n")
    (pkg / "b.py").write_text("from . import a\n_g = 1\n")
    modules = _modules({"pkg": pkg})
    edges, private = _imports(modules)
    assert _cycles(modules, edges) == [["pkg.a", "pkg.b"]]
    assert private == ["a.py:2: _g from pkg.b"]
