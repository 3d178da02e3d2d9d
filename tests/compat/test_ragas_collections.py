"""Ragas's current names, imports switched (issue 34 §1): the collections name `TopicAdherence`,
`EvaluationDataset(samples=[...])`, `SingleTurnSample` (one exchange, conversation metrics run on
it) and `AspectCritic` (a binary criterion judged on the conversation)."""

from __future__ import annotations

import asyncio

import pytest

from convoeval import (
    AIMessage,
    AspectCritic,
    EvaluationDataset,
    HumanMessage,
    MultiTurnSample,
    SingleTurnSample,
    ToolCall,
    ToolCallF1,
    TopicAdherence,
    TopicAdherenceScore,
    evaluate,
)
from convoeval.judges.fake import FakeJudge
from convoeval.metrics.aspect_critic import VERDICT

CONVERSATION = [
    HumanMessage(content="Cancel my order 42, please."),
    AIMessage(content="", tool_calls=[ToolCall(name="cancel", args={"order": 42})]),
]


def test_topic_adherence_is_the_collections_name_with_the_same_arguments() -> None:
    metric = TopicAdherence(mode="precision", llm="offline")
    assert isinstance(metric, TopicAdherenceScore) and metric.name == "topic_adherence"
    assert metric.mode == "precision" and metric.judge == "offline"


def test_evaluation_dataset_is_accepted_wherever_a_list_of_samples_is(tmp_path) -> None:
    """Ported from Ragas's evaluate() quickstart: `EvaluationDataset(samples=[...])`."""
    sample = MultiTurnSample(
        user_input=CONVERSATION, reference_tool_calls=[ToolCall(name="cancel", args={"order": 42})]
    )
    dataset = EvaluationDataset(samples=[sample, sample.to_dict()])
    assert len(dataset) == 2 and dataset[0] is sample and list(dataset)[1] == sample.to_dict()
    result = evaluate(dataset=dataset, metrics=[ToolCallF1()], output=tmp_path / "r.jsonl")
    assert [row["scores"]["tool_call_f1"] for row in result.rows()] == [1.0, 1.0]
    assert EvaluationDataset.from_list(dataset.to_list()).to_list() == dataset.to_list()


def test_evaluation_dataset_rejects_what_is_not_a_sample_and_says_where() -> None:
    with pytest.raises(TypeError, match=r"samples\[1\]: .*int"):
        EvaluationDataset(samples=[CONVERSATION and MultiTurnSample(user_input=CONVERSATION), 3])


def test_single_turn_sample_is_a_one_exchange_conversation() -> None:
    """Ragas's field names; converted to a conversation so the conversation metrics run."""
    single = SingleTurnSample(
        user_input="What is the capital of France?",
        response="Paris.",
        reference="Paris",
        retrieved_contexts=["Paris is the capital of France."],
        rubrics={"score1_description": "wrong"},
    )
    sample = single.to_sample()
    assert [m.content for m in sample.user_input] == ["What is the capital of France?", "Paris."]
    assert sample.reference == "Paris" and sample.rubrics == {"score1_description": "wrong"}
    assert sample.metadata == {"retrieved_contexts": ["Paris is the capital of France."]}
    assert EvaluationDataset(samples=[single])[0] == sample
    with pytest.raises(ValueError, match="retreived_contexts"):
        SingleTurnSample(user_input="q", retreived_contexts=[])  # type: ignore[call-arg]


def test_aspect_critic_gives_one_or_zero_under_its_own_name() -> None:
    """Ported from Ragas's multi-turn how-to: AspectCritic(name=, definition=, llm=)."""
    judge = FakeJudge({VERDICT.name: [{"reason": "it cancelled", "verdict": 1}]})
    metric = AspectCritic(
        name="forgetfulness_aware",
        definition="Return 1 if the AI completes the user's request, 0 otherwise.",
        llm=judge,
    )
    result = asyncio.run(metric.multi_turn_ascore(MultiTurnSample(user_input=CONVERSATION)))
    assert result == 1.0 and result is not None and result.reason == "it cancelled"
    assert metric.name == "forgetfulness_aware"
    assert "completes the user's request" in judge.calls[0].prompt
    assert metric.config()["definition"].startswith("Return 1")


def test_aspect_critic_needs_a_definition() -> None:
    with pytest.raises(ValueError, match="definition"):
        AspectCritic(name="x", definition=" ")
    unscored = AspectCritic().score_sync(MultiTurnSample(user_input=CONVERSATION))
    assert unscored.value is None and "definition" in (unscored.reason or "")
    with pytest.raises(ValueError, match="strictness"):
        AspectCritic(name="x", definition="d", strictness=0)
