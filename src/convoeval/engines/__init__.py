"""Engines that score a run's records away from the runner's own loop (the local engine): Ray.
Each is published as an entry point of the `convoeval.engines` group (pyproject.toml), where the
runner finds it (`runner/engines.py`); the runner never imports this package."""
