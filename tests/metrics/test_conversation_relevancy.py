"""ConversationRelevancyMetric on scripted verdicts: windows, scores, strict mode, DeepEval use."""

from __future__ import annotations

from typing import Any

import pytest

from convoeval import (
    AIMessage,
    ConversationalTestCase,
    HumanMessage,
    ModelTestCase,
    MultiTurnSample,
    ToolCall,
    ToolMessage,
    Turn,
)
from convoeval.judges.fake import FakeJudge
from convoeval.metrics import (
    METRICS,
    ConversationRelevancy,
    ConversationRelevancyMetric,
    as_metric,
    describe_metrics,
    get_metric,
)
from convoeval.metrics.conversation_relevancy import VERDICTS


def _case(n: int) -> ConversationalTestCase:
    return ConversationalTestCase(
        turns=[ModelTestCase(input=f"question {i}", actual_output=f"answer {i}") for i in range(n)]
    )


def _verdicts(irrelevant: set[int] = frozenset()) -> Any:  # type: ignore[assignment]
    """A scripted judge function: every asked exchange relevant except `irrelevant`."""

    def answer(inputs: Any) -> dict[str, Any]:
        return {
            "verdicts": [
                {
                    "exchange": i,
                    "relevant": i not in irrelevant,
                    "reason": "" if i not in irrelevant else "off topic",
                }
                for i, _ in inputs.windows
            ]
        }

    return answer


@pytest.mark.parametrize(
    ("window_size", "expected"),
    [
        (1, [(0, 0), (1, 1), (2, 2), (3, 3)]),
        (2, [(0, 0), (1, 0), (2, 1), (3, 2)]),
        (3, [(0, 0), (1, 0), (2, 0), (3, 1)]),
        (10, [(0, 0), (1, 0), (2, 0), (3, 0)]),
    ],
)
def test_windows(window_size: int, expected: list[tuple[int, int]]) -> None:
    judge = FakeJudge({VERDICTS.name: _verdicts()})
    metric = ConversationRelevancyMetric(window_size=window_size)
    result = metric.score_sync(_case(4), judge=judge)
    assert result.value == 1.0
    (call,) = judge.calls
    assert call.inputs.windows == expected
    targets = call.prompt.split("\n\n")[0].splitlines()[1:]
    assert targets == [f"- exchange {i}: context exchanges {s}..{i}" for i, s in expected]


def test_score_counts_relevant_share_and_reason_names_misses() -> None:
    judge = FakeJudge({VERDICTS.name: _verdicts({1, 3})})
    result = ConversationRelevancyMetric().score_sync(_case(4), judge=judge)
    assert result.value == 0.5
    assert result.reason == (
        "2 of 4 replies were relevant; not relevant: exchange 2: off topic; exchange 4: off topic."
    )
    assert result.usage.requests == 1


def test_one_call_for_twenty_exchanges_and_few_for_more() -> None:
    judge = FakeJudge({VERDICTS.name: _verdicts()})
    ConversationRelevancyMetric().score_sync(_case(20), judge=judge)
    assert len(judge.calls) == 1
    judge = FakeJudge({VERDICTS.name: _verdicts()})
    result = ConversationRelevancyMetric(window_size=3).score_sync(_case(45), judge=judge)
    assert len(judge.calls) == 3 and result.details["judged"] == 45
    # The second call shows the context of its first window: exchanges 18 and 19.
    assert (
        "## Exchange 18" in judge.calls[1].prompt and "## Exchange 17" not in judge.calls[1].prompt
    )


def test_unanswered_exchanges_are_context_not_verdicts() -> None:
    sample = MultiTurnSample(
        user_input=[
            HumanMessage(content="hi"),
            AIMessage(content="hello"),
            HumanMessage(content="order 5?"),
            AIMessage(content="", tool_calls=[ToolCall(name="get", args={"id": 5})]),
            ToolMessage(content="shipped"),
            AIMessage(content="It shipped."),
            HumanMessage(content="and then?"),
        ]
    )
    judge = FakeJudge({VERDICTS.name: _verdicts()})
    result = ConversationRelevancyMetric().score_sync(sample, judge=judge)
    assert judge.calls[0].inputs.windows == [(0, 0), (1, 0)]
    assert 'calls tool get with {"id": 5}' in judge.calls[0].prompt
    assert result.details["judged"] == 2 and result.details["exchanges"] == 3


def test_nothing_to_judge_is_unscored_not_one() -> None:
    sample = MultiTurnSample(user_input=[HumanMessage(content="hello?")])
    judge = FakeJudge({})
    metric = ConversationRelevancyMetric()
    result = metric.score_sync(sample, judge=judge)
    assert result.value is None and result.reason == "no exchange has an assistant reply to judge"
    assert metric.measure(ConversationalTestCase(turns=[Turn(role="user", content="x")])) is None
    assert metric.score is None and metric.is_successful() is False  # DeepEval: 1.0, passes


