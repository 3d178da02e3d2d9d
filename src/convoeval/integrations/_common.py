"""Lazy imports of the optional frameworks (the shared conversion helpers live in `io._convert`)."""

from __future__ import annotations

import importlib
from types import ModuleType


def require(module: str, package: str, extra: str) -> ModuleType:
    """Import a framework module, or raise an ImportError that names the extra to install."""
    try:
        return importlib.import_module(module)
    except ImportError as exc:
        raise ImportError(
            f"this converter needs {package}, which is not installed: "
            f"pip install 'convoeval[{extra}]'"
        ) from exc
