"""Prompt and schema token budgets (issue 35 §3), counted the way benchmarks/traffic.py counts.

The benchmark's server (benchmarks/_fake_openai_server.py, here in a thread of this process)
counts each request's prompt as the characters of its messages / 4 and its answer schema as the
characters of `json.dumps(schema)` / 4, both rounded up per request. The conversations are the
benchmark's (benchmarks/_workload.py: seeded, 6 exchanges; 20 of them here, 200 in traffic.py).
Budgets: topic adherence at most 1,000 tokens per conversation, schema included; every
metric's schema at most 200 tokens per request.
"""

from __future__ import annotations

import asyncio
from collections.abc import Iterator
from types import ModuleType
from typing import Any

import pytest

from _benchmarks import benchmark_module
from convoeval import aevaluate
from convoeval.judges.openai.judge import OpenAIJudge
from convoeval.metrics import Metric

CONVERSATIONS = 20
#: Tokens per conversation (prompt + schema) and schema tokens per request.
TOPIC_ADHERENCE_BUDGET = 1000
SCHEMA_BUDGET = 200


def _benchmark_modules() -> tuple[ModuleType, ModuleType, ModuleType]:
    names = ("_fake_openai_server", "_workload", "traffic")
    server, workload, traffic = (benchmark_module(name) for name in names)
    return server, workload, traffic


@pytest.fixture(scope="module")
def measured() -> Iterator[dict[str, dict[str, float]]]:
    """Per metric: requests, prompt and schema tokens per conversation, largest schema."""
    server_module, workload, traffic = _benchmark_modules()
    data = [{**r, "chatbot_role": traffic.ROLE} for r in workload.conversations(CONVERSATIONS, 6)]
    metrics: list[Metric] = traffic.workload_metrics()
    largest: list[int] = []
    count = server_module.schema_chars

    def counting(body: dict[str, Any]) -> int:
        chars: int = count(body)
        largest.append(-(-chars // 4))
        return chars

    server_module.schema_chars = counting  # the server's own count, also kept per request
    figures: dict[str, dict[str, float]] = {}
    try:
        with server_module.FakeOpenAIServer(delay=0.0) as server:
            for metric in metrics:
                largest.clear()
                judge = OpenAIJudge("bench", base_url=server.url, api_key="x", cache=False)

                async def run(metric: Metric = metric, judge: OpenAIJudge = judge) -> Any:
                    try:
                        return await aevaluate(data, [metric], judge=judge, show_progress=False)
                    finally:
                        await judge.aclose()

                result = asyncio.run(run())
                stats = server.reset()
                assert result.summary()[metric.name]["failed"] == 0
                figures[metric.name] = {
                    "requests": stats.requests / CONVERSATIONS,
                    "prompt": stats.prompt_tokens / CONVERSATIONS,
                    "schema": stats.schema_tokens / CONVERSATIONS,
                    "largest_schema": max(largest),
                }
    finally:
        server_module.schema_chars = count
    yield figures


def test_topic_adherence_fits_1000_tokens_with_its_schemas(
    measured: dict[str, dict[str, float]],
) -> None:
    topic = measured["topic_adherence"]
    assert topic["requests"] == 3  # one extraction, then answered and in-scope at once
    assert topic["prompt"] + topic["schema"] <= TOPIC_ADHERENCE_BUDGET, topic


@pytest.mark.parametrize(
    "name",
    [
        "topic_adherence",
        "conversation_relevancy",
        "knowledge_retention",
        "role_adherence",
        "conversation_completeness",
        "user_frustration",
        "turn_relevancy",
        "geval_empathy",  # ConversationalCriteria("Empathy", ...): ConversationalGEval's core
    ],
)
def test_every_schema_fits_200_tokens(measured: dict[str, dict[str, float]], name: str) -> None:
    figures = measured[name]
    assert figures["largest_schema"] <= SCHEMA_BUDGET, figures
    one_call = {"conversation_relevancy", "role_adherence", "user_frustration", "turn_relevancy"}
    if name in one_call | {"geval_empathy"}:
        assert figures["requests"] == 1  # one request per conversation
