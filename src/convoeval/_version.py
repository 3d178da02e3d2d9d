"""The installed convoeval version, read once from the package metadata (the one place)."""

from __future__ import annotations

from importlib.metadata import PackageNotFoundError, version

try:
    VERSION = version("convoeval")
except PackageNotFoundError:  # pragma: no cover - a source tree that was never installed
    VERSION = "0+unknown"
