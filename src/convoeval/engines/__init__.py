"""Engines that score a run's records away from the runner's own loop (the local engine).
Each registers itself with the runner (`runner/engines.py`), which never imports them: they
stand above it and use its parts. The face imports this package, so every engine is known."""

from convoeval.engines import ray

__all__ = ["ray"]
