"""`JudgePanel`: several judges answer every step, and their majority verdict is the answer.

One judge's verdicts carry its own biases; a panel of different models (or the offline judge
and LLM judges) votes them down. Every step is asked of every member at once, each member with
its own cache, limits, retries and samples; the answers are combined by the very vote of
repeated samples (judges/ensembles/samples.py: majority per voted field and per verdict, a median
or the most common answer where nothing is voted), so `--judge A --judge B` and `samples=N`
decide alike. A tie (two members that disagree) goes to the first member, the chair, and is
recorded as a tie (`PanelVote.ties`; docs/judges.md says why). A member that fails is left out
of the vote; the step fails when fewer than a majority of the members answered. A member that
cannot answer a kind of step at all (`StepUnsupported`) makes the step unsupported for the
panel: a panel answers only what every member can.

What each member said on every voted field is kept (`PanelVote.ratings`), so a run can report
how far the judges agree (Fleiss' kappa, stats/panels.py).
"""

from __future__ import annotations

import asyncio
from collections import Counter
from collections.abc import Mapping, Sequence
from typing import Any

from pydantic import BaseModel

from convoeval.judges.ensembles.samples import ratings, vote
from convoeval.judges.protocol.base import (
    Answer,
    Judge,
    JudgeConfigError,
    JudgeError,
    OutT,
    PanelVote,
    SampleVote,
    Step,
    StepUnsupported,
    Usage,
)
from convoeval.judges.spec import resolve_one

__all__ = ["JudgePanel"]


class JudgePanel:
    """A judge made of other judges (at least two; specs such as "openai/MODEL" are resolved
    with `resolve_judge` defaults). `members` keep their order: the first breaks ties. Each is
    labelled by its name (`#2`, `#3` appended to repeated names); labels key the per-member
    answers in a metric's details (`judge_panel`). `left_out` (label: why) names members
    that are not asked (see `leave_out`)."""

    def __init__(
        self, members: Sequence[Judge | str], *, left_out: Mapping[str, str] | None = None
    ) -> None:
        if isinstance(members, str) or len(members) < 2:
            raise JudgeConfigError(
                "a judge panel needs at least two judges (one judge is used as it is)"
            )
        self.members: list[Judge] = [resolve_one(m) for m in members]
        self.labels = _labels([str(getattr(m, "name", "judge")) for m in self.members])
        self.name = f"panel({', '.join(self.labels)})"
        #: The members left out of every vote, by label, with why (e.g. unreachable at start).
        self.left_out: dict[str, str] = {}
        self.leave_out(left_out or {})

    def leave_out(self, reasons: Mapping[str, str]) -> None:
        """Ask only the members not labelled in `reasons` from now on (an empty mapping asks
        every member again); each one left out counts as a failed member of every vote, so the
        quorum stays a majority of all the members, and its `why` is in the details."""
        unknown = sorted(set(reasons) - set(self.labels))
        if unknown:
            raise JudgeConfigError(f"{self.name} has no member {unknown[0]!r}")
        self.left_out = dict(reasons)

    def __repr__(self) -> str:
        return f"JudgePanel({self.labels!r})"

    def describe(self) -> dict[str, Any]:
        """The panel's kind and name and every member's own description (part of a run's
        identity: a run resumes only with the same members in the same order)."""
        return {
            "kind": "panel",
            "name": self.name,
            "members": [_described(m) for m in self.members],
        }

    async def aclose(self) -> None:
        """Close the members' connections on this event loop."""
        for member in self.members:
            close = getattr(member, "aclose", None)
            if close is not None:
                await close()

    async def run(
        self, step: Step[OutT], inputs: Any, *, usage: Usage | None = None
    ) -> Answer[OutT]:
        """Ask every member at once and combine their answers by majority vote.

        `usage` receives every member's requests as they are sent; `Answer.usage` (and a
        `JudgeError`'s) is the sum of what the members spent on this step.
        """
        results = await asyncio.gather(
            *(
                _absent(step, why)
                if (why := self.left_out.get(label)) is not None
                else member.run(step, inputs, usage=usage)
                for label, member in zip(self.labels, self.members, strict=True)
            ),
            return_exceptions=True,
        )
        spent = Usage()
        outputs: list[OutT | JudgeError] = []
        samples: dict[int, SampleVote] = {}
        for index, result in enumerate(results):
            if isinstance(result, Answer):
                spent.add(result.usage)
                outputs.append(result.output)
                if result.vote is not None:
                    samples[index] = result.vote
            elif isinstance(result, JudgeError):
                spent.add(result.usage or Usage())
                outputs.append(result)
            else:
                raise result  # a bug or a cancellation is raised, not voted on
        for label, output in zip(self.labels, outputs, strict=True):
            if isinstance(output, StepUnsupported):
                error = StepUnsupported(
                    step.name, f"panel member {label!r} cannot answer this step: {output}"
                )
                error.usage = spent
                raise error
        named: list[OutT | JudgeError] = [
            JudgeError(step.name, f"panel member {label!r} failed: {r}")
            if isinstance(r, JudgeError)
            else r
            for label, r in zip(self.labels, outputs, strict=True)
        ]
        try:
            output, confidence, ties = vote(step, inputs, named, voters="panel members")
        except JudgeError as exc:
            exc.usage = spent
            raise
        record = PanelVote(
            members=list(self.labels),
            answers=[_dumped(r) for r in outputs],
            errors={i: str(r) for i, r in enumerate(outputs) if isinstance(r, JudgeError)},
            confidence=confidence,
            ratings=ratings(step, outputs),
            samples=samples,
            ties=ties,
            left_out=[label for label in self.labels if label in self.left_out],
        )
        return Answer(output=output, usage=spent, panel=record)


async def _absent(step: Step[Any], why: str) -> Answer[Any]:
    """What a member left out of the panel answers: a failure saying why."""
    raise JudgeError(step.name, f"left out of the panel: {why}")


def _dumped(result: BaseModel | JudgeError) -> dict[str, Any] | None:
    return None if isinstance(result, JudgeError) else result.model_dump(mode="json")


def _described(member: Judge) -> dict[str, Any]:
    try:
        return dict(member.describe())
    except Exception as exc:  # a third-party judge's describe must not stop the run
        return {"name": getattr(member, "name", "?"), "describe_error": str(exc)}


def _labels(names: Sequence[str]) -> list[str]:
    """The names, with `#2`, `#3`, ... appended to the second and later uses of a name."""
    seen: Counter[str] = Counter()
    labels = []
    for name in names:
        seen[name] += 1
        labels.append(name if seen[name] == 1 else f"{name}#{seen[name]}")
    return labels
