"""Interoperate with Ragas: read its `MultiTurnSample`s and datasets, and export samples back.

Ragas objects are read duck-typed (anything with `model_dump()`, or its dict), so Ragas itself is
only needed to build Ragas objects (`to_ragas_sample`, `to_ragas_dataset`). Ragas has no system
message, no tool-call ids and no `tool_call_id`: `to_ragas_dict` keeps those in the Ragas
messages' own `metadata` under `"convoeval"`, and `from_ragas` puts them back, so a round trip
through Ragas loses nothing but what Ragas has no field for: the sample's `id`, `metadata`, the
DeepEval-style fields (`chatbot_role`, `scenario`, `expected_outcome`, `user_description`,
`context`), `available_tools`, and the ids of `reference_tool_calls`. Real Ragas objects add no
defaults but the messages' `type`, so they read exactly as their dicts.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

from pydantic import ValidationError

from convoeval.integrations._common import require
from convoeval.io._convert import dumped, kind
from convoeval.io.errors import ConversionError
from convoeval.schema.errors import describe_errors
from convoeval.schema.messages import AIMessage, Message, SystemMessage, ToolMessage
from convoeval.schema.sample import MultiTurnSample

__all__ = [
    "RAGAS_KEY",
    "from_ragas",
    "from_ragas_dataset",
    "to_ragas_dataset",
    "to_ragas_dict",
    "to_ragas_sample",
]

#: Ragas-message metadata key that carries what Ragas has no field for.
RAGAS_KEY = "convoeval"
_RAGAS_FIELDS = ("reference", "reference_tool_calls", "rubrics", "reference_topics")


def from_ragas(sample: Any, **sample_fields: Any) -> MultiTurnSample:
    """A `MultiTurnSample` from a Ragas `MultiTurnSample` (or its dict / JSONL record).

    Fields Ragas leaves as None are ignored; `sample_fields` (for example `id`) are added.
    Raises `ConversionError` naming each problem (`user_input[2].tool_calls[0].name: ...`).
    """
    data = dumped(sample)
    if not isinstance(data, Mapping) or "user_input" not in data:
        raise ConversionError(
            [
                f"sample: must be a Ragas MultiTurnSample or its dict with 'user_input', "
                f"got {kind(data)}"
            ]
        )
    fields = {k: v for k, v in data.items() if v is not None}
    raw_messages = fields.pop("user_input")
    if not isinstance(raw_messages, list):
        raise ConversionError([f"user_input: must be a list, got {kind(raw_messages)}"])
    messages: list[Any] = []
    for message in raw_messages:
        messages.extend(_restored(dumped(message)))
    try:
        return MultiTurnSample.model_validate({**fields, **sample_fields, "user_input": messages})
    except ValidationError as exc:
        raise ConversionError(describe_errors(exc)) from None


def from_ragas_dataset(dataset: Any) -> list[MultiTurnSample]:
    """The samples of a Ragas `EvaluationDataset` (or any iterable of Ragas samples or dicts)."""
    samples = getattr(dataset, "samples", dataset)
    if isinstance(samples, str | bytes | Mapping) or not isinstance(samples, Iterable):
        raise ConversionError([f"dataset: must hold a list of samples, got {kind(samples)}"])
    out: list[MultiTurnSample] = []
    problems: list[str] = []
    for index, sample in enumerate(samples):
        try:
            out.append(from_ragas(sample))
        except ConversionError as exc:
            problems.extend(f"samples[{index}].{line}" for line in exc.problems)
    if problems:
        raise ConversionError(problems)
    return out


def to_ragas_dict(sample: MultiTurnSample) -> dict[str, Any]:
    """The sample in Ragas's layout (what `ragas.MultiTurnSample(**d)` accepts).

    Dropped, because Ragas has no field for them: the sample's `id`, `metadata`, the
    DeepEval-style fields, `available_tools`, and the ids of `reference_tool_calls`. Kept in the
    Ragas messages' `metadata["convoeval"]` instead of dropped: tool-call ids (`tool_call_ids`),
    a tool message's `tool_call_id`, and system messages (`system_before` on the next message,
    or `system_after` on the last one).
    """
    out: list[dict[str, Any]] = []
    pending: list[dict[str, Any]] = []
    for message in sample.user_input:
        if isinstance(message, SystemMessage):
            pending.append(message.model_dump(mode="json", exclude={"type"}, exclude_none=True))
            continue
        carried: dict[str, Any] = {}
        if pending:
            carried["system_before"], pending = pending, []
        out.append(_ragas_message(message, carried))
    if pending:
        if not out:
            raise ConversionError(
                ["user_input: only system messages; Ragas has no system message to hold them"]
            )
        _carry(out[-1], {"system_after": pending})
    data: dict[str, Any] = {"user_input": out}
    dumped_sample = sample.model_dump(mode="json", include=set(_RAGAS_FIELDS), exclude_none=True)
    for call in dumped_sample.get("reference_tool_calls", []):
        call.pop("id", None)
    data.update(dumped_sample)
    return data


def to_ragas_sample(sample: MultiTurnSample) -> Any:
    """A real `ragas.MultiTurnSample` (needs the `ragas` package)."""
    ragas = require("ragas", "ragas", "ragas")
    return ragas.MultiTurnSample(**to_ragas_dict(sample))


def to_ragas_dataset(samples: Iterable[MultiTurnSample]) -> Any:
    """A real `ragas.EvaluationDataset` of the samples (needs the `ragas` package)."""
    ragas = require("ragas", "ragas", "ragas")
    return ragas.EvaluationDataset(samples=[to_ragas_sample(s) for s in samples])


def _ragas_message(message: Message, carried: dict[str, Any]) -> dict[str, Any]:
    """One human/ai/tool message in Ragas's shape, its extensions moved into its metadata."""
    out: dict[str, Any] = {"content": message.content, "type": message.type}
    if message.metadata is not None:
        out["metadata"] = dict(message.metadata)
    if isinstance(message, AIMessage) and message.tool_calls is not None:
        out["tool_calls"] = [{"name": c.name, "args": c.args} for c in message.tool_calls]
        if any(c.id is not None for c in message.tool_calls):
            carried["tool_call_ids"] = [c.id for c in message.tool_calls]
    if isinstance(message, ToolMessage) and message.tool_call_id is not None:
        carried["tool_call_id"] = message.tool_call_id
    if carried:
        _carry(out, carried)
    return out


