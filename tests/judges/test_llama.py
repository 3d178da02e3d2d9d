"""End to end against a real LLM: SmolLM2-135M served by llama.cpp (xllamacpp) on 127.0.0.1.

Its verdicts mean nothing; these tests prove the plumbing: the HTTP backend, a json_schema
structured-output request, pydantic validation, usage, the cache, and the cut-off failure mode.
"""

from __future__ import annotations

from pathlib import Path
from typing import Literal

import pytest
from pydantic import BaseModel, ConfigDict

from convoeval.judges import JudgeCache, JudgeError, OpenAIJudge, Step
from convoeval.judges.core.endpoints import ENDPOINTS
from convoeval.judges.core.retry import RetryPolicy


class Sentiment(BaseModel):
    """A tiny closed schema the grammar can enforce."""

    model_config = ConfigDict(extra="forbid")

    positive: bool
    mood: Literal["happy", "sad", "neutral"]


STEP = Step(
    name="sentiment",
    version=1,
    instructions="You classify the mood of a message.",
    template="Message: {message}\nIs it positive, and what is the mood?",
    output=Sentiment,
)
RETRY = RetryPolicy(max_retries=1, base_delay_s=0.05, max_total_s=60)


async def test_structured_answer_from_a_real_server(llama_server: str, tmp_path: Path) -> None:
    cache = JudgeCache(tmp_path / "llama.sqlite3")
    judge = OpenAIJudge(
        "smollm2", base_url=llama_server, cache=cache, max_tokens=96, retry=RETRY, timeout=60
    )
    answer = await judge.run(STEP, {"message": "I love sunny days at the beach!"})
    assert isinstance(answer.output, Sentiment)
    assert answer.usage.requests >= 1
    assert answer.usage.prompt_tokens > 0 and answer.usage.completion_tokens > 0
    assert answer.usage.latency_s > 0 and answer.usage.cached == 0
    # json_schema was accepted: no fallback was remembered for this endpoint.
    assert ENDPOINTS.mode(judge.endpoint, judge.model) == "json_schema"

    again = await judge.run(STEP, {"message": "I love sunny days at the beach!"})
    assert again.output == answer.output
    assert again.usage.cached == 1 and again.usage.requests == 0


async def test_cut_off_json_is_reasked_then_a_clean_judge_error(llama_server: str) -> None:
    judge = OpenAIJudge(
        "smollm2", base_url=llama_server, cache=False, max_tokens=4, retry=RETRY, timeout=60
    )
    with pytest.raises(JudgeError, match="cut off at the token limit") as caught:
        await judge.run(STEP, {"message": "It rained all week and I lost my keys."})
    assert caught.value.step == "sentiment" and caught.value.raw is not None
    assert judge.total.requests == 2  # the first answer and one re-ask
    assert judge.total.completion_tokens > 0
