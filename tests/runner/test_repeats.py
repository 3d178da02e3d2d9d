"""Repeated runs (`repeat=N`): per-record spread and pass rate, the bootstrap interval, fresh
judge samples with the cache on, the gate modes, resume and `retry_failed`, and
`assert_conversation(repeat=N, gate=...)`."""

from __future__ import annotations

import json
import re
import statistics
from collections import Counter
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from _runner_samples import tool_sample
from scipy import stats

from convoeval import ConversationRelevancyMetric, evaluate
from convoeval.judges import FakeJudge
from convoeval.judges.core.backend import BackendFailure, Failure
from convoeval.judges.core.cache import JudgeCache
from convoeval.judges.ensembles.repeat import repeat_sampling, repeat_scope
from convoeval.metrics.conversation_relevancy import VERDICTS
from convoeval.runner import ResultsFileError
from convoeval.runner._plan import UsageError
from convoeval.stats.repeats import bootstrap_ci, parse_gate
from convoeval.testing import assert_conversation

METRIC = "conversation_relevancy"


class Counting:
    """A script whose answers differ between repeats: record i is judged relevant in its first
    i calls and irrelevant after, so its values over 3 repeats are i ones and 3 - i zeros
    (whatever order the concurrent repeats ask in)."""

    def __init__(self, fail_call: dict[int, int] | None = None) -> None:
        self.calls: Counter[int] = Counter()
        self.fail_call = fail_call or {}

    def __call__(self, inputs: Any) -> Any:
        record = int(inputs.conversation.split("look up item ")[1].split()[0])
        self.calls[record] += 1
        if self.fail_call.get(record) == self.calls[record]:
            return BackendFailure(Failure.FATAL, "scripted judge failure")
        relevant = self.calls[record] <= record
        return {
            "verdicts": [
                {"exchange": i, "relevant": relevant, "reason": ""} for i, _ in inputs.windows
            ]
        }


def _run(path: Path, judge: FakeJudge, count: int = 4, **options: Any) -> Any:
    samples = [tool_sample(i) for i in range(count)]
    metric = ConversationRelevancyMetric(threshold=0.5)
    return evaluate(samples, [metric], judge, output=path, show_progress=False, **options)


def test_each_record_gets_its_mean_spread_and_pass_rate(tmp_path: Path) -> None:
    result = _run(tmp_path / "r.jsonl", FakeJudge({VERDICTS.name: Counting()}), repeat=3)
    rows = list(result.rows())
    for i, row in enumerate(rows):
        entry = row["repeats"][METRIC]
        values = [0.0] * (3 - i) + [1.0] * i
        assert sorted(entry["values"]) == values
        assert row["scores"][METRIC] == pytest.approx(i / 3) == entry["mean"]
        assert (entry["min"], entry["max"]) == (min(values), max(values))
        assert entry["std"] == pytest.approx(statistics.stdev(values))
        assert entry["pass_rate"] == pytest.approx(i / 3)
    assert result.usage.requests == 12 and result.repeat == 3
    summary = result.summary()[METRIC]
    assert summary["mean"] == pytest.approx(statistics.mean([0, 1 / 3, 2 / 3, 1]))
    assert summary["repeats"] == 3 and len(summary["repeat_means"]) == 3
    assert sum(summary["repeat_means"]) == pytest.approx(3 * summary["mean"])
    assert result.meta["options"]["repeat"] == 3
    # the file is an ordinary results file: from_file and pandas read it
    again = type(result).from_file(result.path)
    assert again.summary()[METRIC]["ci_low"] == summary["ci_low"]


def test_the_interval_is_scipys_percentile_bootstrap() -> None:
    values = [0.1, 0.4, 0.4, 0.7, 0.9, 1.0, 0.0, 0.55]
    low, high = bootstrap_ci(values, resamples=999, seed=7)
    expected = stats.bootstrap(
        (np.array(values),),
        np.mean,
        n_resamples=999,
        method="percentile",
        random_state=np.random.default_rng(7),
    ).confidence_interval
    assert (low, high) == pytest.approx((expected.low, expected.high))
    # by hand: the 2.5th and 97.5th percentiles of the resampled means
    rng = np.random.default_rng(7)
    means = np.asarray(values)[rng.integers(0, 8, (999, 8))].mean(axis=1)
    assert (low, high) == pytest.approx(tuple(np.percentile(means, [2.5, 97.5])))
    assert bootstrap_ci(values) == bootstrap_ci(list(values))  # seeded: reproducible
    many = np.random.default_rng(1).random(1500)  # resampled in chunks: the same draws
    expected = stats.bootstrap(
        (many,),
        np.mean,
        n_resamples=2000,
        method="percentile",
        random_state=np.random.default_rng(0),
    ).confidence_interval
    assert bootstrap_ci(many) == pytest.approx((expected.low, expected.high))
    assert bootstrap_ci([]) is None and bootstrap_ci([0.5]) == (0.5, 0.5)


def test_repeats_bypass_the_cache_and_a_rerun_replays_them(tmp_path: Path) -> None:
    cache = JudgeCache(tmp_path / "cache.sqlite")
    judge = FakeJudge({VERDICTS.name: Counting()}, cache=cache)
    first = _run(tmp_path / "a.jsonl", judge, repeat=3)
    assert first.usage.requests == 12 and first.usage.cached == 0  # N x requests, cache on
    assert sorted(Counter(c.temperature for c in judge.calls).items(), key=str) == [
        (0.7, 8),
        (None, 4),
    ]
    again = FakeJudge({VERDICTS.name: Counting()}, cache=cache)
    second = _run(tmp_path / "b.jsonl", again, repeat=3)
    assert second.usage.requests == 0 and second.usage.cached == 12
    assert [r["repeats"] for r in second.rows()] == [r["repeats"] for r in first.rows()]
    # an ordinary run shares its cache entries with repeat 1 only
    plain = FakeJudge({VERDICTS.name: Counting()}, cache=cache)
    assert _run(tmp_path / "c.jsonl", plain).usage.cached == 4