def _carry(message: dict[str, Any], carried: dict[str, Any]) -> None:
    metadata = dict(message.get("metadata") or {})
    metadata[RAGAS_KEY] = {**metadata.get(RAGAS_KEY, {}), **carried}
    message["metadata"] = metadata


def _restored(message: Any) -> list[Any]:
    """A Ragas message dict with convoeval's extensions put back (system messages around it)."""
    if not isinstance(message, Mapping):
        return [message]  # validation names the problem
    message = {k: v for k, v in message.items() if v is not None}
    metadata = dict(message.get("metadata") or {})
    carried = metadata.pop(RAGAS_KEY, None)
    if not isinstance(carried, Mapping):
        return [message]
    if metadata:
        message["metadata"] = metadata
    else:
        message.pop("metadata", None)
    ids = carried.get("tool_call_ids")
    calls = message.get("tool_calls")
    if isinstance(ids, list) and isinstance(calls, list) and len(ids) == len(calls):
        message["tool_calls"] = [{**dict(c), "id": i} for c, i in zip(calls, ids, strict=True)]
    if carried.get("tool_call_id") is not None:
        message["tool_call_id"] = carried["tool_call_id"]
    before = [{**s, "type": "system"} for s in carried.get("system_before", [])]
    after = [{**s, "type": "system"} for s in carried.get("system_after", [])]
    return [*before, message, *after]
