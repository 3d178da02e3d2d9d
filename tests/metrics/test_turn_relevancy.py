"""TurnRelevancyMetric: DeepEval's name over the relevancy core, window 10, own results column."""

from __future__ import annotations

from typing import Any

import pytest
from _judgments import chat

from convoeval import TurnRelevancyMetric, evaluate
from convoeval.judges.fake import FakeJudge
from convoeval.metrics import ConversationRelevancy, TurnRelevancy, as_metric, get_metric
from convoeval.metrics.conversation_relevancy import VERDICTS


def _verdicts(inputs: Any) -> dict[str, Any]:
    return {
        "verdicts": [
            {"exchange": i, "relevant": i != 11, "reason": "off" if i == 11 else ""}
            for i, _ in inputs.windows
        ]
    }


def test_default_window_is_ten_and_chunks_hold_twenty_exchanges() -> None:
    judge = FakeJudge({VERDICTS.name: _verdicts})
    metric = TurnRelevancyMetric()
    assert metric.window_size == 10 and metric.threshold == 0.5
    result = metric.score_sync(chat(21), judge=judge)
    assert [len(c.inputs.windows) for c in judge.calls] == [20, 1]
    assert judge.calls[0].inputs.windows[11] == (11, 2)
    assert judge.calls[1].inputs.windows == [(20, 11)]
    assert result.value == 20 / 21
    assert result.reason == "20 of 21 replies were relevant; not relevant: exchange 12: off."


def test_same_step_as_conversation_relevancy_but_its_own_column() -> None:
    core = as_metric(TurnRelevancyMetric(window_size=2, strict_mode=True))
    assert isinstance(core, TurnRelevancy) and isinstance(core, ConversationRelevancy)
    assert core.steps == ConversationRelevancy.steps
    assert (core.name, core.window_size, core.threshold) == ("turn_relevancy", 2, 1.0)
    assert repr(core).startswith("TurnRelevancy(window_size=2")
    assert isinstance(get_metric("TurnRelevancyMetric"), TurnRelevancy)
    with pytest.raises(ValueError, match="window_size"):
        TurnRelevancyMetric(window_size=0)


def test_runs_beside_conversation_relevancy_in_one_results_file() -> None:
    judge = FakeJudge({VERDICTS.name: _verdicts})
    result = evaluate(
        [chat(12)], [ConversationRelevancy(), TurnRelevancy()], judge=judge, show_progress=False
    )
    (row,) = result.rows()
    assert row["scores"] == {"conversation_relevancy": 11 / 12, "turn_relevancy": 11 / 12}
