"""The shape of the code base: one import name, imports that point one way and never form a cycle, files of
one concern, and a build that installs every package. Checked from the source text, so a violation fails
here with the modules named, before it becomes a "partially initialized module" at a user's import."""

from __future__ import annotations

import ast
import subprocess
import sys
import tomllib
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
# Folder -> package name, as pyproject.toml maps them.
PACKAGE_DIRS = {"ir": "poolir.ir", "runtime": "poolir.runtime", "converter": "poolir.converter"}
LAYER = {"poolir.ir": 0, "poolir.runtime": 1, "poolir.converter": 2}
MAX_LINES = 450  # "about 400": a file past this holds more than one concern


def _product_files() -> dict[str, Path]:
    """Module name -> file for every product module (the poolir package itself included)."""
    modules = {}
    for folder, package in PACKAGE_DIRS.items():
        for path in sorted((ROOT / folder).rglob("*.py")):
            relative = path.relative_to(ROOT / folder).with_suffix("")
            parts = list(relative.parts)
            if parts[0] == "_root":  # converter/_root is the top-level `poolir` package
                name = ".".join(["poolir", *parts[1:]])
            else:
                name = ".".join([package, *parts])
            modules[name.removesuffix(".__init__")] = path
    return modules


MODULES = _product_files()


def _imports(name: str, path: Path) -> set[str]:
    """Every poolir module `name` imports, wherever the import statement stands (a function-level import is an
    import cycle waiting for the first caller). `from package import name` is the submodule when one exists."""
    is_package = path.name == "__init__.py"
    found = set()
    for node in ast.walk(ast.parse(path.read_text(), str(path))):
        if isinstance(node, ast.Import):
            targets = [alias.name for alias in node.names]
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                anchor = name.split(".") if is_package else name.split(".")[:-1]
                anchor = anchor[:len(anchor) - node.level + 1]
                base = ".".join(anchor + ([base] if base else []))
            targets = [f"{base}.{alias.name}" if f"{base}.{alias.name}" in MODULES else base for alias in node.names]
        else:
            continue
        found.update(t for t in targets if t in MODULES and t != name)
    return found


GRAPH = {name: _imports(name, path) for name, path in MODULES.items()}


def _layer(module: str) -> int | None:
    for package, layer in LAYER.items():
        if module == package or module.startswith(package + "."):
            return layer
    return None


def test_imports_point_one_way():
    """ir <- runtime <- converter: ir knows nothing of the runtime, the runtime never calls the converter."""
    backwards = sorted(f"{module} imports {target}" for module, targets in GRAPH.items() for target in targets
                       if _layer(module) is not None and _layer(target) is not None and _layer(target) > _layer(module))
    assert not backwards, backwards


def test_no_import_cycles():
    """Tarjan's strongly connected components over the module graph: every component is one module."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    cycles = []

    def visit(module: str) -> None:  # recursion depth is bounded by the number of modules (about 100)
        index[module] = low[module] = len(index)
        stack.append(module)
        on_stack.add(module)
        for target in GRAPH[module]:
            if target not in index:
                visit(target)
                low[module] = min(low[module], low[target])
            elif target in on_stack:
                low[module] = min(low[module], index[target])
        if low[module] == index[module]:
            component = []
            while True:
                member = stack.pop()
                on_stack.discard(member)
                component.append(member)
                if member == module:
                    break
            if len(component) > 1:
                cycles.append(sorted(component))

    for module in GRAPH:
        if module not in index:
            visit(module)
    assert not cycles, cycles


def test_the_cycle_finder_finds_a_cycle():
    """The check above must be able to fail: a two-module cycle through a function-level import is seen."""
    saved = dict(GRAPH)
    try:
        GRAPH["poolir.ir.errors"] = {"poolir.ir.model"}
        GRAPH["poolir.ir.model"] = GRAPH.get("poolir.ir.model", set()) | {"poolir.ir.errors"}
        with pytest.raises(AssertionError, match="poolir.ir.errors"):
            test_no_import_cycles()
    finally:
        GRAPH.clear()
        GRAPH.update(saved)


def test_no_product_file_holds_more_than_one_concern():
    long = {str(path.relative_to(ROOT)): count for path in MODULES.values()
            if (count := len(path.read_text().splitlines())) > MAX_LINES}
    assert not long, f"files over {MAX_LINES} lines: {long}"


def test_pyproject_installs_every_package():
    """The build lists packages by name (the folders are mapped under poolir): a package missing from the list
    would work in an editable checkout and be absent from the wheel."""
    config = tomllib.loads((ROOT / "pyproject.toml").read_text())["tool"]["setuptools"]
    listed = set(config["packages"])
    packages = {name for name, path in MODULES.items() if path.name == "__init__.py"}
    assert listed == packages, {"not listed": sorted(packages - listed), "listed, no folder": sorted(listed - packages)}


@pytest.mark.parametrize("bare", ["ir", "runtime", "converter"])
def test_only_poolir_is_on_the_import_path(tmp_path, bare):
    """PyPI has packages called ir, runtime and converter: poolir must not shadow them (or be shadowed)."""
    done = subprocess.run([sys.executable, "-c", f"import importlib.util, sys; "
                           f"sys.exit(importlib.util.find_spec({bare!r}) is not None)"],
                          cwd=tmp_path, capture_output=True, text=True)
    assert done.returncode == 0, f"'import {bare}' finds a module from a neutral folder"


def test_python_dash_m_poolir(tmp_path):
    done = subprocess.run([sys.executable, "-m", "poolir", "--version"], cwd=tmp_path, capture_output=True, text=True)
    assert done.returncode == 0 and done.stdout.startswith("poolir "), done.stderr
