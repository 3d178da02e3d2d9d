"""The import arrows of docs/ARCHITECTURE.md §2, checked on the source: a new arrow up, or a
module that imports in a circle (at module level or inside a function), fails here."""

from __future__ import annotations

import ast
import re
from pathlib import Path

import pytest

import convoeval

SRC = Path(convoeval.__file__).parent

#: Part -> the parts it may import (besides itself), lowest first. Mirrors ARCHITECTURE.md §2.
ALLOWED: dict[str, set[str]] = {
    "errors": set(),
    "_sync": set(),
    "_version": set(),
    "_text": set(),
    "schema": {"errors"},
    "io": {"schema", "errors", "_text"},
    "integrations": {"io", "schema", "errors"},
    "judges.protocol": {"errors"},
    "judges.ensembles": {"judges.protocol", "errors"},
    "judges.core": {"judges.ensembles", "judges.protocol", "errors"},
    "judges.openai": {"judges.core", "judges.protocol", "errors", "_sync"},
    "judges.offline": {"judges.protocol", "errors"},
    "judges.gguf": {"judges.openai", "judges.core", "judges.protocol", "errors"},
    "judges": {
        "judges.gguf",
        "judges.openai",
        "judges.offline",
        "judges.core",
        "judges.ensembles",
        "judges.protocol",
        "errors",
    },
    "metrics": {"judges.protocol", "schema", "io", "errors", "_sync", "_text"},
    "rows": {"judges.protocol", "errors"},
    "stats": {"rows", "io", "errors", "_text"},
    "runner": {
        "stats",
        "rows",
        "metrics",
        "judges",
        "judges.openai",
        "judges.offline",
        "judges.core",
        "judges.ensembles",
        "judges.protocol",
        "io",
        "schema",
        "errors",
        "_sync",
        "_version",
        "_text",
    },
    "engines": {
        "runner",
        "rows",
        "metrics",
        "judges",
        "judges.openai",
        "judges.offline",
        "judges.core",
        "judges.protocol",
        "errors",
        "_version",
    },
    "report": {"runner", "stats", "rows", "metrics", "errors", "_text"},
    "simulate": {
        "runner",
        "rows",
        "judges",
        "judges.openai",
        "judges.core",
        "judges.ensembles",
        "judges.protocol",
        "io",
        "schema",
        "errors",
        "_sync",
        "_version",
        "_text",
    },
}
_JUDGE_ROOMS = ("protocol", "ensembles", "core", "openai", "offline", "gguf")


def _part(module: str) -> str:
    """The part a module belongs to: its first folder, a judges sub-package, or the face (the
    package itself, `__main__`, `cli/`, `testing`, `pytest_plugin`), which may import anything."""
    bits = module.split(".")[1:]
    if not bits or bits[0] in ("cli", "testing", "pytest_plugin", "__main__"):
        return "face"
    if bits[0] == "judges" and len(bits) > 1 and bits[1] in _JUDGE_ROOMS:
        return f"judges.{bits[1]}"
    return bits[0]


def _modules() -> dict[str, Path]:
    found = {}
    for path in sorted(SRC.rglob("*.py")):
        name = "convoeval." + path.relative_to(SRC).as_posix().removesuffix(".py")
        found[name.replace("/", ".").removesuffix(".__init__")] = path
    return found


def _imports(module: str, path: Path, modules: dict[str, Path]) -> set[str]:
    """Every module of ours that `module` imports anywhere (functions included), except under
    `if TYPE_CHECKING:`, which never runs."""
    package = module if path.name == "__init__.py" else module.rpartition(".")[0]
    names: set[str] = set()

    def visit(node: ast.AST) -> None:
        for child in ast.iter_child_nodes(node):
            if isinstance(child, ast.If) and "TYPE_CHECKING" in ast.unparse(child.test):
                continue
            if isinstance(child, ast.Import):
                names.update(a.name for a in child.names)
            elif isinstance(child, ast.ImportFrom):
                base = child.module or ""
                if child.level:
                    parts = package.split(".")
                    parts = parts[: len(parts) - child.level + 1]
                    base = ".".join([*parts, *([base] if base else [])])
                for alias in child.names:
                    full = f"{base}.{alias.name}"
                    names.add(full if full in modules else base)
            visit(child)

    visit(ast.parse(path.read_text(encoding="utf-8")))
    resolved = set()
    for name in names:
        while name not in modules and "." in name:
            name = name.rpartition(".")[0]
        if name in modules and name != module and name.startswith("convoeval"):
            resolved.add(name)
    return resolved


