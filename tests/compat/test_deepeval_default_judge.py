"""DeepEval code omits `model=` and relies on OPENAI_API_KEY (issue 34 §2): a DeepEval-named
metric that needs a language model and gets none uses DeepEval's default model (gpt-4.1) when
the key is set, and otherwise `measure()` raises an error saying how to choose a judge; never a
silent None. Over real sockets: OPENAI_BASE_URL points at the local fake server."""

from __future__ import annotations

from typing import TYPE_CHECKING

import pytest

from convoeval import (
    ConversationalTestCase,
    GoalAccuracyMetric,
    JudgeConfigError,
    KnowledgeRetentionMetric,
    Turn,
    TurnRelevancyMetric,
)
from convoeval.judges import OpenAIJudge

if TYPE_CHECKING:
    from conftest import FaultServer

GOAL = {"user_goal": "a refund", "end_state": "refund promised", "achieved": True, "reason": "ok"}


def _case() -> ConversationalTestCase:
    return ConversationalTestCase(
        turns=[
            Turn(role="user", content="I am Ada. Can I get a refund?"),
            Turn(role="assistant", content="Yes Ada, your refund is on its way."),
        ]
    )


@pytest.mark.parametrize("metric", [KnowledgeRetentionMetric, GoalAccuracyMetric])
def test_without_a_key_measure_says_how_to_choose_a_judge(
    metric: type[GoalAccuracyMetric], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    measured = metric()
    with pytest.raises(JudgeConfigError) as refused:
        measured.measure(_case())
    text = str(refused.value)
    assert f"{metric.__name__} needs a language model" in text
    assert "model='openai/gpt-4o-mini'" in text and "OPENAI_API_KEY" in text
    assert "openai/gpt-4.1" in text
    assert measured.score is None  # nothing was half-measured


def test_with_a_key_measure_uses_deepeval_default_model(
    fault_server: FaultServer, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("OPENAI_API_KEY", "sk-test")
    monkeypatch.setenv("OPENAI_BASE_URL", fault_server.url)
    fault_server.reply(GOAL)
    metric = GoalAccuracyMetric()
    assert metric.measure(_case()) == 1.0
    assert [body["model"] for body in fault_server.bodies] == ["gpt-4.1"]
    assert metric.judge is None  # the metric's own judge is left unset


def test_a_judge_given_is_used_whatever_the_environment(
    fault_server: FaultServer, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    fault_server.reply(GOAL)
    judge = OpenAIJudge("chosen-model", base_url=fault_server.url, api_key="sk-x", cache=False)
    assert GoalAccuracyMetric(model=judge).measure(_case()) == 1.0
    assert fault_server.bodies[0]["model"] == "chosen-model"


def test_a_metric_the_offline_judge_runs_keeps_the_offline_default(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    metric = TurnRelevancyMetric()
    assert metric.measure(_case()) is not None and metric.error is None
