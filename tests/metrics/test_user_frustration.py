"""UserFrustration on scripted verdicts: the none/resolved/unresolved mapping, the first message,
the answer check, long conversations in parts, strict mode and thresholds."""

from __future__ import annotations

from typing import Any

import pytest
from _judgments import chat

from convoeval import AIMessage, MultiTurnSample, UserFrustration
from convoeval.judges.fake import FakeJudge
from convoeval.metrics import get_metric
from convoeval.metrics.user_frustration import VERDICT


def _verdict(kind: str, first: int | None = None, reason: str = "because") -> dict[str, Any]:
    return {"frustration": kind, "first_message": first, "reason": reason}


@pytest.mark.parametrize(
    ("kind", "first", "value"),
    [("none", None, 1.0), ("resolved", 2, 0.5), ("unresolved", 4, 0.0)],
)
def test_mapping_to_a_score(kind: str, first: int | None, value: float) -> None:
    judge = FakeJudge({VERDICT.name: [_verdict(kind, first)]})
    result = UserFrustration().score_sync(chat(3), judge=judge)
    assert result.value == value and len(judge.calls) == 1
    assert (result.details["frustration"], result.details["first_message"]) == (kind, first)
    where = f" (first shows in message {first + 1})" if first is not None else ""
    assert result.reason == f"frustration: {kind}{where}: because"


def test_a_first_message_given_with_none_is_dropped() -> None:
    judge = FakeJudge({VERDICT.name: [_verdict("none", 3)]})
    result = UserFrustration().score_sync(chat(2), judge=judge)
    assert result.value == 1.0 and result.details["first_message"] is None


@pytest.mark.parametrize("first", [None, 1, 9])
def test_frustration_must_name_a_user_message_or_is_reasked(first: int | None) -> None:
    judge = FakeJudge({VERDICT.name: [_verdict("unresolved", first), _verdict("unresolved", 2)]})
    result = UserFrustration().score_sync(chat(2), judge=judge)
    assert result.value == 0.0 and result.details["first_message"] == 2
    assert "first_message must be one of the user messages [0, 2]" in (judge.calls[1].reask or "")


def test_no_user_message_is_unscored() -> None:
    sample = MultiTurnSample(user_input=[AIMessage(content="Hello, how can I help?")])
    judge = FakeJudge({VERDICT.name: []})
    result = UserFrustration().score_sync(sample, judge=judge)
    assert result.value is None and result.reason == "the conversation has no user message"


@pytest.mark.parametrize(
    ("parts", "kind", "first"),
    [
        (["none", "none"], "none", None),
        (["unresolved", "none"], "resolved", 0),  # calm again in the last part
        (["none", "unresolved"], "unresolved", 60),
        (["resolved", "unresolved"], "unresolved", 0),
        (["unresolved", "resolved"], "resolved", 0),
    ],
)
def test_long_conversations_are_judged_in_parts_of_sixty(
    parts: list[str], kind: str, first: int | None
) -> None:
    answers = [_verdict(p, None if p == "none" else 60 * i) for i, p in enumerate(parts)]
    judge = FakeJudge({VERDICT.name: answers})
    result = UserFrustration().score_sync(chat(60), judge=judge)  # 120 messages: 2 parts
    assert [c.inputs.user_messages[0] for c in judge.calls] == [0, 60]
    assert (result.details["frustration"], result.details["first_message"]) == (kind, first)
    assert len(result.details["verdicts"]) == 2


@pytest.mark.parametrize(("kind", "value"), [("none", 1.0), ("resolved", 0.0)])
def test_strict_mode(kind: str, value: float) -> None:
    judge = FakeJudge({VERDICT.name: [_verdict(kind, None if kind == "none" else 0)]})
    metric = UserFrustration(strict_mode=True)
    assert metric.threshold == 1.0
    assert metric.score_sync(chat(1), judge=judge).value == value


@pytest.mark.parametrize(("threshold", "passed"), [(0.5, True), (0.6, False)])
def test_threshold_edges(threshold: float, passed: bool) -> None:
    judge = FakeJudge({VERDICT.name: [_verdict("resolved", 0)]})
    metric = UserFrustration(threshold=threshold)
    assert metric.passed(metric.score_sync(chat(1), judge=judge)) is passed


def test_registered_under_its_snake_name_and_its_class_name() -> None:
    assert get_metric("user_frustration").name == "user_frustration"
    assert isinstance(get_metric("UserFrustration"), UserFrustration)
    assert UserFrustration.needs_llm and UserFrustration.default_threshold == 0.5
