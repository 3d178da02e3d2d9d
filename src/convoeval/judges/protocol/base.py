"""The judge protocol: a metric asks a typed question (a `Step`); a judge returns a valid answer.

Every judge (OpenAI-compatible, offline, fake) implements `Judge.run`; retries, limits, caching and
usage accounting live behind it, never in metrics.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Any, Generic, Protocol, TypeVar, runtime_checkable

from pydantic import BaseModel

from convoeval.errors import ConvoevalError
from convoeval.judges.protocol._redact import redact
from convoeval.judges.protocol.step import AnswerCheck, OfflineImpl, Step

OutT = TypeVar("OutT", bound=BaseModel)

__all__ = [
    "Answer",
    "AnswerCheck",
    "Judge",
    "JudgeAuthError",
    "JudgeConfigError",
    "JudgeError",
    "OfflineImpl",
    "OutT",
    "PanelVote",
    "SampleVote",
    "Step",
    "StepUnsupported",
    "Usage",
]


@dataclass
class Usage:
    """What answering cost: requests sent, tokens, seconds, and how many answers came from cache."""

    requests: int = 0
    prompt_tokens: int = 0
    completion_tokens: int = 0
    latency_s: float = 0.0
    cached: int = 0

    def add(self, other: Usage) -> Usage:
        """Accumulate `other` into this usage (returns self)."""
        self.requests += other.requests
        self.prompt_tokens += other.prompt_tokens
        self.completion_tokens += other.completion_tokens
        self.latency_s += other.latency_s
        self.cached += other.cached
        return self

    def as_dict(self) -> dict[str, Any]:
        return {
            "requests": self.requests,
            "prompt_tokens": self.prompt_tokens,
            "completion_tokens": self.completion_tokens,
            "latency_s": round(self.latency_s, 6),
            "cached": self.cached,
        }


@dataclass(frozen=True)
class SampleVote:
    """How an answer combined repeated judge samples (`samples=N`, judges/ensembles/samples.py):
    every sample's answer (None where the sample failed), the failures by sample index, and each
    verdict's confidence, the share of the answering samples that agreed with it (by key for
    keyed steps, under "answer" for the others)."""

    answers: list[dict[str, Any] | None]
    errors: dict[int, str]
    confidence: dict[str, float]
    #: The verdicts (keys of `confidence`) whose vote was a tie.
    ties: list[str] = field(default_factory=list)

    def as_dict(self, step: str) -> dict[str, Any]:
        """A JSON-ready record for a metric's details (`judge_samples`)."""
        return {
            "step": step,
            "samples": len(self.answers),
            "answered": len(self.answers) - len(self.errors),
            "confidence": {k: round(v, 6) for k, v in self.confidence.items()},
            "tie": bool(self.ties),
            "ties": list(self.ties),
            "answers": self.answers,
            "errors": {str(i): message for i, message in self.errors.items()},
        }


@dataclass(frozen=True)
class PanelVote:
    """How a judge panel (judges/panel.py) combined its members' answers: the members' labels,
    each member's answer (None where it failed) and failure, each verdict's confidence (the
    share of the answering members that agreed with the majority), what every member said on
    each voted field (`ratings`, for the agreement between judges) and, for a member that
    answers by repeated samples, how its samples voted."""

    members: list[str]
    answers: list[dict[str, Any] | None]
    errors: dict[int, str]
    confidence: dict[str, float]
    ratings: dict[str, dict[str, list[Any]]]
    samples: dict[int, SampleVote] = field(default_factory=dict)
    #: The verdicts (keys of `confidence`) whose vote was a tie.
    ties: list[str] = field(default_factory=list)
    #: The members left out of the panel (not asked; their errors say why).
    left_out: list[str] = field(default_factory=list)

    def as_dict(self, step: str) -> dict[str, Any]:
        """A JSON-ready record for a metric's details (`judge_panel`), members by label."""
        return {
            "step": step,
            "members": list(self.members),
            "answered": len(self.members) - len(self.errors),
            "confidence": {k: round(v, 6) for k, v in self.confidence.items()},
            "tie": bool(self.ties),
            "ties": list(self.ties),
            "answers": dict(zip(self.members, self.answers, strict=True)),
            "errors": {self.members[i]: message for i, message in self.errors.items()},
            **({"left_out": list(self.left_out)} if self.left_out else {}),
            "ratings": self.ratings,
            **(
                {"samples": {self.members[i]: v.as_dict(step) for i, v in self.samples.items()}}
                if self.samples
                else {}
            ),
        }


