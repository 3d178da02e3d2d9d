"""What a run is (issue 10 §4, issue 12 items 1, 8, 10): resume identity, one scan of the input,
retrying exactly the failed pairs, the gate, and the Ragas/DeepEval call habits."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any, ClassVar

import pytest
from _runner_samples import index_of, tool_sample, write_jsonl

import convoeval.runner._inputs as inputs
from convoeval import (
    ConversationalTestCase,
    ModelTestCase,
    MultiTurnSample,
    ToolCallAccuracy,
    evaluate,
)
from convoeval._version import VERSION
from convoeval.metrics import Ask, Metric, MetricResult
from convoeval.runner import NothingToScoreError, ResultsFileError, UsageError, meta_path


def _edit_meta(out: Path, change: Any) -> None:
    path = meta_path(out)
    meta = json.loads(path.read_text())
    change(meta)
    path.write_text(json.dumps(meta))


def test_the_identity_holds_step_fingerprints_calibration_and_version(tmp_path: Path) -> None:
    data = write_jsonl(tmp_path / "d.jsonl", [tool_sample(i) for i in range(2)])
    out = tmp_path / "r.jsonl"
    evaluate(data, ["topic_adherence", "tool_call_f1"], output=out, show_progress=False)
    meta = json.loads(meta_path(out).read_text())
    entry = meta["metrics"][0]
    assert entry["name"] == "topic_adherence" and len(entry["steps"]) == 3
    from convoeval.judges.offline.calibration import CALIBRATION_VERSION
    from convoeval.metrics.topic_adherence import TopicAdherenceScore

    assert entry["steps"] == [s.fingerprint() for s in TopicAdherenceScore.steps]
    assert meta["calibration"] == CALIBRATION_VERSION and meta["convoeval_version"] == VERSION

    def refused(change: Any, match: str) -> None:
        _edit_meta(out, change)
        with pytest.raises(ResultsFileError, match=match):
            evaluate(data, ["topic_adherence", "tool_call_f1"], output=out, show_progress=False)

    old = json.loads(meta_path(out).read_text())
    refused(
        lambda m: m["metrics"][0].update(steps=["0" * 16] * 3),
        r"topic_adherence's prompts or output schemas differ .*use --overwrite",
    )
    meta_path(out).write_text(json.dumps(old))
    refused(lambda m: m.update(calibration="2020-01-01"), r"calibration differs \(2020-01-01 ->")
    meta_path(out).write_text(json.dumps(old))
    refused(lambda m: m.update(convoeval_version="0.0.1"), r"convoeval version differs \(0.0.1 ->")
    meta_path(out).write_text(json.dumps(old))
    # Unchanged, and in another metric order: the same run, resumed.
    again = evaluate(data, ["tool_call_f1", "topic_adherence"], output=out, show_progress=False)
    assert len(again) == 2 and again.metric_names == ["tool_call_f1", "topic_adherence"]


def test_without_metrics_the_input_is_read_once_to_check_and_once_to_score(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    data = write_jsonl(tmp_path / "d.jsonl", [tool_sample(i) for i in range(3)])
    real = inputs.read_records
    reads: list[str] = []

    def counting(path: Any, **options: Any) -> Any:
        reads.append(str(path))
        return real(path, **options)

    monkeypatch.setattr(inputs, "read_records", counting)
    opened: list[str] = []
    real_open = open

    def watching(file: Any, *args: Any, **kwargs: Any) -> Any:
        if str(file) == str(data):
            opened.append(str(file))
        return real_open(file, *args, **kwargs)

    monkeypatch.setattr("builtins.open", watching)
    result = evaluate(data, output=tmp_path / "r.jsonl", show_progress=False)
    assert "tool_call_f1" in result.metric_names
    assert len(reads) == 2 and len(opened) <= 2  # no separate pass to pick metrics or to hash


class FlakyMetric(Metric):
    """Test metric: fails on odd records the first time it sees them, then scores them."""

    name: ClassVar[str] = "flaky_metric"
    required: ClassVar[tuple[str, ...]] = ("user_input",)
    default_threshold: ClassVar[float | None] = 0.5

    def __init__(self) -> None:
        super().__init__()
        self.seen: list[int] = []
        self.failed: set[int] = set()

    async def _score(self, sample: MultiTurnSample, ask: Ask) -> MetricResult:
        number = index_of(sample)
        self.seen.append(number)
        if number % 2 and number not in self.failed:
            self.failed.add(number)
            return MetricResult.failure("JudgeError", f"judge down for {number}")
        return MetricResult(1.0, "ok")


def test_retry_failed_rescores_exactly_the_failed_pairs(tmp_path: Path) -> None:
    data = write_jsonl(tmp_path / "d.jsonl", [tool_sample(i) for i in range(6)])
    out = tmp_path / "r.jsonl"
    flaky = FlakyMetric()
    first = evaluate(data, [flaky, "tool_call_f1"], output=out, show_progress=False)
    assert first.failed() == 3
    summary = first.summary()["flaky_metric"]
    assert summary["pass_rate"] == pytest.approx(0.5)  # 3 failed rows count as not passing
    assert first.gate({"flaky_metric": 0.9}) == [
        "fail-under: flaky_metric mean 0.5000 < 0.9 (3 failed counted as 0)"
    ]
    assert first.gate({"flaky_metric": 0.5}) == []
    with pytest.raises(UsageError, match="not in this run"):
        first.gate({"nope": 0.5})
    flaky.seen.clear()
    again = evaluate(
        data, [flaky, "tool_call_f1"], output=out, show_progress=False, retry_failed=True
    )
    assert sorted(flaky.seen) == [1, 3, 5]  # only the failed pairs were scored again
    rows = list(again.rows())
    assert [r["index"] for r in rows] == list(range(6))
    assert all(r["errors"] == {} and r["scores"]["flaky_metric"] == 1.0 for r in rows)
    assert again.failed() == 0 and again.summary()["flaky_metric"]["pass_rate"] == 1.0
    with pytest.raises(ResultsFileError, match="nothing to retry"):
        evaluate(data, [flaky], output=tmp_path / "new.jsonl", retry_failed=True)


def test_ragas_and_deepeval_call_forms(tmp_path: Path) -> None:
    samples = [tool_sample(i, right=i != 1) for i in range(3)]
    result = evaluate(dataset=samples, metrics=[ToolCallAccuracy()], show_progress=False)
    assert result["tool_call_accuracy"] == [1.0, 0.0, 1.0]
    with pytest.raises(KeyError, match="not a metric of this run"):
        result["topic_adherence"]
    frame = result.to_pandas()
    assert list(frame.columns[:7]) == [
        "index",
        "id",
        "user_input",
        "reference",
        "reference_topics",
        "reference_tool_calls",
        "rubrics",
    ]
    assert frame["user_input"][0][0]["content"] == "please look up item 0"
    assert frame["reference_tool_calls"][1] == [{"name": "lookup", "args": {"n": -1}}]
    cases = [
        ConversationalTestCase(turns=[ModelTestCase(input="hi", actual_output="hello")]),
    ]
    deepeval = evaluate(test_cases=cases, metrics=["conversation_relevancy"], show_progress=False)
    assert len(deepeval) == 1
    with pytest.raises(UsageError, match="give the samples once"):
        evaluate(samples, dataset=samples, metrics=["tool_call_f1"])


def test_nothing_to_score_is_an_error_not_an_empty_success() -> None:
    with pytest.raises(NothingToScoreError, match="nothing to score"):
        evaluate([], ["tool_call_f1"], show_progress=False)
    bad = {"user_input": [{"type": "tool", "content": "x"}], "reference_tool_calls": []}
    with pytest.raises(NothingToScoreError, match=r"every record of .* is invalid"):
        evaluate([bad], ["tool_call_f1"], show_progress=False, skip_invalid=True)


def _all_relevant(body: dict[str, Any]) -> dict[str, Any]:
    """A fault-server responder for conversation_relevancy: every exchange asked is relevant."""
    keys = body["response_format"]["json_schema"]["schema"]["properties"]["verdicts"]["required"]
    return {"verdicts": {key: {"relevant": True, "reason": ""} for key in keys}}


def test_resuming_with_another_judge_is_refused_naming_the_old_and_the_new(
    tmp_path: Path, fault_server: Any
) -> None:
    """Issue 32 §4: the refusal names the metric and both judges (model and endpoint), and
    nothing is asked or written."""
    fault_server.responder = _all_relevant
    data = write_jsonl(tmp_path / "d.jsonl", [tool_sample(i) for i in range(2)])
    out = tmp_path / "r.jsonl"
    url = fault_server.url
    options: dict[str, Any] = {"api_key": "sk-test", "cache": False, "show_progress": False}

    def run(judge: str, base_url: str) -> Any:
        return evaluate(
            data, ["conversation_relevancy"], judge, base_url=base_url, output=out, **options
        )

    run("openai/m1", url)
    assert fault_server.attempts == 2
    rows, meta = out.read_bytes(), meta_path(out).read_bytes()
    hint = "use --overwrite (overwrite=True in Python) to start again, or another output file (-o)"
    elsewhere = url.replace("/v1", "/v2")  # the same server, another endpoint
    for judge, base_url, new in (
        ("openai/m2", url, f"openai/m2 m2 {url}"),
        ("openai/m1", elsewhere, f"openai/m1 m1 {elsewhere}"),
    ):
        with pytest.raises(ResultsFileError) as caught:
            run(judge, base_url)
        assert str(caught.value) == (
            f"{out} cannot be resumed by this run: conversation_relevancy's judge differs "
            f"(openai/m1 m1 {url} -> {new}); {hint}"
        )
        assert (out.read_bytes(), meta_path(out).read_bytes()) == (rows, meta)
    assert fault_server.attempts == 2  # nothing was asked
    assert len(run("openai/m1", url)) == 2  # the same judge resumes the finished file
    assert fault_server.attempts == 2
