"""pass^k and pass@k over repeated trials: the estimators, the success criteria, real data."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from _shared_data import TAU_BENCH, shared_file
from convoeval import evaluate
from convoeval.stats.trials import (
    TaskTrials,
    TrialsError,
    parse_trials_option,
    pass_at_k,
    pass_hat_k,
    summarize_trials,
    trials_from_rows,
    trials_summary,
)


def test_estimators_match_hand_counts() -> None:
    # 4 trials, 2 successes: of the 6 pairs, 1 is all successes and 5 have at least one.
    assert pass_hat_k(4, 2, 2) == pytest.approx(1 / 6)
    assert pass_at_k(4, 2, 2) == pytest.approx(5 / 6)
    assert pass_hat_k(4, 2, 1) == pass_at_k(4, 2, 1) == 0.5
    assert pass_hat_k(4, 2, 3) == 0.0 and pass_at_k(4, 2, 3) == 1.0
    assert pass_hat_k(3, 3, 3) == 1.0 and pass_at_k(3, 0, 3) == 0.0
    with pytest.raises(ValueError):
        pass_hat_k(3, 4, 1)
    with pytest.raises(ValueError):
        pass_at_k(3, 1, 4)


def test_summary_averages_over_tasks_up_to_the_fewest_trials() -> None:
    tasks = [TaskTrials("a", 4, 4), TaskTrials("b", 4, 0), TaskTrials("c", 3, 1)]
    summary = summarize_trials(tasks, "task_id", "reward")
    assert list(summary.pass_hat_k) == [1, 2, 3]
    assert summary.pass_hat_k[1] == pytest.approx((1 + 0 + 1 / 3) / 3)
    assert summary.pass_hat_k[3] == pytest.approx(1 / 3)
    assert summary.pass_at_k[3] == pytest.approx((1 + 0 + 1) / 3)
    assert summary.as_dict()["trials"] == 11


def _row(task: Any, reward: Any = None, score: float | None = None, failed: bool = False) -> Any:
    metadata = {} if task is None else {"task_id": task}
    if reward is not None:
        metadata["reward"] = reward
    return {
        "index": 0,
        "scores": {"m": score},
        "errors": {"m": {"type": "JudgeError", "message": "x"}} if failed else {},
        "sample": {"user_input": [], "metadata": metadata},
    }


def test_rows_by_task_with_field_or_metric_success() -> None:
    from convoeval.stats.trials import _criterion

    rows = [
        _row(1, 1.0, 1.0),
        _row(1, 0.0, 0.5),
        _row(2, True, None, failed=True),
        _row(2, 0, 0.9),
        _row(None, 1.0, 1.0),  # no task id: skipped
        _row(3),  # no reward: skipped for reward
    ]
    test, said = _criterion("reward", {"m": 0.8})
    summary = trials_from_rows(rows, "task_id", test, said)
    assert [(t.task, t.trials, t.successes) for t in summary.tasks] == [("1", 2, 1), ("2", 2, 1)]
    assert summary.skipped == 2 and said == "reward (true or >= 1)"
    test, said = _criterion("m", {"m": 0.8})
    summary = trials_from_rows(rows, "task_id", test, said)
    # A failed record does not pass; an unscored one is skipped.
    assert [(t.task, t.trials, t.successes) for t in summary.tasks] == [("1", 2, 1), ("2", 2, 1)]
    assert said == "m >= 0.8"
    assert _criterion("m>=0.5", {"m": 0.8})[1] == "m >= 0.5"
    assert _criterion(None, {"m": 0.8})[1] == "m >= 0.8"
    with pytest.raises(TrialsError, match="say what success is"):
        _criterion(None, {"m": None})
    with pytest.raises(TrialsError, match="no record"):
        trials_from_rows(rows, "episode", test, said)


@pytest.mark.parametrize(
    ("text", "parsed"),
    [
        ("task_id", ("task_id", None)),
        ("task_id:reward", ("task_id", "reward")),
        ("info.task:trajectory_match>=1", ("info.task", "trajectory_match>=1")),
    ],
)
def test_parse_trials_option(text: str, parsed: tuple[str, str | None]) -> None:
    assert parse_trials_option(text) == parsed


def test_parse_trials_option_refuses_a_bad_spec() -> None:
    with pytest.raises(TrialsError, match="TASK_FIELD"):
        parse_trials_option("task_id:reward>")


def test_tau_bench_gpt4o_airline_matches_the_published_leaderboard(tmp_path: Path) -> None:
    """200 runs = 50 tasks x 4 trials; the tau-bench README (airline, TC gpt-4o) publishes
    pass^1..4 = 0.420, 0.273, 0.220, 0.200."""
    result = evaluate(
        shared_file(TAU_BENCH),
        ["tool_call_f1"],
        messages_field="traj",
        fields={"reference_tool_calls": "info.task.actions"},
        output=tmp_path / "tau.jsonl",
        show_progress=False,
    )
    summary = trials_summary(result, "task_id", "reward")
    assert len(summary.tasks) == 50 and {t.trials for t in summary.tasks} == {4}
    assert summary.skipped == 0
    hat = [round(summary.pass_hat_k[k], 4) for k in (1, 2, 3, 4)]
    at = [round(summary.pass_at_k[k], 4) for k in (1, 2, 3, 4)]
    assert hat == [0.42, 0.2733, 0.22, 0.2]
    assert at == [0.42, 0.5667, 0.66, 0.72]
    # The same from the saved file.
    again = trials_summary(tmp_path / "tau.jsonl", "task_id", "reward")
    assert again.pass_hat_k == summary.pass_hat_k
