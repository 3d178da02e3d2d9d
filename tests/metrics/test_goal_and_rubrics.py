"""Goal accuracy and rubrics on scripted answers; the offline judge refuses them clearly."""

from __future__ import annotations

import pytest

from convoeval import AIMessage, HumanMessage, MultiTurnSample
from convoeval.judges.fake import FakeJudge
from convoeval.metrics import (
    AgentGoalAccuracyWithoutReference,
    AgentGoalAccuracyWithReference,
    MissingFieldsError,
    RubricsScore,
)
from convoeval.metrics.agent_goal_accuracy import WITH_REFERENCE, WITHOUT_REFERENCE
from convoeval.metrics.rubrics import RUBRIC

SAMPLE = MultiTurnSample(
    user_input=[HumanMessage(content="Book a table for two"), AIMessage(content="Booked for 7pm.")],
    reference="A table for two is booked.",
)


@pytest.mark.parametrize("achieved", [True, False])
def test_goal_with_reference(achieved: bool) -> None:
    answer = {"end_state": "booked", "achieved": achieved, "reason": "r"}
    judge = FakeJudge({WITH_REFERENCE.name: [answer]})
    result = AgentGoalAccuracyWithReference().score_sync(SAMPLE, judge=judge)
    assert result.value == float(achieved) and result.details["end_state"] == "booked"
    assert "A table for two is booked." in judge.calls[0].prompt
    assert result.usage.requests == 1


def test_goal_without_reference_infers_the_goal() -> None:
    answer = {"user_goal": "a table", "end_state": "booked", "achieved": True, "reason": "r"}
    judge = FakeJudge({WITHOUT_REFERENCE.name: [answer]})
    result = AgentGoalAccuracyWithoutReference().score_sync(SAMPLE, judge=judge)
    assert result.value == 1.0 and result.details["user_goal"] == "a table"


def test_goal_metrics_have_distinct_names() -> None:
    assert AgentGoalAccuracyWithReference.name != AgentGoalAccuracyWithoutReference.name


def test_goal_with_reference_needs_reference() -> None:
    with pytest.raises(MissingFieldsError, match="reference"):
        AgentGoalAccuracyWithReference().score_sync(
            SAMPLE.model_copy(update={"reference": None}), judge=FakeJudge({})
        )


def test_offline_judge_refuses_goal_accuracy_naming_the_llm_option() -> None:
    result = AgentGoalAccuracyWithoutReference().score_sync(SAMPLE, judge="offline")
    assert result.failed
    assert "--judge openai/" in result.error["message"]  # type: ignore[index]


RUBRICS = {"score1_description": "bad", "score3_description": "ok", "score5_description": "great"}


@pytest.mark.parametrize(("normalize", "expected"), [(False, 3.0), (True, 0.5)])
def test_rubrics_level_and_normalize(normalize: bool, expected: float) -> None:
    judge = FakeJudge({RUBRIC.name: [{"level": 3, "reason": "fine"}]})
    result = RubricsScore(RUBRICS, normalize=normalize).score_sync(SAMPLE, judge=judge)
    assert result.value == expected and result.reason == "fine"
    assert '1: "bad"\n3: "ok"\n5: "great"' in judge.calls[0].prompt


def test_sample_rubrics_win_over_the_metrics() -> None:
    sample = SAMPLE.model_copy(update={"rubrics": {"1": "no", "2": "yes"}})
    judge = FakeJudge({RUBRIC.name: [{"level": 2, "reason": "r"}]})
    result = RubricsScore(RUBRICS).score_sync(sample, judge=judge)
    assert result.value == 2.0 and result.details["rubrics_from"] == "sample"


def test_rubric_level_outside_the_keys_is_re_asked() -> None:
    judge = FakeJudge({RUBRIC.name: [{"level": 4, "reason": "r"}, {"level": 5, "reason": "r"}]})
    result = RubricsScore(RUBRICS).score_sync(SAMPLE, judge=judge)
    assert result.value == 5.0
    assert "level must be one of [1, 3, 5]" in (judge.calls[1].reask or "")


def test_rubrics_missing_everywhere_is_a_missing_field() -> None:
    with pytest.raises(MissingFieldsError, match="rubrics"):
        RubricsScore().score_sync(SAMPLE, judge=FakeJudge({}))
