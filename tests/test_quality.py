"""Lint, format and type checks run as part of the test suite, so CI enforces them."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]


@pytest.mark.parametrize(
    "command",
    [
        pytest.param(
            [sys.executable, "-m", "ruff", "check", "src", "tests", "benchmarks"], id="ruff"
        ),
        pytest.param(
            [sys.executable, "-m", "ruff", "format", "--check", "src", "tests", "benchmarks"],
            id="ruff-format",
        ),
        pytest.param([sys.executable, "-m", "mypy"], id="mypy"),
    ],
)
def test_code_quality(command: list[str]) -> None:
    done = subprocess.run(command, cwd=ROOT, capture_output=True, text=True, timeout=600)
    assert done.returncode == 0, done.stdout + done.stderr
