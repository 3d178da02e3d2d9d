"""`FakeJudge`: scripted answers per step, for tests of metrics and of the runner.

It is a backend under the same `LLMJudge` core as the real judges (validate / check / re-ask,
retries, usage), records every call and counts requests like a real judge, so a metric test can
assert what was asked and how often. A script may hold a `BackendFailure` to exercise retries.
"""

from __future__ import annotations

from collections import deque
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, TypeAlias

from pydantic import BaseModel

from convoeval.judges.core.backend import BackendReply, BackendRequest
from convoeval.judges.core.cache import JudgeCache
from convoeval.judges.core.endpoints import EndpointRegistry
from convoeval.judges.core.llm import LLMJudge
from convoeval.judges.core.retry import Limiter, RetryPolicy

#: One scripted answer: a dict, JSON text, a pydantic instance, or an exception (class) to raise.
FakeAnswer: TypeAlias = Mapping[str, Any] | str | BaseModel | BaseException | type[BaseException]
#: A step's script: answers popped in order, or a function of the step's inputs.
FakeScript: TypeAlias = Sequence[FakeAnswer] | Callable[[Any], FakeAnswer]


class FakeScriptError(LookupError):
    """The fake judge was asked something its script does not cover (a test-setup mistake)."""


@dataclass(frozen=True)
class FakeCall:
    """One request the fake judge received: the step, its inputs, the rendered prompts."""

    step: str
    #: The step's inputs, the very object the metric passed.
    inputs: Any
    prompt: str
    system: str
    reask: str | None = None
    #: The answer schema sent with the request (narrowed to the inputs for keyed steps).
    schema: dict[str, Any] = field(default_factory=dict)
    #: A repeated sample's temperature (None: not a repeated sample).
    temperature: float | None = None


@dataclass
class _Source:
    queue: deque[FakeAnswer] | None = None
    function: Callable[[Any], FakeAnswer] | None = None
    served: int = field(default=0)


class _FakeBackend:
    """Answers each request from the step's script and records it as a `FakeCall`."""

    kind = "fake"
    model = "fake"

    def __init__(self, script: Mapping[str, FakeScript], name: str) -> None:
        self.endpoint = f"fake:{name}"
        self.calls: list[FakeCall] = []
        self.sources: dict[str, _Source] = {}
        for step_name, entry in script.items():
            if callable(entry):
                self.sources[step_name] = _Source(function=entry)
            elif isinstance(entry, str | bytes | Mapping | BaseModel):
                raise TypeError(
                    f"the script of step {step_name!r} must be a sequence of answers or a "
                    "function of the inputs, not a single answer (wrap it in a list)"
                )
            else:
                self.sources[step_name] = _Source(queue=deque(entry))

    def sampling(self) -> dict[str, Any]:
        return {}

    def secrets(self) -> tuple[str, ...]:
        return ()

    async def aclose(self) -> None:
        return None

    async def send(self, request: BackendRequest) -> BackendReply:
        step = request.step
        self.calls.append(
            FakeCall(
                step=step.name,
                inputs=request.inputs,
                prompt=request.user,
                system=step.instructions,
                reask=None if request.reask is None else request.reask.message,
                schema=request.schema,
                temperature=request.temperature,
            )
        )
        answer = self._next(step.name, request.inputs)
        if isinstance(answer, BaseException):
            raise answer
        if isinstance(answer, type) and issubclass(answer, BaseException):
            raise answer()
        return BackendReply(content=answer, finish_reason="stop")

    def _next(self, step: str, inputs: Any) -> FakeAnswer:
        source = self.sources.get(step)
        if source is None:
            raise FakeScriptError(
                f"FakeJudge has no script for step {step!r}; scripted steps: "
                f"{sorted(self.sources) or 'none'}"
            )
        if source.function is not None:
            source.served += 1
            return source.function(inputs)
        assert source.queue is not None
        if not source.queue:
            raise FakeScriptError(
                f"FakeJudge's script for step {step!r} is used up after {source.served} answers"
            )
        source.served += 1
        return source.queue.popleft()


class FakeJudge(LLMJudge):
    """A judge that answers from a script per step name; every answer is validated for real.

    No cache, no concurrency limit and no timeout unless given; `retry` (with an injected clock
    and sleep) drives scripted `BackendFailure`s through the core's real retry loop. With
    `samples=N` every step is asked N times and voted on, as a real judge does; the samples of
    one step are sent in sample order, so a list script's answers go to samples 0, 1, ...
    (a re-ask is sent before the next sample's first request).
    """

    def __init__(
        self,
        script: Mapping[str, FakeScript],
        *,
        name: str = "fake",
        retry: RetryPolicy | None = None,
        concurrency: int | None = None,
        timeout: float | None = None,
        registry: EndpointRegistry | None = None,
        samples: int = 1,
        cache: JudgeCache | None = None,
    ) -> None:
        self._fake = _FakeBackend(script, name)
        super().__init__(
            self._fake,
            name=name,
            cache=cache,
            samples=samples,
            limiter=None if concurrency is None else Limiter(concurrency),
            timeout=timeout,
            retry=retry,
            registry=registry if registry is not None else EndpointRegistry(),
        )

    @property
    def calls(self) -> list[FakeCall]:
        """Every request received, in order (re-asks included)."""
        return self._fake.calls

    def describe(self) -> dict[str, Any]:
        """Judge kind, the scripted step names and the samples per step (when above 1)."""
        return {
            "kind": "fake",
            "name": self.name,
            "steps": sorted(self._fake.sources),
            **({"samples": self.samples} if self.samples > 1 else {}),
        }

    def calls_for(self, step: str) -> list[FakeCall]:
        """The recorded calls of one step, in order."""
        return [call for call in self.calls if call.step == step]

    def remaining(self, step: str) -> int | None:
        """How many queued answers `step` has left (None for a function script)."""
        source = self._fake.sources.get(step)
        if source is None or source.queue is None:
            return None
        return len(source.queue)
