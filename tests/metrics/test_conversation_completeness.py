"""ConversationCompletenessMetric on scripted verdicts: intentions numbered and judged to the end,
scores, unscored cases, strict mode and thresholds, chunking, re-asks."""

from __future__ import annotations

from typing import Any

import pytest
from _judgments import chat, keyed

from convoeval import ConversationCompletenessMetric
from convoeval.judges.fake import FakeJudge
from convoeval.metrics import ConversationCompleteness, as_metric
from convoeval.metrics.conversation_completeness import INTENTIONS, VERDICTS


def _intentions(*messages: int) -> dict[str, Any]:
    return {"intentions": [{"message": m, "intention": f"wish {m}"} for m in messages]}


def _judge(found: dict[str, Any], bad: tuple[int, ...] = ()) -> FakeJudge:
    return FakeJudge(
        {INTENTIONS.name: [found], VERDICTS.name: keyed("intention", "satisfied", bad)}
    )


@pytest.mark.parametrize(("bad", "value"), [((), 1.0), ((1,), 0.5), ((2,), 0.5), ((1, 2), 0.0)])
def test_every_verdict_combination(bad: tuple[int, ...], value: float) -> None:
    judge = _judge(_intentions(4, 0), bad)  # numbered in message order: 1 <- msg 0, 2 <- msg 4
    result = ConversationCompleteness().score_sync(chat(3), judge=judge)
    assert result.value == value
    assert result.details["verdicts"] == [
        {"intention": n, "satisfied": n not in bad, "reason": "lost" if n in bad else "",
         "text": f"wish {m}", "message": m}
        for n, m in ((1, 0), (2, 4))
    ]  # fmt: skip
    assert len(judge.calls) == 2


def test_prompt_numbers_and_quotes_intentions_and_shows_the_rest_of_the_conversation() -> None:
    judge = _judge(_intentions(2, 4), (2,))
    result = ConversationCompleteness().score_sync(chat(3), judge=judge)
    (call,) = judge.calls_for(VERDICTS.name)
    assert '- intention 1: "wish 2" (from message 2)' in call.prompt
    assert '- intention 2: "wish 4" (from message 4)' in call.prompt
    transcript = call.prompt.split("<<<TRANSCRIPT\n")[1]
    assert transcript.startswith("[2] User: user 1") and "[5] Assistant: reply 2" in transcript
    assert result.reason == (
        '1 of 2 user intentions were satisfied; not: intention 2 ("wish 4"): lost.'
    )


def test_no_intention_is_unscored_after_one_call() -> None:
    judge = FakeJudge({INTENTIONS.name: [{"intentions": []}]})
    result = ConversationCompleteness().score_sync(chat(2), judge=judge)
    assert (result.value, result.error) == (None, None)
    assert result.reason == "the user asked for nothing" and len(judge.calls) == 1


@pytest.mark.parametrize(("bad", "value"), [((), 1.0), ((1,), 0.0)])
def test_strict_mode(bad: tuple[int, ...], value: float) -> None:
    metric = ConversationCompletenessMetric(strict_mode=True, model=_judge(_intentions(0, 2), bad))
    assert metric.threshold == 1.0 and metric.measure(chat(2)) == value


@pytest.mark.parametrize(("threshold", "passed"), [(0.5, True), (0.500001, False)])
def test_threshold_edges(threshold: float, passed: bool) -> None:
    metric = ConversationCompletenessMetric(
        threshold=threshold, model=_judge(_intentions(0, 2), (1,))
    )
    assert metric.measure(chat(2)) == 0.5 and metric.is_successful() is passed


def test_chunks_of_twenty_user_messages_and_twenty_intentions() -> None:
    judge = FakeJudge(
        {
            INTENTIONS.name: lambda inputs: _intentions(*inputs.user_messages),
            VERDICTS.name: keyed("intention", "satisfied", {25}),
        }
    )
    result = ConversationCompleteness().score_sync(chat(25), judge=judge)
    assert [len(c.inputs.user_messages) for c in judge.calls_for(INTENTIONS.name)] == [20, 5]
    assert [c.inputs.numbers for c in judge.calls_for(VERDICTS.name)] == [
        list(range(1, 21)),
        list(range(21, 26)),
    ]
    assert result.value == 24 / 25 and result.details["intentions"] == 25


def test_unknown_intention_number_and_a_non_user_message_are_reasked() -> None:
    extra = {"verdicts": [{"intention": n, "satisfied": True, "reason": ""} for n in (1, 2)]}
    good = {"verdicts": [{"intention": 1, "satisfied": True, "reason": ""}]}
    judge = FakeJudge(
        {INTENTIONS.name: [_intentions(1), _intentions(0)], VERDICTS.name: [extra, good]}
    )
    result = ConversationCompleteness().score_sync(chat(2), judge=judge)
    assert result.value == 1.0 and result.usage.requests == 4
    assert "not among the user messages" in (judge.calls[1].reask or "")
    assert "unknown intention [2]" in (judge.calls[3].reask or "")


def test_core_and_names() -> None:
    core = as_metric(ConversationCompletenessMetric())
    assert isinstance(core, ConversationCompleteness)
    assert (core.name, core.needs_llm, core.threshold) == ("conversation_completeness", True, 0.5)


def test_a_runaway_list_of_intentions_is_reasked_with_its_bound() -> None:
    """Issue 13 leftover: the intentions list is bounded in the schema (a grammar-constrained
    server stops a small model's repetition there) and a longer answer is re-asked."""
    runaway = {"intentions": [{"message": 0, "intention": f"wish {k}"} for k in range(41)]}
    judge = FakeJudge(
        {INTENTIONS.name: [runaway, _intentions(0)], VERDICTS.name: keyed("intention", "satisfied")}
    )
    result = ConversationCompleteness().score_sync(chat(3), judge=judge)
    assert result.value == 1.0
    assert "at most 40" in (judge.calls_for(INTENTIONS.name)[1].reask or "")
    assert INTENTIONS.output.model_json_schema()["properties"]["intentions"]["maxItems"] == 40
