"""The model package's modules form layers: no module imports one that imports it back.

Every import counts — at module level, inside functions (lazy imports) and under
``TYPE_CHECKING`` — because a lazy import is still a dependency.
"""

from __future__ import annotations

import ast
from pathlib import Path

import kubewerk.model

PACKAGE = "kubewerk.model"
ROOT = Path(kubewerk.model.__file__).parent


def _module_name(path: Path) -> str:
    parts = path.relative_to(ROOT).with_suffix("").parts
    return ".".join([PACKAGE, *parts]).removesuffix(".__init__")


def _imports(path: Path, modules: set[str]) -> set[str]:
    """The package's modules that ``path`` imports, wherever the import statement is."""
    here = _module_name(path)
    package = here if path.name == "__init__.py" else here.rpartition(".")[0]
    found: set[str] = set()
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.Import):
            found.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                anchor = package.rsplit(".", node.level - 1)[0]
                base = f"{anchor}.{base}" if base else anchor
            for alias in node.names:
                # ``from pkg import name`` imports the submodule when there is one
                found.add(f"{base}.{alias.name}" if f"{base}.{alias.name}" in modules else base)
    return {name for name in found if name in modules and name != here}


def _graph() -> dict[str, set[str]]:
    paths = sorted(ROOT.rglob("*.py"))
    modules = {_module_name(p) for p in paths}
    return {_module_name(p): _imports(p, modules) for p in paths}


def _cycles(graph: dict[str, set[str]]) -> list[list[str]]:
    """One cycle (as a path that returns to its start) per strongly connected component."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    components: list[list[str]] = []

    def visit(node: str) -> None:
        index[node] = low[node] = len(index)
        stack.append(node)
        on_stack.add(node)
        for target in sorted(graph[node]):
            if target not in index:
                visit(target)
                low[node] = min(low[node], low[target])
            elif target in on_stack:
                low[node] = min(low[node], index[target])
        if low[node] == index[node]:
            component = []
            while True:
                member = stack.pop()
                on_stack.discard(member)
                component.append(member)
                if member == node:
                    break
            if len(component) > 1:
                components.append(sorted(component))

    for node in sorted(graph):
        if node not in index:
            visit(node)
    return components


def test_the_import_graph_is_read() -> None:
    graph = _graph()
    assert "kubewerk.model.base" in graph["kubewerk.model.resource"]
    assert "kubewerk.model.resource" in graph["kubewerk.model.crdgen"]
    assert "kubewerk.model.crdgen" in graph["kubewerk.model"]


def test_cycle_finder_finds_a_lazy_circle() -> None:
    graph = {"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}}
    assert _cycles(graph) == [["a", "b", "c"]]


def test_no_module_imports_one_that_imports_it_back() -> None:
    assert _cycles(_graph()) == []
