"""`evaluate` end to end against a real LLM (SmolLM2 on llama.cpp, 127.0.0.1): the HTTP path,
usage, and a repeated run that resumes without any request.

The verdicts step's schema names exactly the exchanges asked (issue 19) and bounds every string,
so with `max_tokens` above that bound even this 135M model answers every step validly, in one
request: the test asserts a score for every record, not "a score or a failure"."""

from __future__ import annotations

from pathlib import Path

from convoeval import ConversationRelevancyMetric, evaluate
from convoeval.judges import JudgeCache, OpenAIJudge
from convoeval.judges.core.retry import RetryPolicy
from convoeval.schema import ConversationalTestCase, ModelTestCase


def _cases() -> list[ConversationalTestCase]:
    """One record: each costs the model a few hundred tokens, and what is checked (one request
    per record, a score, the resume) needs no second one."""
    return [
        ConversationalTestCase(
            turns=[ModelTestCase(input="Name a fruit.", actual_output="An apple is a fruit.")]
        ),
    ]


def test_evaluate_with_a_real_llm_then_resume(llama_server: str, tmp_path: Path) -> None:
    judge = OpenAIJudge(
        "smollm2",
        base_url=llama_server,
        cache=JudgeCache(tmp_path / "cache.sqlite3"),
        max_tokens=400,  # above the longest answer the schema allows for one exchange
        retry=RetryPolicy(max_retries=1, base_delay_s=0.05, max_total_s=300),
        timeout=300,  # a loaded CPU can make one 340-token answer take a minute
        concurrency=1,
    )
    before = judge.total.requests
    out = tmp_path / "r.jsonl"
    metric = ConversationRelevancyMetric()
    first = evaluate(_cases(), [metric], judge, output=out, show_progress=False)
    rows = list(first.rows())
    assert [r["index"] for r in rows] == [0]
    for row in rows:
        assert row["errors"] == {}
        assert row["scores"]["conversation_relevancy"] in (0.0, 1.0)  # one exchange judged
        (verdict,) = row["details"]["conversation_relevancy"]["verdicts"]
        assert verdict["exchange"] == 0
    # One request per record: no re-ask, no retry.
    assert judge.total.requests - before == first.usage.requests == 1
    assert first.meta["judge"]["endpoint"] == llama_server.rstrip("/")
    cost, note = first.cost()
    assert cost is None and "no price known for smollm2" in note  # a local server has no price

    # Running again resumes the finished file: no request at all.
    sent = judge.total.requests
    again = evaluate(_cases(), [metric], judge, output=out, show_progress=False)
    assert judge.total.requests == sent
    assert [r["scores"] for r in again.rows()] == [r["scores"] for r in rows]
