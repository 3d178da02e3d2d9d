"""One surface (issue 33 §1): one resolver for metric names, one spelling per concept with its
aliases, Python options checked as their CLI twins, the errors a user catches exported."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from convoeval import AIMessage, HumanMessage, MultiTurnSample, ToolCall, evaluate
from convoeval.errors import UsageError


def _write(path: Path, count: int = 3) -> Path:
    with path.open("w") as handle:
        for i in range(count):
            sample = MultiTurnSample(
                user_input=[
                    HumanMessage(content=f"where is order {i}?"),
                    AIMessage(content="", tool_calls=[ToolCall(name="find", args={"n": i})]),
                    AIMessage(content=f"order {i} ships tomorrow"),
                ],
                reference_tool_calls=[ToolCall(name="find", args={"n": i + (i == 2)})],
                id=f"o{i}",
            )
            handle.write(json.dumps(sample.to_dict()) + "\n")
    return path


# --- one resolver for metric names ---------------------------------------------------------


@pytest.mark.parametrize("name", ["tool_call_accuracy", "ToolCallAccuracy"])
@pytest.mark.parametrize("key", ["tool_call_accuracy", "ToolCallAccuracy"])
def test_a_threshold_applies_whatever_name_the_metric_and_the_limit_use(
    tmp_path: Path, name: str, key: str
) -> None:
    result = evaluate(_write(tmp_path / "d.jsonl"), [name], thresholds={key: 0.9})
    assert result.meta["metrics"][0]["name"] == "tool_call_accuracy"
    assert result.meta["metrics"][0]["threshold"] == 0.9
    assert result.gate({key: 0.1}) == []


@pytest.mark.parametrize("name", ["ConversationRelevancyMetric", "TurnRelevancyMetric"])
def test_a_deepeval_class_name_names_its_metric_in_a_run(tmp_path: Path, name: str) -> None:
    from convoeval.metrics import get_metric
    from convoeval.runner._plan import build_metrics

    column = get_metric(name).name
    built = build_metrics([name], {name: 0.3})
    assert [m.name for m in built] == [column]
    assert built[0].threshold == 0.3


def test_two_names_of_one_metric_in_the_limits_are_refused_naming_both() -> None:
    from convoeval.runner._plan import build_metrics

    with pytest.raises(UsageError, match=r"ToolCallAccuracy.*tool_call_accuracy"):
        build_metrics(["tool_call_accuracy"], {"ToolCallAccuracy": 0.5, "tool_call_accuracy": 0.6})


def test_a_gate_names_a_metric_by_any_of_its_names() -> None:
    from convoeval.runner._plan import check_gates

    ranges: dict[str, Any] = {"tool_call_accuracy": (0.0, 1.0)}
    assert check_gates({"ToolCallAccuracy": 0.5}, ranges) == {"tool_call_accuracy": 0.5}
    with pytest.raises(UsageError, match="not in this run"):
        check_gates({"ToolCallF1": 0.5}, ranges)
