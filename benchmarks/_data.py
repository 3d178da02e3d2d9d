"""Where the benchmarks' data lives (../shared/data), the options naming the labelled dev files,
and the one message when data is missing."""

from __future__ import annotations

import argparse
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


#: The labelled dev files the agreement benchmarks read, by the option that names each.
LABELLED = {
    "xstest": "xstest_refusal_dev.jsonl",
    "clinc": "clinc150_scope_dev.jsonl",
    "dbdc3": "dbdc3_breakdown_dev.jsonl",
}


def add_labelled_options(parser: argparse.ArgumentParser) -> None:
    """`--xstest`, `--clinc`, `--dbdc3`: the labelled dev files (default: in ../shared/data)."""
    for name, file in LABELLED.items():
        parser.add_argument(f"--{name}", type=Path, default=SHARED_DATA / file)


def missing_labelled(script: str, args: argparse.Namespace) -> bool:
    """`missing_data` for the files of `add_labelled_options`."""
    paths = [getattr(args, name) for name in LABELLED]
    return missing_data(script, paths, "labelled data", "--xstest/--clinc/--dbdc3")
