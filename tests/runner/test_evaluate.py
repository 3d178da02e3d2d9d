"""`evaluate` / `aevaluate` on real metrics and scripted judges: inputs, rows, order, failures."""

from __future__ import annotations

import json
import statistics
import sys
from pathlib import Path
from typing import Any

import pytest
from _runner_samples import BoomMetric, DelayMetric, tool_sample, write_jsonl

from convoeval import (
    ConversationalTestCase,
    ConversationRelevancyMetric,
    EvaluationResult,
    ModelTestCase,
    ToolCallAccuracy,
    ToolCallF1,
    TopicAdherenceScore,
    aevaluate,
    evaluate,
)
from convoeval.io import DataError
from convoeval.judges import FakeJudge
from convoeval.metrics import MetricFailedError
from convoeval.metrics.conversation_relevancy import VERDICTS
from convoeval.runner import OfflineJudgeError, RequiredFieldsError, read_meta


def _relevant(inputs: Any) -> dict[str, Any]:
    return {
        "verdicts": [{"exchange": i, "relevant": True, "reason": ""} for i, _ in inputs["windows"]]
    }


def test_scores_match_the_metrics_and_summary_is_exact(tmp_path: Path) -> None:
    samples = [tool_sample(i, right=i % 3 != 0) for i in range(10)]
    result = evaluate(samples, [ToolCallAccuracy(), "tool_call_f1"], show_progress=False)
    rows = list(result.rows())
    assert [r["index"] for r in rows] == list(range(10))
    assert [r["id"] for r in rows] == [f"s{i}" for i in range(10)]
    expected = [ToolCallAccuracy().score_sync(s).value for s in samples]
    assert [r["scores"]["tool_call_accuracy"] for r in rows] == expected
    assert rows[3]["sample"] == samples[3].to_dict()
    assert rows[3]["errors"] == {} and "lookup" in rows[3]["reasons"]["tool_call_accuracy"]
    summary = result.summary()["tool_call_accuracy"]
    values = [v for v in expected if v is not None]
    assert summary["mean"] == pytest.approx(statistics.mean(values))
    assert summary["std"] == pytest.approx(statistics.stdev(values))
    assert summary["scored"] == 10 and summary["unscored"] == 0 and summary["failed"] == 0
    assert summary["pass_rate"] == pytest.approx(sum(v >= 1.0 for v in values) / 10)
    assert len(result) == 10 and result.metric_names == ["tool_call_accuracy", "tool_call_f1"]
    assert "tool_call_accuracy: mean=" in repr(result)


def test_every_input_form_gives_the_same_rows(tmp_path: Path) -> None:
    samples = [tool_sample(i) for i in range(4)]
    path = write_jsonl(tmp_path / "data.jsonl", samples)
    openai_layout = {
        "messages": [
            {"role": "user", "content": "please look up item 0"},
            {
                "role": "assistant",
                "content": "",
                "tool_calls": [
                    {
                        "id": "c1",
                        "type": "function",
                        "function": {"name": "lookup", "arguments": '{"n": 0}'},
                    }
                ],
            },
            {"role": "tool", "tool_call_id": "c1", "content": "ok"},
            {"role": "assistant", "content": "done"},
        ],
        "reference_tool_calls": [{"name": "lookup", "args": {"n": 0}}],
    }
    forms: list[Any] = [
        samples,
        path,
        str(path),
        (s for s in samples),  # an iterator: spooled during the checking pass
        [s.to_dict() for s in samples],
    ]
    expected = [1.0] * 4
    for form in forms:
        result = evaluate(form, ["tool_call_accuracy"], show_progress=False)
        assert [r["scores"]["tool_call_accuracy"] for r in result.rows()] == expected, form
        where = next(result.rows())["where"]
        assert where == (
            f"{path}:1 (id 's0')" if isinstance(form, str | Path) else "samples[0] (id 's0')"
        )
    mixed = evaluate([openai_layout, samples[1]], "tool_call_accuracy", show_progress=False)
    assert [r["scores"]["tool_call_accuracy"] for r in mixed.rows()] == [1.0, 1.0]
    case = ConversationalTestCase(
        turns=[ModelTestCase(input="hi", actual_output="hello")], name="case"
    )
    judge = FakeJudge({VERDICTS.name: _relevant})
    rel = evaluate([case], [ConversationRelevancyMetric()], judge, show_progress=False)
    assert next(rel.rows())["scores"] == {"conversation_relevancy": 1.0}


