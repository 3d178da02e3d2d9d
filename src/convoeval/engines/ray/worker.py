"""The Ray side of a run: how a judge is rebuilt on a worker with its share of every endpoint's
limit; the worker actor, which scores blocks of records with the local per-record scorer and
streams their rows back as they finish; and the tally, which counts every request a worker sends
before it is sent, so the requests of a worker that dies are still counted.

Judges hold connections, locks and a cache handle, so they are not sent to workers as objects:
each becomes a recipe (the offline judge, an OpenAI-compatible judge's settings, a panel of
recipes) that the worker builds once. A worker's limits add up to the driver's: worker i of W
gets `limit // W` slots of a limit, plus one while i < `limit % W`.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
from collections.abc import AsyncIterator
from contextvars import ContextVar
from functools import partial
from typing import Any

from convoeval._version import VERSION
from convoeval.engines.ray.blocks import Pending, Scored
from convoeval.judges import Judge, JudgePanel
from convoeval.judges.core.endpoints import EndpointRegistry
from convoeval.judges.core.llm import LLMJudge
from convoeval.judges.openai.judge import OpenAIJudge
from convoeval.judges.openai.recipe import OpenAIRecipe
from convoeval.metrics import Metric
from convoeval.runner._plan import is_offline
from convoeval.runner._repeats import score_repeated
from convoeval.runner._schedule import score_record

#: A judge as a worker rebuilds it: ("offline",), ("openai", OpenAIRecipe, the key of its limit
#: in the shares), ("panel", [recipes], its members left out) or ("object", judge).
Recipe = tuple[Any, ...]


def recipe(judge: Judge | None, limits: dict[str, int]) -> Recipe | None:
    """How a worker rebuilds `judge`; `limits` gains each limit to share (key: the judge's
    `limit:<id>` or the endpoint's `shared:<endpoint>`)."""
    if judge is None:
        return None
    if isinstance(judge, JudgePanel):
        return ("panel", [recipe(m, limits) for m in judge.members], dict(judge.left_out))
    if is_offline(judge):
        return ("offline",)
    if isinstance(judge, OpenAIJudge):
        made = judge.recipe()  # carries the API key (kept out of its repr; never logged)
        key = f"shared:{made.endpoint}" if made.shared else f"limit:{id(judge)}"
        limits[key] = made.concurrency
        return ("openai", made, key)
    return ("object", judge)  # any other judge goes as it is (it must pickle)


def shares(limits: dict[str, int], workers: int) -> list[dict[str, int]]:
    """Each worker's part of every limit; together they add up to the limit."""
    return [
        {
            key: limit // workers + (1 if index < limit % workers else 0)
            for key, limit in limits.items()
        }
        for index in range(workers)
    ]


def build(recipe_: Recipe | None, share: dict[str, int], registry: EndpointRegistry) -> Any:
    """The judge a recipe describes, with this worker's share of its limit."""
    if recipe_ is None:
        return None
    kind = recipe_[0]
    if kind == "offline":  # its own embedder, with the threads of this worker's CPUs
        from convoeval.judges.offline import Embedder, OfflineJudge, OfflineKit

        threads = max(1, int(os.environ.get("OMP_NUM_THREADS") or 1))  # Ray sets it to num_cpus
        return OfflineJudge(OfflineKit(Embedder(threads=threads)))
    if kind == "panel":
        return JudgePanel([build(r, share, registry) for r in recipe_[1]], left_out=recipe_[2])
    if kind == "openai":
        made: OpenAIRecipe = recipe_[1]
        return OpenAIJudge.from_recipe(made, registry, share[recipe_[2]])
    return recipe_[1]


#: Seconds a worker waits after a row is ready for more to send with it (fewer, bigger messages).
STREAM_EVERY = 0.05
#: The block attempt and position of the record a worker task is scoring (set per record task).
_SCORING: ContextVar[tuple[int, int] | None] = ContextVar("convoeval_ray_scoring", default=None)


class Tally:
    """A Ray actor (no CPU of its own) that counts each block attempt's requests per record,
    told before each request is sent; the driver takes the counts of an attempt whose worker
    died, so its requests reach the run's usage though their rows were lost."""

    def __init__(self) -> None:
        self.sent: dict[int, dict[int, int]] = {}

    def note(self, scoring: list[tuple[int, int]]) -> None:
        for attempt, position in scoring:
            counts = self.sent.setdefault(attempt, {})
            counts[position] = counts.get(position, 0) + 1

    def take(self, attempt: int) -> dict[int, int]:
        """Requests sent per record position by `attempt` (forgotten here)."""
        return self.sent.pop(attempt, {})


class _Notes:
    """Tells the tally about requests before they are sent, many in one call: a request waits
    for the call that carries it (one call in flight; the next gathers what came meanwhile)."""

    def __init__(self, tally: Any) -> None:
        self.tally = tally
        self.batch: list[tuple[int, int]] = []
        self.done: asyncio.Future[None] | None = None
        self.sending: asyncio.Future[None] | None = None

    async def note(self, scoring: tuple[int, int]) -> None:
        if self.done is None:
            self.done = asyncio.get_running_loop().create_future()
        self.batch.append(scoring)
        done = self.done
        if self.sending is None:
            self.sending = asyncio.ensure_future(self._send())
        await asyncio.shield(done)

    async def _send(self) -> None:
        try:
            while self.done is not None:
                done, batch = self.done, self.batch
                self.done, self.batch = None, []
                try:
                    await self.tally.note.remote(batch)
                except Exception as exc:  # the tally is gone: the requests cannot be counted
                    done.set_exception(exc)
                    done.exception()  # raised where awaited, never logged as unretrieved
                else:
                    done.set_result(None)
        finally:
            self.sending = None


class _Counted:
    """A judge's limiter whose every slot is counted by the tally before its request goes."""

    def __init__(self, inner: Any, notes: _Notes) -> None:
        self.inner = inner
        self.notes = notes

    @property
    def limit(self) -> int:
        return int(self.inner.limit)

    @contextlib.asynccontextmanager
    async def slot(self) -> AsyncIterator[None]:
        async with self.inner.slot():
            scoring = _SCORING.get()
            if scoring is not None:
                await self.notes.note(scoring)
            yield


def _count_requests(judges: list[Any], notes: _Notes) -> None:
    """Count the requests of every LLM judge among `judges` (panel members too), each limiter
    (shared by judges on one endpoint) wrapped once."""
    wrapped: dict[int, _Counted] = {}
    for judge in judges:
        for one in getattr(judge, "members", [judge]):
            if isinstance(one, LLMJudge) and one._limiter is not None:
                inner = one._limiter
                if id(inner) not in wrapped:
                    wrapped[id(inner)] = _Counted(inner, notes)
                one._limiter = wrapped[id(inner)]  # type: ignore[assignment]


class Worker:
    """One Ray actor: builds the run's judges once (the offline model loads once here) and
    scores blocks of records with the local scorer, streaming their rows back as they finish."""

    def __init__(
        self,
        metrics: list[Metric],
        main: Recipe | None,
        uses_main: list[bool],
        share: dict[str, int],
        repeat: int,
        raise_exceptions: bool,
        tally: Any,
    ) -> None:
        self.registry = EndpointRegistry()
        self.metrics = {m.name: m for m in metrics}
        judge = build(main, share, self.registry)
        self.tally = tally
        _count_requests([judge], _Notes(tally))
        self.judges = {
            m.name: judge if u else None for m, u in zip(metrics, uses_main, strict=True)
        }
        self.raising = raise_exceptions
        self.score = score_record if repeat == 1 else partial(score_repeated, repeat=repeat)

    def ready(self) -> tuple[str, int]:
        """The convoeval version and process id of this worker (checked by the driver)."""
        return VERSION, os.getpid()

    async def _one(self, attempt: int, position: int, one: Pending) -> tuple[int, Any]:
        _SCORING.set((attempt, position))  # this record's task only
        row = await self.score(
            one.item,
            [self.metrics[n] for n in one.names],
            [self.judges[n] for n in one.names],
            self.raising,
            one.previous,
        )
        return position, row

    async def score_block(
        self, attempt: int, block: list[tuple[int, Pending]]
    ) -> AsyncIterator[Scored]:
        """Score every record of `block` at once (the judges' limits bound the requests) and
        yield their rows as they finish, those ready within `STREAM_EVERY` s together."""
        running = {asyncio.ensure_future(self._one(attempt, p, one)) for p, one in block}
        try:
            while running:
                done, running = await asyncio.wait(running, return_when=asyncio.FIRST_COMPLETED)
                if running:
                    more, running = await asyncio.wait(running, timeout=STREAM_EVERY)
                    done |= more
                yield [task.result() for task in done]
        finally:
            for task in running:
                task.cancel()
        self.tally.take.remote(attempt)  # every row went back: its counts are not needed
