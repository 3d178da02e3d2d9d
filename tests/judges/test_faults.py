"""Every injected fault ends in a correct answer after retries or in a clean `JudgeError`.

The server is a real socket on 127.0.0.1; each test asserts how many attempts it received.
Waits between retries go through a fake clock (`fake_time`), so delays are asserted exactly.
"""

from __future__ import annotations

import time
from dataclasses import replace
from email.utils import formatdate
from typing import TYPE_CHECKING, Any

import pytest

from convoeval.judges import JudgeAuthError, JudgeError, OpenAIJudge, Step
from convoeval.judges.core.retry import RetryPolicy, parse_retry_after

if TYPE_CHECKING:
    from conftest import FakeTime, FaultServer, Verdict

GOOD = {"verdict": True, "label": "yes"}
INPUTS = {"statement": "the sea is salty"}
#: For tests that assert no delays: real waits of at most 50 ms, and 4 attempts at most.
QUICK = RetryPolicy(max_retries=3, base_delay_s=0.01, max_delay_s=0.05)


def _policy(fake_time: FakeTime, **options: Any) -> RetryPolicy:
    options.setdefault("max_retries", 3)
    options.setdefault("base_delay_s", 0.01)
    options.setdefault("max_delay_s", 0.05)
    options.setdefault("max_retry_after_s", 3.0)
    options.setdefault("jitter", 0.0)
    return RetryPolicy(clock=fake_time.clock, sleep=fake_time.sleep, **options)


@pytest.fixture
def fast(fake_time: FakeTime) -> RetryPolicy:
    return _policy(fake_time)


def _judge(server: FaultServer, **options: Any) -> OpenAIJudge:
    options.setdefault("api_key", "sk-fault-key")
    options.setdefault("cache", False)
    options.setdefault("timeout", 5.0)
    options.setdefault("retry", QUICK)
    return OpenAIJudge("fault-model", base_url=server.url, **options)


async def test_429_honours_retry_after_seconds(
    fault_server: FaultServer, verdict_step: Step[Verdict], fake_time: FakeTime, fast: RetryPolicy
) -> None:
    fault_server.error(429, "slow down", {"Retry-After": "1"}).reply(GOOD)
    answer = await _judge(fault_server, retry=fast).run(verdict_step, INPUTS)
    assert fake_time.sleeps == [1.0]
    assert answer.output.verdict is True
    assert fault_server.attempts == 2 and answer.usage.requests == 2


async def test_429_honours_retry_after_ms(
    fault_server: FaultServer, verdict_step: Step[Verdict], fake_time: FakeTime, fast: RetryPolicy
) -> None:
    fault_server.error(429, "slow down", {"retry-after-ms": "250"}).reply(GOOD)
    await _judge(fault_server, retry=fast).run(verdict_step, INPUTS)
    assert fake_time.sleeps == [0.25] and fault_server.attempts == 2


async def test_429_honours_retry_after_http_date(
    fault_server: FaultServer, verdict_step: Step[Verdict], fake_time: FakeTime
) -> None:
    # A date a day ahead: whatever the clock reads meanwhile, the wait is the cap, exactly; a
    # date in the past means at once. (The arithmetic, on a fixed clock: test_retry_after_parsing.)
    ahead, past = (formatdate(time.time() + d, usegmt=True) for d in (86_400, -86_400))
    fault_server.error(429, "slow down", {"Retry-After": ahead})
    fault_server.error(429, "slow down", {"Retry-After": past}).reply(GOOD)
    policy = _policy(fake_time, max_retry_after_s=60)
    await _judge(fault_server, retry=policy).run(verdict_step, INPUTS)
    assert fake_time.sleeps == [60.0, 0.0]  # not the backoff of a header it could not read
    assert fault_server.attempts == 3


async def test_429_retry_after_is_capped(
    fault_server: FaultServer, verdict_step: Step[Verdict], fake_time: FakeTime
) -> None:
    fault_server.error(429, "come back in an hour", {"Retry-After": "3600"}).reply(GOOD)
    policy = _policy(fake_time, max_retries=2, max_retry_after_s=0.2)
    await _judge(fault_server, retry=policy).run(verdict_step, INPUTS)
    assert fake_time.sleeps == [0.2]
    assert fault_server.attempts == 2


