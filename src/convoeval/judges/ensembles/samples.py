"""Repeated judge samples (self-consistency): N independent answers to one step, one vote.

An LLM judge built with `samples=N` (N > 1) asks every step N times, each sample its own request
with its own validation, re-ask and retries, and its own cache entry (the sample's index is part
of the key). Temperature-0 samples would mostly repeat one another and prove nothing, so a judge
whose temperature is 0 samples at `SAMPLE_TEMPERATURE`; a judge with a temperature above 0 keeps
it, and a fixed seed is offset by the sample's index (equal seeds would give equal samples).

How the answers are combined (`combine`), per verdict of a keyed step (one verdict per topic,
exchange, message, intention or call), else for the whole answer:

- every boolean, `Literal` or `Enum` field is decided by majority; a tie (no value has more votes
  than every other, as when two judges disagree) goes to the tied value given by the earliest
  voter (sample order is fixed, so reruns resolve ties alike), and the verdict is recorded as
  tied (`ties`);
- an answer without such fields but with exactly one `int`/`float` field (a score, a rubric
  level) takes the lower median of it;
- anything else (extractions: topics, facts, intentions) takes the most common whole answer by
  JSON equality, ties to the earliest sample and recorded (free-text answers rarely repeat, so
  this is usually the first sample);
- the verdict's text (its reason) comes from the earliest sample that agrees with the combined
  verdict on every voted field; the other top-level fields of a keyed answer (such as tool use's
  missing calls) by JSON equality as above.

A verdict's confidence is the share of the answering samples that agree with it on every voted
field (for a median: that give the median value). A sample that fails after its retries is left
out of the vote; the step fails only when fewer than a majority of the N samples answered
(`quorum`), since the votes of a minority could not form a majority of the samples asked.
"""

from __future__ import annotations

import enum
import statistics
from collections import Counter
from collections.abc import Hashable, Mapping, Sequence
from typing import Any, Literal, TypeVar, get_origin

from pydantic import BaseModel

from convoeval.judges.protocol._answers import AnswerProblem, RawReply, accept
from convoeval.judges.protocol.base import JudgeError, SampleVote
from convoeval.judges.protocol.step import Step

OutT = TypeVar("OutT", bound=BaseModel)

#: The temperature of repeated samples when the judge's own is 0 (documented in docs/judges.md).
SAMPLE_TEMPERATURE = 0.7
#: The list of keyed verdicts in a keyed step's output (metrics/_keyed.py).
_VERDICTS = "verdicts"
#: The confidence entry of a step whose answer is not keyed.
WHOLE_ANSWER = "answer"


def varied_sampling(base: Mapping[str, Any], offset: int, tag: str, index: int) -> dict[str, Any]:
    """The backend's sampling settings made to vary: the judge's temperature when above 0, else
    `SAMPLE_TEMPERATURE`; a fixed seed offset by `offset`; and `tag: index`, so each variant has
    its own cache key. Shared by repeated samples and repeated runs (judges/ensembles/repeat.py)."""
    temperature = base.get("temperature")
    if not isinstance(temperature, int | float) or temperature <= 0:
        temperature = SAMPLE_TEMPERATURE
    seed = base.get("seed")
    return {
        **base,
        "temperature": temperature,
        "seed": seed + offset if isinstance(seed, int) else seed,
        tag: index,
    }


def sample_sampling(base: Mapping[str, Any], index: int) -> dict[str, Any]:
    """The sampling settings of sample `index` (from 0): the seed offset by the index."""
    return varied_sampling(base, index, "sample", index)


def quorum(samples: int) -> int:
    """How many of `samples` must answer for the step to be answered: a strict majority."""
    return samples // 2 + 1


def combine(
    step: Step[OutT], inputs: Any, results: Sequence[OutT | JudgeError]
) -> tuple[OutT, SampleVote]:
    """The combined answer of the samples' `results` (in sample order) and how it was voted.

    Raises `JudgeError` when fewer than `quorum(len(results))` samples answered.
    """
    output, confidence, ties = vote(step, inputs, results, voters="judge samples")
    vote_record = SampleVote(
        answers=[None if isinstance(r, JudgeError) else r.model_dump(mode="json") for r in results],
        errors={i: str(r) for i, r in enumerate(results) if isinstance(r, JudgeError)},
        confidence=confidence,
        ties=ties,
    )
    return output, vote_record


def vote(
    step: Step[OutT], inputs: Any, results: Sequence[OutT | JudgeError], *, voters: str
) -> tuple[OutT, dict[str, float], list[str]]:
    """The majority answer of `results` (one per voter, in voter order: repeated samples of one
    judge, or the members of a judge panel), each verdict's confidence, and the verdicts (keys
    of `confidence`) that were tied. The rules are the module's; the earliest voter breaks
    ties. `voters` names them in the error raised when fewer than `quorum(len(results))`
    answered."""
    answers = [r for r in results if not isinstance(r, JudgeError)]
    errors = [str(r) for r in results if isinstance(r, JudgeError)]
    needed = quorum(len(results))
    if len(answers) < needed:
        raise JudgeError(
            step.name,
            f"only {len(answers)} of {len(results)} {voters} answered (at least {needed} "
            f"needed for a majority); first failure: {errors[0]}",
        )
    key_field = _key_field(step)
    if key_field is not None and all(hasattr(a, _VERDICTS) for a in answers):
        combined, confidence, ties = _combine_keyed(answers, key_field)
    else:
        combined, share, tied = _vote(answers, exclude=())
        confidence, ties = {WHOLE_ANSWER: share}, [WHOLE_ANSWER] if tied else []
    try:
        output = accept(step, inputs, RawReply(content=combined.model_dump()))
    except AnswerProblem as exc:  # pieces of valid answers that do not fit together
        raise JudgeError(step.name, f"the combined {voters} do not fit: {exc}") from exc
    return output, confidence, ties


