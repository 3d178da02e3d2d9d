"""TurnRelevancyMetric: DeepEval's current name for conversation relevancy, with its default
window of 10 exchanges. Same core, step and prompts as `ConversationRelevancy` (one judge call
per 20 exchanges); only the results column (`turn_relevancy`) and the default window differ.
"""

from __future__ import annotations

from typing import ClassVar

from convoeval.judges.protocol.base import Judge
from convoeval.metrics._facade import DeepEvalFacade
from convoeval.metrics._registry import facade_of, register
from convoeval.metrics.conversation_relevancy import ConversationRelevancy


@register
class TurnRelevancy(ConversationRelevancy):
    """Share of assistant replies relevant to their user input, each read in a window of 10."""

    name: ClassVar[str] = "turn_relevancy"

    def __init__(
        self,
        window_size: int = 10,
        *,
        strict_mode: bool = False,
        include_reason: bool = True,
        async_mode: bool = True,
        verbose_mode: bool = False,
        threshold: float | None = None,
        judge: Judge | str | None = None,
    ) -> None:
        super().__init__(
            window_size,
            strict_mode=strict_mode,
            include_reason=include_reason,
            async_mode=async_mode,
            verbose_mode=verbose_mode,
            threshold=threshold,
            judge=judge,
        )

    def __repr__(self) -> str:
        return super().__repr__().replace("ConversationRelevancy(", "TurnRelevancy(", 1)


@facade_of(TurnRelevancy)
class TurnRelevancyMetric(DeepEvalFacade[TurnRelevancy]):
    """DeepEval's `TurnRelevancyMetric` over `TurnRelevancy`: `measure(case)` sets `.score`,
    `.reason`, `.success`, `.verdicts`; `model` is the judge (a Judge or a spec string)."""

    def __init__(
        self,
        threshold: float = 0.5,
        model: Judge | str | None = None,
        include_reason: bool = True,
        strict_mode: bool = False,
        async_mode: bool = True,
        verbose_mode: bool = False,
        window_size: int = 10,
    ) -> None:
        super().__init__(
            TurnRelevancy(
                window_size,
                strict_mode=strict_mode,
                include_reason=include_reason,
                async_mode=async_mode,
                verbose_mode=verbose_mode,
                threshold=threshold,
                judge=model,
            )
        )

    @property
    def window_size(self) -> int:
        """Exchanges per window (the judged one included)."""
        return self.core.window_size
