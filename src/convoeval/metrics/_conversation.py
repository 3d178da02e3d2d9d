"""What the conversation judgments of issue 13 share: DeepEval's options, chunked judge calls,
message-keyed verdicts, a ratio score with its reason assembled from the verdicts.

`JudgedConversation` is the base of the knowledge retention, role adherence, completeness, user
frustration and criteria cores, `JudgmentFacade` the base of their DeepEval facades; `replies`,
`users` and `excerpt` pick and render the messages a verdict step shows, with the same indexed,
fenced transcript every judge metric uses."""

from __future__ import annotations

from collections.abc import Coroutine, Sequence
from typing import Any, ClassVar, TypeVar

from convoeval.judges.protocol.base import Judge
from convoeval.metrics._base import Metric, MetricResult, concurrently
from convoeval.metrics._facade import DeepEvalFacade
from convoeval.schema import AIMessage, HumanMessage, MultiTurnSample
from convoeval.schema.render import render_transcript

T = TypeVar("T")
#: Units (replies, user messages, intentions) judged per judge call; more make more calls.
CHUNK = 20


def replies(sample: MultiTurnSample) -> list[int]:
    """Indexes of the assistant messages that say something (tool-call-only steps left out)."""
    return [
        i for i, m in enumerate(sample.user_input) if isinstance(m, AIMessage) and m.content.strip()
    ]


def users(sample: MultiTurnSample) -> list[int]:
    """Indexes of the user messages."""
    return [i for i, m in enumerate(sample.user_input) if isinstance(m, HumanMessage)]


def chunks(items: Sequence[T], size: int = CHUNK) -> list[list[T]]:
    """`items` in consecutive lists of at most `size`."""
    return [list(items[k : k + size]) for k in range(0, len(items), size)]


def excerpt(sample: MultiTurnSample, first: int, last: int, *, retrieval: bool = False) -> str:
    """Messages `first..last` (inclusive) as the fenced judge transcript, real indexes kept
    (with `retrieval`, each turn's DeepEval `retrieval_context` under it)."""
    return render_transcript(sample.user_input[first : last + 1], start=first, retrieval=retrieval)


def context_start(sample: MultiTurnSample, index: int) -> int:
    """The user message that opens the exchange of message `index` (0 when there is none)."""
    before = [u for u in users(sample) if u <= index]
    return before[-1] if before else 0


def message_targets(indexes: Sequence[int], what: str) -> str:
    """One `- message N: what` line per message to judge (the keys the verdicts must use)."""
    return "\n".join(f"- message {i}: {what}" for i in indexes)


def share_reason(counted: int, total: int, noun: str, misses: Sequence[str]) -> str:
    """ "3 of 4 replies stayed in role; not: message 3: ...", from the verdicts alone."""
    text = f"{counted} of {total} {noun}"
    return text + ("; not: " + "; ".join(misses) if misses else "") + "."


class JudgedConversation(Metric):
    """Base of the LLM-judged conversation metrics: DeepEval's options, a 0..1 share score,
    strict mode (threshold 1, score 0 or 1), chunk calls at once or one by one."""

    uses_judge: ClassVar[bool] = True
    needs_llm: ClassVar[bool] = True
    default_threshold: ClassVar[float | None] = 0.5

    def __init__(
        self,
        *,
        strict_mode: bool = False,
        include_reason: bool = True,
        async_mode: bool = True,
        verbose_mode: bool = False,
        threshold: float | None = None,
        judge: Judge | str | None = None,
    ) -> None:
        super().__init__(threshold=1.0 if strict_mode else threshold, judge=judge)
        self.strict_mode = strict_mode
        self.include_reason = include_reason
        self.async_mode = async_mode
        self.verbose_mode = verbose_mode

    def __repr__(self) -> str:
        return (
            f"{type(self).__name__}(strict_mode={self.strict_mode}, threshold={self.threshold!r})"
        )

    def config(self) -> dict[str, Any]:
        """Strict mode and whether reasons are written."""
        return {"strict_mode": self.strict_mode, "include_reason": self.include_reason}

    async def gather(self, calls: Sequence[Coroutine[Any, Any, T]]) -> list[T]:
        """Await the chunk calls at once (`async_mode`) or one after another."""
        if self.async_mode:
            return await concurrently(calls)
        return [await call for call in calls]

    def result(self, value: float, reason: str, details: dict[str, Any]) -> MetricResult:
        """The scored result: strict mode applied, the reason dropped when reasons are off,
        the verdicts printed in verbose mode."""
        if self.strict_mode:
            value = 1.0 if value >= 1.0 else 0.0
        if self.verbose_mode:
            print(f"{self.name}: {value:g}: {reason}")
            for verdict in details.get("verdicts", []):
                print(f"  {verdict}")
        if not self.include_reason:
            reason = f"{self.name} reasons are off (include_reason=False)"
        return MetricResult(value, reason, details)


class JudgmentFacade(DeepEvalFacade[JudgedConversation]):
    """A DeepEval facade with DeepEval's constructor over the core class `core_class`."""

    core_class: ClassVar[type[JudgedConversation]]

    def __init__(
        self,
        threshold: float = 0.5,
        model: Judge | str | None = None,
        include_reason: bool = True,
        strict_mode: bool = False,
        async_mode: bool = True,
        verbose_mode: bool = False,
    ) -> None:
        core = self.core_class(
            strict_mode=strict_mode,
            include_reason=include_reason,
            async_mode=async_mode,
            verbose_mode=verbose_mode,
            threshold=threshold,
            judge=model,
        )
        super().__init__(core)
