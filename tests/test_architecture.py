"""The import arrows of docs/ARCHITECTURE.md §2, checked on the source: a new arrow fails here."""

from __future__ import annotations

import ast
from pathlib import Path

import convoeval

SRC = Path(convoeval.__file__).parent

#: Part -> the parts it may import (besides itself). Mirrors ARCHITECTURE.md §2.
ALLOWED: dict[str, set[str]] = {
    "errors": set(),
    "_sync": set(),
    "_version": set(),
    "_text": set(),
    "schema": {"errors"},
    "io": {"schema", "errors"},
    "integrations": {"io", "schema", "errors"},
    "judges": {"errors"},
    "judges.offline": {"judges", "errors"},
    "metrics": {"judges", "schema", "io", "errors", "_sync", "_text"},
    "runner": {"metrics", "judges", "io", "schema", "errors", "_sync", "_version", "_text"},
    "report": {"runner", "metrics", "errors", "_text"},
}
#: The lazy, in-function arrows ARCHITECTURE.md §2 allows: (importing file, imported module).
LAZY_EXCEPTIONS = {
    ("runner/_plan.py", "convoeval.judges.offline"),
    ("engines/ray/worker.py", "convoeval.judges.offline"),
    ("runner/results.py", "convoeval.report.notebook"),
}


def _part(module: str) -> str:
    bits = module.split(".")
    if len(bits) == 1:
        return "face"
    if bits[1] == "judges" and len(bits) > 2 and bits[2] == "offline":
        return "judges.offline"
    return bits[1]


def _imports(path: Path) -> set[str]:
    names: set[str] = set()
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.Import):
            names.update(a.name for a in node.names if a.name.startswith("convoeval"))
        elif (
            isinstance(node, ast.ImportFrom) and node.module and node.module.startswith("convoeval")
        ):
            names.add(node.module)
    return names


def _violations() -> list[str]:
    found = []
    for path in sorted(SRC.rglob("*.py")):
        rel = path.relative_to(SRC).as_posix()
        module = "convoeval." + rel.removesuffix(".py").replace("/", ".")
        part = _part(module.removesuffix(".__init__"))
        if part not in ALLOWED:
            continue  # the face (cli, testing, pytest plugin, __init__) may import anything
        for name in _imports(path):
            target = _part(name)
            if target == part or target in ALLOWED[part]:
                continue
            if any(rel == f and name.startswith(m) for f, m in LAZY_EXCEPTIONS):
                continue
            found.append(f"{rel} imports {name} ({part} -> {target})")
    return found


def test_every_import_follows_the_documented_arrows() -> None:
    assert _violations() == []


def test_every_part_is_documented() -> None:
    text = (SRC.parents[1] / "docs" / "ARCHITECTURE.md").read_text(encoding="utf-8")
    for part in ALLOWED:
        if not part.startswith("_"):
            assert part in text, part