@dataclass
class Answer(Generic[OutT]):
    """A validated judge answer and what it cost; `vote` says how repeated samples were
    combined into it (None: one sample), `panel` how a judge panel's members were (None: not a
    panel)."""

    output: OutT
    usage: Usage = field(default_factory=Usage)
    vote: SampleVote | None = None
    panel: PanelVote | None = None


class JudgeError(ConvoevalError):
    """A step could not be answered (after any retries); the metric records it as a failure.

    The message and `raw` never show a bearer token or an `sk-` key, and a judge masks its own
    configured key with `mask()` before raising, so results and reports never store one.
    """

    def __init__(self, step: str, message: str, raw: str | None = None) -> None:
        self.step = step
        self.raw = None if raw is None else redact(raw)
        #: What the failed step spent (requests, tokens), set by the judge that gave up.
        self.usage: Usage | None = None
        text = f"step {step!r}: {message}"
        if self.raw is not None:
            shown = self.raw
            if len(shown) > 500:
                shown = shown[:500] + f"... ({len(shown)} chars)"
            text += f"; the judge answered: {shown}"
        super().__init__(redact(text))

    def mask(self, secrets: Iterable[str]) -> None:
        """Mask `secrets` (the judge's credentials) in the message and the raw answer."""
        self.args = tuple(redact(a, secrets) if isinstance(a, str) else a for a in self.args)
        if self.raw is not None:
            self.raw = redact(self.raw, secrets)

    def __reduce__(self) -> tuple[Any, ...]:
        # Picklable as it is (message already masked), so failures can cross process boundaries.
        return (_restore, (type(self), str(self), self.__dict__))


def _restore(cls: type[JudgeError], text: str, state: dict[str, Any]) -> JudgeError:
    error = cls.__new__(cls)
    Exception.__init__(error, text)
    error.__dict__.update(state)
    return error


class JudgeConfigError(ConvoevalError, ValueError):
    """A judge cannot be built as configured (no API key, no model, a limit out of range): the
    user's input is wrong, so the command line says so instead of showing a traceback."""


class JudgeAuthError(JudgeConfigError):
    """The judge's server refused its credentials (HTTP 401 or 403): every request would be
    refused the same way, so the run stops at the first refusal and the judge sends nothing more
    with them. The message quotes the server's answer, scrubbed of every key (DESIGN §8)."""

    def __init__(self, message: str) -> None:
        super().__init__(redact(message))


class StepUnsupported(JudgeError):
    """This judge cannot answer this kind of step (for example goal accuracy offline)."""


@runtime_checkable
class Judge(Protocol):
    """Anything that answers steps. `name` goes into results (for example `openai/gpt-4o-mini`)."""

    name: str

    async def run(
        self, step: Step[OutT], inputs: Any, *, usage: Usage | None = None
    ) -> Answer[OutT]:
        """Answer `step` for `inputs` (opaque to the judge) with a validated `step.output`.

        A given `usage` is added to as requests are sent, so what a failed or cancelled caller
        spent is still counted; `Answer.usage` (and `JudgeError.usage`) is what the step cost.
        """
        ...

    def describe(self) -> dict[str, Any]:
        """Metadata for results and reports: judge kind, model, endpoint (never a key)."""
        ...
