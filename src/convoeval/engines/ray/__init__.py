"""The Ray engine (`engine="ray"`, `--engine ray`): records scored on Ray actors in blocks
(engine.py drives them, worker.py runs on them, blocks.py is what travels). The runner finds
`ENGINE` through the `convoeval.engines` entry point (pyproject.toml); Ray itself loads only
when a run uses it."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from convoeval.engines.ray import engine
from convoeval.engines.ray.blocks import Pending, pending
from convoeval.engines.ray.engine import RayEngineError, RayWorkersLost
from convoeval.metrics import Metric
from convoeval.runner._plan import JudgePlan

__all__ = ["ENGINE", "RayEngineError", "RayWorkersLost"]


class _Ray:
    """The Ray engine as the runner sees it (`runner.engines.EngineKind`)."""

    @property
    def options(self) -> tuple[str, ...]:
        return engine.OPTIONS

    def check(self, options: Mapping[str, Any]) -> None:
        engine.check_options(options)

    def pending(self, *args: Any) -> Pending:
        return pending(*args)

    async def start(
        self,
        metrics: Sequence[Metric],
        plan: JudgePlan,
        options: Mapping[str, Any],
        records: int | None = None,
    ) -> engine.RayEngine:
        return await engine.RayEngine.start(metrics, plan, options, records)


#: The Ray engine, published as the `ray` entry point of `convoeval.engines`.
ENGINE = _Ray()
