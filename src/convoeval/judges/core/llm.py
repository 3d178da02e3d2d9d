"""`LLMJudge`: the one core every model-backed judge runs through (as inspect_ai's `Model` wraps
a `ModelAPI`). A `Backend` does one round trip; the core owns the answer cache, the concurrency
limit, the per-request timeout, retries within a time budget, output-mode fallback and parameter
adaptation, the one re-ask, usage accounting, the masking of credentials in errors and answers
(no answer leaves the judge, or enters its cache, holding a key), and the stop at the first
refusal of the credentials.
"""

from __future__ import annotations

import asyncio
import contextlib
import sqlite3
import warnings
from contextlib import AbstractAsyncContextManager, AbstractContextManager
from typing import Any, ClassVar, TypeVar

from pydantic import BaseModel

from convoeval.judges.core.backend import (
    Backend,
    BackendFailure,
    BackendReply,
    BackendRequest,
    Failure,
)
from convoeval.judges.core.cache import JudgeCache, cache_key
from convoeval.judges.core.endpoints import ENDPOINTS, MODES, EndpointRegistry
from convoeval.judges.core.keys import Credentials, scrubbed
from convoeval.judges.core.retry import Limiter, RetryBudget, RetryPolicy
from convoeval.judges.ensembles.repeat import current_repeat, repeat_sampling
from convoeval.judges.ensembles.samples import combine, sample_sampling
from convoeval.judges.protocol._answers import (
    AnswerProblem,
    RawReply,
    Reask,
    accept,
    ask_validated,
    estimate_tokens,
    raw_text,
)
from convoeval.judges.protocol._redact import scrub
from convoeval.judges.protocol.base import Answer, JudgeConfigError, JudgeError, Usage
from convoeval.judges.protocol.step import Step

OutT = TypeVar("OutT", bound=BaseModel)


class _Tally:
    """Adds every cost, as it happens, to the step's usage, the judge's total and the caller's."""

    def __init__(self, *targets: Usage | None) -> None:
        self.step = Usage()
        self._targets = [self.step, *(t for t in targets if t is not None)]

    def add(self, delta: Usage) -> None:
        for target in self._targets:
            target.add(delta)


