"""RoleAdherenceMetric on scripted verdicts: the role shown, scores, unscored and missing-role
cases (pre-checked before any judge call), strict mode and thresholds, chunking, re-asks."""

from __future__ import annotations

from typing import Any

import pytest
from _judgments import chat, keyed

from convoeval import (
    AIMessage,
    ConversationalTestCase,
    HumanMessage,
    MissingFieldsError,
    MultiTurnSample,
    RoleAdherenceMetric,
    Turn,
    evaluate,
)
from convoeval.judges.fake import FakeJudge
from convoeval.metrics import RoleAdherence, as_metric
from convoeval.metrics.role_adherence import VERDICTS
from convoeval.runner import RequiredFieldsError


def _judge(bad: tuple[int, ...] = ()) -> FakeJudge:
    return FakeJudge({VERDICTS.name: keyed("message", "in_role", bad)})


@pytest.mark.parametrize(
    ("bad", "value"), [((), 1.0), ((1,), 2 / 3), ((1, 5), 1 / 3), ((1, 3, 5), 0.0)]
)
def test_every_verdict_combination(bad: tuple[int, ...], value: float) -> None:
    judge = _judge(bad)
    result = RoleAdherence().score_sync(chat(3), judge=judge)
    assert result.value == pytest.approx(value)
    assert [v["in_role"] for v in result.details["verdicts"]] == [m not in bad for m in (1, 3, 5)]
    assert len(judge.calls) == 1
    misses = "; ".join(f"message {m + 1}: lost" for m in bad)  # user_input[m]
    expected = f"{3 - len(bad)} of 3 replies stayed in role"
    assert result.reason == expected + (f"; not: {misses}" if bad else "") + "."


def test_the_role_is_fenced_in_the_prompt_and_tool_steps_are_not_judged() -> None:
    sample = MultiTurnSample(
        user_input=[
            HumanMessage(content="hi"),
            AIMessage(content="", tool_calls=[{"name": "look", "args": {}}]),
            {"type": "tool", "content": "found"},
            AIMessage(content="Hello!"),
        ],
        chatbot_role="A pirate.\nNever breaks character.",
    )
    judge = _judge()
    assert RoleAdherence().score_sync(sample, judge=judge).value == 1.0
    (call,) = judge.calls
    assert call.inputs.messages == [3]
    assert "<<<ROLE\n    | A pirate.\n    | Never breaks character.\nROLE>>>" in call.prompt


def test_no_reply_is_unscored_without_a_call() -> None:
    sample = MultiTurnSample(user_input=[HumanMessage(content="hi")], chatbot_role="a bot")
    judge = _judge()
    result = RoleAdherence().score_sync(sample, judge=judge)
    assert (result.value, result.error, result.reason) == (
        None,
        None,
        "no assistant reply to judge",
    )
    assert judge.calls == []


def test_a_missing_role_is_refused_before_any_judge_call() -> None:
    judge = _judge()
    with pytest.raises(MissingFieldsError, match="chatbot_role"):
        RoleAdherence().score_sync(chat(2, role=None), judge=judge)
    assert judge.calls == []


def test_the_runner_lists_every_record_without_a_role_before_any_call() -> None:
    judge = _judge()
    samples = [chat(1), chat(1, role=None), chat(2, role=None)]
    samples = [s.model_copy(update={"id": f"r{i}"}) for i, s in enumerate(samples)]
    with pytest.raises(RequiredFieldsError) as raised:
        evaluate(samples, [RoleAdherenceMetric()], judge=judge, show_progress=False)
    message = str(raised.value)
    assert "chatbot_role" in message and "r1" in message and "r2" in message
    assert judge.calls == []


def test_deepeval_case_with_chatbot_role() -> None:
    case = ConversationalTestCase(
        turns=[Turn(role="user", content="hi"), Turn(role="assistant", content="Ahoy!")],
        chatbot_role="A pirate.",
    )
    metric = RoleAdherenceMetric(model=_judge())
    assert metric.measure(case) == 1.0 and metric.is_successful()
    assert metric.reason == "1 of 1 replies stayed in role."
    assert metric.verdicts == [{"message": 1, "in_role": True, "reason": ""}]


@pytest.mark.parametrize(("strict", "bad", "value"), [(True, (), 1.0), (True, (3,), 0.0)])
def test_strict_mode(strict: bool, bad: tuple[int, ...], value: float) -> None:
    metric = RoleAdherenceMetric(strict_mode=strict, threshold=0.1, model=_judge(bad))
    assert metric.threshold == 1.0
    assert metric.measure(chat(3)) == value
    assert metric.is_successful() is (value == 1.0)


@pytest.mark.parametrize(("threshold", "passed"), [(2 / 3, True), (0.67, False)])
def test_threshold_edges(threshold: float, passed: bool) -> None:
    metric = RoleAdherenceMetric(threshold=threshold, model=_judge((3,)))
    metric.measure(chat(3))
    assert metric.is_successful() is passed


def test_chunks_of_twenty_replies() -> None:
    judge = _judge((81,))
    result = RoleAdherence().score_sync(chat(41), judge=judge)
    assert [len(c.inputs.messages) for c in judge.calls] == [20, 20, 1]
    assert result.value == 40 / 41
    assert judge.calls[2].prompt.split("<<<TRANSCRIPT\n")[1].startswith("[80] User: user 40")


def test_missing_verdict_is_reasked() -> None:
    partial: dict[str, Any] = {"verdicts": [{"message": 1, "in_role": True, "reason": ""}]}
    full = {"verdicts": [{"message": m, "in_role": True, "reason": ""} for m in (1, 3)]}
    judge = FakeJudge({VERDICTS.name: [partial, full]})
    assert RoleAdherence().score_sync(chat(2), judge=judge).value == 1.0
    assert "missing verdicts for [3]" in (judge.calls[1].reask or "")


def test_required_fields_and_core() -> None:
    core = as_metric(RoleAdherenceMetric())
    assert isinstance(core, RoleAdherence)
    assert core.required == ("user_input", "chatbot_role") and core.needs_llm
