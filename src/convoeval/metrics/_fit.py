"""Requests sized to the judge: a conversation too long for one request is split into several.

A metric asks about consecutive units (exchanges, replies, user messages, intentions), up to a
fixed number per request. When the judge says how much it can take (`Ask.limits()`: its context
window, and `max_tokens` when set), each run of units is also cut where the next request would
not fit: the prompt (system and user text, the answer schema, a little for the chat template)
plus an allowance of `ANSWER_TOKENS` per verdict asked must fit the context, and the allowance
alone must fit `max_tokens`. Tokens are estimated as characters / 4, as the judge core estimates
usage. A unit that cannot fit even alone fails the step with a message saying why, unsent.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING, Any, TypeVar

from convoeval.judges.protocol._answers import estimate_tokens
from convoeval.judges.protocol.base import JudgeError
from convoeval.metrics._conversation import CHUNK, chunks

if TYPE_CHECKING:
    from convoeval.judges.protocol.step import Step, StepInput
    from convoeval.metrics._base import Ask

T = TypeVar("T")
InputT = TypeVar("InputT", bound="StepInput")

#: Completion tokens allowed per verdict asked: a keyed verdict with a one-sentence reason (a
#: small local model writes a reason even where the schema asks for none: 447 tokens for 10).
ANSWER_TOKENS = 84
#: Tokens the chat template adds around the system and user messages.
TEMPLATE_TOKENS = 16


def request_tokens(step: Step[Any], inputs: StepInput, *, reason_first: bool = False) -> int:
    """The estimated prompt of one request: instructions, user prompt, answer schema, template."""
    schema = json.dumps(step.request_schema(inputs, reason_first=reason_first))
    text = estimate_tokens(step.instructions) + estimate_tokens(step.render(inputs))
    return text + estimate_tokens(schema) + TEMPLATE_TOKENS


async def fitted(
    ask: Ask,
    step: Step[Any],
    units: Sequence[T],
    build: Callable[[list[T]], InputT],
    *,
    size: int = CHUNK,
    verdicts: Callable[[list[T]], int] = len,
    what: str = "unit",
) -> list[InputT]:
    """The inputs of the step's requests: `units` in runs of at most `size`, each run cut
    further until its request (`build(run)`) fits the judge's limits; `verdicts(run)` is how
    many verdicts its answer holds."""
    runs = chunks(units, size)
    context, output = await ask.limits()
    if context is None and output is None:
        return [build(run) for run in runs]
    reason_first = bool(getattr(ask.judge, "reason_first", False))

    def fits(inputs: InputT, run: list[T]) -> bool:
        answer = ANSWER_TOKENS * verdicts(run)
        prompt = request_tokens(step, inputs, reason_first=reason_first)
        return (output is None or answer <= output) and (
            context is None or prompt + answer <= context
        )

    fitted_inputs: list[InputT] = []
    for run in runs:
        start = 0
        while start < len(run):
            end = start + 1
            current = build(run[start:end])
            prompt = request_tokens(step, current, reason_first=reason_first)
            if context is not None and prompt >= context:
                raise JudgeError(
                    step.name,
                    f"one {what} alone needs about {prompt} prompt tokens, more than the "
                    f"judge's context window of {context} tokens; nothing was sent",
                )
            # one unit whose answer allowance does not fit is still asked alone: 84 tokens a
            # verdict is an allowance, not a measure
            while end < len(run):
                longer = build(run[start : end + 1])
                if not fits(longer, run[start : end + 1]):
                    break
                current, end = longer, end + 1
            fitted_inputs.append(current)  # the input already built for the run kept
            start = end
    return fitted_inputs