async def test_429_without_end_fails_at_the_safety_cap(
    fault_server: FaultServer, verdict_step: Step[Verdict], fake_time: FakeTime, fast: RetryPolicy
) -> None:
    fault_server.error(429, "quota", {"Retry-After": "0"}).forever()
    with pytest.raises(JudgeError, match=r"statement_check.*gave up after 4 attempts.*429"):
        await _judge(fault_server, retry=fast).run(verdict_step, INPUTS)
    assert fault_server.attempts == 4  # one try + max_retries=3
    assert fake_time.sleeps == [0.0, 0.0, 0.0]


async def test_500s_are_retried_then_answered(
    fault_server: FaultServer, verdict_step: Step[Verdict], fake_time: FakeTime, fast: RetryPolicy
) -> None:
    fault_server.error(500).error(502).reply(GOOD)
    judge = _judge(fault_server, retry=fast)
    answer = await judge.run(verdict_step, INPUTS)
    assert answer.output.label == "yes"
    assert fault_server.attempts == 3 and answer.usage.requests == 3
    assert fake_time.sleeps == [0.01, 0.02]  # exponential backoff, no jitter


async def test_408_and_409_are_retried(
    fault_server: FaultServer, verdict_step: Step[Verdict], fake_time: FakeTime, fast: RetryPolicy
) -> None:
    fault_server.error(408, "request timeout").error(409, "conflict").reply(GOOD)
    answer = await _judge(fault_server, retry=fast).run(verdict_step, INPUTS)
    assert answer.output.verdict is True and fault_server.attempts == 3


async def test_500s_forever_end_in_judge_error(
    fault_server: FaultServer, verdict_step: Step[Verdict], fake_time: FakeTime
) -> None:
    fault_server.error(500, "boom").forever()
    judge = _judge(fault_server, retry=_policy(fake_time, max_retries=2))
    with pytest.raises(JudgeError, match="gave up after 3 attempts") as caught:
        await judge.run(verdict_step, INPUTS)
    assert caught.value.step == "statement_check" and "HTTP 500 server error: boom" in str(
        caught.value
    )
    assert fault_server.attempts == 3 and judge.total.requests == 3


async def test_retries_go_on_for_the_budget_not_a_small_count(
    fault_server: FaultServer, verdict_step: Step[Verdict], fake_time: FakeTime
) -> None:
    # Issue 11 item 2: the default policy retries while its 120 s budget lasts (backoff
    # 0.5, 1, 2, ... capped at 30 s): eight 5xx in a row are still answered.
    for status in (500, 503, 502, 500, 503, 500, 500, 503):
        fault_server.error(status)
    fault_server.reply(GOOD)
    policy = RetryPolicy(clock=fake_time.clock, sleep=fake_time.sleep, jitter=0.0)
    answer = await _judge(fault_server, retry=policy).run(verdict_step, INPUTS)
    assert answer.output.verdict is True and fault_server.attempts == 9
    assert fake_time.sleeps == [0.5, 1, 2, 4, 8, 16, 30, 30]


async def test_total_retry_time_is_bounded_by_the_budget(
    fault_server: FaultServer, verdict_step: Step[Verdict], fake_time: FakeTime
) -> None:
    fault_server.error(503).forever()
    policy = _policy(fake_time, max_retries=100, base_delay_s=0.1, max_delay_s=0.1)
    policy = replace(policy, max_total_s=0.5)
    with pytest.raises(JudgeError, match=r"gave up after 5 attempts: the retry time budget"):
        await _judge(fault_server, retry=policy).run(verdict_step, INPUTS)
    # 0.4 s spent waiting; a fifth 0.1 s wait would reach the 0.5 s budget.
    assert fake_time.sleeps == [0.1] * 4 and fault_server.attempts == 5


async def test_retry_budget_option_sets_the_budget(
    fault_server: FaultServer, verdict_step: Step[Verdict], fake_time: FakeTime
) -> None:
    fault_server.error(503).forever()
    policy = RetryPolicy(clock=fake_time.clock, sleep=fake_time.sleep, jitter=0.0)
    judge = _judge(fault_server, retry=policy, retry_budget=4)
    with pytest.raises(JudgeError, match=r"retry time budget \(4 s\)"):
        await judge.run(verdict_step, INPUTS)
    assert fake_time.sleeps == [0.5, 1, 2] and fault_server.attempts == 4


async def test_stall_past_timeout_is_retried(
    fault_server: FaultServer, verdict_step: Step[Verdict], fast: RetryPolicy
) -> None:
    # The stall outlasts the timeout by far; the timeout (2 s) is generous for the healthy reply
    # that follows, however loaded the machine.
    fault_server.stall(60).reply(GOOD)
    answer = await _judge(fault_server, timeout=2.0, retry=fast).run(verdict_step, INPUTS)
    assert answer.output.verdict is True and fault_server.attempts == 2
    assert fault_server.wait_until_idle(timeout=30) and fault_server.abandoned == 1


