"""The LLM-judge core through the fake backend: retries on a fake clock, fallbacks remembered in
the endpoint registry, live usage, masking. Exact: no sockets, no real waits."""

from __future__ import annotations

import asyncio
import contextlib
import pickle
import random
from collections.abc import Iterator
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pytest

from convoeval.judges import FakeJudge, JudgeCache, JudgeError, OpenAIJudge, Step, Usage
from convoeval.judges.core.backend import BackendFailure, BackendReply, BackendRequest, Failure
from convoeval.judges.core.endpoints import EndpointRegistry
from convoeval.judges.core.llm import LLMJudge
from convoeval.judges.core.retry import RetryPolicy
from convoeval.judges.protocol._redact import redact

if TYPE_CHECKING:
    from conftest import FakeTime, Verdict

NAME = "statement_check"
GOOD = {"verdict": True, "label": "yes"}


def _retryable(message: str = "HTTP 503 server error: busy", after: float | None = None) -> Any:
    return BackendFailure(Failure.RETRYABLE, message, retry_after=after)


def _policy(fake_time: FakeTime, **options: Any) -> RetryPolicy:
    options.setdefault("jitter", 0.0)
    return RetryPolicy(clock=fake_time.clock, sleep=fake_time.sleep, **options)


async def test_retryable_failures_are_retried_with_backoff_and_retry_after(
    verdict_step: Step[Verdict], fake_time: FakeTime
) -> None:
    script = [_retryable(), _retryable("HTTP 429 rate limited", after=7.0), _retryable(), GOOD]
    judge = FakeJudge({NAME: script}, retry=_policy(fake_time))
    answer = await judge.run(verdict_step, {"statement": "x"})
    assert answer.output.verdict is True and answer.usage.requests == 4
    assert fake_time.sleeps == [0.5, 7.0, 2.0]  # Retry-After replaces the backoff step


async def test_fatal_failures_are_not_retried(
    verdict_step: Step[Verdict], fake_time: FakeTime
) -> None:
    fatal = BackendFailure(Failure.FATAL, "the server refused the request: HTTP 401: no")
    judge = FakeJudge({NAME: [fatal, GOOD]}, retry=_policy(fake_time))
    with pytest.raises(JudgeError, match="HTTP 401: no") as caught:
        await judge.run(verdict_step, {"statement": "x"})
    assert fake_time.sleeps == [] and judge.remaining(NAME) == 1
    assert caught.value.usage == Usage(requests=1)


async def test_thirty_percent_faults_all_scored_within_one_and_a_half_times_the_requests(
    verdict_step: Step[Verdict], fake_time: FakeTime
) -> None:
    # Issue 11 item 2 with the default policy: 1,000 steps, 30% of requests fail (429 with
    # Retry-After, 500, 503, as the fault benchmark injects them).
    chance = random.Random(7)

    def answer(inputs: Any) -> Any:
        if chance.random() < 0.3:
            return chance.choice([_retryable(after=1.0), _retryable(), _retryable()])
        return GOOD

    judge = FakeJudge({NAME: answer}, retry=_policy(fake_time))
    steps = [judge.run(verdict_step, {"statement": f"s{i}"}) for i in range(1000)]
    answers = await asyncio.gather(*steps, return_exceptions=True)
    assert [a for a in answers if isinstance(a, BaseException)] == []
    assert 1000 < judge.total.requests <= 1500


async def test_queueing_for_a_slot_never_spends_the_retry_budget(
    verdict_step: Step[Verdict], fake_time: FakeTime
) -> None:
    # One slot, twenty steps, each failing once then answered. The fake clock advances 1 s for
    # every retry wait of any step: 20 s pass while steps queue, far past the 3 s budget, yet
    # each step spends only its own 1 s wait of it.
    seen: set[str] = set()

    def answer(inputs: Any) -> Any:
        first = inputs["statement"] not in seen
        seen.add(inputs["statement"])
        return _retryable() if first else GOOD

    policy = _policy(fake_time, base_delay_s=1.0, max_total_s=3.0)
    judge = FakeJudge({NAME: answer}, retry=policy, concurrency=1)
    steps = [judge.run(verdict_step, {"statement": f"s{i}"}) for i in range(20)]
    answers = await asyncio.gather(*steps)
    assert len(answers) == 20 and fake_time.now == 20.0
    assert judge.total.requests == 40


