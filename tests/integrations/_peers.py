"""The real Ragas and DeepEval packages for the interop tests: a test skips (with the reason) when
one is absent, unless CONVOEVAL_REQUIRE_PEERS=1 (CI's interop venv), where it fails instead."""

from __future__ import annotations

import importlib
import os
from types import ModuleType

import pytest

REQUIRE_PEERS = "CONVOEVAL_REQUIRE_PEERS"


def peer(module: str, reason: str) -> ModuleType:
    """The imported module; a skip when it is missing, a failure when peers are required."""
    if os.environ.get(REQUIRE_PEERS) != "1":
        return pytest.importorskip(module, reason=reason)
    try:
        return importlib.import_module(module)
    except ImportError as exc:
        pytest.fail(f"{REQUIRE_PEERS}=1 but {module} cannot be imported: {exc}", pytrace=False)
