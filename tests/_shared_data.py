"""The shared data sets the tests read (tau-bench trajectories, the labelled dev files): found in
`../shared/data` beside the repository, or where CONVOEVAL_SHARED_DATA points. A test whose
file is absent skips with the reason, unless CONVOEVAL_REQUIRE_SHARED_DATA=1 (set by `.ci/run`),
where it fails instead: a test that needs data CI has can never hide as a skip there."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

SHARED_DATA_ENV = "CONVOEVAL_SHARED_DATA"
REQUIRE_SHARED_DATA = "CONVOEVAL_REQUIRE_SHARED_DATA"
ROOT = Path(__file__).resolve().parents[1]
#: tau-bench's 200 GPT-4o airline trajectories (several test files read them).
TAU_BENCH = "tau_bench_gpt4o_airline_trajectories.json"


def shared_data_dir() -> Path:
    """CONVOEVAL_SHARED_DATA when set, else `shared/data` beside the repository."""
    given = os.environ.get(SHARED_DATA_ENV)
    return Path(given) if given else ROOT.parent / "shared" / "data"


def shared_file(name: str) -> Path:
    """The path of the shared data file `name`; a skip when it is absent, a failure when the
    shared data are required (CONVOEVAL_REQUIRE_SHARED_DATA=1)."""
    folder = shared_data_dir()
    path = folder / name
    if path.is_file():
        return path
    problem = f"shared data file {name} not found in {folder} (set {SHARED_DATA_ENV} to a copy)"
    if os.environ.get(REQUIRE_SHARED_DATA) == "1":
        pytest.fail(f"{REQUIRE_SHARED_DATA}=1 but the {problem}", pytrace=False)
    pytest.skip(problem)
