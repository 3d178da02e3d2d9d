"""Our ports of Ragas's documented multi-turn examples (issue 34 §3): topic adherence, tool call
accuracy, tool call F1, agent goal accuracy, rubrics. Only the imports and the judge change (the
offline judge, or a FakeJudge standing in for `llm=evaluator_llm`); no Ragas installed. The same
examples are the before/after pairs of docs/migrating-from-ragas.md."""

from __future__ import annotations

import asyncio
import warnings

import pytest

from convoeval import (
    AgentGoalAccuracyWithoutReference,
    AgentGoalAccuracyWithReference,
    AIMessage,
    HumanMessage,
    MultiTurnSample,
    NonLLMStringSimilarity,
    RubricsScore,
    ToolCall,
    ToolCallAccuracy,
    ToolCallF1,
    ToolMessage,
    TopicAdherence,
    TopicAdherenceScore,
)
from convoeval.judges.fake import FakeJudge
from convoeval.metrics.agent_goal_accuracy import WITH_REFERENCE, WITHOUT_REFERENCE
from convoeval.metrics.rubrics import RUBRIC

SCIENCE = MultiTurnSample(
    user_input=[
        HumanMessage(content="Can you explain the theory of relativity?"),
        AIMessage(
            content="It says the laws of physics are the same for all observers and that the "
            "speed of light is constant."
        ),
        HumanMessage(content="What is a good pasta recipe?"),
        AIMessage(content="Sorry, I can only help with science questions."),
    ],
    reference_topics=["science"],
)


def test_topic_adherence_precision_with_the_offline_judge() -> None:
    """Ragas: `TopicAdherenceScore(llm=evaluator_llm, mode="precision")` then
    `await scorer.multi_turn_ascore(sample)`; here the offline judge (no `llm=`)."""
    scorer = TopicAdherenceScore(mode="precision")
    score = asyncio.run(scorer.multi_turn_ascore(SCIENCE))
    # relativity: in scope and answered (TP); pasta: out of scope and declined (TN).
    assert score == 1.0
    assert "1 in scope and answered; 1 out of scope and declined" in (score.reason or "")
    ragas = asyncio.run(
        TopicAdherenceScore(mode="precision", compat="ragas").multi_turn_ascore(SCIENCE)
    )
    assert ragas == 1 / (1 + 1e-10)  # Ragas's epsilon, so a team keeps its threshold


def test_topic_adherence_collections_ascore_gives_value_and_reason() -> None:
    """Ragas collections: `await TopicAdherence(llm=llm).ascore(user_input=...,
    reference_topics=...)` then `result.value`."""
    result = asyncio.run(
        TopicAdherence(llm="offline").ascore(
            user_input=SCIENCE.user_input, reference_topics=["science"]
        )
    )
    assert result.value == 1.0 and result.reason


WEATHER = [
    HumanMessage(content="What's the weather like in New York right now?"),
    AIMessage(
        content="The current temperature in New York is 75°F and it's partly cloudy.",
        tool_calls=[ToolCall(name="weather_check", args={"location": "New York"})],
    ),
    HumanMessage(content="Can you translate that to Celsius?"),
    AIMessage(
        content="Let me convert that to Celsius for you.",
        tool_calls=[ToolCall(name="temperature_conversion", args={"temperature_fahrenheit": 75})],
    ),
    ToolMessage(content="75°F is approximately 23.9°C."),
    AIMessage(content="75°F is approximately 23.9°C."),
]
WEATHER_REFERENCE = [
    ToolCall(name="weather_check", args={"location": "New York"}),
    ToolCall(name="temperature_conversion", args={"temperature_fahrenheit": 75}),
]


def test_tool_call_accuracy_docs_example() -> None:
    sample = MultiTurnSample(user_input=WEATHER, reference_tool_calls=WEATHER_REFERENCE)
    scorer = ToolCallAccuracy()
    assert asyncio.run(scorer.multi_turn_ascore(sample)) == 1.0
    assert asyncio.run(ToolCallAccuracy(compat="ragas").multi_turn_ascore(sample)) == 1.0


def test_tool_call_accuracy_with_string_similarity_set_as_an_attribute() -> None:
    """Ragas's docs set the comparator after construction:
    `metric.arg_comparison_metric = NonLLMStringSimilarity()`."""
    reference = [
        ToolCall(name="weather_check", args={"location": "New York City"}),
        WEATHER_REFERENCE[1],
    ]
    sample = MultiTurnSample(user_input=WEATHER, reference_tool_calls=reference)
    metric = ToolCallAccuracy()
    assert metric.multi_turn_score(sample) == 0.5  # "New York" is not "New York City"
    metric.arg_comparison_metric = NonLLMStringSimilarity()
    # levenshtein: 5 insertions over 13 characters -> 8/13 for the first call, 1 for the second.
    assert metric.multi_turn_score(sample) == pytest.approx((8 / 13 + 1) / 2)


