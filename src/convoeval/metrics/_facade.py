"""DeepEval habits as a thin facade over a stateless metric core.

A DeepEval-named class (e.g. `ConversationRelevancyMetric`) is not a `Metric`: it wraps one
(`.core`) and keeps the outcome of its last `measure()` on itself (`.score` as a float, `.reason`,
`.success`, `.verdicts`, `.error`), as DeepEval users expect. The runner scores the core
(`as_metric(facade)`), so that state never crosses samples; `score_sync`, `multi_turn_score` and
`multi_turn_ascore` go to the core too, before and after `measure()`, whatever its outcome.

DeepEval code omits `model=` and relies on `OPENAI_API_KEY`: a facade whose core needs a
language model and has no judge measures with DeepEval's documented default model when that
variable is set, and otherwise raises `JudgeConfigError` saying how to choose one (never a
silent None). A core the offline judge can run keeps the offline default.
"""

from __future__ import annotations

import os
from typing import Any, Generic, TypeVar

from convoeval._sync import run_sync
from convoeval.judges.protocol.base import Judge, JudgeConfigError
from convoeval.metrics._base import Metric, MetricResult, SampleLike, accept_judge_names
from convoeval.metrics._result import ScoreResult

CoreT = TypeVar("CoreT", bound=Metric)
#: DeepEval's documented default judge model (deepeval.com/integrations/models/openai).
DEEPEVAL_DEFAULT_MODEL = "gpt-4.1"


class DeepEvalFacade(Generic[CoreT]):
    """A DeepEval-style metric over the stateless `core` (what `evaluate()` actually runs)."""

    def __init_subclass__(cls, **kwargs: Any) -> None:
        super().__init_subclass__(**kwargs)
        accept_judge_names(cls)  # DeepEval's model=, our judge= and Ragas's llm= alike

    def __init__(self, core: CoreT) -> None:
        self.core: CoreT = core
        #: Set by `measure()`: the last score (None before, or when it could not score).
        self.score: float | None = None
        self.reason: str | None = None
        self.success: bool | None = None
        self.verdicts: list[dict[str, Any]] = []
        self.error: str | None = None
        #: The whole outcome of the last `measure()` (value, reason, details, usage).
        self.result: MetricResult | None = None
        self._default: Judge | str | None = None

    def __repr__(self) -> str:
        return f"{type(self).__name__}({self.core!r})"

    @property
    def name(self) -> str:
        """The results column of the core."""
        return self.core.name

    @property
    def judge(self) -> Judge | str | None:
        """The core's own judge; assigning one gives it to the core (DeepEval's `model=`)."""
        return self.core.judge

    @judge.setter
    def judge(self, judge: Judge | str | None) -> None:
        self.core.judge = judge

    @property
    def threshold(self) -> float | None:
        """The core's pass mark."""
        return self.core.threshold

    def measure(self, test_case: SampleLike) -> float | None:
        """Score one case and keep the outcome on the facade (`.score`, `.reason`, ...)."""
        return run_sync(lambda: self.a_measure(test_case))

    async def a_measure(self, test_case: SampleLike) -> float | None:
        """Async twin of `measure`."""
        result = await self.core.score(test_case, judge=self.default_judge())
        self.result = result
        self.score = result.value
        self.reason = result.reason
        self.verdicts = list(result.details.get("verdicts", []))
        self.error = result.error["message"] if result.error else None
        self.success = self.core.passed(result)
        return result.value

    def default_judge(self) -> Judge | str | None:
        """The judge `measure()` uses when the core has none: None when the core has one or
        the offline judge can run it; DeepEval's default model when `OPENAI_API_KEY` is set;
        else a `JudgeConfigError` saying how to choose a judge."""
        if self.core.judge is not None or not self.core.needs_llm:
            return None
        if os.environ.get("OPENAI_API_KEY"):
            if self._default is None:
                self._default = f"openai/{DEEPEVAL_DEFAULT_MODEL}"
            return self._default
        raise JudgeConfigError(
            f"{type(self).__name__} needs a language model to judge (the offline judge cannot "
            "run it) and was given none: pass one, e.g. model='openai/gpt-4o-mini' or any judge "
            "spec or Judge object, or set OPENAI_API_KEY to use DeepEval's default model, "
            f"openai/{DEEPEVAL_DEFAULT_MODEL}"
        )

    def is_successful(self) -> bool:
        """Whether the last `measure` passed the threshold (False when it could not score)."""
        return bool(self.success)

    def score_sync(self, sample: SampleLike, *, judge: Judge | str | None = None) -> MetricResult:
        """The core's `score_sync` (stateless: `.score` and friends are left alone)."""
        return self.core.score_sync(sample, judge=judge)

    async def multi_turn_ascore(
        self, sample: SampleLike, callbacks: Any = None, timeout: float | None = None
    ) -> ScoreResult | None:
        """The core's Ragas-style float score (stateless)."""
        return await self.core.multi_turn_ascore(sample, callbacks, timeout)

    def multi_turn_score(
        self, sample: SampleLike, callbacks: Any = None, timeout: float | None = None
    ) -> ScoreResult | None:
        """The core's Ragas-style float score, sync (stateless)."""
        return self.core.multi_turn_score(sample, callbacks, timeout)
