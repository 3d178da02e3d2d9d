"""`compare(base, new)` on real results files: its statistics against scipy's paired bootstrap and
statsmodels' exact McNemar test on fixed data, pairing by id and by the user side, records in one
run only, failed and unscored pairs counted apart, repeated runs, what is refused or warned
about, and the `--fail-if-worse` gate."""

from __future__ import annotations

import dataclasses
import json
import math
from collections.abc import Sequence
from pathlib import Path
from typing import Any, ClassVar

import numpy as np
import pytest
from scipy import stats as sps
from statsmodels.stats.contingency_tables import mcnemar

from convoeval import (
    AIMessage,
    Comparison,
    EvaluationResult,
    HumanMessage,
    MultiTurnSample,
    compare,
    evaluate,
)
from convoeval.judges import JudgeError
from convoeval.judges.ensembles.repeat import current_repeat
from convoeval.metrics import Ask, Metric, MetricResult
from convoeval.stats import compare as compare_module
from convoeval.stats.compare import CompareError, mcnemar_exact
from convoeval.stats.pairing import fingerprint, run_differences

#: Fixed paired scores: 40 records, BASE then NEW (a mix of gains, losses and ties).
BASE = [0.9, 0.8, 1.0, 0.4, 0.7, 0.0, 1.0, 0.6, 0.5, 0.3] * 4
NEW = [0.7, 0.8, 0.2, 0.6, 0.1, 0.0, 1.0, 0.2, 0.9, 0.1] * 4


class Scripted(Metric):
    """Test metric: the score in the sample's metadata (`score`, or `by_repeat[r]` in repeat
    r); `fail` makes the judge fail; no score is unscored. `scale` is an option (config)."""

    name: ClassVar[str] = "scripted"
    default_threshold: ClassVar[float | None] = 0.5

    def __init__(self, *, scale: float = 1.0, threshold: float | None = None) -> None:
        super().__init__(threshold=threshold)
        self.scale = scale

    def config(self) -> dict[str, Any]:
        return {"scale": self.scale}

    async def _score(self, sample: MultiTurnSample, ask: Ask) -> MetricResult:
        data = sample.metadata or {}
        if data.get("fail"):
            raise JudgeError("scripted", "the judge went away")
        value = data["by_repeat"][current_repeat()] if "by_repeat" in data else data.get("score")
        if value is None:
            return MetricResult(None, "nothing to score")
        return MetricResult(value * self.scale, f"scored {value} for {sample.id}")


class Second(Scripted):
    """The same scores under another name (a second metric of the run)."""

    name: ClassVar[str] = "second"


def sample(key: Any, reply: str = "an answer", **metadata: Any) -> MultiTurnSample:
    """A two-message conversation; `key` is its id (None: no id) and its question."""
    reference = metadata.pop("reference", "the expected outcome")
    return MultiTurnSample(
        user_input=[HumanMessage(content=f"question {key}"), AIMessage(content=reply)],
        reference=reference,
        id=None if key is None else str(key),
        metadata=metadata,
    )


def run(path: Path, samples: Sequence[MultiTurnSample], *metrics: Any, **options: Any) -> Path:
    """Score `samples` into the results file `path` (with its sidecar) and return the path."""
    evaluate(
        list(samples), list(metrics) or [Scripted()], output=path, show_progress=False, **options
    )
    return path


def fixed_runs(tmp_path: Path) -> tuple[Path, Path]:
    base = run(tmp_path / "base.jsonl", [sample(i, score=v) for i, v in enumerate(BASE)])
    new = run(
        tmp_path / "new.jsonl", [sample(i, "a new answer", score=v) for i, v in enumerate(NEW)]
    )
    return base, new


@pytest.mark.parametrize(
    ("lost", "gained"),
    [(0, 0), (0, 1), (1, 0), (3, 3), (2, 9), (9, 2), (0, 25), (40, 61), (700, 800), (5000, 5210)],
)
def test_mcnemar_is_statsmodels_exact_test(lost: int, gained: int) -> None:
    table = [[7, lost], [gained, 11]]
    expected = mcnemar(table, exact=True).pvalue
    assert mcnemar_exact(lost, gained) == pytest.approx(expected, rel=1e-9, abs=1e-300)


