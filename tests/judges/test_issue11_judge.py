"""Issue 11, judge items over real sockets: a slow healthy judge, leaked keys, vague messages.

Each test reproduces a reported defect: it failed before the judge core was split out.
"""

from __future__ import annotations

import asyncio
from typing import TYPE_CHECKING, Any

import pytest

from convoeval.judges import JudgeAuthError, JudgeError, OpenAIJudge, Step, Usage
from convoeval.judges.core.retry import RetryPolicy

if TYPE_CHECKING:
    from conftest import FaultServer, Verdict

GOOD = {"verdict": True, "label": "yes"}
INPUTS = {"statement": "the sea is salty"}
KEY = "sk-proj-Zx81hQ2mN4pLr7TyUv0123456789abcdef"


def _judge(server: FaultServer, **options: Any) -> OpenAIJudge:
    options.setdefault("api_key", KEY)
    options.setdefault("cache", False)
    options.setdefault("retry", RetryPolicy(max_retries=2, base_delay_s=0.01, max_delay_s=0.02))
    options.setdefault("timeout", 5.0)
    return OpenAIJudge("fault-model", base_url=server.url, **options)


async def test_slow_healthy_judge_scores_every_step_whatever_the_queue(
    fault_server: FaultServer, verdict_step: Step[Verdict]
) -> None:
    # Every answer is correct after 0.5 s. One at a time, the 6th step queues for 2.5 s, longer
    # than the timeout and the retry budget (2 s each): they count from when a request is sent,
    # so none may fail or be abandoned, and every request counted was received. (Each answer
    # has 1.5 s to spare under the timeout, however loaded the machine.)
    fault_server.reply(GOOD, delay=0.5).forever()
    policy = RetryPolicy(max_retries=2, base_delay_s=0.01, max_total_s=2.0)
    judge = _judge(fault_server, concurrency=1, timeout=2.0, retry=policy)
    answers = await asyncio.gather(
        *(judge.run(verdict_step, {"statement": f"s{i}"}) for i in range(6)),
        return_exceptions=True,
    )
    failed = [a for a in answers if isinstance(a, BaseException)]
    assert failed == []
    assert judge.total.requests == fault_server.attempts == 6
    assert fault_server.peak == 1 and fault_server.abandoned == 0


async def test_a_timed_out_request_is_hung_up_and_its_slot_released(
    fault_server: FaultServer, verdict_step: Step[Verdict]
) -> None:
    # The stall outlasts the timeout by far; 2 s is generous for the healthy reply after it.
    fault_server.stall(60).reply(GOOD)
    judge = _judge(fault_server, concurrency=1, timeout=2.0)
    answer = await judge.run(verdict_step, INPUTS)
    assert answer.output.verdict is True and answer.usage.requests == 2
    # The stalled request's connection was closed, so the server stopped working on it.
    assert fault_server.wait_until_idle(timeout=10)
    assert fault_server.abandoned == 1 and fault_server.attempts == 2


async def test_401_echoing_the_key_never_shows_it(
    fault_server: FaultServer, verdict_step: Step[Verdict]
) -> None:
    echoed = f"Incorrect API key provided: Bearer {KEY}. You can find your API key at ..."
    fault_server.error(401, echoed)
    with pytest.raises(JudgeAuthError) as caught:  # refused credentials stop, not fail a step
        await _judge(fault_server).run(verdict_step, INPUTS)
    shown = str(caught.value) + repr(caught.value.args)
    assert KEY not in shown and KEY[:12] not in shown and "HTTP 401" in shown
    assert "Incorrect API key provided" in shown


async def test_a_short_configured_key_and_other_tokens_are_masked(
    fault_server: FaultServer, verdict_step: Step[Verdict]
) -> None:
    other = "sk-ant-api03-abcdefghijklmnop"
    fault_server.error(403, f"key hunter2x for org; also saw Bearer eyJhbGciOi.x.y and {other}")
    with pytest.raises(JudgeAuthError) as caught:
        await _judge(fault_server, api_key="hunter2x").run(verdict_step, INPUTS)
    text = str(caught.value)
    for secret in ("hunter2x", "eyJhbGciOi", other):
        assert secret not in text
    assert "HTTP 403" in text


async def test_an_echoed_key_in_an_answer_is_masked_in_raw(
    fault_server: FaultServer, verdict_step: Step[Verdict]
) -> None:
    fault_server.reply(f"my key is {KEY}").forever()
    with pytest.raises(JudgeError) as caught:
        await _judge(fault_server).run(verdict_step, INPUTS)
    assert caught.value.raw is not None and KEY not in caught.value.raw
    assert KEY not in str(caught.value)


async def test_html_200_says_what_came_back(
    fault_server: FaultServer, verdict_step: Step[Verdict]
) -> None:
    page = "<html><body><h1>502 Bad Gateway</h1>" + "x" * 400 + "</body></html>"
    fault_server.raw(200, page, content_type="text/html; charset=utf-8")
    with pytest.raises(JudgeError) as caught:
        await _judge(fault_server).run(verdict_step, INPUTS)
    text = str(caught.value)
    assert "HTTP 200" in text and "text/html" in text and "<h1>502 Bad Gateway</h1>" in text
    assert "x" * 300 not in text  # only the first bytes
    assert fault_server.attempts == 1


async def test_connection_reset_mid_body_says_what_failed(
    fault_server: FaultServer, verdict_step: Step[Verdict]
) -> None:
    fault_server.reset_mid_body().forever()
    with pytest.raises(JudgeError) as caught:
        await _judge(fault_server).run(verdict_step, INPUTS)
    text = str(caught.value)
    assert "connection failed" in text
    assert not text.rstrip().endswith("connection failed:")
    assert "connection failed: ;" not in text and "connection failed: \n" not in text
    detail = text.split("connection failed", 1)[1]
    assert any(word in detail for word in ("closed", "reset", "incomplete", "body"))
    assert fault_server.attempts == 3  # retried like any connection failure


async def test_given_usage_is_counted_while_requests_are_sent(
    fault_server: FaultServer, verdict_step: Step[Verdict]
) -> None:
    fault_server.error(500).stall(30).forever()
    judge = _judge(fault_server, timeout=30.0)
    usage = Usage()
    task = asyncio.create_task(judge.run(verdict_step, INPUTS, usage=usage))
    retried = asyncio.to_thread(fault_server.wait_until, lambda server: server.attempts == 2)
    assert await retried  # the retry is in flight
    task.cancel()
    with pytest.raises(asyncio.CancelledError):
        await task
    assert usage.requests == 2 and judge.total.requests == 2
    assert fault_server.wait_until_idle(timeout=10) and fault_server.abandoned == 1


async def test_credentials_in_the_base_url_are_masked_and_the_query_kept(
    fault_server: FaultServer, verdict_step: Step[Verdict]
) -> None:
    base = fault_server.url + "?api-key=gw-query-secret-1"
    fault_server.reply(GOOD).error(403, "gateway key gw-query-secret-1 is not allowed")
    judge = OpenAIJudge("m", base_url=base, api_key="k-1234", cache=False, timeout=5.0)
    assert (await judge.run(verdict_step, INPUTS)).output.verdict is True
    assert fault_server.bodies[0]["model"] == "m"  # the query did not break the path
    with pytest.raises(JudgeAuthError) as caught:
        await judge.run(verdict_step, {"statement": "again"})
    assert "gw-query-secret-1" not in str(caught.value) and "HTTP 403" in str(caught.value)
