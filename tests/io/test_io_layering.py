"""Issue 10 §5: io parses every record layout itself; integrations build on io, never back."""

from __future__ import annotations

import ast
from pathlib import Path

import convoeval.io

IO_DIR = Path(convoeval.io.__file__).parent


def _imported(path: Path) -> set[str]:
    """Every module named by an import statement of a file (including lazy, in-function ones)."""
    names: set[str] = set()
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.Import):
            names.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom) and node.module:
            names.add(node.module)
            names.update(f"{node.module}.{alias.name}" for alias in node.names)
    return names


def test_io_never_imports_integrations_or_the_package_face() -> None:
    files = sorted(IO_DIR.glob("*.py"))
    assert len(files) > 5
    offenders = {
        f"{path.name}: {name}"
        for path in files
        for name in _imported(path)
        if name.startswith("convoeval.integrations") or name in ("convoeval", "convoeval.runner")
    }
    assert not offenders, offenders


def test_the_detector_sees_an_offending_import(tmp_path: Path) -> None:
    bad = tmp_path / "bad.py"
    bad.write_text("def f():\n    from convoeval.integrations import openai_chat\n")
    assert "convoeval.integrations" in _imported(bad)


def test_public_imports_of_the_moved_parsers_keep_working() -> None:
    from convoeval.integrations import ConversionError
    from convoeval.integrations._errors import ConversionError as Old
    from convoeval.integrations.langchain import is_langchain_dicts, to_langchain_dicts
    from convoeval.integrations.openai_chat import OpenAIMessagesError, from_openai_messages
    from convoeval.io.errors import ConversionError as New
    from convoeval.io.langchain_layout import to_langchain_dicts as io_to_dicts
    from convoeval.io.openai_layout import from_openai_messages as io_from

    assert ConversionError is Old is New
    assert issubclass(OpenAIMessagesError, New)
    assert from_openai_messages is io_from and to_langchain_dicts is io_to_dicts
    assert is_langchain_dicts([{"type": "human", "data": {"content": "hi"}}])
