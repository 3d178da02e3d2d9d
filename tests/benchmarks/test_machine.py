"""Every benchmark prints what its figures were measured on (issue 35): commit, CPU, threads and
the load before and after."""

from __future__ import annotations

import ast
import subprocess
import sys
from pathlib import Path

BENCHMARKS = Path(__file__).resolve().parents[2] / "benchmarks"


def _mains() -> list[Path]:
    return sorted(
        path
        for path in BENCHMARKS.glob("*.py")
        if not path.name.startswith("_") and "def main(" in path.read_text(encoding="utf-8")
    )


def test_every_benchmark_prints_its_machine_first() -> None:
    mains = _mains()
    assert len(mains) >= 10
    for path in mains:
        tree = ast.parse(path.read_text(encoding="utf-8"))
        main = next(n for n in tree.body if isinstance(n, ast.FunctionDef) and n.name == "main")
        calls = [
            n.func.id
            for n in ast.walk(main)
            if isinstance(n, ast.Call) and isinstance(n.func, ast.Name)
        ]
        assert calls and calls[0] == "print_machine", path.name


def test_the_machine_block_names_commit_cpu_threads_and_load_before_and_after() -> None:
    code = "import _machine\n_machine.print_machine()\nprint('figure: 1')\n"
    done = subprocess.run(
        [sys.executable, "-c", code], cwd=BENCHMARKS, capture_output=True, text=True, timeout=60
    )
    assert done.returncode == 0, done.stderr
    lines = done.stdout.splitlines()
    keys = [line.split(":", 1)[0] for line in lines]
    assert keys == [
        "# machine.commit",
        "# machine.cpu",
        "# machine.threads",
        "# machine.load",
        "figure",
        "# machine.load_after",
    ], lines
    assert "embedder threads=" in lines[2]
    assert all(line.split(":", 1)[1].strip() for line in lines)
