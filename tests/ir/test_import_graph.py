"""The modules of poolir.ir import each other at module top only, and never in a cycle.

An import inside a function hides a cycle from the reader and from this check, so none is allowed
(the package's own `__init__` re-exports are not edges: every submodule import runs it first anyway).
"""

from __future__ import annotations

import ast
from pathlib import Path

import poolir.ir

ROOT = Path(poolir.ir.__file__).parent


def _module_name(path: Path) -> str:
    parts = ["poolir", "ir", *path.relative_to(ROOT).with_suffix("").parts]
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def _imported_names(node: ast.Import | ast.ImportFrom) -> list[str]:
    if isinstance(node, ast.Import):
        return [alias.name for alias in node.names]
    base = node.module or ""
    return [base, *(f"{base}.{alias.name}" for alias in node.names)]  # `from pkg import submodule` too


def _graph() -> tuple[dict[str, set[str]], list[str]]:
    modules = {_module_name(path): path for path in ROOT.rglob("*.py")}
    edges: dict[str, set[str]] = {name: set() for name in modules}
    nested: list[str] = []
    for name, path in modules.items():
        tree = ast.parse(path.read_text(encoding="utf-8"))
        for node in ast.walk(tree):
            if not isinstance(node, (ast.Import, ast.ImportFrom)):
                continue
            if node not in tree.body:
                nested.append(f"{name}: {ast.unparse(node)}")
            edges[name] |= {target for target in _imported_names(node) if target in modules and target != name}
    return edges, nested


def _cycles(edges: dict[str, set[str]]) -> list[list[str]]:
    found: list[list[str]] = []
    state: dict[str, str] = {}
    path: list[str] = []

    def visit(name: str) -> None:
        state[name] = "open"
        path.append(name)
        for target in sorted(edges[name]):
            if state.get(target) == "open":
                found.append(path[path.index(target):] + [target])
            elif target not in state:
                visit(target)
        state[name] = "done"
        path.pop()

    for name in sorted(edges):
        if name not in state:
            visit(name)
    return found


def test_every_import_is_at_module_top() -> None:
    assert _graph()[1] == []


def test_no_module_imports_one_that_imports_it_back() -> None:
    edges, _ = _graph()
    edges.pop("poolir.ir")  # the package re-exports the API; no submodule imports it
    for targets in edges.values():
        targets.discard("poolir.ir")
    assert _cycles(edges) == []


def test_the_check_sees_a_cycle() -> None:
    assert _cycles({"a": {"b"}, "b": {"c"}, "c": {"a"}}) == [["a", "b", "c", "a"]]
