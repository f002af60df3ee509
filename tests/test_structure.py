"""The package's structure: no import cycles, a complete _C.pyi, a layout in
docs/design.md that names every file. Each reads the sources (ast), so none
of them can go stale unnoticed."""
from __future__ import annotations

import ast
from pathlib import Path
from typing import Dict, List, Optional, Set

ROOT = Path(__file__).resolve().parent.parent
PACKAGE = ROOT / "src" / "api_tracer"


# -- import cycles ---------------------------------------------------------------


def module_name(path: Path) -> str:
    """api_tracer.x.y for src/api_tracer/x/y.py (the package for __init__.py)."""
    parts = list(path.relative_to(PACKAGE.parent).with_suffix("").parts)
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def imported_modules(path: Path, modules: Set[str]) -> Set[str]:
    """The package's modules that `path` imports anywhere: at the top, inside
    functions, under `if TYPE_CHECKING:` (a cycle through annotations is a
    cycle all the same)."""
    this = module_name(path)
    package = this if path.name == "__init__.py" else this.rpartition(".")[0]
    found = set()
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.Import):
            names = [alias.name for alias in node.names]
        elif isinstance(node, ast.ImportFrom):
            base = package
            for _ in range(node.level - 1):
                base = base.rpartition(".")[0]
            base = ".".join(filter(None, [base if node.level else "", node.module or ""]))
            submodules = [f"{base}.{alias.name}" for alias in node.names]
            # `from . import _C` names modules only; `from .x import y`, x and maybe x.y
            names = submodules if node.module is None else [base] + submodules
        else:
            continue
        found.update(name for name in names if name in modules)
    return found - {this}


def import_graph() -> Dict[str, Set[str]]:
    paths = sorted(PACKAGE.rglob("*.py"))
    modules = {module_name(p) for p in paths}
    return {module_name(p): imported_modules(p, modules) for p in paths}


def find_cycle(graph: Dict[str, Set[str]]) -> Optional[List[str]]:
    """One cycle as [a, b, ..., a], or None (depth-first search)."""
    done: Set[str] = set()

    def visit(node: str, path: List[str]) -> Optional[List[str]]:
        if node in path:
            return path[path.index(node):] + [node]
        if node in done:
            return None
        for nxt in sorted(graph[node]):
            cycle = visit(nxt, path + [node])
            if cycle:
                return cycle
        done.add(node)
        return None

    for start in sorted(graph):
        cycle = visit(start, [])
        if cycle:
            return cycle
    return None


def test_import_graph_sees_the_imports():
    graph = import_graph()
    assert "api_tracer.tracer" in graph["api_tracer"]  # from .tracer import APITracer
    assert "api_tracer.dialect" in graph["api_tracer.api_list.generate"]  # from api_tracer.dialect import ...
    assert "api_tracer.follow" in graph["api_tracer._child.sitecustomize"]  # inside an `if`
    assert find_cycle({"a": {"b"}, "b": {"c"}, "c": {"a"}}) == ["a", "b", "c", "a"]
    assert find_cycle({"a": {"b"}, "b": set()}) is None


def test_no_import_cycle():
    cycle = find_cycle(import_graph())
    assert cycle is None, "import cycle: " + " -> ".join(cycle)
