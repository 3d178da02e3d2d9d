"""`ConversationSimulator` as DeepEval users write it: goldens, a model callback that names the
arguments it wants, `simulate(conversational_goldens=..., max_user_simulations=...)`."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import pytest
from _sim_server import USER_MODEL, SimServer

from convoeval import ConversationalTestCase, ConversationSimulator, Turn
from convoeval.errors import UsageError


@dataclass
class Golden:
    """Stands for DeepEval's `ConversationalGolden` (read by attribute)."""

    scenario: str
    expected_outcome: str | None = None
    user_description: str | None = None
    context: list[str] | None = None
    name: str | None = None
    additional_metadata: dict[str, Any] | None = None
    turns: list[Any] | None = None


def test_deepeval_habit_gives_conversational_test_cases(sim: SimServer) -> None:
    calls: list[tuple[str, int, str]] = []

    async def model_callback(input: str, turns: list[Turn], thread_id: str) -> Turn:
        calls.append((input, len(turns), thread_id))
        return Turn(role="assistant", content=f"Sure: {input}")

    simulator = ConversationSimulator(
        model_callback=model_callback,
        simulator_model=f"openai/{USER_MODEL}",
        base_url=sim.url,
        cache=False,
    )
    goldens = [
        Golden(
            "s1 goal after 2",
            expected_outcome="a ticket is bought",
            user_description="Andy, in a hurry",
            name="ticket",
            additional_metadata={"team": "sales"},
        )
    ]
    cases = simulator.simulate(conversational_goldens=goldens, max_user_simulations=5)
    (case,) = cases
    assert isinstance(case, ConversationalTestCase) and simulator.simulated_conversations == cases
    assert [t.role for t in case.turns] == ["user", "assistant", "user", "assistant"]
    assert case.turns[1].content == "Sure: s1: message 1"
    assert (case.scenario, case.expected_outcome, case.user_description, case.name) == (
        "s1 goal after 2",
        "a ticket is bought",
        "Andy, in a hurry",
        "ticket",
    )
    assert case.metadata is not None and case.metadata["team"] == "sales"
    assert calls == [("s1: message 1", 1, "ticket#1"), ("s1: message 2", 3, "ticket#1")]
    prompt = sim.bodies("user")[0]["messages"][1]["content"]
    assert "Andy, in a hurry" in prompt and "a ticket is bought" in prompt
    assert "Write in English." in prompt


def test_a_sync_callback_with_input_only_and_the_turn_cap(sim: SimServer) -> None:
    simulator = ConversationSimulator(
        lambda input: f"echo {input}",
        simulator_model=f"openai/{USER_MODEL}",
        opening_message="Hi! How can I help?",
        async_mode=False,
        base_url=sim.url,
        cache=False,
    )
    (case,) = simulator.simulate([{"scenario": "s1 never"}], max_user_simulations=2)
    assert [(t.role, t.content) for t in case.turns] == [
        ("assistant", "Hi! How can I help?"),
        ("user", "s1: message 2"),
        ("assistant", "echo s1: message 2"),
        ("user", "s1: message 3"),
        ("assistant", "echo s1: message 3"),
    ]
    assert simulator.result is not None and simulator.result.stops() == {"max_turns": 1}


def test_a_golden_with_turns_is_refused_before_anything_is_sent(sim: SimServer) -> None:
    simulator = ConversationSimulator(lambda input: "x", simulator_model=f"openai/{USER_MODEL}")
    with pytest.raises(UsageError, match=r"conversational_goldens\[0\] has turns"):
        simulator.simulate([Golden("s1", turns=[Turn(role="user", content="hi")])])
    assert sim.requests == []
