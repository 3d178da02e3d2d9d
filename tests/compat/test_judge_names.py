"""Every metric that uses a judge takes it as `judge=`, DeepEval's `model=` or Ragas's `llm=`
(issues 33 and 34): DeepEval-named classes took only `model=`, `UserFrustration` only `judge=`."""

from __future__ import annotations

from typing import Any

import pytest

from convoeval.errors import UsageError
from convoeval.metrics._registry import FACADES, METRICS

REQUIRED: dict[str, dict[str, Any]] = {
    "ConversationalGEval": {"name": "tone", "criteria": "polite"}
}
JUDGED = sorted(
    [c for c in METRICS.values() if c.uses_judge] + list(FACADES.values()),
    key=lambda c: c.__name__,
)


@pytest.mark.parametrize("keyword", ["judge", "model", "llm"])
@pytest.mark.parametrize("cls", JUDGED, ids=lambda c: c.__name__)
def test_every_judged_metric_takes_each_judge_name(cls: type[Any], keyword: str) -> None:
    metric = cls(**REQUIRED.get(cls.__name__, {}), **{keyword: "openai/gpt-4o-mini"})
    assert metric.judge == "openai/gpt-4o-mini"


@pytest.mark.parametrize("cls", JUDGED, ids=lambda c: c.__name__)
def test_two_judge_names_with_different_values_are_refused(cls: type[Any]) -> None:
    with pytest.raises(UsageError, match=r"judge=.*model=.*different") as raised:
        cls(**REQUIRED.get(cls.__name__, {}), judge="openai/a", model="openai/b")
    assert isinstance(raised.value, TypeError)  # a call-shape mistake, as Python raises one
    same = cls(**REQUIRED.get(cls.__name__, {}), llm="openai/a", judge="openai/a")
    assert same.judge == "openai/a"


def test_a_positional_deepeval_model_and_a_keyword_llm_are_two_names() -> None:
    cls = FACADES["turn_relevancy"]
    with pytest.raises(UsageError, match="different"):
        cls(0.5, "openai/a", llm="openai/b")
