"""Results and gates that never lie (issue 32 §1): gate limits checked as thresholds are, a run's
identity naming every judge that scores, a temporary result alive while it is read, a bug that
stops the run instead of passing as a failed pair, and a metric's judge that can be changed."""

from __future__ import annotations

import asyncio
import gc
import json
import math
from pathlib import Path
from typing import Any, ClassVar

import pytest
from _runner_samples import index_of, tool_sample, write_jsonl

from convoeval import (
    ConversationRelevancyMetric,
    EvaluationResult,
    MultiTurnSample,
    OpenAIJudge,
    TopicAdherenceScore,
    evaluate,
)
from convoeval.io import DataError
from convoeval.judges import FakeJudge, JudgeError
from convoeval.judges.offline.calibration import CALIBRATION_VERSION
from convoeval.metrics import Ask, Metric, MetricResult
from convoeval.metrics.conversation_relevancy import VERDICTS
from convoeval.runner import ResultsFileError, UsageError, meta_path

RELEVANT = {"verdicts": [{"exchange": 0, "relevant": True, "reason": ""}]}


def _relevant(inputs: Any) -> dict[str, Any]:
    return {
        "verdicts": [{"exchange": i, "relevant": True, "reason": ""} for i, _ in inputs["windows"]]
    }


class FiveStars(Metric):
    """Test metric on its own scale (1 to 5): every record gets 4."""

    name: ClassVar[str] = "five_stars"
    score_range: ClassVar[tuple[float, float]] = (1.0, 5.0)

    async def _score(self, sample: MultiTurnSample, ask: Ask) -> MetricResult:
        return MetricResult(4.0, "four stars")


# 1. Gate limits get the checks of a threshold.


def test_a_gate_limit_must_be_a_finite_number_within_the_metric_range(tmp_path: Path) -> None:
    out = tmp_path / "r.jsonl"
    result = evaluate([tool_sample(i) for i in range(3)], ["tool_call_f1"], output=out)
    assert result.gate({"tool_call_f1": 1.0}) == [] and result.gate({"tool_call_f1": 0}) == []
    refused = {
        math.nan: r"the --fail-under limit of tool_call_f1 must be a finite number, not nan",
        math.inf: r"the --fail-under limit of tool_call_f1 must be a finite number, not inf",
        2.0: r"the --fail-under limit of tool_call_f1 is 2, outside its scores' range \[0, 1\]",
        -0.5: r"the --fail-under limit of tool_call_f1 is -0.5, outside its scores' range",
        "0.5": r"the --fail-under limit of tool_call_f1 must be a number, not '0.5'",
        True: r"the --fail-under limit of tool_call_f1 must be a number, not True",
    }
    for limit, message in refused.items():
        with pytest.raises(UsageError, match=message):
            result.gate({"tool_call_f1": limit})  # type: ignore[dict-item]
    # The range travels with the results file: a result read back checks it too.
    with pytest.raises(UsageError, match=r"outside its scores' range \[0, 1\]"):
        EvaluationResult.from_file(out).gate({"tool_call_f1": 2})
    # A threshold is checked by the same rule, with the same words.
    with pytest.raises(UsageError, match=r"the threshold of tool_call_f1 must be a finite number"):
        evaluate([tool_sample(0)], ["tool_call_f1"], thresholds={"tool_call_f1": math.nan})


def test_a_gate_limit_follows_a_metric_own_scale() -> None:
    result = evaluate([tool_sample(i) for i in range(2)], [FiveStars()])
    assert result.gate({"five_stars": 4}) == []
    assert result.gate({"five_stars": 4.5}) == ["fail-under: five_stars mean 4.0000 < 4.5"]
    with pytest.raises(UsageError, match=r"is 6, outside its scores' range \[1, 5\]"):
        result.gate({"five_stars": 6})
    with pytest.raises(UsageError, match=r"is 0.5, outside its scores' range \[1, 5\]"):
        result.gate({"five_stars": 0.5})


# 2. The run's identity names every judge that scores, whoever holds it.


def _relevancy_data(path: Path, count: int) -> Path:
    with path.open("w") as handle:
        for i in range(count):
            turns = [
                {"type": "human", "content": f"question {i}: what is the status?"},
                {"type": "ai", "content": f"answer {i}: all good"},
            ]
            handle.write(json.dumps({"user_input": turns, "id": f"q{i}"}) + "\n")
    return path


