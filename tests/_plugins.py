"""Installed pytest plugins that no test of this suite uses, and that cost import time in every
pytest process: pyproject.toml's addopts turn them off, and so do the pytest runs tests start."""

from __future__ import annotations

UNUSED = ("langsmith_plugin", "anyio", "benchmark", "hypothesispytest")
#: The command-line arguments that leave them unloaded.
NO_UNUSED = tuple(arg for name in UNUSED for arg in ("-p", f"no:{name}"))