def test_rows_stream_in_input_order_when_later_records_finish_first(tmp_path: Path) -> None:
    metric = DelayMetric(total=40, reverse=5)  # records 5, 4, 3, 2, 1, 0 finish in that order
    result = evaluate(
        [tool_sample(i) for i in range(40)],
        [metric],
        max_concurrency=4,
        output=tmp_path / "r.jsonl",
        show_progress=False,
    )
    assert [metric.seen.index(f"s{i}") for i in range(6)] == sorted(
        (metric.seen.index(f"s{i}") for i in range(6)), reverse=True
    )
    lines = (tmp_path / "r.jsonl").read_text().splitlines()
    assert [json.loads(line)["index"] for line in lines] == list(range(40))
    assert [r["index"] for r in result.rows()] == list(range(40))
    # The window bounds the records in flight: 4 x max_concurrency.
    assert 1 < metric.peak <= 16


def test_one_judge_failure_never_stops_the_others() -> None:
    samples = [tool_sample(i) for i in range(6)]
    result = evaluate(samples, [BoomMetric(), ToolCallF1()], show_progress=False)
    rows = list(result.rows())
    for row in rows:
        odd = row["index"] % 2 == 1
        assert row["scores"]["tool_call_f1"] == 1.0
        if odd:
            assert row["scores"]["boom_metric"] is None
            assert row["errors"]["boom_metric"] == {
                "type": "JudgeError",
                "message": f"step 'boom': boom on {row['index']}",
            }
        else:
            assert row["scores"]["boom_metric"] == 1.0 and "boom_metric" not in row["errors"]
    summary = result.summary()["boom_metric"]
    assert (summary["scored"], summary["failed"], summary["unscored"]) == (3, 3, 0)
    with pytest.raises(MetricFailedError, match="boom on 1"):
        evaluate(samples, [BoomMetric()], show_progress=False, raise_exceptions=True)


def test_unscored_is_null_with_a_reason_never_zero() -> None:
    sample = tool_sample(0).model_copy(update={"reference_topics": []})
    judge = FakeJudge({})
    result = evaluate([sample], [TopicAdherenceScore()], judge, show_progress=False)
    row = next(result.rows())
    assert row["scores"]["topic_adherence"] is None
    assert "reference_topics is empty" in row["reasons"]["topic_adherence"]
    assert result.summary()["topic_adherence"]["unscored"] == 1
    assert result.summary()["topic_adherence"]["mean"] is None
    assert judge.calls == []


def test_missing_fields_are_all_listed_before_any_judge_call(tmp_path: Path) -> None:
    samples = [tool_sample(i) for i in range(5)]
    samples[1] = samples[1].model_copy(update={"reference_topics": None})
    samples[3] = samples[3].model_copy(
        update={"reference_topics": None, "reference_tool_calls": None}
    )
    path = write_jsonl(tmp_path / "d.jsonl", samples)
    judge = FakeJudge({})
    with pytest.raises(RequiredFieldsError) as caught:
        evaluate(path, [TopicAdherenceScore(), ToolCallAccuracy()], judge, show_progress=False)
    problems = caught.value.problems
    assert len(problems) == 2
    assert problems[0].startswith(f"{path}:2 (id 's1'): missing reference_topics")
    assert problems[1] == (
        f"{path}:4 (id 's3'): missing reference_topics (needed by topic_adherence); "
        "reference_tool_calls (needed by tool_call_accuracy)"
    )
    assert judge.calls == []
    assert not (tmp_path / "out.jsonl").exists()


