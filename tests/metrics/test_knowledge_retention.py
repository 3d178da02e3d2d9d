"""KnowledgeRetentionMetric on scripted verdicts: which replies are judged, scores, unscored
cases, strict mode and thresholds, chunking, re-asks, DeepEval habits."""

from __future__ import annotations

from typing import Any

import pytest
from _judgments import chat, keyed

from convoeval import KnowledgeRetentionMetric
from convoeval.judges.fake import FakeJudge
from convoeval.metrics import KnowledgeRetention, as_metric, get_metric
from convoeval.metrics.knowledge_retention import FACTS, VERDICTS


def _facts(*messages: int) -> dict[str, Any]:
    return {"facts": [{"message": m, "fact": f"fact of {m}"} for m in messages]}


def _judge(facts: dict[str, Any], bad: tuple[int, ...] = ()) -> FakeJudge:
    return FakeJudge({FACTS.name: [facts], VERDICTS.name: keyed("message", "retained", bad)})


@pytest.mark.parametrize(
    ("bad", "value"),
    [((), 1.0), ((3,), 0.5), ((5,), 0.5), ((3, 5), 0.0)],
)
def test_every_verdict_combination(bad: tuple[int, ...], value: float) -> None:
    judge = _judge(_facts(2), bad)
    result = KnowledgeRetention().score_sync(chat(3), judge=judge)
    assert result.value == value
    assert [v["message"] for v in result.details["verdicts"]] == [3, 5]  # replies after message 2
    assert result.details["retained"] == 2 - len(bad)
    for m in bad:
        assert f"message {m + 1}: lost" in (result.reason or "")  # user_input[m]
    assert len(judge.calls) == 2


def test_reason_and_details_come_from_the_verdicts() -> None:
    result = KnowledgeRetention().score_sync(chat(3), judge=_judge(_facts(0, 2), (3,)))
    assert result.reason == "2 of 3 replies kept the user's facts; not: message 4: lost."
    assert result.details["facts"] == [
        {"message": 0, "fact": "fact of 0"},
        {"message": 2, "fact": "fact of 2"},
    ]
    assert result.details["judged"] == 3


def test_only_facts_before_the_last_reply_are_shown() -> None:
    judge = _judge(_facts(0, 4))
    KnowledgeRetention().score_sync(chat(3), judge=judge)
    (call,) = judge.calls_for(VERDICTS.name)
    assert call.inputs.messages == [1, 3, 5]
    assert '- fact (message 0): "fact of 0"' in call.prompt
    assert '- fact (message 4): "fact of 4"' in call.prompt


def test_no_facts_is_unscored_after_one_call() -> None:
    judge = FakeJudge({FACTS.name: [{"facts": []}]})
    result = KnowledgeRetention().score_sync(chat(3), judge=judge)
    assert (result.value, result.error) == (None, None)
    assert result.reason == "the user stated no facts to remember"
    assert len(judge.calls) == 1


def test_no_reply_after_the_first_fact_is_unscored() -> None:
    sample = chat(3)
    sample.user_input = sample.user_input[:5]  # ends with user message 4
    judge = FakeJudge({FACTS.name: [_facts(4)]})
    result = KnowledgeRetention().score_sync(sample, judge=judge)
    assert result.value is None and result.error is None
    assert result.reason == "no assistant reply comes after the user's first fact"


@pytest.mark.parametrize(("bad", "value"), [((), 1.0), ((3,), 0.0)])
def test_strict_mode_is_all_or_nothing_with_threshold_one(
    bad: tuple[int, ...], value: float
) -> None:
    metric = KnowledgeRetentionMetric(strict_mode=True, threshold=0.2)
    assert metric.threshold == 1.0
    result = metric.score_sync(chat(3), judge=_judge(_facts(0), bad))
    assert result.value == value
    assert metric.core.passed(result) is (value == 1.0)


@pytest.mark.parametrize(("threshold", "passed"), [(0.5, True), (0.51, False)])
def test_threshold_edges(threshold: float, passed: bool) -> None:
    metric = KnowledgeRetentionMetric(threshold=threshold, model=_judge(_facts(2), (3,)))
    assert metric.measure(chat(3)) == 0.5
    assert metric.success is passed and metric.is_successful() is passed
    assert [v["retained"] for v in metric.verdicts] == [False, True]


