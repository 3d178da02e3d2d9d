"""The Ray side of a run: how a judge is rebuilt on a worker with its share of every endpoint's
limit, and the worker actor, which scores blocks of records with the local per-record scorer.

Judges hold connections, locks and a cache handle, so they are not sent to workers as objects:
each becomes a recipe (the offline judge, an OpenAI-compatible judge's settings, a panel of
recipes) that the worker builds once. A worker's limits add up to the driver's: worker i of W
gets `limit // W` slots of a limit, plus one while i < `limit % W`.
"""

from __future__ import annotations

import os
from functools import partial
from typing import Any

from convoeval._version import VERSION
from convoeval.engines.ray.blocks import Pending
from convoeval.judges import Judge, JudgePanel
from convoeval.judges.core.endpoints import EndpointRegistry
from convoeval.judges.openai.judge import OpenAIJudge
from convoeval.judges.openai.recipe import OpenAIRecipe
from convoeval.metrics import Metric
from convoeval.rows.row import ResultRow
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


class Worker:
    """One Ray actor: builds the run's judges once (the offline model loads once here) and
    scores blocks of records with the local scorer, returning their rows in block order."""

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
        self.judges = {
            m.name: judge if u else None for m, u in zip(metrics, uses_main, strict=True)
        }
        self.raising = raise_exceptions
        self.score = score_record if repeat == 1 else partial(score_repeated, repeat=repeat)

    def ready(self) -> tuple[str, int]:
        """The convoeval version and process id of this worker (checked by the driver)."""
        return VERSION, os.getpid()

    async def score_block(self, block: list[Pending]) -> list[ResultRow]:
        """Score every record of `block` at once (the judges' limits bound the requests)."""
        import asyncio

        return list(
            await asyncio.gather(
                *(
                    self.score(
                        one.item,
                        [self.metrics[n] for n in one.names],
                        [self.judges[n] for n in one.names],
                        self.raising,
                        one.previous,
                    )
                    for one in block
                )
            )
        )