def test_tool_call_accuracy_length_mismatch_warns_as_ragas_does() -> None:
    sample = MultiTurnSample(user_input=WEATHER, reference_tool_calls=WEATHER_REFERENCE[:1])
    with pytest.warns(UserWarning, match="Length mismatch"):
        ours = ToolCallAccuracy().multi_turn_score(sample)
    with pytest.warns(UserWarning, match="Length mismatch"):
        ragas = ToolCallAccuracy(compat="ragas").multi_turn_score(sample)
    assert (ours, ragas) == (0.5, 0.0)


def test_tool_call_f1_collections_example() -> None:
    """Ragas collections: `await ToolCallF1().ascore(user_input=[...], reference_tool_calls=[...])`,
    then `result.value`."""
    user_input = [
        HumanMessage(content="What's the weather in Paris?"),
        AIMessage(
            content="Let me check.",
            tool_calls=[
                ToolCall(name="weather_check", args={"location": "Paris"}),
                ToolCall(name="uv_index_lookup", args={"location": "Paris"}),
            ],
        ),
    ]
    reference = [ToolCall(name="weather_check", args={"location": "Paris"})]
    result = asyncio.run(ToolCallF1().ascore(user_input=user_input, reference_tool_calls=reference))
    # TP=1, FP=1, FN=0: precision 1/2, recall 1, F1 = 2/3.
    assert result.value == pytest.approx(2 / 3) and "1 correct calls" in (result.reason or "")
    ragas = asyncio.run(
        ToolCallF1(compat="ragas").ascore(user_input=user_input, reference_tool_calls=reference)
    )
    assert ragas.value == 0.6667


RESTAURANT = MultiTurnSample(
    user_input=[
        HumanMessage(content="Hey, book a table at the nearest best Chinese restaurant for 8:00pm"),
        AIMessage(
            content="Sure, let me find the best options for you.",
            tool_calls=[
                ToolCall(name="restaurant_search", args={"cuisine": "Chinese", "time": "8:00pm"})
            ],
        ),
        ToolMessage(content="Found a few options: 1. Golden Dragon, 2. Jade Palace"),
        AIMessage(content="I found Golden Dragon and Jade Palace. Which one do you prefer?"),
        HumanMessage(content="Let's go with Golden Dragon."),
        AIMessage(
            content="Great choice! I'll book a table for 8:00pm at Golden Dragon.",
            tool_calls=[
                ToolCall(name="restaurant_book", args={"name": "Golden Dragon", "time": "8:00pm"})
            ],
        ),
        ToolMessage(content="Table booked at Golden Dragon for 8:00pm."),
        AIMessage(content="Your table at Golden Dragon is booked for 8:00pm. Enjoy your meal!"),
        HumanMessage(content="thanks"),
    ],
    reference="Table booked at one of the chinese restaurants at 8 pm",
)


def test_agent_goal_accuracy_with_reference() -> None:
    judge = FakeJudge(
        {
            WITH_REFERENCE.name: [
                {
                    "end_state": "Table booked at Golden Dragon, 8pm",
                    "achieved": True,
                    "reason": "booked",
                }
            ]
        }
    )
    scorer = AgentGoalAccuracyWithReference(llm=judge)
    score = asyncio.run(scorer.multi_turn_ascore(RESTAURANT))
    assert score == 1.0 and score.reason == "booked"
    assert len(judge.calls) == 1  # Ragas makes two
    assert "chinese restaurants at 8 pm" in judge.calls[0].prompt


def test_agent_goal_accuracy_without_reference() -> None:
    judge = FakeJudge(
        {
            WITHOUT_REFERENCE.name: [
                {
                    "user_goal": "book a Chinese restaurant at 8pm",
                    "end_state": "booked Golden Dragon at 8pm",
                    "achieved": False,
                    "reason": "scripted no",
                }
            ]
        }
    )
    scorer = AgentGoalAccuracyWithoutReference(llm=judge)
    assert asyncio.run(scorer.multi_turn_ascore(RESTAURANT)) == 0.0
    # Ragas names both variants agent_goal_accuracy; ours keep two columns.
    assert scorer.name == "agent_goal_accuracy"
    assert AgentGoalAccuracyWithReference().name == "agent_goal_accuracy_with_reference"


RUBRICS = {
    "score1_description": "The agent ignores the request.",
    "score2_description": "The agent misunderstands the request.",
    "score3_description": "The agent partly completes the request.",
    "score4_description": "The agent completes the request with minor issues.",
    "score5_description": "The agent completes the request fully and politely.",
}


def test_rubrics_score_multi_turn() -> None:
    judge = FakeJudge({RUBRIC.name: [{"level": 5, "reason": "booked and polite"}]})
    scorer = RubricsScore(rubrics=RUBRICS, llm=judge)
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # no warning on this path
        score = asyncio.run(scorer.multi_turn_ascore(RESTAURANT))
    assert score == 5.0  # the raw level, as Ragas returns it
    assert "completes the request fully and politely" in judge.calls[0].prompt
    normalized = RubricsScore(
        rubrics=RUBRICS,
        normalize=True,
        llm=FakeJudge({RUBRIC.name: [{"level": 5, "reason": "booked"}]}),
    )
    assert asyncio.run(normalized.multi_turn_ascore(RESTAURANT)) == 1.0