class LLMJudge:
    """A judge made of a backend and this core.

    Concurrency: `limiter` bounds the requests in flight of every metric, sample and step that
    uses this judge (None: no bound). The OpenAI judge gets its own limiter when given
    `concurrency`, else the endpoint's shared default one: a judge's explicit limit never changes
    another judge's.

    Time: `timeout` bounds each request from when it is sent (after it got its slot) to its last
    byte; a request past it is cancelled and its connection closed (None: no bound, for backends
    such as a batch API whose answers take hours). Retryable failures (429, 5xx, timeouts,
    connection errors) are retried while the step's retry budget (`retry.max_total_s`) lasts,
    honouring Retry-After; queueing for a slot never spends it.

    Samples: with `samples=N` (N > 1) every step is asked N times concurrently, each sample with
    its own re-ask, retries, budget and cache entry, and the answers are combined by majority
    vote (judges/ensembles/samples.py); `Answer.vote` keeps every sample and each verdict's
    confidence.

    Credentials (judges/core/keys.py): the backend's secrets are registered when the judge is
    built, so every answer, error, row and report is scrubbed of them. The first refusal of
    them (401/403) raises `JudgeAuthError`; from then on every request raises it again unsent,
    until `check_credentials` passes.

    Hooks for subclasses (the batch judge uses both): `keyed = True` puts each question's cache
    key on its `BackendRequest.key` even when the judge has no cache (or lost it), and
    `_answering()` brackets the finding of each answer (cached or asked; each sample's apart).
    """

    #: Every request carries its cache key, with or without a cache (see the class docstring).
    keyed: ClassVar[bool] = False

    def __init__(
        self,
        backend: Backend,
        *,
        name: str,
        cache: JudgeCache | None = None,
        limiter: Limiter | None = None,
        timeout: float | None = None,
        retry: RetryPolicy | None = None,
        registry: EndpointRegistry | None = None,
        reason_first: bool = False,
        samples: int = 1,
    ) -> None:
        if timeout is not None and timeout <= 0:
            raise JudgeConfigError(f"timeout must be positive, not {timeout:g}")
        if isinstance(samples, bool) or not isinstance(samples, int) or samples < 1:
            raise JudgeConfigError(f"samples must be a whole number of at least 1, not {samples!r}")
        self.backend = backend
        self.name = name
        self.cache = cache
        self.timeout = timeout
        self.retry = retry or RetryPolicy()
        self.registry = registry if registry is not None else ENDPOINTS
        self._limiter = limiter
        #: Ask for each verdict's rationale before the verdict (schema property order).
        self.reason_first = reason_first
        #: Independent answers per step, combined by majority vote (1: a single answer).
        self.samples = samples
        #: Everything this judge spent so far, failed and cancelled steps included.
        self.total = Usage()
        #: Its keys: registered for scrubbing; refused (401/403) and then never sent again.
        self.credentials = Credentials(name, backend.endpoint, backend.secrets())

    @property
    def concurrency(self) -> int | None:
        """This judge's limit on requests in flight (None: unlimited)."""
        return None if self._limiter is None else self._limiter.limit

    def describe(self) -> dict[str, Any]:
        """Judge kind, name, model, endpoint, sampling and limits (never a key)."""
        return {
            "kind": self.backend.kind,
            "name": self.name,
            "model": self.backend.model,
            "endpoint": self.backend.endpoint,
            **self.backend.sampling(),
            "concurrency": self.concurrency,
            "cache": self.cache is not None,
            "timeout": self.timeout,
            "retry_budget": self.retry.max_total_s,
            "reason_first": self.reason_first,
            "samples": self.samples,
        }

    async def aclose(self) -> None:
        """Close the backend's connections on this event loop (optional)."""
        await self.backend.aclose()

    async def check_credentials(self) -> None:
        """Send the backend's smallest authenticated request (its `check_credentials`, when it
        has one) before anything is scored: `JudgeAuthError` when the server refuses the
        credentials. Any other outcome proves nothing and lets the run go on."""
        check = getattr(self.backend, "check_credentials", None)
        if check is not None:
            await self.credentials.check(check, self.timeout)

    async def run(
        self, step: Step[OutT], inputs: Any, *, usage: Usage | None = None
    ) -> Answer[OutT]:
        """Answer `step` for `inputs`: the cache, else request(s) with retries and one re-ask;
        with `samples` above 1, that for every sample, then their majority vote.

        `usage`, when given, receives each request's cost as it is sent (so a caller whose task
        fails or is cancelled still counts it); `Answer.usage` is what this step cost, every
        sample's requests included.
        """
        tally = _Tally(self.total, usage)
        user = step.render(inputs)
        schema = step.request_schema(inputs, reason_first=self.reason_first)
        try:
            if self.samples == 1:
                output = await self._answer(step, inputs, user, schema, tally, None)
                return Answer(output=output, usage=tally.step)
            results = await asyncio.gather(
                *(
                    self._answer(step, inputs, user, schema, tally, index)
                    for index in range(self.samples)
                ),
                return_exceptions=True,
            )
            answers: list[OutT | JudgeError] = []
            for result in results:
                if isinstance(result, JudgeError) or not isinstance(result, BaseException):
                    answers.append(result)
                else:
                    raise result  # a bug or a cancellation is raised, not voted on
            output, vote = combine(step, inputs, answers)
        except JudgeError as exc:
            exc.usage = tally.step
            exc.mask(self.backend.secrets())
            raise
        return Answer(output=output, usage=tally.step, vote=vote)

    async def _answer(
        self,
        step: Step[OutT],
        inputs: Any,
        user: str,
        schema: dict[str, Any],
        tally: _Tally,
        sample: int | None,
    ) -> OutT:
        """One valid answer, from the cache or asked; `sample` is the index of a repeated
        sample (its own sampling settings and cache key), None for the only one; a repeat of a
        repeated run (after the first) has its own sampling settings and cache key too."""
        sampling = self.backend.sampling()
        if sample is not None:
            sampling = sample_sampling(sampling, sample)
        repeat = (
            current_repeat()
        )  # a repeated run's repeat: fresh samples (judges/ensembles/repeat.py)
        if repeat:
            sampling = repeat_sampling(sampling, repeat, self.samples)
        keyed = self.keyed or self.cache is not None
        key = self._cache_key(step, user, schema, sampling) if keyed else ""
        overrides = {} if sample is None and not repeat else sampling
        with self._answering():
            cached = await self._cached(key, step, inputs)
            if cached is not None:
                tally.add(Usage(cached=1))
                return cached
            try:
                output = await ask_validated(
                    step,
                    inputs,
                    lambda reask: self._ask(
                        step, inputs, user, schema, reask, tally, overrides, key
                    ),
                )
            except JudgeError as exc:
                exc.mask(self.backend.secrets())
                raise
            await self._cache_put(key, step, output)
            return output

    def _answering(self) -> AbstractContextManager[None]:
        """Entered, on the answering task, while one answer is found (from the cache or asked,
        re-asks and retries included) and left when it is found or failed: a hook for
        subclasses that track the steps in progress. Does nothing here."""
        return contextlib.nullcontext()

    def _cache_key(
        self, step: Step[Any], user: str, schema: dict[str, Any], sampling: dict[str, Any]
    ) -> str:
        return cache_key(
            endpoint=self.backend.endpoint,
            model=self.backend.model,
            step=step.name,
            version=step.version,
            system=step.instructions,
            user=user,
            schema=schema,
            sampling=sampling,
        )

    def _cache_broken(self, exc: Exception) -> None:
        if self.cache is None:
            return  # another task already reported it
        cache, self.cache = self.cache, None
        warnings.warn(
            f"judge cache {cache} is unusable ({type(exc).__name__}: {exc}); continuing without it",
            RuntimeWarning,
            stacklevel=4,
        )

    async def _cached(self, key: str, step: Step[OutT], inputs: Any) -> OutT | None:
        if self.cache is None:
            return None
        try:
            stored = await self.cache.aget(key)
        except (sqlite3.Error, OSError) as exc:
            self._cache_broken(exc)
            return None
        if stored is None:
            return None
        try:  # scrubbed: an entry written before its key was masked never leaves with it
            return accept(step, inputs, RawReply(content=scrub(stored)))
        except AnswerProblem:
            return None  # stale entry (schema or check changed): ask again

    async def _cache_put(self, key: str, step: Step[Any], output: BaseModel) -> None:
        if self.cache is None:
            return
        try:
            await self.cache.aput(
                key, output.model_dump_json(), step=step.name, model=self.backend.model
            )
        except (sqlite3.Error, OSError) as exc:
            self._cache_broken(exc)

    async def _ask(
        self,
        step: Step[Any],
        inputs: Any,
        user: str,
        schema: dict[str, Any],
        reask: Reask | None,
        tally: _Tally,
        sampling: dict[str, Any],
        key: str,
    ) -> RawReply:
        """One answer: fall back through output modes and adapt refused parameters on the way.
        `sampling` holds a repeated sample's temperature and seed (empty: the backend's own);
        `key` is the question's cache key, passed on to the backend."""
        learned = self.registry.learned(self.backend.endpoint, self.backend.model)
        mode = learned.mode
        while True:
            request = BackendRequest(
                step,
                inputs,
                user,
                schema,
                reask,
                MODES[mode],
                frozenset(learned.adapted),
                temperature=sampling.get("temperature"),
                seed=sampling.get("seed"),
                key=key,
            )
            try:
                reply = await self._send(request, tally)
            except BackendFailure as failure:
                param = failure.param if failure.kind is Failure.PARAM_REJECTED else None
                if param and param not in request.adapted:
                    learned.adapt(param)  # adapted once, not sent again
                    continue
                if failure.kind is Failure.FORMAT_REJECTED and mode + 1 < len(MODES):
                    mode += 1
                    learned.fall_back(mode)
                    continue
                if failure.kind is Failure.CREDENTIALS_REFUSED:
                    raise self.credentials.refuse(failure.message) from None
                raise JudgeError(step.name, failure.message) from None
            return RawReply(content=scrubbed(reply.content), finish_reason=reply.finish_reason)

    async def _send(self, request: BackendRequest, tally: _Tally) -> BackendReply:
        """Send with retries: a slot per attempt, the timeout from sending, the budget spent only
        sending and backing off. Raises a non-retryable `BackendFailure` or `JudgeError`."""
        policy = self.retry
        budget = RetryBudget(policy.max_total_s)
        attempts = 0
        while True:
            async with self._slot():
                self.credentials.before_sending()  # refused meanwhile: send nothing more
                attempts += 1
                tally.add(_ONE_REQUEST)  # counted when sent, whatever happens next
                started = policy.clock()
                try:
                    reply = await self._attempt(request)
                except BackendFailure as exc:
                    failure, elapsed = exc, policy.clock() - started
                    tally.add(Usage(latency_s=elapsed))
                except BaseException:
                    tally.add(Usage(latency_s=policy.clock() - started))
                    raise
                else:
                    elapsed = policy.clock() - started
                    tally.add(self._tokens(request, reply, elapsed))
                    return reply
            budget.spend(elapsed)
            if failure.kind is not Failure.RETRYABLE:
                raise failure
            if attempts > policy.max_retries:
                raise JudgeError(
                    request.step.name,
                    f"gave up after {_attempts(attempts)}; last error: {failure.message}",
                )
            delay = policy.backoff(attempts, failure.retry_after)
            if delay >= budget.remaining():
                raise JudgeError(
                    request.step.name,
                    f"gave up after {_attempts(attempts)}: the retry time budget "
                    f"({policy.max_total_s:g} s) is spent; last error: {failure.message}",
                )
            await policy.sleep(delay)
            budget.spend(delay)

    def _slot(self) -> AbstractAsyncContextManager[None]:
        return contextlib.nullcontext() if self._limiter is None else self._limiter.slot()

    async def _attempt(self, request: BackendRequest) -> BackendReply:
        """One round trip under the per-request timeout (cancelled, connection closed, past it)."""
        if self.timeout is None:
            return await self.backend.send(request)
        scope = asyncio.timeout(self.timeout)
        try:
            async with scope:
                return await self.backend.send(request)
        except TimeoutError:
            if not scope.expired():
                raise  # raised by the backend itself, not by this timeout
            raise BackendFailure(
                Failure.RETRYABLE,
                f"the request timed out after {self.timeout:g} s (counted from when it was sent)",
            ) from None

    def _tokens(self, request: BackendRequest, reply: BackendReply, elapsed: float) -> Usage:
        """The attempt's latency and tokens: as the server reported them, else estimated."""
        if reply.prompt_tokens or reply.completion_tokens:
            prompt, completion = reply.prompt_tokens or 0, reply.completion_tokens or 0
        else:
            prompt = estimate_tokens("".join(m["content"] for m in request.messages()))
            completion = estimate_tokens(raw_text(reply.content))
        return Usage(prompt_tokens=prompt, completion_tokens=completion, latency_s=elapsed)


#: What sending one request adds to a usage.
_ONE_REQUEST = Usage(requests=1)


def _attempts(count: int) -> str:
    return "1 attempt" if count == 1 else f"{count} attempts"