def test_resuming_with_a_metric_held_judge_of_another_model_or_endpoint_is_refused(
    tmp_path: Path, fault_server: Any
) -> None:
    fault_server.reply(RELEVANT).forever()
    data = _relevancy_data(tmp_path / "d.jsonl", 3)
    out = tmp_path / "r.jsonl"

    def judge(model: str, url: str = fault_server.url) -> OpenAIJudge:
        return OpenAIJudge(model, base_url=url, api_key="k", cache=False)

    first = evaluate(data, [ConversationRelevancyMetric(model=judge("model-a"))], output=out)
    assert [row["scores"]["conversation_relevancy"] for row in first.rows()] == [1.0] * 3
    was = f"openai/model-a model-a {fault_server.url}"
    entry = json.loads(meta_path(out).read_text())["metrics"][0]
    assert entry["judge"] == was
    sent = fault_server.attempts
    with pytest.raises(ResultsFileError) as caught:
        evaluate(data, [ConversationRelevancyMetric(model=judge("model-b"))], output=out)
    now = f"openai/model-b model-b {fault_server.url}"
    assert f"conversation_relevancy's judge differs ({was} -> {now})" in str(caught.value)
    other = type(fault_server)()  # another fault server: another endpoint, the same model
    try:
        url = other.url
        with pytest.raises(ResultsFileError) as moved:
            evaluate(data, [ConversationRelevancyMetric(model=judge("model-a", url))], output=out)
        assert other.attempts == 0
    finally:
        other.close()
    now = f"openai/model-a model-a {url}"
    assert f"conversation_relevancy's judge differs ({was} -> {now})" in str(moved.value)
    assert fault_server.attempts == sent  # refused before any request
    again = evaluate(data, [ConversationRelevancyMetric(model=judge("model-a"))], output=out)
    assert len(again) == 3 and fault_server.attempts == sent  # the same judge resumes


def test_an_offline_judge_held_by_a_metric_fills_the_calibration(tmp_path: Path) -> None:
    out = tmp_path / "r.jsonl"
    samples = [tool_sample(i) for i in range(2)]
    evaluate(samples, [TopicAdherenceScore(judge="offline")], output=out)
    meta = json.loads(meta_path(out).read_text())
    assert meta["calibration"] == CALIBRATION_VERSION
    assert meta["metrics"][0]["judge"].startswith("offline ")
    assert "metric's own" not in meta_path(out).read_text()


# 3. A temporary result lives as long as its rows are read or its path is held.


def test_the_rows_of_a_result_nobody_keeps_can_still_be_read() -> None:
    samples = [tool_sample(i) for i in range(3)]
    indexes = [row["index"] for row in evaluate(samples, ["tool_call_f1"]).rows()]
    assert indexes == [0, 1, 2]


def test_the_path_of_a_temporary_result_says_so_and_keeps_it(tmp_path: Path) -> None:
    path = evaluate([tool_sample(0)], ["tool_call_f1"]).path
    gc.collect()
    assert path.exists() and path.is_temporary
    assert "temporary" in repr(path)
    folder = path.parent
    result = EvaluationResult.from_file(path)
    assert not result.is_temporary  # read back from a path: nothing to delete
    del path, result
    gc.collect()
    assert not folder.exists()  # nobody holds it: deleted
    kept = evaluate([tool_sample(0)], ["tool_call_f1"])
    assert kept.is_temporary and repr(kept).endswith("(temporary))")
    saved = evaluate([tool_sample(0)], ["tool_call_f1"], output=tmp_path / "r.jsonl")
    assert not saved.is_temporary and not saved.path.is_temporary
    assert not repr(saved).endswith("(temporary))")


# 4. Only judge failures become failed pairs; a bug stops the run, the rows before it kept.


