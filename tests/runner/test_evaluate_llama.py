"""`evaluate` end to end against a real LLM (SmolLM2 on llama.cpp, 127.0.0.1): the HTTP path,
recorded failures, usage, and a repeated run that resumes without any request."""

from __future__ import annotations

from pathlib import Path

from convoeval import ConversationRelevancyMetric, evaluate
from convoeval.judges import JudgeCache, OpenAIJudge
from convoeval.judges.retry import RetryPolicy
from convoeval.schema import ConversationalTestCase, ModelTestCase


def _cases() -> list[ConversationalTestCase]:
    return [
        ConversationalTestCase(
            turns=[ModelTestCase(input="What is 2 + 2?", actual_output="2 + 2 is 4.")]
        ),
        ConversationalTestCase(
            turns=[ModelTestCase(input="Name a fruit.", actual_output="An apple is a fruit.")]
        ),
    ]


def test_evaluate_with_a_real_llm_then_resume(llama_server: str, tmp_path: Path) -> None:
    judge = OpenAIJudge(
        "smollm2",
        base_url=llama_server,
        cache=JudgeCache(tmp_path / "cache.sqlite3"),
        max_tokens=64,
        retry=RetryPolicy(max_retries=1, base_delay_s=0.05, max_total_s=60),
        timeout=60,
        concurrency=1,
    )
    before = judge.total.requests
    out = tmp_path / "r.jsonl"
    metric = ConversationRelevancyMetric()
    first = evaluate(_cases(), [metric], judge, output=out, show_progress=False)
    rows = list(first.rows())
    assert [r["index"] for r in rows] == [0, 1]
    for row in rows:
        score = row["scores"]["conversation_relevancy"]
        if score is None:  # a tiny model may fail; then the failure is recorded, never a 0
            error = row["errors"]["conversation_relevancy"]
            assert error["type"] and error["message"]
        else:
            assert 0.0 <= score <= 1.0
    # Every record reached the server (failed steps' usage is counted by the judge only).
    assert judge.total.requests - before >= 2
    assert first.usage.requests <= judge.total.requests - before
    assert first.meta["judge"]["endpoint"] == llama_server.rstrip("/")
    cost, note = first.cost()
    if first.usage.requests:  # a local server has no known price
        assert cost is None and "no price known for smollm2" in note
    else:
        assert cost == 0.0

    # Running again resumes the finished file: no request at all.
    sent = judge.total.requests
    again = evaluate(_cases(), [metric], judge, output=out, show_progress=False)
    assert judge.total.requests == sent
    assert [r["scores"] for r in again.rows()] == [r["scores"] for r in rows]
