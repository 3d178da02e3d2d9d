"""Benchmarks run as a user runs them: without their data file they say what is missing."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def test_report_size_without_its_data_names_the_missing_file(tmp_path: Path) -> None:
    missing = tmp_path / "trajectories.json"
    command = [sys.executable, str(ROOT / "benchmarks" / "report_size.py"), "--data", str(missing)]
    done = subprocess.run(command, capture_output=True, text=True, timeout=120)
    assert done.returncode == 2, done.stderr
    # stdout holds only what the figures would have been measured on (benchmarks/_machine.py)
    assert all(line.startswith("# machine.") for line in done.stdout.splitlines()), done.stdout
    assert done.stderr.startswith(f"report_size.py: missing data: {missing}\n")
    assert "give another copy with --data" in done.stderr and "Traceback" not in done.stderr
