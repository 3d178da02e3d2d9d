"""`evaluate()` names the nearest valid keyword for a misspelt one instead of dropping it, and
accepts the peers' evaluate() keywords that have no meaning here (issue 34 §3)."""

from __future__ import annotations

import pytest

from convoeval import MultiTurnSample, ToolCallF1, evaluate
from convoeval.errors import UsageError

SAMPLE = {"user_input": [{"type": "human", "content": "hi"}], "reference_tool_calls": []}


def test_a_misspelt_keyword_names_the_nearest_valid_one() -> None:
    with pytest.raises(UsageError, match=r"max_concurency.*did you mean 'max_concurrency'"):
        evaluate([SAMPLE], metrics=[ToolCallF1()], max_concurency=4)  # type: ignore[call-arg]


def test_a_keyword_far_from_any_lists_them() -> None:
    with pytest.raises(UsageError, match=r"no option 'zzz'; it takes .*max_concurrency"):
        evaluate([SAMPLE], metrics=[ToolCallF1()], zzz=1)  # type: ignore[call-arg]


def test_peer_keywords_without_a_meaning_here_are_accepted() -> None:
    """Ragas's `callbacks=`/`run_config=`, DeepEval's `hyperparameters=`/`identifier=`."""
    sample = MultiTurnSample.model_validate(SAMPLE)
    result = evaluate(  # type: ignore[call-arg]
        [sample], metrics=[ToolCallF1()], callbacks=[], run_config=None, hyperparameters={"m": 1}
    )
    assert [row["scores"]["tool_call_f1"] for row in result.rows()] == [1.0]
    assert result.meta["peer_keywords"] == ["callbacks", "hyperparameters", "run_config"]


def test_ragas_llm_keyword_is_the_judge() -> None:
    with pytest.raises(UsageError, match="not both"):
        evaluate([SAMPLE], metrics=[ToolCallF1()], judge="offline", llm="openai/x")  # type: ignore[call-arg]
    same = evaluate([SAMPLE], metrics=[ToolCallF1()], judge="offline", llm="offline")  # type: ignore[call-arg]
    assert same.failed() == 0
