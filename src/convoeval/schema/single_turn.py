"""Ragas's `SingleTurnSample` and `EvaluationDataset`, so Ragas code runs with its imports switched.

A `SingleTurnSample` is one exchange (a question, the answer, references) with Ragas's field
names; `to_sample()` makes it a two-message `MultiTurnSample`, so every conversation metric runs
on it. An `EvaluationDataset` is a list of samples that `evaluate()` takes wherever a list is.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator, Mapping, Sequence
from typing import Any, overload

from pydantic import BaseModel, ConfigDict

from convoeval.schema.cases import ConversationalTestCase
from convoeval.schema.messages import AIMessage, HumanMessage, Message
from convoeval.schema.sample import MultiTurnSample

#: SingleTurnSample fields with a twin in MultiTurnSample; the others go to `metadata`.
_SHARED = ("reference", "rubrics")


class SingleTurnSample(BaseModel):
    """One exchange, with Ragas's field names (unknown fields are rejected, not dropped)."""

    model_config = ConfigDict(extra="forbid")

    user_input: str | None = None
    retrieved_contexts: list[str] | None = None
    reference_contexts: list[str] | None = None
    retrieved_context_ids: list[str | int] | None = None
    reference_context_ids: list[str | int] | None = None
    response: str | None = None
    multi_responses: list[str] | None = None
    reference: str | None = None
    rubrics: dict[str, str] | None = None
    persona_name: str | None = None
    query_style: str | None = None
    query_length: str | None = None

    def to_sample(self) -> MultiTurnSample:
        """The exchange as a conversation: the question, then the response when there is one;
        `reference` and `rubrics` kept as such, every other set field in `metadata`."""
        if self.user_input is None:
            raise ValueError("SingleTurnSample.user_input: a conversation needs the question")
        messages: list[Message] = [HumanMessage(content=self.user_input)]
        if self.response is not None:
            messages.append(AIMessage(content=self.response))
        rest = self.model_dump(exclude_none=True, exclude={"user_input", "response", *_SHARED})
        return MultiTurnSample(
            user_input=messages,
            reference=self.reference,
            rubrics=self.rubrics,
            metadata=rest or None,
        )


#: What an `EvaluationDataset` holds: samples, cases, or dicts in a layout `evaluate()` reads.
DatasetItem = MultiTurnSample | ConversationalTestCase | dict[str, Any]


class EvaluationDataset(Sequence[DatasetItem]):
    """Ragas's `EvaluationDataset(samples=[...])`: a list of samples (a `SingleTurnSample`
    becomes its conversation, a mapping a dict), taken by `evaluate()` like any list."""

    def __init__(self, samples: Iterable[Any]) -> None:
        self.samples: list[DatasetItem] = [_item(i, s) for i, s in enumerate(samples)]

    @classmethod
    def from_list(cls, data: Iterable[Mapping[str, Any]]) -> EvaluationDataset:
        """A dataset of dicts (Ragas's `from_list`)."""
        return cls(samples=list(data))

    def to_list(self) -> list[dict[str, Any]]:
        """Every sample as a dict (a sample in Ragas layout; a case as its fields)."""
        return [item if isinstance(item, dict) else _as_dict(item) for item in self.samples]

    def __len__(self) -> int:
        return len(self.samples)

    @overload
    def __getitem__(self, index: int) -> DatasetItem: ...

    @overload
    def __getitem__(self, index: slice) -> EvaluationDataset: ...

    def __getitem__(self, index: int | slice) -> DatasetItem | EvaluationDataset:
        if isinstance(index, slice):
            return EvaluationDataset(self.samples[index])
        return self.samples[index]

    def __iter__(self) -> Iterator[DatasetItem]:
        return iter(self.samples)

    def __repr__(self) -> str:
        return f"EvaluationDataset(samples=[...{len(self.samples)} samples])"


def _item(index: int, sample: Any) -> DatasetItem:
    if isinstance(sample, MultiTurnSample | ConversationalTestCase):
        return sample
    if isinstance(sample, SingleTurnSample):
        return sample.to_sample()
    if isinstance(sample, Mapping):
        return dict(sample)
    raise TypeError(
        f"samples[{index}]: expected a MultiTurnSample, SingleTurnSample, ConversationalTestCase "
        f"or dict, not {type(sample).__name__}"
    )


def _as_dict(item: MultiTurnSample | ConversationalTestCase) -> dict[str, Any]:
    sample = item if isinstance(item, MultiTurnSample) else item.to_sample()
    return sample.to_dict()
