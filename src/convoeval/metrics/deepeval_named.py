"""DeepEval's `TopicAdherenceMetric(relevant_topics=...)` and `GoalAccuracyMetric`, as facades
over the Ragas-side cores (topic adherence, agent goal accuracy without reference).

DeepEval gives the allowed topics to the metric, Ragas to each sample (`reference_topics`): the
core `RelevantTopicAdherence` carries the metric's topics into every sample it scores, so
`evaluate()` (which runs the core) and `measure()` judge alike.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, ClassVar

from convoeval.judges.protocol.base import Judge
from convoeval.metrics._base import Ask, MetricResult
from convoeval.metrics._facade import DeepEvalFacade
from convoeval.metrics._registry import facade_of
from convoeval.metrics.agent_goal_accuracy import AgentGoalAccuracyWithoutReference
from convoeval.metrics.topic_adherence import TopicAdherenceScore
from convoeval.schema import MultiTurnSample


class RelevantTopicAdherence(TopicAdherenceScore):
    """Topic adherence (F1) with the allowed topics given once, to the metric."""

    required: ClassVar[tuple[str, ...]] = ("user_input",)

    def __init__(
        self,
        relevant_topics: Sequence[str],
        *,
        threshold: float | None = None,
        judge: Judge | str | None = None,
    ) -> None:
        if isinstance(relevant_topics, str) or not all(
            isinstance(t, str) and t.strip() for t in relevant_topics
        ):
            raise ValueError(
                f"relevant_topics must be a list of non-empty strings, not {relevant_topics!r}"
            )
        if not relevant_topics:
            raise ValueError("relevant_topics is empty: give the topics the assistant may discuss")
        super().__init__("f1", threshold=threshold, judge=judge)
        self.relevant_topics = list(relevant_topics)

    def __repr__(self) -> str:
        return f"RelevantTopicAdherence({self.relevant_topics!r}, threshold={self.threshold!r})"

    def config(self) -> dict[str, Any]:
        """The ratio and the allowed topics."""
        return {**super().config(), "relevant_topics": self.relevant_topics}

    async def _score(self, sample: MultiTurnSample, ask: Ask) -> MetricResult:
        given = sample.model_copy(update={"reference_topics": self.relevant_topics})
        return await super()._score(given, ask)


class TopicAdherenceMetric(DeepEvalFacade[RelevantTopicAdherence]):
    """DeepEval's `TopicAdherenceMetric(relevant_topics=[...])`: `measure(case)` sets `.score`
    (the F1 of answered in-scope and declined out-of-scope topics), `.reason`, `.success`."""

    def __init__(
        self,
        relevant_topics: Sequence[str],
        threshold: float = 0.5,
        model: Judge | str | None = None,
        include_reason: bool = True,
        strict_mode: bool = False,
        async_mode: bool = True,
        verbose_mode: bool = False,
    ) -> None:
        core = RelevantTopicAdherence(
            relevant_topics, threshold=1.0 if strict_mode else threshold, judge=model
        )
        super().__init__(core)
        self.include_reason = include_reason
        self.strict_mode = strict_mode
        self.async_mode = async_mode
        self.verbose_mode = verbose_mode

    @property
    def relevant_topics(self) -> list[str]:
        """The topics the assistant may discuss."""
        return self.core.relevant_topics


@facade_of(AgentGoalAccuracyWithoutReference)
class GoalAccuracyMetric(DeepEvalFacade[AgentGoalAccuracyWithoutReference]):
    """DeepEval's `GoalAccuracyMetric` over agent goal accuracy (the judge infers the user's
    goal and says whether the conversation met it): `.score` is 1 or 0, with the reason."""

    def __init__(
        self,
        threshold: float = 0.5,
        model: Judge | str | None = None,
        include_reason: bool = True,
        strict_mode: bool = False,
        async_mode: bool = True,
        verbose_mode: bool = False,
    ) -> None:
        core = AgentGoalAccuracyWithoutReference(
            threshold=1.0 if strict_mode else threshold, judge=model
        )
        super().__init__(core)
        self.include_reason = include_reason
        self.strict_mode = strict_mode
        self.async_mode = async_mode
        self.verbose_mode = verbose_mode
