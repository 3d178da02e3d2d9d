"""The simulator end to end with a real model on both sides: SmolLM2 (llama.cpp, 127.0.0.1) is
the bot and the simulated user. Its messages mean little; the test checks the structure of
what comes back (a conversation of alternating turns with its simulation record, or a recorded
failure: never a made-up conversation)."""

from __future__ import annotations

import warnings
from pathlib import Path

from convoeval import AIMessage, HumanMessage
from convoeval.simulate import STOPS, OpenAIBot, simulate


def test_smollm2_plays_both_the_bot_and_the_user(llama_server: str, tmp_path: Path) -> None:
    bot = OpenAIBot(
        "smollm2",
        base_url=llama_server,
        system_prompt="You are a helpful ticket seller. Answer in one short sentence.",
        max_tokens=32,
    )
    scenarios = [
        {
            "scenario": "You want to buy one ticket for Saturday's concert.",
            "id": "concert",
            "user_description": "A polite customer.",
            "expected_outcome": "The assistant confirms the ticket.",
            "first_user_message": "Hello, can I buy a ticket for Saturday?",
        }
    ]
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)  # a failure is checked below
        result = simulate(
            scenarios,
            bot,
            "openai/smollm2",
            base_url=llama_server,
            max_turns=2,
            seed=1,
            # Short, to keep the suite's one real two-sided conversation to seconds: an answer the
            # cap cuts off is re-asked, then recorded as a failure, which the test accepts.
            user_max_tokens=160,
            timeout=60,
            retry_budget=60,
            output=tmp_path / "c.jsonl",
        )
    assert len(result) + len(result.failures) == 1
    if result.failures:  # the model's answer did not fit, even when re-asked: recorded as such
        (failure,) = result.failures
        assert failure["scenario"] == "concert" and failure["error"]["message"]
        assert not (tmp_path / "c.jsonl").read_text()
        return
    (sample,) = result
    block = sample.metadata["simulation"]
    assert block["stop"] in STOPS and 1 <= block["turns"] <= 2
    kinds = [type(m) for m in sample.user_input]
    assert (
        kinds[:2] == [HumanMessage, AIMessage]
        and kinds == [HumanMessage, AIMessage] * block["turns"]
    )
    assert sample.user_input[0].content == "Hello, can I buy a ticket for Saturday?"
    assert all(m.content.strip() for m in sample.user_input if isinstance(m, HumanMessage))
    assert block["usage"]["bot"]["requests"] == block["turns"]
    assert (
        block["usage"]["user"]["requests"] >= 1 and block["usage"]["user"]["completion_tokens"] > 0
    )
    assert block["seeds"] == {"user": 1, "bot": 1}