async def test_stalls_forever_end_in_judge_error(
    fault_server: FaultServer, verdict_step: Step[Verdict], fake_time: FakeTime
) -> None:
    fault_server.stall(10).forever()
    judge = _judge(fault_server, timeout=0.2, retry=_policy(fake_time, max_retries=1))
    with pytest.raises(JudgeError, match=r"timed out after 0.2 s \(counted from when it was sent"):
        await judge.run(verdict_step, INPUTS)
    assert fault_server.attempts == 2


async def test_dropped_connection_is_retried(
    fault_server: FaultServer, verdict_step: Step[Verdict]
) -> None:
    fault_server.drop().reply(GOOD)
    answer = await _judge(fault_server).run(verdict_step, INPUTS)
    assert answer.output.verdict is True and fault_server.attempts == 2


async def test_dropped_connections_forever_end_in_judge_error(
    fault_server: FaultServer, verdict_step: Step[Verdict]
) -> None:
    fault_server.drop().forever()
    with pytest.raises(JudgeError, match="connection failed"):
        await _judge(fault_server).run(verdict_step, INPUTS)
    assert fault_server.attempts == 4


async def test_malformed_json_is_reasked_quoting_the_error(
    fault_server: FaultServer, verdict_step: Step[Verdict]
) -> None:
    fault_server.reply('{"verdict": true, "label": ').reply(GOOD)
    answer = await _judge(fault_server).run(verdict_step, INPUTS)
    assert answer.output.verdict is True
    assert fault_server.attempts == 2 and answer.usage.requests == 2
    reask = fault_server.bodies[1]["messages"]
    assert reask[2] == {"role": "assistant", "content": '{"verdict": true, "label": '}
    assert "does not match the output schema" in reask[3]["content"]
    assert "Invalid JSON" in reask[3]["content"]


async def test_off_schema_twice_ends_in_judge_error_with_raw_answer(
    fault_server: FaultServer, verdict_step: Step[Verdict]
) -> None:
    fault_server.reply({"verdict": "perhaps", "label": "yes"}).reply({"answer": 42})
    judge = _judge(fault_server)
    with pytest.raises(JudgeError) as caught:
        await judge.run(verdict_step, INPUTS)
    message = str(caught.value)
    assert "statement_check" in message and "after one re-ask" in message
    assert caught.value.raw == '{"answer": 42}' and '{"answer": 42}' in message
    assert fault_server.attempts == 2 and judge.total.requests == 2


async def test_long_raw_answer_is_truncated_in_the_error(
    fault_server: FaultServer, verdict_step: Step[Verdict]
) -> None:
    fault_server.reply("x" * 5000).forever()
    with pytest.raises(JudgeError) as caught:
        await _judge(fault_server).run(verdict_step, INPUTS)
    assert len(str(caught.value)) < 2000 and "(5000 chars)" in str(caught.value)


async def test_cut_off_answer_is_reasked_then_fails_cleanly(
    fault_server: FaultServer, verdict_step: Step[Verdict]
) -> None:
    fault_server.reply('{"verdict": tr', finish_reason="length").forever()
    with pytest.raises(JudgeError, match="cut off at the token limit"):
        await _judge(fault_server).run(verdict_step, INPUTS)
    assert fault_server.attempts == 2


async def test_json_schema_rejection_falls_back_to_json_mode_and_is_remembered(
    fault_server: FaultServer, verdict_step: Step[Verdict]
) -> None:
    fault_server.error(400, "response_format json_schema is not supported by this server")
    fault_server.reply(GOOD).reply(GOOD)
    answer = await _judge(fault_server).run(verdict_step, INPUTS)
    assert answer.output.verdict is True
    assert fault_server.attempts == 2 and answer.usage.requests == 2
    assert fault_server.bodies[0]["response_format"]["type"] == "json_schema"
    fallback = fault_server.bodies[1]
    assert fallback["response_format"] == {"type": "json_object"}
    system = fallback["messages"][0]["content"]
    assert system.startswith(verdict_step.instructions)
    assert '"label": {"enum": ["yes", "no"]' in system  # generated from the pydantic model

    # Another judge instance on the same endpoint goes straight to JSON mode.
    await _judge(fault_server).run(verdict_step, {"statement": "another"})
    assert fault_server.attempts == 3
    assert fault_server.bodies[2]["response_format"] == {"type": "json_object"}


