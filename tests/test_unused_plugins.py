"""The plugins pyproject.toml turns off (tests/_plugins.py) stay off everywhere, and no test
needs one of them: a test that starts using hypothesis, anyio's marker, the benchmark fixture or
langsmith's must take its plugin off the list."""

from __future__ import annotations

import re
import tomllib
from pathlib import Path

from _plugins import NO_UNUSED

ROOT = Path(__file__).resolve().parents[1]
#: What a test file would contain if it used one of the plugins.
USES = re.compile(r"^\s*(from|import) (hypothesis|langsmith)\b|mark\.anyio|\bbenchmark\)", re.M)


def test_pyproject_turns_off_the_unused_plugins() -> None:
    config = tomllib.loads((ROOT / "pyproject.toml").read_text())
    addopts = config["tool"]["pytest"]["ini_options"]["addopts"].split()
    pairs = [" ".join(addopts[i : i + 2]) for i, arg in enumerate(addopts) if arg == "-p"]
    assert pairs == [" ".join(NO_UNUSED[i : i + 2]) for i in range(0, len(NO_UNUSED), 2)]


def test_no_test_uses_a_plugin_that_is_turned_off() -> None:
    users = [
        str(path.relative_to(ROOT))
        for path in sorted((ROOT / "tests").rglob("*.py"))
        if path.name not in {"_plugins.py", "test_unused_plugins.py"}
        and USES.search(path.read_text(encoding="utf-8"))
    ]
    assert users == []


def test_the_suite_runs_in_two_workers_that_steal_work() -> None:
    """README, Development: two worker processes, a worker that runs out taking tests from the
    other's queue."""
    config = tomllib.loads((ROOT / "pyproject.toml").read_text())
    addopts = config["tool"]["pytest"]["ini_options"]["addopts"]
    assert "-n 2 --dist worksteal" in addopts