def test_repeat_sampling_offsets_the_seed_past_every_sample() -> None:
    base = {"temperature": 0.0, "seed": 10}
    assert repeat_sampling(base, 2, 3) == {"temperature": 0.7, "seed": 16, "repeat": 2}
    assert repeat_sampling({"temperature": 0.3}, 1, 1) == {
        "temperature": 0.3,
        "seed": None,
        "repeat": 1,
    }
    with pytest.raises(ValueError), repeat_scope(-1):
        pass


def test_gate_modes(tmp_path: Path) -> None:
    result = _run(tmp_path / "r.jsonl", FakeJudge({VERDICTS.name: Counting()}), repeat=3)
    limit = {METRIC: 0.5}  # the mean is 0.5
    assert result.gate(limit) == []
    rows = list(result.rows())
    means = [statistics.mean(r["repeats"][METRIC]["values"][k] for r in rows) for k in range(3)]
    assert result.summary()[METRIC]["repeat_means"] == pytest.approx(means)
    reached = sum(mean >= 0.5 for mean in means)
    assert reached >= 1 and result.gate(limit, "pass-rate", reached / 3) == []
    if reached < 3:
        (problem,) = result.gate(limit, "pass-rate", 1.0)
        assert f"reached 0.5 in {reached} of 3 repeats" in problem
    (problem,) = result.gate(limit, "lower-bound")
    low = result.intervals()[METRIC]["gate_ci"][0]
    assert low < 0.5 and f"lower bound {low:.4f} < 0.5" in problem
    assert result.gate({METRIC: low}, "lower-bound") == []
    high = sum(mean >= 0.6 for mean in means)  # one repeat's mean above the run's
    (problem,) = result.gate({METRIC: 0.6}, "pass-rate", (high + 1) / 3)
    assert f"reached 0.6 in {high} of 3 repeats ({high / 3:.0%}), below the pass rate" in problem
    with pytest.raises(UsageError):
        result.gate(limit, "pass-rate")
    assert parse_gate("pass-rate=0.9") == ("pass-rate", 0.9)
    for bad in ("pass-rate", "pass-rate=0", "median", "lower-bound=1"):
        with pytest.raises(UsageError):
            parse_gate(bad)


def test_an_interrupted_repeated_run_resumes_at_the_record(tmp_path: Path) -> None:
    path = tmp_path / "r.jsonl"
    _run(path, FakeJudge({VERDICTS.name: Counting()}), repeat=3)
    lines = path.read_text().splitlines(keepends=True)
    path.write_text("".join(lines[:2]) + lines[2][:40])  # killed while writing row 2
    judge = FakeJudge({VERDICTS.name: Counting()})
    result = _run(path, judge, repeat=3)
    assert len(judge.calls) == 6  # records 2 and 3, three repeats each
    assert [r["index"] for r in result.rows()] == [0, 1, 2, 3]
    assert sorted(next(iter(result.rows()))["repeats"][METRIC]["values"]) == [0.0] * 3
    with pytest.raises(ResultsFileError, match="--repeat differs"):
        _run(path, judge, repeat=2)


def test_a_failed_repeat_fails_the_pair_and_retry_failed_scores_it_again(
    tmp_path: Path,
) -> None:
    path = tmp_path / "r.jsonl"
    broken = FakeJudge({VERDICTS.name: Counting(fail_call={1: 2})})
    result = _run(path, broken, repeat=3)
    row = list(result.rows())[1]
    assert row["scores"][METRIC] is None and result.failed() == 1
    assert row["errors"][METRIC]["message"].startswith("repeat ")
    assert row["repeats"][METRIC]["values"].count(None) == 1
    assert "(1 failed counted as 0)" in result.gate({METRIC: 0.9})[0]
    fixed = FakeJudge({VERDICTS.name: Counting()})
    again = _run(path, fixed, repeat=3, retry_failed=True)
    assert len(fixed.calls) == 3 and again.failed() == 0
    row = list(again.rows())[1]
    assert sorted(row["repeats"][METRIC]["values"]) == [0.0, 0.0, 1.0]
    assert json.loads(path.read_text().splitlines()[0])["repeats"][METRIC]["values"]


def test_assert_conversation_gates_over_repeats() -> None:
    metric = ConversationRelevancyMetric(threshold=0.5)
    sample = tool_sample(2)  # relevant in 2 of 3 repeats
    results = assert_conversation(
        sample, [metric], FakeJudge({VERDICTS.name: Counting()}), repeat=3
    )
    assert results[METRIC].value == pytest.approx(2 / 3)
    assert results[METRIC].details["repeats"]["pass_rate"] == pytest.approx(2 / 3)
    assert_conversation(
        sample, [metric], FakeJudge({VERDICTS.name: Counting()}), repeat=3, gate="pass-rate=0.6"
    )
    with pytest.raises(AssertionError, match=re.escape("reached threshold 0.5 in 2 of 3 repeats")):
        assert_conversation(
            sample, [metric], FakeJudge({VERDICTS.name: Counting()}), repeat=3, gate="pass-rate=0.9"
        )
    with pytest.raises(
        AssertionError, match=re.escape("95% interval lower bound 0 < threshold 0.5")
    ):
        assert_conversation(
            sample, [metric], FakeJudge({VERDICTS.name: Counting()}), repeat=3, gate="lower-bound"
        )
    with pytest.raises(ValueError, match="give repeat=N"):
        assert_conversation(sample, [metric], FakeJudge({}), gate="lower-bound")