async def test_format_rejection_falls_back_and_the_registry_remembers_until_reset(
    verdict_step: Step[Verdict],
) -> None:
    registry = EndpointRegistry()
    refused = BackendFailure(Failure.FORMAT_REJECTED, "HTTP 400: json_schema unsupported")
    judge = FakeJudge({NAME: [refused, GOOD, GOOD]}, registry=registry)
    await judge.run(verdict_step, {"statement": "a"})
    assert registry.mode("fake:fake", "fake") == "json_object"
    await judge.run(verdict_step, {"statement": "b"})
    assert len(judge.calls) == 3  # the second step went straight to JSON mode
    registry.reset()
    assert registry.mode("fake:fake", "fake") == "json_schema"


async def test_a_refused_parameter_is_adapted_once(verdict_step: Step[Verdict]) -> None:
    registry = EndpointRegistry()
    refused = BackendFailure(Failure.PARAM_REJECTED, "HTTP 400: no seed", param="seed")
    judge = FakeJudge({NAME: [refused, refused]}, registry=registry)
    with pytest.raises(JudgeError, match="no seed"):
        await judge.run(verdict_step, {"statement": "a"})
    assert registry.learned("fake:fake", "fake").adapted == {"seed"}
    assert len(judge.calls) == 2


async def test_given_usage_receives_costs_also_when_the_step_fails(
    verdict_step: Step[Verdict],
) -> None:
    judge = FakeJudge({NAME: ["not json", "still not json", GOOD]})
    usage = Usage(requests=5)
    with pytest.raises(JudgeError) as caught:
        await judge.run(verdict_step, {"statement": "a"}, usage=usage)
    assert usage.requests == 7 and usage.prompt_tokens > 0
    assert caught.value.usage is not None and caught.value.usage.requests == 2
    answer = await judge.run(verdict_step, {"statement": "b"}, usage=usage)
    assert usage.requests == 8 and answer.usage.requests == 1
    assert judge.total.requests == 3


async def test_fake_calls_keep_the_inputs_object_as_passed(verdict_step: Step[Verdict]) -> None:
    inputs = {"statement": "a"}
    judge = FakeJudge({NAME: [GOOD]})
    await judge.run(verdict_step, inputs)
    assert judge.calls[0].inputs is inputs


async def test_judge_errors_mask_the_configured_key_and_token_shapes(
    verdict_step: Step[Verdict],
) -> None:
    leak = BackendFailure(
        Failure.FATAL, "HTTP 401: Incorrect API key provided: Bearer sk-abc123456"
    )
    with pytest.raises(JudgeError) as caught:
        await FakeJudge({NAME: [leak]}).run(verdict_step, {"statement": "a"})
    assert "sk-abc123456" not in str(caught.value) and "[REDACTED]" in str(caught.value)


def test_redact() -> None:
    text = "key s3cr3t-value, Authorization: Bearer abc.def-ghi, sk-proj-0123456789 end"
    masked = redact(text, ["s3cr3t-value", "ab"])
    assert masked == "key [REDACTED], Authorization: Bearer [REDACTED], [REDACTED] end"


def test_describe_uses_kind(verdict_step: Step[Verdict]) -> None:
    judge = OpenAIJudge("m", base_url="http://127.0.0.1:9/v1", cache=False, timeout=3)
    assert judge.describe()["kind"] == "openai"
    assert judge.describe()["timeout"] == 3 and judge.describe()["retry_budget"] == 120
    assert FakeJudge({}).describe()["kind"] == "fake"


async def test_a_retry_after_longer_than_the_budget_left_gives_up_at_once(
    verdict_step: Step[Verdict], fake_time: FakeTime
) -> None:
    script = [_retryable("HTTP 429 rate limited: quota", after=45.0), GOOD]
    judge = FakeJudge({NAME: script}, retry=_policy(fake_time, max_total_s=30.0))
    with pytest.raises(JudgeError, match=r"after 1 attempt: the retry time budget \(30 s\)"):
        await judge.run(verdict_step, {"statement": "x"})
    assert fake_time.sleeps == [] and judge.remaining(NAME) == 1


@pytest.mark.parametrize(
    "options",
    [{"concurrency": 0}, {"timeout": 0}, {"retry_budget": 0}, {"retry_budget": -1}],
)
def test_invalid_limits_are_refused(options: dict[str, Any]) -> None:
    with pytest.raises(ValueError, match="must be"):
        OpenAIJudge("m", base_url="http://127.0.0.1:9/v1", cache=False, **options)


