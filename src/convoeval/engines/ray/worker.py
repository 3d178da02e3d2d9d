"""The Ray side of a run: how a judge is rebuilt on a worker with its share of every endpoint's
limit, and the worker actor, which scores blocks of records with the local per-record scorer and
streams back their rows as they finish, with the requests sent so far for the others (so the
requests of a worker that dies are still counted).

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
        embedder = Embedder(threads=threads)
        embedder.load()  # while the worker starts: start-up, not scoring time
        return OfflineJudge(OfflineKit(embedder))
    if kind == "panel":
        return JudgePanel([build(r, share, registry) for r in recipe_[1]], left_out=recipe_[2])
    if kind == "openai":
        made: OpenAIRecipe = recipe_[1]
        return OpenAIJudge.from_recipe(made, registry, share[recipe_[2]])
    return recipe_[1]


#: Seconds between a worker's reports on a block: the rows finished and the requests sent since.
STREAM_EVERY = 0.05
#: The block attempt and position of the record a worker task is scoring (set per record task).
_SCORING: ContextVar[tuple[int, int] | None] = ContextVar("convoeval_ray_scoring", default=None)


class _Counted:
    """A judge's limiter whose every slot (one request sent) is counted for the record whose
    task takes it, so a block's report says what its unfinished records have cost so far."""

    def __init__(self, inner: Any, sent: dict[int, dict[int, int]]) -> None:
        self.inner = inner
        self.sent = sent

    @property
    def limit(self) -> int:
        return int(self.inner.limit)

    @contextlib.asynccontextmanager
    async def slot(self) -> AsyncIterator[None]:
        async with self.inner.slot():
            scoring = _SCORING.get()
            if scoring is not None:
                counts = self.sent.get(scoring[0])
                if counts is not None:
                    counts[scoring[1]] = counts.get(scoring[1], 0) + 1
            yield


def _count_requests(judges: list[Any], sent: dict[int, dict[int, int]]) -> None:
    """Count the requests of every LLM judge among `judges` (panel members too), each limiter
    (shared by judges on one endpoint) wrapped once."""
    wrapped: dict[int, _Counted] = {}
    for judge in judges:
        for one in getattr(judge, "members", [judge]):
            if isinstance(one, LLMJudge) and one._limiter is not None:
                inner = one._limiter
                if id(inner) not in wrapped:
                    wrapped[id(inner)] = _Counted(inner, sent)
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
    ) -> None:
        self.registry = EndpointRegistry()
        self.metrics = {m.name: m for m in metrics}
        judge = build(main, share, self.registry)
        #: Per block attempt: requests sent so far for each record not yet reported finished.
        self.sent: dict[int, dict[int, int]] = {}
        _count_requests([judge], self.sent)
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
        report every `STREAM_EVERY` s: the rows finished since, and the requests sent so far for
        the records still running (what they cost if this worker dies before they finish)."""
        sent = self.sent[attempt] = {}
        running = {asyncio.ensure_future(self._one(attempt, p, one)) for p, one in block}
        reported: dict[int, int] = {}
        try:
            while running:
                done, running = await asyncio.wait(running, timeout=STREAM_EVERY)
                rows = [task.result() for task in done]
                for position, _ in rows:
                    sent.pop(position, None)  # its row carries its usage
                if rows or sent != reported:
                    reported = dict(sent)
                    yield rows, reported
        finally:
            for task in running:
                task.cancel()
            del self.sent[attempt]