def _graph() -> dict[str, set[str]]:
    modules = _modules()
    return {name: _imports(name, path, modules) for name, path in modules.items()}


def _circles(graph: dict[str, set[str]]) -> list[list[str]]:
    """Strongly connected groups of more than one module (Tarjan), each sorted."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    found: list[list[str]] = []

    def connect(node: str) -> None:
        index[node] = low[node] = len(index)
        stack.append(node)
        on_stack.add(node)
        for target in graph[node]:
            if target not in index:
                connect(target)
                low[node] = min(low[node], low[target])
            elif target in on_stack:
                low[node] = min(low[node], index[target])
        if low[node] == index[node]:
            group = []
            while True:
                top = stack.pop()
                on_stack.discard(top)
                group.append(top)
                if top == node:
                    break
            if len(group) > 1:
                found.append(sorted(group))

    for node in graph:
        if node not in index:
            connect(node)
    return found


def test_every_import_follows_the_documented_arrows() -> None:
    found = []
    for module, targets in _graph().items():
        part = _part(module)
        if part == "face":
            continue
        assert part in ALLOWED, f"{module}: part {part!r} is not in ARCHITECTURE.md §2"
        for target in sorted(targets):
            other = _part(target)
            if other != part and other not in ALLOWED[part]:
                found.append(f"{module} imports {target} ({part} -> {other})")
    assert found == []


def test_no_module_imports_in_a_circle() -> None:
    assert _circles(_graph()) == []


def test_no_benchmark_script_imports_another_in_a_circle() -> None:
    """benchmarks/ imports its helpers by file name (`from _stats import ...`)."""
    folder = SRC.parents[1] / "benchmarks"
    names = {path.stem: path for path in folder.glob("*.py")}
    graph: dict[str, set[str]] = {}
    for name, path in names.items():
        found: set[str] = set()
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.Import):
                found.update(a.name for a in node.names if a.name in names)
            elif isinstance(node, ast.ImportFrom) and not node.level and node.module in names:
                found.add(node.module)
        graph[name] = found - {name}
    assert len(graph) > 10 and _circles(graph) == []


def test_the_parts_stand_in_layers() -> None:
    """The allowed arrows themselves have no circle: every part is below the parts that use it."""
    graph = {part: set(targets) for part, targets in ALLOWED.items()}
    assert _circles(graph) == []


@pytest.mark.parametrize(
    "graph",
    [{"a": {"b"}, "b": {"c"}, "c": {"a"}}, {"a": {"b"}, "b": {"a"}, "c": set()}],
)
def test_the_circle_finder_finds_circles(graph: dict[str, set[str]]) -> None:
    assert _circles(graph) and all(len(group) > 1 for group in _circles(graph))


def _documented_arrows() -> dict[str, set[str]]:
    """The arrows of ARCHITECTURE.md §2's block: `room -> a, b  (comment)`, continued on lines
    that start with spaces."""
    text = (SRC.parents[1] / "docs" / "ARCHITECTURE.md").read_text(encoding="utf-8")
    block = text.split("## 2.", 1)[1].split("```", 2)[1]
    arrows: dict[str, set[str]] = {}
    room = ""
    for line in block.splitlines():
        if "->" in line:
            room, _, line = line.partition("->")
            room = room.strip()
        elif not line.startswith(" ") or not room:
            continue
        listed = re.split(r"\s{2,}\(", line)[0]
        arrows.setdefault(room, set()).update(n.strip() for n in listed.split(",") if n.strip())
    return arrows


def test_the_documented_arrows_are_the_checked_ones() -> None:
    documented = _documented_arrows()
    assert documented.pop("face") == {"everything"}
    checked = {
        part: {t for t in targets if not t.startswith("_")}
        for part, targets in ALLOWED.items()
        if not part.startswith("_") and targets
    }
    assert documented == checked