def test_judge_errors_survive_pickling() -> None:
    error = JudgeError("step", "failed: Bearer sk-abcdefgh123", raw="answer")
    error.usage = Usage(requests=2)
    again = pickle.loads(pickle.dumps(error))
    assert type(again) is JudgeError and str(again) == str(error)
    assert (again.step, again.raw, again.usage) == ("step", "answer", Usage(requests=2))
    assert "sk-abcdefgh123" not in str(again)


class _Batching:
    """A toy batch backend: requests wait until `size` are pending, then all are answered at
    once; the first line of the first batch fails. Proves a batch backend needs no own retry or
    cache code."""

    kind, model, endpoint = "batch", "m", "batch:test"

    def __init__(self, size: int) -> None:
        self.size = size
        self.pending: list[tuple[BackendRequest, asyncio.Future[BackendReply]]] = []
        self.batches: list[int] = []

    def sampling(self) -> dict[str, Any]:
        return {}

    def secrets(self) -> tuple[str, ...]:
        return ()

    async def aclose(self) -> None:
        return None

    async def send(self, request: BackendRequest) -> BackendReply:
        line: asyncio.Future[BackendReply] = asyncio.get_running_loop().create_future()
        self.pending.append((request, line))
        if len(self.pending) >= self.size or self.batches:
            batch, self.pending = self.pending, []
            self.batches.append(len(batch))
            for i, (_, waiting) in enumerate(batch):
                if i == 0 and len(self.batches) == 1:
                    waiting.set_exception(_retryable("batch line 0 expired"))
                else:
                    waiting.set_result(BackendReply(content=GOOD, finish_reason="stop"))
        return await line


async def test_a_batch_backend_gets_retries_and_cache_from_the_core(
    verdict_step: Step[Verdict], fake_time: FakeTime, tmp_path: Path
) -> None:
    backend = _Batching(size=4)
    judge = LLMJudge(
        backend,
        name="batch/m",
        cache=JudgeCache(tmp_path / "c.sqlite3"),
        retry=_policy(fake_time),
        registry=EndpointRegistry(),
    )
    steps = [judge.run(verdict_step, {"statement": f"s{i}"}) for i in range(4)]
    answers = await asyncio.gather(*steps)
    assert all(a.output.verdict for a in answers)
    assert backend.batches == [4, 1] and fake_time.sleeps == [0.5]  # the failed line, retried
    again = await judge.run(verdict_step, {"statement": "s0"})
    assert again.usage.cached == 1 and backend.batches == [4, 1]


class _Keys:
    """Answers at once and records each request's key and the answers in progress then."""

    kind, model, endpoint = "keys", "m", "keys:test"

    def __init__(self) -> None:
        self.seen: list[tuple[str, int]] = []
        self.judge: _Tracked | None = None

    def sampling(self) -> dict[str, Any]:
        return {"temperature": 0.0}

    def secrets(self) -> tuple[str, ...]:
        return ()

    async def aclose(self) -> None:
        return None

    async def send(self, request: BackendRequest) -> BackendReply:
        self.seen.append((request.key, self.judge.open if self.judge else -1))
        return BackendReply(content=GOOD, finish_reason="stop")


class _Tracked(LLMJudge):
    """Uses the core's two hooks: keys without a cache, and the answers in progress."""

    keyed = True

    def __init__(self, backend: _Keys) -> None:
        super().__init__(backend, name="keys/m", registry=EndpointRegistry(), samples=2)
        backend.judge = self
        self.open = self.done = 0

    @contextlib.contextmanager
    def _answering(self) -> Iterator[None]:
        self.open += 1
        try:
            yield
        finally:
            self.open -= 1
            self.done += 1


async def test_requests_carry_their_cache_key_and_subclasses_see_answers_in_progress(
    verdict_step: Step[Verdict], tmp_path: Path
) -> None:
    inputs = {"statement": "s"}
    cached, plain, tracked = _Keys(), _Keys(), _Keys()
    cache = JudgeCache(tmp_path / "c.sqlite3")
    await LLMJudge(cached, name="keys/m", cache=cache, samples=2).run(verdict_step, inputs)
    await LLMJudge(plain, name="keys/m", samples=2).run(verdict_step, inputs)
    judge = _Tracked(tracked)
    await judge.run(verdict_step, inputs)
    keys = [key for key, _ in cached.seen]
    assert len(set(keys)) == 2 and all(cache.get(key) for key in keys)  # a key per sample
    assert [key for key, _ in plain.seen] == ["", ""]  # no cache: no key computed
    assert sorted(tracked.seen) == sorted((key, 1) for key in keys)  # sent inside the hook
    assert (judge.open, judge.done) == (0, 2)
