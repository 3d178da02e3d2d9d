"""The DeepEval record layout (`{"turns": [...], "scenario": ..., ...}`) to and from samples.

`turns` holds either `Turn`s (`role`/`content`) or exchanges (`input`/`actual_output`). The case
fields (`chatbot_role`, `scenario`, `expected_outcome`, `user_description`, `context`,
`available_tools`) are the sample's fields of the same name, and the sample-only fields
(`reference`, `reference_topics`, `rubrics`, `reference_tool_calls`) sit next to `turns`; `id` is
accepted for DeepEval's `name`. `expected_outcome` is also the sample's `reference` unless the
record gives a `reference` of its own.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Any

from pydantic import TypeAdapter, ValidationError

from convoeval._text import nth
from convoeval.schema.cases import SAMPLE_KEY, ConversationalTestCase, ModelTestCase, Turn
from convoeval.schema.errors import describe_errors
from convoeval.schema.sample import MultiTurnSample

_CASE_FIELDS = {*ConversationalTestCase.model_fields, "additional_metadata"} - {"turns"}
_SAMPLE_ONLY = ("reference", "reference_tool_calls", "reference_topics", "rubrics")
_TWINS = {"id": "name"}
_TURNS: TypeAdapter[list[Turn]] = TypeAdapter(list[Turn])
_EXCHANGES: TypeAdapter[list[ModelTestCase]] = TypeAdapter(list[ModelTestCase])


def deepeval_to_sample(data: Mapping[str, Any]) -> tuple[MultiTurnSample | None, list[str]]:
    """Convert a DeepEval-layout record; returns the sample or every problem found."""
    problems: list[str] = []
    turns = _turns(data.get("turns"), problems)
    case_data: dict[str, Any] = {}
    extras: dict[str, Any] = {}
    for key, value in data.items():
        if key == "turns":
            continue
        if key in _TWINS:
            if _TWINS[key] in data:
                problems.append(
                    f"{key}: give '{key}' or '{_TWINS[key]}' (its DeepEval name), not both"
                )
            case_data[_TWINS[key]] = value
        elif key in _CASE_FIELDS:
            case_data[key] = value
        elif key in _SAMPLE_ONLY:
            extras[key] = value
            _check_field(key, value, problems)
        else:
            problems.append(f"{key}: unknown field (not part of the DeepEval layout)")
    if problems or turns is None:
        return None, problems
    try:
        case = ConversationalTestCase.model_validate({**case_data, "turns": turns})
        sample = case.to_sample()
        if extras:
            fields = {k: v for k, v in sample if v is not None}
            sample = MultiTurnSample.model_validate({**fields, **extras})
    except ValidationError as exc:
        return None, [_renamed(line, turns) for line in describe_errors(exc)]
    return sample, []


def sample_to_deepeval(sample: MultiTurnSample) -> dict[str, Any]:
    """The DeepEval-layout record (`Turn` style) of a sample; reading it back gives it again."""
    case = ConversationalTestCase.from_sample(sample, style="turns")
    metadata = dict(case.metadata or {})
    metadata.pop(SAMPLE_KEY, None)  # the sample-only fields are written next to `turns`
    case = case.model_copy(
        update={"expected_outcome": sample.expected_outcome, "metadata": metadata or None}
    )
    record = case.model_dump(mode="json", exclude_none=True)
    for flag in ("flaky", "multimodal"):  # written only when set, like the other case fields
        if record.get(flag) is False:
            del record[flag]
    dumped = sample.to_dict()
    for key in _SAMPLE_ONLY:
        if key in dumped:
            record[key] = dumped[key]
    if sample.reference != sample.expected_outcome:
        record["reference"] = sample.reference  # null too: it differs from expected_outcome
    else:
        record.pop("reference", None)
    return record


def _turns(value: Any, problems: list[str]) -> list[Turn] | list[ModelTestCase] | None:
    """Validate `turns` in the style its first item uses; None (with problems) when invalid."""
    if not isinstance(value, list):
        problems.append(f"turns: must be a list, got {type(value).__name__}")
        return None
    if not value:
        problems.append("turns: is empty: a conversation needs at least one turn")
        return None
    first = value[0]
    if not isinstance(first, Mapping) or not ({"role", "input"} & first.keys()):
        problems.append(
            "turns[0]: expected a turn with 'role' and 'content', or an exchange "
            "with 'input' and 'actual_output'"
        )
        return None
    adapter: TypeAdapter[Any] = _TURNS if "role" in first else _EXCHANGES
    try:
        turns: list[Turn] | list[ModelTestCase] = adapter.validate_python(value)
    except ValidationError as exc:
        problems.extend(describe_errors(exc, ("turns",)))
        return None
    for index, turn in enumerate(turns):
        if isinstance(turn, Turn):
            try:
                turn.to_message()
            except ValueError as exc:
                problems.append(f"turns[{index}]: {exc}")
    return None if problems else turns


def _check_field(key: str, value: Any, problems: list[str]) -> None:
    """Check one sample-only field against its MultiTurnSample type."""
    annotation: Any = MultiTurnSample.model_fields[key].annotation
    adapter: TypeAdapter[Any] = TypeAdapter(annotation)
    try:
        adapter.validate_python(value)
    except ValidationError as exc:
        problems.extend(describe_errors(exc, (key,)))


def _renamed(line: str, turns: list[Turn] | list[ModelTestCase]) -> str:
    """Point a `user_input[k]` error at the turn that produced message k."""
    match = re.match(r"user_input\[(\d+)\]", line)
    if match is None:
        return line
    position = int(match.group(1))
    if turns and isinstance(turns[0], Turn):
        return f"turns[{position}]" + line[match.end() :]
    start = 0
    for index, turn in enumerate(turns):
        size = len(turn.to_messages()) if isinstance(turn, ModelTestCase) else 1
        if position < start + size:
            where = f"turns[{index}] (message {nth(position)} of the conversation)"
            return where + line[match.end() :]
        start += size
    return line