@pytest.mark.parametrize(("lost", "gained"), [(30, 50), (700, 800), (5000, 5210), (12000, 12000)])
def test_mcnemar_above_the_exact_limit_is_still_statsmodels(
    lost: int, gained: int, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(compare_module, "EXACT_LIMIT", 0)  # the floating-point sum for all
    expected = mcnemar([[0, lost], [gained, 0]], exact=True).pvalue
    assert mcnemar_exact(lost, gained) == pytest.approx(expected, rel=1e-9, abs=1e-300)


def test_figures_are_scipys_paired_bootstrap_and_statsmodels_mcnemar(tmp_path: Path) -> None:
    result = compare(*fixed_runs(tmp_path))
    item = result.get("scripted")
    base, new = np.array(BASE), np.array(NEW)
    assert (item.pairs, item.compared) == (40, 40)
    assert item.base_mean == pytest.approx(base.mean())
    assert item.new_mean == pytest.approx(new.mean())
    assert item.difference == pytest.approx((new - base).mean())
    theirs = sps.bootstrap(
        (base, new),
        lambda b, n: float(np.mean(n - b)),
        paired=True,
        vectorized=False,
        n_resamples=2000,
        method="percentile",
        rng=np.random.default_rng(0),
    ).confidence_interval
    assert item.ci == pytest.approx((theirs.low, theirs.high), abs=1e-12)
    diffs = new - base
    assert (item.improved, item.regressed, item.unchanged) == (
        int(np.sum(diffs > 1e-9)),
        int(np.sum(diffs < -1e-9)),
        int(np.sum(np.abs(diffs) <= 1e-9)),
    )
    passed_base, passed_new = base >= 0.5, new >= 0.5
    assert item.base_pass_rate == pytest.approx(passed_base.mean())
    assert item.new_pass_rate == pytest.approx(passed_new.mean())
    table = [
        [int(np.sum(passed_base & passed_new)), int(np.sum(passed_base & ~passed_new))],
        [int(np.sum(~passed_base & passed_new)), int(np.sum(~passed_base & ~passed_new))],
    ]
    assert (item.lost, item.gained) == (table[0][1], table[1][0]) == (12, 4)
    assert item.mcnemar_p == pytest.approx(mcnemar(table, exact=True).pvalue, rel=1e-12)
    # the most regressed first, each with both scores and both reasons
    top = item.regressed_most
    assert len(top) == 5 and item.regressed == 20
    assert [r.change for r in top] == sorted(r.change for r in top)
    assert top[0].label == "2" and (top[0].base_value, top[0].new_value) == (1.0, 0.2)
    assert top[0].base_reason == "scored 1.0 for 2" and top[0].new_reason == "scored 0.2 for 2"
    assert top[0].base_row["sample"]["user_input"][1]["content"] == "an answer"
    assert top[0].new_row["sample"]["user_input"][1]["content"] == "a new answer"


def test_records_pair_by_id_in_any_order_and_unpaired_ones_are_listed(tmp_path: Path) -> None:
    base = run(tmp_path / "b.jsonl", [sample(k, score=1.0) for k in ("a", "b", "c", "gone")])
    new = run(
        tmp_path / "n.jsonl",
        [sample("c", score=0.0), sample("added", score=1.0), sample("a", score=1.0),
         sample("b", score=0.5)],
    )  # fmt: skip
    result = compare(base, new)
    assert (result.paired, result.by_fingerprint) == (3, 0)
    assert [(r.id, r.index) for r in result.only_base] == [("gone", 3)]
    assert [(r.id, r.index) for r in result.only_new] == [("added", 1)]
    assert "only in BASE: 1 record, not compared:" in str(result)
    assert "gone (" in str(result) and "added (" in str(result)
    item = result.get("scripted")
    assert [(r.label, r.base.index, r.new.index) for r in item.regressed_most] == [
        ("c", 2, 0),
        ("b", 1, 3),
    ]
    assert item.unchanged == 1 and item.difference == pytest.approx(-0.5)


def test_records_without_an_id_pair_by_their_user_side(tmp_path: Path) -> None:
    questions = ["where is my order", "cancel it", "refund please", "cancel it"]
    base = run(
        tmp_path / "b.jsonl",
        [sample(None, score=1.0).model_copy(update={"user_input": [
            HumanMessage(content=q), AIMessage(content="old reply")]}) for q in questions],
    )  # fmt: skip
    changed = ["refund please", "cancel it", "where is my order?", "cancel it"]
    scores = [0.0, 0.2, 1.0, 0.4]
    new = run(
        tmp_path / "n.jsonl",
        [sample(None, score=s).model_copy(update={"user_input": [
            HumanMessage(content=q), AIMessage(content="new reply")]})
         for q, s in zip(changed, scores, strict=True)],
    )  # fmt: skip
    result = compare(base, new)
    # The bot's replies differ; the user's messages pair the records (the k-th "cancel it" with
    # the k-th), and a reworded question pairs with nothing.
    assert (result.paired, result.by_fingerprint) == (3, 3)
    assert [r.index for r in result.only_base] == [0]
    assert [r.index for r in result.only_new] == [2]
    item = result.get("scripted")
    pairs = sorted((r.base.index, r.new.index, r.new_value) for r in item.regressed_most)
    assert pairs == [(1, 1, 0.2), (2, 0, 0.0), (3, 3, 0.4)]
    assert "3 without an id, by the user's messages" in result.pairing_lines()[0]


def test_the_fingerprint_ignores_the_bot_the_id_and_the_metadata() -> None:
    one = sample("x", "reply one", score=1.0).to_dict()
    two = sample("y", "reply two", score=0.0).to_dict()
    two["user_input"][0]["content"] = one["user_input"][0]["content"]
    assert fingerprint(one, True) == fingerprint(two, True)
    two["reference"] = "another outcome"
    assert fingerprint(one, True) != fingerprint(two, True)
    assert fingerprint(one, False) != fingerprint(two, False)
    assert fingerprint(None, True) is None and fingerprint({}, False) is None


def test_failed_and_unscored_pairs_are_counted_apart_never_as_zero(tmp_path: Path) -> None:
    base = run(
        tmp_path / "b.jsonl",
        [sample("ok", score=0.8), sample("broke", score=0.9), sample("empty", score=0.7),
         sample("was-broken", fail=True)],
    )  # fmt: skip
    new = run(
        tmp_path / "n.jsonl",
        [sample("ok", score=0.6), sample("broke", fail=True), sample("empty"),
         sample("was-broken", score=0.1)],
    )  # fmt: skip
    item = compare(base, new).get("scripted")
    assert (item.pairs, item.compared, item.left_out) == (4, 1, 3)
    assert (item.base_failed, item.new_failed, item.base_unscored, item.new_unscored) == (
        1, 1, 0, 1,
    )  # fmt: skip
    # Only the pair scored in both runs counts: the failed one is not a 0.
    assert (item.base_mean, item.new_mean) == pytest.approx((0.8, 0.6))
    assert item.difference == pytest.approx(-0.2) and item.regressed == 1
    assert [r.label for r in item.regressed_most] == ["ok"]
    assert "failed 1/1, unscored 0/1" in str(compare(base, new))


def test_repeated_runs_are_compared_by_their_repeat_means(tmp_path: Path) -> None:
    repeats = {"a": [1.0, 0.0, 0.5], "b": [0.0, 0.0, 0.3], "c": [1.0, 1.0, 1.0]}
    base = run(tmp_path / "b.jsonl", [sample(k, by_repeat=v) for k, v in repeats.items()], repeat=3)
    rows = [json.loads(line) for line in base.read_text().splitlines()]
    assert [row["repeats"]["scripted"]["values"] for row in rows] == list(repeats.values())
    new = run(tmp_path / "n.jsonl", [sample(k, score=0.5) for k in repeats])
    result = compare(base, new)
    item = result.get("scripted")
    means = [sum(v) / 3 for v in repeats.values()]
    assert item.base_mean == pytest.approx(sum(means) / 3)
    changes = {r.label: r.change for r in item.regressed_most}
    assert changes == pytest.approx({"c": 0.5 - 1.0})
    assert (item.improved, item.regressed, item.unchanged) == (1, 1, 1)  # b, c, a
    assert "--repeat differs (3 -> None)" in result.warnings


def test_other_metric_options_are_refused_naming_them(tmp_path: Path) -> None:
    records = [sample(i, score=0.5) for i in range(3)]
    base = run(tmp_path / "b.jsonl", records, Scripted(scale=1.0), Second())
    new = run(tmp_path / "n.jsonl", records, Scripted(scale=2.0), Second())
    with pytest.raises(CompareError, match=r"scripted's options differ \(scale=1.0 -> scale=2.0"):
        compare(base, new)
    # Leaving the metric out compares the others.
    assert [m.metric for m in compare(base, new, ["second"]).metrics] == ["second"]


def test_unknown_metrics_name_the_ones_both_runs_have(tmp_path: Path) -> None:
    base = run(tmp_path / "b.jsonl", [sample(1, score=1.0)], Scripted(), Second())
    new = run(tmp_path / "n.jsonl", [sample(1, score=1.0)])
    result = compare(base, new)
    assert result.not_compared == {"second": "only in BASE"}
    assert "metric second is only in BASE: not compared" in str(result)
    with pytest.raises(CompareError, match=r"second \(only in BASE\).*both have: scripted"):
        compare(base, new, ["second"])
    with pytest.raises(CompareError, match=r"topic \(in neither run\)"):
        compare(base, new, ["topic"])


def test_another_data_set_is_refused(tmp_path: Path) -> None:
    base = run(tmp_path / "b.jsonl", [sample(f"order-{i}", score=1.0) for i in range(3)])
    other = run(tmp_path / "o.jsonl", [sample(f"refund-{i}", score=1.0) for i in range(3)])
    with pytest.raises(CompareError, match=r"pairs with one of .*another data set"):
        compare(base, other)


def test_paired_records_with_other_references_are_refused_unless_allowed(tmp_path: Path) -> None:
    base = run(tmp_path / "b.jsonl", [sample(i, score=1.0) for i in range(4)])
    relabelled = [sample(i, score=1.0) for i in range(4)]
    relabelled[2] = sample(2, score=0.0, reference="a different outcome")
    new = run(tmp_path / "n.jsonl", relabelled)
    with pytest.raises(CompareError, match=r"1 paired records have other references.*: 2;"):
        compare(base, new)
    result = compare(base, new, allow_other_references=True)
    assert any("other references" in w for w in result.warnings)
    assert result.get("scripted").regressed == 1


def test_other_thresholds_are_a_warning(tmp_path: Path) -> None:
    records = [sample(i, score=0.6) for i in range(3)]
    base = run(tmp_path / "b.jsonl", records, Scripted(threshold=0.5))
    new = run(tmp_path / "n.jsonl", records, Scripted(threshold=0.7))
    result = compare(base, new)
    assert result.warnings == ("scripted's threshold differs (0.5 -> 0.7)",)
    item = result.get("scripted")
    assert (item.base_pass_rate, item.new_pass_rate, item.lost) == (1.0, 0.0, 3)
    assert result.same_conversations


def test_prompts_judge_calibration_version_and_repeat_are_warnings_options_refused(
    tmp_path: Path,
) -> None:
    path = run(tmp_path / "b.jsonl", [sample(1, score=1.0)])
    before = json.loads((tmp_path / "b.jsonl.meta.json").read_text())
    after = json.loads(json.dumps(before))
    entry = after["metrics"][0]
    entry.update(steps=["other"], uses_judge=True, judge="openai/gpt-4o-mini", threshold=0.9)
    entry["config"] = {"scale": 2.0}
    after.update(calibration="v9", convoeval_version="9.9", options={"repeat": 3})
    refusals, warnings = run_differences(before, after, ["scripted"])
    assert refusals == ["scripted's options differ (scale=1.0 -> scale=2.0)"]
    assert warnings == [
        "scripted's prompts or output schemas differ (step fingerprints)",
        "scripted's judge differs (None -> openai/gpt-4o-mini)",
        "scripted's threshold differs (0.5 -> 0.9)",
        f"the offline judge's calibration differs ({before['calibration']} -> v9)",
        f"the convoeval version differs ({before['convoeval_version']} -> 9.9)",
        "--repeat differs (None -> 3)",
    ]
    assert path.exists()


def test_the_gate_fails_only_on_a_drop_beyond_delta_that_is_more_than_noise(
    tmp_path: Path,
) -> None:
    base, new = fixed_runs(tmp_path)
    same = compare(base, base)
    assert same.gate({"scripted": 0.0}) == []  # no change passes, even at DELTA 0
    result = compare(base, new)
    item = result.get("scripted")
    assert item.difference is not None and item.ci is not None
    assert item.difference == pytest.approx(-0.16) and item.ci[1] < 0
    problems = result.gate({"scripted": 0.1})
    assert len(problems) == 1 and "worse by 0.1600 (mean 0.6200 -> 0.4600)" in problems[0]
    assert "lies below 0" in problems[0]
    assert result.gate({"scripted": 0.2}) == []  # not worse by more than DELTA
    # a drop beyond DELTA whose interval reaches 0 is noise: it passes
    few = compare(
        run(tmp_path / "b2.jsonl", [sample(i, score=s) for i, s in enumerate([1.0, 0.0, 0.5])]),
        run(tmp_path / "n2.jsonl", [sample(i, score=s) for i, s in enumerate([0.0, 0.5, 0.5])]),
    )
    noisy = few.get("scripted")
    assert noisy.difference is not None and noisy.ci is not None
    assert noisy.difference < -0.1 and noisy.ci[1] >= 0
    assert few.gate({"scripted": 0.1}) == []
    for bad in (-0.1, math.nan, math.inf):
        with pytest.raises(CompareError, match="DELTA is a finite number >= 0"):
            result.gate({"scripted": bad})
    with pytest.raises(CompareError, match="not compared: topic; compared: scripted"):
        result.gate({"topic": 0.1})


def test_nothing_compared_fails_the_gate(tmp_path: Path) -> None:
    base = run(tmp_path / "b.jsonl", [sample(1, fail=True), sample(2)])
    new = run(tmp_path / "n.jsonl", [sample(1, score=1.0), sample(2, score=1.0)])
    result = compare(base, new)
    assert result.get("scripted").compared == 0 and result.get("scripted").ci is None
    assert result.gate({"scripted": 0.5}) == [
        "fail-if-worse: scripted: no pair was scored in both runs"
    ]


def test_the_result_is_typed_json_ready_and_takes_evaluation_results(tmp_path: Path) -> None:
    base_path, new_path = fixed_runs(tmp_path)
    result = compare(EvaluationResult.from_file(base_path), EvaluationResult.from_file(new_path))
    assert isinstance(result, Comparison)
    assert result.to_dict() == compare(base_path, new_path).to_dict()
    data = json.loads(json.dumps(result.to_dict()))
    metric = data["metrics"]["scripted"]
    assert metric["ci"] == list(result.get("scripted").ci or ())
    assert metric["regressed_most"][0] == {
        "id": "2", "base_index": 2, "new_index": 2, "base": 1.0, "new": 0.2,
        "change": pytest.approx(-0.8), "base_reason": "scored 1.0 for 2",
        "new_reason": "scored 0.2 for 2",
    }  # fmt: skip
    assert data["bootstrap"] == {"resamples": 2000, "seed": 0, "level": 0.95}
    text = str(result)
    assert "scripted: mean 0.620 -> 0.460, difference -0.160 [" in text
    assert "most regressed, scripted (5 of 20):" in text
    assert "    BASE: scored 1.0 for 2" in text and "    NEW:  scored 0.2 for 2" in text
    with pytest.raises(dataclasses.FrozenInstanceError):
        result.paired = 3  # type: ignore[misc]
