"""benchmarks/_stats.py's grouped bootstrap: scipy's percentile interval when every row is its own
group, whole groups in every resample, and strata that keep their size."""

from __future__ import annotations

import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from scipy import stats

BENCHMARKS = Path(__file__).resolve().parents[2] / "benchmarks"


@pytest.fixture(scope="module")
def bench() -> Iterator[Any]:
    """The module benchmarks/_stats.py (imported as the benchmarks import it)."""
    sys.path.insert(0, str(BENCHMARKS))
    try:
        import _stats

        yield _stats
    finally:
        sys.path.remove(str(BENCHMARKS))


@pytest.mark.parametrize("seed", [1, 2])
def test_one_row_per_group_is_scipys_percentile_interval(bench: Any, seed: int) -> None:
    data = np.random.default_rng(seed).exponential(size=250)
    got = bench.grouped_bootstrap(lambda i: data[i].mean(), np.arange(data.size), seed=7)
    want = stats.bootstrap(
        (data,),
        np.mean,
        n_resamples=bench.RESAMPLES,
        method="percentile",
        rng=np.random.default_rng(7),
    ).confidence_interval
    assert got == pytest.approx((want.low, want.high), abs=1e-9)  # the same draw
    # a different draw lands near scipy too (within a fifth of the standard error): same method
    other = bench.grouped_bootstrap(lambda i: data[i].mean(), np.arange(data.size), seed=8)
    se = data.std() / np.sqrt(data.size)
    assert other == pytest.approx((want.low, want.high), abs=0.2 * se)
    assert other != got


def test_a_resample_holds_whole_groups_and_strata_keep_their_groups(bench: Any) -> None:
    sizes = [1, 2, 3, 4, 5] * 4
    groups = np.repeat([f"g{k:02d}" for k in range(len(sizes))], sizes)
    order = np.random.default_rng(0).permutation(groups.size)  # groups need not be contiguous
    groups = groups[order]
    strata = np.array([int(g[1:]) % 2 for g in groups])  # 10 groups in each
    seen: list[np.ndarray] = []

    def record(rows: np.ndarray) -> float:
        seen.append(rows.copy())
        return float(rows.size)

    low, high = bench.grouped_bootstrap(record, groups, strata=strata, resamples=200)
    assert len(seen) == 200 and low < high  # group sizes differ, so resample sizes do
    for rows in seen:
        drawn = {g: np.count_nonzero(groups[rows] == g) for g in set(groups[rows])}
        for g, count in drawn.items():
            members = np.flatnonzero(groups == g)
            got, copies = np.unique(rows[groups[rows] == g], return_counts=True)
            assert list(got) == list(members)  # a group comes whole, once or more
            assert set(copies) == {count // members.size}
        per_stratum = [
            sum(
                count // np.count_nonzero(groups == g)
                for g, count in drawn.items()
                if int(g[1:]) % 2 == s
            )
            for s in (0, 1)
        ]
        assert per_stratum == [10, 10]


def test_a_group_across_two_strata_is_refused(bench: Any) -> None:
    with pytest.raises(ValueError, match="spans two strata"):
        bench.grouped_bootstrap(lambda i: 0.0, ["a", "a", "b"], strata=[0, 1, 1], resamples=5)