def test_invalid_records_are_all_listed(tmp_path: Path) -> None:
    path = tmp_path / "bad.jsonl"
    good = tool_sample(0).to_dict()
    path.write_text(
        json.dumps(good) + "\n{oops\n" + json.dumps({"user_input": []}) + "\n", encoding="utf-8"
    )
    with pytest.raises(DataError) as caught:
        evaluate(path, ["tool_call_f1"], show_progress=False)
    assert [p.split(":")[1] for p in caught.value.problems] == ["2", "3"]
    with pytest.raises(DataError, match=r"samples\[1\]"):
        evaluate([good, {"nonsense": 1}], ["tool_call_f1"], show_progress=False)


def test_llm_metric_with_offline_judge_is_refused_up_front() -> None:
    with pytest.raises(OfflineJudgeError, match="--judge openai/MODEL"):
        evaluate([tool_sample(0)], ["agent_goal_accuracy"], show_progress=False)
    with pytest.raises(OfflineJudgeError, match="agent_goal_accuracy"):
        evaluate([tool_sample(0)], ["agent_goal_accuracy"], "offline", show_progress=False)


def test_usage_is_totalled_and_cost_is_unknown_for_a_fake_judge(tmp_path: Path) -> None:
    judge = FakeJudge({VERDICTS.name: _relevant})
    samples = [tool_sample(i) for i in range(3)]
    result = evaluate(samples, [ConversationRelevancyMetric()], judge, show_progress=False)
    assert result.usage.requests == 3 == len(judge.calls)
    cost, note = result.cost()
    assert cost is None and note.startswith("no price")
    assert sum(r["usage"]["requests"] for r in result.rows()) == 3


def test_measure_shadowing_score_does_not_break_the_runner() -> None:
    judge = FakeJudge({VERDICTS.name: _relevant})
    metric = ConversationRelevancyMetric()
    metric.judge = judge
    assert metric.measure(tool_sample(0)) == 1.0  # sets the instance attribute `.score`
    result = evaluate([tool_sample(1), tool_sample(2)], [metric], show_progress=False)
    assert [r["scores"]["conversation_relevancy"] for r in result.rows()] == [1.0, 1.0]


def test_exports_pandas_jsonl_and_meta(tmp_path: Path) -> None:
    result = evaluate(
        [tool_sample(i, right=i != 1) for i in range(3)],
        ["tool_call_accuracy"],
        output=tmp_path / "out" / "r.jsonl",
        show_progress=False,
    )
    frame = result.to_pandas()
    assert list(frame["tool_call_accuracy"]) == [1.0, 0.0, 1.0]
    assert list(frame["id"]) == ["s0", "s1", "s2"]
    assert frame["tool_call_accuracy_error"].isna().all()
    copy = result.to_jsonl(tmp_path / "copy.jsonl")
    assert copy.read_text() == (tmp_path / "out" / "r.jsonl").read_text()
    meta = read_meta(tmp_path / "out" / "r.jsonl")
    assert meta is not None and meta["records"] == 3 and meta["completed"]
    assert meta["metrics"][0]["name"] == "tool_call_accuracy"
    again = EvaluationResult.from_file(tmp_path / "out" / "r.jsonl")
    assert again.summary() == result.summary()


async def test_aevaluate_runs_inside_an_event_loop() -> None:
    result = await aevaluate([tool_sample(0)], ["tool_call_f1"], show_progress=False)
    assert next(result.rows())["scores"] == {"tool_call_f1": 1.0}
    # The sync wrapper works inside a running loop too (Jupyter habit).
    assert len(evaluate([tool_sample(1)], ["tool_call_f1"], show_progress=False)) == 1


def test_to_pandas_without_pandas_names_the_extra(monkeypatch: pytest.MonkeyPatch) -> None:
    result = evaluate([tool_sample(0)], ["tool_call_f1"], show_progress=False)
    monkeypatch.setitem(sys.modules, "pandas", None)  # makes `import pandas` fail
    with pytest.raises(ImportError, match=r'pip install "convoeval\[pandas\]"'):
        result.to_pandas()
