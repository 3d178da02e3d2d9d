"""Where the benchmarks' data lives (../shared/data), and the one message when it is missing."""

from __future__ import annotations

import sys
from collections.abc import Sequence
from pathlib import Path

SHARED_DATA = Path(__file__).resolve().parents[2] / "shared" / "data"
TAU_BENCH = SHARED_DATA / "tau_bench_gpt4o_airline_trajectories.json"


def missing_data(script: str, paths: Sequence[Path], what: str, options: str) -> bool:
    """Say on stderr which of `paths` are missing, where the data lives and the `options` that
    point elsewhere; True when any is missing (the script then exits 2)."""
    absent = [str(p) for p in paths if not p.is_file()]
    if absent:
        print(
            f"{script}: missing {what}: {', '.join(absent)}\n  The data lives in {SHARED_DATA} "
            f"(see its README.md); give another copy with {options}.",
            file=sys.stderr,
        )
    return bool(absent)