async def test_json_mode_rejection_falls_back_to_schema_in_prompt(
    fault_server: FaultServer, verdict_step: Step[Verdict]
) -> None:
    fault_server.error(400, "unknown field response_format.json_schema")
    fault_server.error(400, "response_format is not supported").reply(GOOD)
    answer = await _judge(fault_server).run(verdict_step, INPUTS)
    assert answer.output.label == "yes" and fault_server.attempts == 3
    assert "response_format" not in fault_server.bodies[2]
    assert "JSON schema" in fault_server.bodies[2]["messages"][0]["content"]


@pytest.mark.parametrize(
    ("status", "error"),
    [
        (400, JudgeError),
        (401, JudgeAuthError),
        (403, JudgeAuthError),
        (404, JudgeError),
        (422, JudgeError),
    ],
)
async def test_client_errors_are_not_retried(
    fault_server: FaultServer, verdict_step: Step[Verdict], status: int, error: type[Exception]
) -> None:
    # 401 and 403 refuse the credentials: not a failed step but a stop (JudgeAuthError).
    fault_server.error(status, "you did something wrong").forever()
    judge = _judge(fault_server, api_key="sk-must-not-leak")
    with pytest.raises(error, match=f"HTTP {status}") as caught:
        await judge.run(verdict_step, INPUTS)
    assert fault_server.attempts == 1
    assert "sk-must-not-leak" not in str(caught.value)


async def test_non_json_http_body_is_a_judge_error(
    fault_server: FaultServer, verdict_step: Step[Verdict]
) -> None:
    fault_server.raw(200, "<html>gateway says hi</html>")
    with pytest.raises(JudgeError):
        await _judge(fault_server).run(verdict_step, INPUTS)
    assert fault_server.attempts == 1


def test_retry_after_parsing() -> None:
    assert parse_retry_after("3") == 3.0
    assert parse_retry_after("0.5") == 0.5
    assert parse_retry_after(None) is None and parse_retry_after("soon") is None
    now = 1_700_000_000.0
    assert parse_retry_after(formatdate(now + 30, usegmt=True), now=now) == pytest.approx(30)
    assert parse_retry_after(formatdate(now - 30, usegmt=True), now=now) == 0.0


def test_backoff_grows_and_is_capped() -> None:
    policy = RetryPolicy(base_delay_s=0.5, max_delay_s=4.0, jitter=0.0, max_retry_after_s=10)
    assert [policy.backoff(n) for n in (1, 2, 3, 4, 5)] == [0.5, 1.0, 2.0, 4.0, 4.0]
    assert policy.backoff(1, retry_after=60) == 10
    jittery = RetryPolicy(base_delay_s=1.0, jitter=0.25)
    delays = {jittery.backoff(1) for _ in range(50)}
    assert all(0.75 <= d <= 1.25 for d in delays) and len(delays) > 1


async def test_reasoning_model_parameters_are_adapted_once_and_remembered(
    fault_server: FaultServer, verdict_step: Step[Verdict]
) -> None:
    fault_server.error(
        400,
        "Unsupported parameter: 'max_tokens' is not supported with this model. "
        "Use 'max_completion_tokens' instead.",
    )
    fault_server.error(
        400,
        "Unsupported value: 'temperature' does not support 0 with this model. "
        "Only the default (1) value is supported.",
    )
    fault_server.reply(GOOD).reply(GOOD)
    answer = await _judge(fault_server, max_tokens=50).run(verdict_step, INPUTS)
    assert answer.output.label == "yes" and answer.usage.requests == 3
    first, second, third = fault_server.bodies
    assert first["max_tokens"] == 50 and first["temperature"] == 0
    assert "max_tokens" not in second and second["max_completion_tokens"] == 50
    assert "temperature" not in third and third["max_completion_tokens"] == 50
    # Another judge for the same endpoint and model starts with what was learned.
    await _judge(fault_server, max_tokens=50).run(verdict_step, {"statement": "again"})
    assert fault_server.attempts == 4
    assert "temperature" not in fault_server.bodies[3]
    assert fault_server.bodies[3]["max_completion_tokens"] == 50


async def test_a_parameter_refused_again_after_adapting_is_a_clean_failure(
    fault_server: FaultServer, verdict_step: Step[Verdict]
) -> None:
    fault_server.error(400, "Unsupported value: 'temperature' is not supported.").forever()
    with pytest.raises(JudgeError, match="refused the request: HTTP 400"):
        await _judge(fault_server).run(verdict_step, INPUTS)
    # The second attempt left temperature out and was refused too: a plain client error.
    assert fault_server.attempts == 2
    assert "temperature" not in fault_server.bodies[1]
