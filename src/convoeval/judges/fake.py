"""`FakeJudge`: scripted answers per step, for tests of metrics and of the runner.

It goes through the same validate / check / re-ask path as the real judges, records every call
and counts requests like a real judge, so a metric test can assert what was asked and how often.
"""

from __future__ import annotations

from collections import deque
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, TypeAlias, TypeVar

from pydantic import BaseModel

from convoeval.judges._answers import RawReply, Reask, ask_validated, estimate_tokens, raw_text
from convoeval.judges.base import Answer, JudgeError, Step, Usage

OutT = TypeVar("OutT", bound=BaseModel)

#: One scripted answer: a dict, JSON text, a pydantic instance, or an exception (class) to raise.
FakeAnswer: TypeAlias = Mapping[str, Any] | str | BaseModel | BaseException | type[BaseException]
#: A step's script: answers popped in order, or a function of the step's inputs.
FakeScript: TypeAlias = Sequence[FakeAnswer] | Callable[[Mapping[str, Any]], FakeAnswer]


class FakeScriptError(LookupError):
    """The fake judge was asked something its script does not cover (a test-setup mistake)."""


@dataclass(frozen=True)
class FakeCall:
    """One request the fake judge received: the step, its inputs, the rendered prompts."""

    step: str
    inputs: Mapping[str, Any]
    prompt: str
    system: str
    reask: str | None = None


@dataclass
class _Source:
    queue: deque[FakeAnswer] | None = None
    function: Callable[[Mapping[str, Any]], FakeAnswer] | None = None
    served: int = field(default=0)


class FakeJudge:
    """A judge that answers from a script per step name; every answer is validated for real."""

    def __init__(self, script: Mapping[str, FakeScript], *, name: str = "fake") -> None:
        self.name = name
        self.calls: list[FakeCall] = []
        self._sources: dict[str, _Source] = {}
        for step_name, entry in script.items():
            if callable(entry):
                self._sources[step_name] = _Source(function=entry)
            elif isinstance(entry, str | bytes | Mapping | BaseModel):
                raise TypeError(
                    f"the script of step {step_name!r} must be a sequence of answers or a "
                    "function of the inputs, not a single answer (wrap it in a list)"
                )
            else:
                self._sources[step_name] = _Source(queue=deque(entry))

    def describe(self) -> dict[str, Any]:
        """Judge kind and the scripted step names."""
        return {"kind": "fake", "name": self.name, "steps": sorted(self._sources)}

    def calls_for(self, step: str) -> list[FakeCall]:
        """The recorded calls of one step, in order."""
        return [call for call in self.calls if call.step == step]

    def remaining(self, step: str) -> int | None:
        """How many queued answers `step` has left (None for a function script)."""
        source = self._sources.get(step)
        if source is None or source.queue is None:
            return None
        return len(source.queue)

    def _next(self, step: str, inputs: Mapping[str, Any]) -> FakeAnswer:
        source = self._sources.get(step)
        if source is None:
            raise FakeScriptError(
                f"FakeJudge has no script for step {step!r}; scripted steps: "
                f"{sorted(self._sources) or 'none'}"
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

    async def run(self, step: Step[OutT], inputs: Mapping[str, Any]) -> Answer[OutT]:
        """Answer `step` from the script, through the shared validate / check / re-ask path."""
        prompt = step.render(inputs)
        usage = Usage()

        async def ask(reask: Reask | None) -> RawReply:
            self.calls.append(
                FakeCall(
                    step=step.name,
                    inputs=dict(inputs),
                    prompt=prompt,
                    system=step.instructions,
                    reask=None if reask is None else reask.message,
                )
            )
            usage.requests += 1
            sent = step.instructions + prompt + ("" if reask is None else reask.message)
            usage.prompt_tokens += estimate_tokens(sent)
            answer = self._next(step.name, inputs)
            if isinstance(answer, BaseException):
                raise answer
            if isinstance(answer, type) and issubclass(answer, BaseException):
                raise answer()
            usage.completion_tokens += estimate_tokens(raw_text(answer))
            return RawReply(content=answer, finish_reason="stop")

        try:
            output = await ask_validated(step, inputs, ask)
        except JudgeError as exc:
            exc.usage = usage
            raise
        return Answer(output=output, usage=usage)