def ratings(
    step: Step[Any], results: Sequence[BaseModel | JudgeError]
) -> dict[str, dict[str, list[Any]]]:
    """What each voter said on every voted (boolean or categorical) field, per verdict key (or
    "answer" for a step that is not keyed): `{key: {field: [value per voter, None where the
    voter did not answer or gave no verdict for the key]}}`, values JSON-ready. This is what
    the agreement between judges is computed from."""
    key_field = _key_field(step)
    table: dict[str, dict[str, list[Any]]] = {}
    for index, result in enumerate(results):
        if isinstance(result, JudgeError):
            continue
        items: list[tuple[str, BaseModel, tuple[str, ...]]]
        if key_field is not None and hasattr(result, _VERDICTS):
            items = [
                (str(getattr(v, key_field)), v, (key_field,)) for v in getattr(result, _VERDICTS)
            ]
        else:
            items = [(WHOLE_ANSWER, result, ())]
        for key, verdict, exclude in items:
            fields = type(verdict).model_fields
            dumped = verdict.model_dump(mode="json")
            for name in fields:
                if name in exclude or not _is_categorical(fields[name].annotation):
                    continue
                row = table.setdefault(key, {}).setdefault(name, [None] * len(results))
                row[index] = dumped[name]
    return table


def _key_field(step: Step[Any]) -> str | None:
    key_field = getattr(step.shape, "key_field", None)
    return key_field if isinstance(key_field, str) else None


def _combine_keyed(
    answers: Sequence[BaseModel], key_field: str
) -> tuple[BaseModel, dict[str, float], list[str]]:
    """Vote per key (keys in the order the samples first give them); the other top-level fields
    by JSON equality."""
    by_key: dict[Hashable, list[BaseModel]] = {}
    for answer in answers:
        for verdict in getattr(answer, _VERDICTS):
            by_key.setdefault(getattr(verdict, key_field), []).append(verdict)
    verdicts: list[BaseModel] = []
    confidence: dict[str, float] = {}
    ties: list[str] = []
    for key, candidates in by_key.items():
        verdict, share, tied = _vote(candidates, exclude=(key_field,))
        verdicts.append(verdict)
        confidence[str(key)] = share
        if tied:
            ties.append(str(key))
    first = answers[0]
    rest = {
        name: _most_common([getattr(a, name) for a in answers])
        for name in type(first).model_fields
        if name != _VERDICTS
    }
    return first.model_copy(update={_VERDICTS: verdicts, **rest}), confidence, ties


def _vote(
    candidates: Sequence[BaseModel], *, exclude: Sequence[str]
) -> tuple[BaseModel, float, bool]:
    """The combined candidate, the share of the candidates that agree with it, and whether a
    voted field (or the whole answer) was a tie (a median is never one)."""
    model = type(candidates[0])
    names = [n for n in model.model_fields if n not in exclude]
    voted = [n for n in names if _is_categorical(model.model_fields[n].annotation)]
    if voted:
        results = {n: _majority([getattr(c, n) for c in candidates]) for n in voted}
        winner = {n: value for n, (value, _) in results.items()}
        agree = [c for c in candidates if all(getattr(c, n) == v for n, v in winner.items())]
        chosen = agree[0] if agree else candidates[0].model_copy(update=winner)
        tied = any(tie for _, tie in results.values())
        return chosen, len(agree) / len(candidates), tied
    numeric = [n for n in names if model.model_fields[n].annotation in (int, float)]
    if len(numeric) == 1:
        values = [getattr(c, numeric[0]) for c in candidates]
        middle = statistics.median_low(values)
        chosen = next(c for c in candidates if getattr(c, numeric[0]) == middle)
        return chosen, values.count(middle) / len(values), False
    texts = [c.model_dump_json() for c in candidates]
    best, tied = _majority(texts)
    return candidates[texts.index(best)], texts.count(best) / len(texts), tied


def _most_common(values: Sequence[Any]) -> Any:
    """The most common value by JSON equality, ties to the earliest."""
    dumped = [_json(v) for v in values]
    return values[dumped.index(_majority(dumped)[0])]


def _json(value: Any) -> str:
    if isinstance(value, BaseModel):
        return value.model_dump_json()
    if isinstance(value, list):
        return "[" + ",".join(_json(v) for v in value) + "]"
    return repr(value)


def _majority(values: Sequence[Hashable]) -> tuple[Any, bool]:
    """The most frequent value, and whether another value was as frequent (a tie: then the
    value the earliest voter gave)."""
    counts = Counter(values)
    top = max(counts.values())
    tied = sum(1 for count in counts.values() if count == top) > 1
    return next(v for v in values if counts[v] == top), tied


def _is_categorical(annotation: Any) -> bool:
    """A verdict field that is voted on: a boolean, a `Literal` or an `Enum`."""
    if annotation is bool or get_origin(annotation) is Literal:
        return True
    return isinstance(annotation, type) and issubclass(annotation, enum.Enum)
