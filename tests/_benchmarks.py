"""Import a script of `benchmarks/` the way its sibling scripts do (with `benchmarks/` first on
`sys.path`), leaving `sys.path` as it was: a script puts `benchmarks/` and `src/` first when it is
imported, and the tests' imports must not find its siblings afterwards by accident."""

from __future__ import annotations

import importlib
import sys
from pathlib import Path
from types import ModuleType

BENCHMARKS = Path(__file__).resolve().parents[1] / "benchmarks"


def benchmark_module(name: str) -> ModuleType:
    """The module `benchmarks/<name>.py`."""
    before = list(sys.path)
    sys.path.insert(0, str(BENCHMARKS))
    try:
        return importlib.import_module(name)
    finally:
        sys.path[:] = before