def test_long_conversations_are_judged_in_chunks_of_twenty() -> None:
    judge = FakeJudge(
        {
            FACTS.name: lambda inputs: _facts(inputs.user_messages[0]),
            VERDICTS.name: keyed("message", "retained", {49}),
        }
    )
    result = KnowledgeRetention().score_sync(chat(25), judge=judge)
    facts = judge.calls_for(FACTS.name)
    verdicts = judge.calls_for(VERDICTS.name)
    assert [len(c.inputs.user_messages) for c in facts] == [20, 5]
    assert [c.inputs.messages[0] for c in verdicts] == [1, 41]
    assert [len(c.inputs.messages) for c in verdicts] == [20, 5]
    assert result.value == 24 / 25
    # The second chunk shows its messages from the user message before its first reply.
    assert verdicts[1].prompt.split("<<<TRANSCRIPT\n")[1].startswith("[40] User: user 20")


@pytest.mark.parametrize(
    "first",
    [
        {"verdicts": [{"message": 3, "retained": True, "reason": ""}]},  # 5 missing
        {
            "verdicts": [
                {"message": m, "retained": True, "reason": ""} for m in (3, 5, 7)
            ]  # 7 extra
        },
    ],
)
def test_missing_or_extra_verdicts_are_reasked(first: dict[str, Any]) -> None:
    good = {"verdicts": [{"message": m, "retained": True, "reason": ""} for m in (3, 5)]}
    judge = FakeJudge({FACTS.name: [_facts(2)], VERDICTS.name: [first, good]})
    result = KnowledgeRetention().score_sync(chat(3), judge=judge)
    assert result.value == 1.0
    asks = judge.calls_for(VERDICTS.name)
    assert len(asks) == 2 and asks[1].reask is not None
    assert result.usage.requests == 3


def test_a_fact_on_a_message_the_user_did_not_write_is_reasked() -> None:
    judge = FakeJudge(
        {FACTS.name: [_facts(1), _facts(2)], VERDICTS.name: keyed("message", "retained")}
    )
    result = KnowledgeRetention().score_sync(chat(3), judge=judge)
    assert result.value == 1.0
    assert "not among the user messages" in (judge.calls_for(FACTS.name)[1].reask or "")


def test_a_judge_that_keeps_dropping_verdicts_fails_the_metric() -> None:
    partial = {"verdicts": [{"message": 3, "retained": True, "reason": ""}]}
    judge = FakeJudge({FACTS.name: [_facts(2)], VERDICTS.name: [partial, partial]})
    result = KnowledgeRetention().score_sync(chat(3), judge=judge)
    assert result.failed and result.value is None


def test_names_options_and_sequential_mode() -> None:
    facade = KnowledgeRetentionMetric(async_mode=False, include_reason=False)
    core = as_metric(facade)
    assert isinstance(core, KnowledgeRetention) and core.name == "knowledge_retention"
    assert core.needs_llm and core.uses_judge
    assert isinstance(get_metric("KnowledgeRetentionMetric"), KnowledgeRetention)
    result = core.score_sync(chat(3), judge=_judge(_facts(0)))
    assert result.value == 1.0
    assert result.reason == "knowledge_retention reasons are off (include_reason=False)"


def test_verbose_mode_prints_the_verdicts(capsys: pytest.CaptureFixture[str]) -> None:
    KnowledgeRetention(verbose_mode=True).score_sync(chat(2), judge=_judge(_facts(0), (3,)))
    out = capsys.readouterr().out
    assert out.startswith("knowledge_retention: 0.5: 1 of 2 replies")
    assert "'message': 3, 'retained': False" in out


def test_a_runaway_list_of_facts_is_reasked_with_its_bound() -> None:
    """Issue 13 leftover: a small local model can repeat facts until its token limit; the schema
    bounds the list (so a grammar-constrained server stops it) and a longer one is re-asked."""
    runaway = {"facts": [{"message": 2, "fact": f"fact {k}"} for k in range(61)]}
    judge = FakeJudge(
        {FACTS.name: [runaway, _facts(2)], VERDICTS.name: keyed("message", "retained")}
    )
    result = KnowledgeRetention().score_sync(chat(3), judge=judge)
    assert result.value == 1.0
    assert "at most 60" in (judge.calls_for(FACTS.name)[1].reask or "")
    assert FACTS.output.model_json_schema()["properties"]["facts"]["maxItems"] == 60
