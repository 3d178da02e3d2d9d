"""The judge protocol: a metric asks a typed question (a `Step`); a judge returns a valid answer.

Every judge (OpenAI-compatible, offline, fake) implements `Judge.run`; retries, limits, caching and
usage accounting live behind it, never in metrics.
"""

from __future__ import annotations

import copy
import functools
import string
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any, Generic, Protocol, TypeVar, runtime_checkable

from pydantic import BaseModel

OutT = TypeVar("OutT", bound=BaseModel)

#: What a step's offline implementation receives: the step's inputs and the offline toolkit.
OfflineImpl = Callable[[Mapping[str, Any], Any], Any]
#: A semantic check of an answer against the inputs: None if fine, else what is wrong (re-asked).
AnswerCheck = Callable[[Mapping[str, Any], Any], str | None]


@dataclass(frozen=True)
class Step(Generic[OutT]):
    """One typed question a metric asks a judge: prompts, output schema, optional offline answer.

    `instructions` is the system prompt; `template` is the user prompt with `{name}` placeholders
    filled from the inputs (strings are inserted as they are, other values with `str`). The output
    schema is sent to the judge as a structured-output request: prompts never spell out JSON.
    """

    name: str
    version: int
    instructions: str
    template: str
    output: type[OutT]
    offline: OfflineImpl | None = None
    check: AnswerCheck | None = None

    def render(self, inputs: Mapping[str, Any]) -> str:
        """The user prompt for these inputs; every placeholder must be given."""
        names = {n for _, n, _, _ in string.Formatter().parse(self.template) if n}
        missing = names - set(inputs)
        if missing:
            raise KeyError(f"step {self.name!r} needs inputs {sorted(missing)}")
        return self.template.format_map({k: _as_text(v) for k, v in inputs.items()})

    def schema(self) -> dict[str, Any]:
        """The JSON schema of the answer, as sent to the judge (built once per output model)."""
        return copy.deepcopy(_schema_of(self.output))


@functools.cache
def _schema_of(model: type[BaseModel]) -> dict[str, Any]:
    return model.model_json_schema()


def _as_text(value: Any) -> str:
    return value if isinstance(value, str) else str(value)


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


@dataclass
class Answer(Generic[OutT]):
    """A validated judge answer and what it cost."""

    output: OutT
    usage: Usage = field(default_factory=Usage)


class JudgeError(Exception):
    """A step could not be answered (after any retries); the metric records it as a failure."""

    def __init__(self, step: str, message: str, raw: str | None = None) -> None:
        self.step = step
        self.raw = raw
        #: What the failed step spent (requests, tokens), set by the judge that gave up.
        self.usage: Usage | None = None
        text = f"step {step!r}: {message}"
        if raw is not None:
            shown = raw if len(raw) <= 500 else raw[:500] + f"... ({len(raw)} chars)"
            text += f"; the judge answered: {shown}"
        super().__init__(text)


class StepUnsupported(JudgeError):
    """This judge cannot answer this kind of step (for example goal accuracy offline)."""


@runtime_checkable
class Judge(Protocol):
    """Anything that answers steps. `name` goes into results (for example `openai/gpt-4o-mini`)."""

    name: str

    async def run(self, step: Step[OutT], inputs: Mapping[str, Any]) -> Answer[OutT]:
        """Answer `step` for `inputs` with a validated `step.output` instance."""
        ...

    def describe(self) -> dict[str, Any]:
        """Metadata for results and reports: judge kind, model, endpoint (never a key)."""
        ...