@pytest.mark.parametrize(
    ("irrelevant", "strict", "score", "success"),
    [
        (set(), False, 1.0, True),
        ({0}, False, 0.75, True),
        ({0, 1}, False, 0.5, True),  # threshold edge: 0.5 >= 0.5 passes
        ({0, 1, 2}, False, 0.25, False),
        (set(), True, 1.0, True),
        ({0}, True, 0.0, False),
    ],
)
def test_measure_sets_deepeval_attributes(
    irrelevant: set[int], strict: bool, score: float, success: bool
) -> None:
    judge = FakeJudge({VERDICTS.name: _verdicts(irrelevant)})
    metric = ConversationRelevancyMetric(model=judge, strict_mode=strict)
    assert metric.measure(_case(4)) == score
    assert metric.score == score and metric.success is success
    assert metric.is_successful() is success
    assert [v["exchange"] for v in metric.verdicts] == [0, 1, 2, 3]
    assert metric.threshold == (1.0 if strict else 0.5)


async def test_scoring_works_before_and_after_measure_whatever_its_outcome() -> None:
    """Issue 10 §1: after measure() on a sample it cannot score, `.score` was the instance
    attribute None, so score_sync / score / multi_turn_score raised "'NoneType' object is not
    callable". The facade keeps DeepEval's float in `.score` and scores through its core."""
    judge = FakeJudge({VERDICTS.name: _verdicts()})
    metric = ConversationRelevancyMetric(model=judge)
    unanswered = MultiTurnSample(user_input=[HumanMessage(content="hello?")])
    before = metric.score_sync(_case(1)).value
    assert await metric.a_measure(unanswered) is None and metric.score is None
    assert metric.score_sync(_case(2)).value == before == 1.0
    assert (await metric.core.score(_case(3))).value == 1.0
    assert metric.multi_turn_score(_case(1)) == 1.0
    assert await metric.multi_turn_ascore(_case(1)) == 1.0
    assert metric.measure(_case(2)) == 1.0 and metric.score == 1.0
    assert isinstance(metric.score, float)
    assert metric.score_sync(_case(2)).value == 1.0
    assert metric.score == 1.0  # scoring never touches the DeepEval state
    assert as_metric(metric) is metric.core and isinstance(metric.core, ConversationRelevancy)


def test_the_facade_is_registered_under_the_core_name() -> None:
    assert METRICS["conversation_relevancy"] is ConversationRelevancy
    assert isinstance(
        get_metric("ConversationRelevancyMetric", window_size=2), ConversationRelevancy
    )
    row = next(r for r in describe_metrics() if r["name"] == "conversation_relevancy")
    assert row["class"] == "ConversationRelevancyMetric"
    metric = ConversationRelevancyMetric(threshold=0.7, window_size=4, strict_mode=False)
    assert (metric.name, metric.threshold, metric.window_size) == ("conversation_relevancy", 0.7, 4)
    assert metric.core.config() == {"window_size": 4, "strict_mode": False, "include_reason": True}


def test_misaligned_verdicts_are_re_asked() -> None:
    partial = {"verdicts": [{"exchange": 0, "relevant": True, "reason": ""}]}
    full = {"verdicts": [{"exchange": i, "relevant": True, "reason": ""} for i in (0, 1)]}
    judge = FakeJudge({VERDICTS.name: [partial, full]})
    result = ConversationRelevancyMetric().score_sync(_case(2), judge=judge)
    assert result.value == 1.0 and result.usage.requests == 2
    assert "missing verdicts for [1]" in (judge.calls[1].reask or "")


def test_window_size_below_one_is_an_error() -> None:
    with pytest.raises(ValueError, match="window_size must be an integer >= 1"):
        ConversationRelevancyMetric(window_size=0)


def test_sync_mode_and_verbose_print(capsys: pytest.CaptureFixture[str]) -> None:
    judge = FakeJudge({VERDICTS.name: _verdicts({1})})
    metric = ConversationRelevancyMetric(model=judge, async_mode=False, verbose_mode=True)
    metric.measure(_case(2))
    out = capsys.readouterr().out
    assert "window exchanges 1..2:" in out and "-> exchange 2: not relevant: off topic" in out


def test_prompt_snapshot() -> None:
    judge = FakeJudge({VERDICTS.name: _verdicts()})
    ConversationRelevancyMetric(window_size=2).score_sync(_case(2), judge=judge)
    assert judge.calls[0].prompt == (
        "Judge the final assistant reply of each of these exchanges, using as context only the "
        "exchanges listed for it:\n"
        "- exchange 0: context exchanges 0..0\n- exchange 1: context exchanges 0..1\n\n"
        "<<<CONVERSATION\n## Exchange 0\n[0] User: question 0\n[1] Assistant: answer 0\n\n"
        "## Exchange 1\n[2] User: question 1\n[3] Assistant: answer 1\nCONVERSATION>>>"
    )