class BuggyMetric(Metric):
    """Test metric: a bug (KeyError) on record 2 once the rows before it are on disk, unless
    `fixed`; a judge failure on record 3."""

    name: ClassVar[str] = "buggy_metric"

    def __init__(self, out: Path | None = None, *, fixed: bool = False) -> None:
        super().__init__()
        self.out = out
        self.fixed = fixed
        self.seen: list[int] = []

    async def _score(self, sample: MultiTurnSample, ask: Ask) -> MetricResult:
        number = index_of(sample)
        self.seen.append(number)
        if number == 2 and not self.fixed:
            for _ in range(10_000):  # until rows 0 and 1 are written (no wall clock)
                if self.out is None or self.out.read_text().count("\n") >= 2:
                    break
                await asyncio.sleep(0)
            raise KeyError("no_such_field")
        if number == 3:
            raise JudgeError("buggy.step", "the judge gave up")
        return MetricResult(1.0, "ok")


def test_a_bug_in_a_metric_stops_the_run_and_the_rows_written_are_kept(tmp_path: Path) -> None:
    data = write_jsonl(tmp_path / "d.jsonl", [tool_sample(i) for i in range(5)])
    out = tmp_path / "r.jsonl"
    with pytest.raises(KeyError, match="no_such_field"):
        evaluate(data, [BuggyMetric(out), "tool_call_f1"], output=out, max_concurrency=1)
    kept = [json.loads(line)["index"] for line in out.read_text().splitlines()]
    assert kept[:2] == [0, 1] and 2 not in kept
    fixed = BuggyMetric(fixed=True)
    again = evaluate(data, [fixed, "tool_call_f1"], output=out)  # the same run: resumed
    assert 0 not in fixed.seen and 1 not in fixed.seen
    rows = list(again.rows())
    assert [row["index"] for row in rows] == [0, 1, 2, 3, 4]
    # A judge failure is a failed pair, the run goes on.
    assert rows[3]["errors"]["buggy_metric"]["type"] == "JudgeError" and again.failed() == 1
    assert rows[4]["scores"]["buggy_metric"] == 1.0


def test_a_malformed_rubric_key_is_found_by_the_scan_with_its_line(tmp_path: Path) -> None:
    judge = FakeJudge({})
    good = tool_sample(0).model_copy(update={"rubrics": {"score1_description": "bad"}})
    bad = tool_sample(1).model_copy(update={"rubrics": {"score1_description": "a", "best": "b"}})
    twice = tool_sample(2).model_copy(update={"rubrics": {"1": "a", "score1_description": "b"}})
    data = write_jsonl(tmp_path / "d.jsonl", [good, bad, twice])
    with pytest.raises(DataError) as caught:
        evaluate(data, ["rubrics_score"], judge, output=tmp_path / "r.jsonl")
    assert caught.value.problems == [
        f"{data}:2 (id 's1'): rubrics: rubric key 'best' names no level number "
        "(needed by rubrics_score)",
        f"{data}:3 (id 's2'): rubrics: rubric level 1 is given twice (needed by rubrics_score)",
    ]
    assert judge.calls == []  # found before the first judge call
    level = FakeJudge({"rubrics.level": lambda inputs: {"level": 1, "reason": "poor"}})
    skipped = evaluate(data, ["rubrics_score"], level, skip_invalid=True)
    assert len(skipped) == 1 and len(skipped.meta["invalid"]) == 2 and len(level.calls) == 1
    # Metrics chosen from the data: the malformed rubric of a chosen metric stops the run too.
    with pytest.raises(DataError, match="rubric key 'best' names no level number"):
        evaluate(data, judge=judge, output=tmp_path / "chosen.jsonl")
    assert judge.calls == []


# 5. A metric's judge can be changed after its first use.


def test_a_new_judge_assigned_to_a_metric_takes_effect() -> None:
    first, second = (FakeJudge({VERDICTS.name: _relevant}) for _ in range(2))
    facade = ConversationRelevancyMetric()
    facade.judge = first  # the DeepEval-named class hands it to the metric it wraps
    assert facade.measure(tool_sample(0)) == 1.0 and len(first.calls) == 1
    core = facade.core
    assert core.judge is first
    core.judge = second
    assert core.score_sync(tool_sample(1)).value == 1.0
    assert (len(first.calls), len(second.calls)) == (1, 1)
    facade.judge = first
    evaluate([tool_sample(2)], [facade])
    assert (len(first.calls), len(second.calls)) == (2, 1)
