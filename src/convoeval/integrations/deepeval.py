"""Interoperate with DeepEval: read its `ConversationalTestCase`s and export samples back.

Read duck-typed (a `model_dump()`-able object or its JSON dict), so DeepEval is not needed; of an
object only what was set and differs from the default is read (DeepEval adds `flaky=False`,
`type="FUNCTION"`, ... that are no data), so a real object converts as its dict does. Both turn
styles are accepted: `Turn`s (`{"role": "user"|"assistant", "content", "tools_called"}`) and
the older `LLMTestCase` exchanges (`{"input", "actual_output", "tools_called", ...}`).
An assistant turn that called tools becomes an AIMessage with the calls (DeepEval's
`input_parameters` -> `args`), then one ToolMessage per call that has an `output` (a non-string
output is shown as JSON and kept as is in metadata), then an AIMessage with the turn's `content`.
The case's `chatbot_role`, `scenario`, `user_description`, `context` and `expected_outcome` are the
sample's fields of the same name; `expected_outcome` is also its `reference`, `name` its `id`.
A call's `description`/`reasoning`, a turn's other fields and the case's other fields (`comments`,
`tags`, ...) are kept in metadata (`deepeval_tools`, `deepeval_turn`, `deepeval_case`).

`to_deepeval_dict` writes the `Turn` style. What DeepEval has no field for (tool-call ids, system
messages, message metadata, several tool-call rounds in one turn, an exchange's fields that a
`Turn` has not (`expected_output`, ...), the sample-only fields such as
`reference_topics` or `available_tools`, a `reference` other than `expected_outcome`) rides in
`additional_metadata["convoeval"]` (in `metadata`, DeepEval 4's name, when the case or turn has
one), so `from_deepeval(to_deepeval_dict(s)) == s`, through real DeepEval objects too.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any

from pydantic import TypeAdapter, ValidationError

from convoeval.io._convert import as_list, build_sample, kind, plain
from convoeval.io.errors import ConversionError
from convoeval.schema.errors import describe_errors
from convoeval.schema.messages import (
    AIMessage,
    HumanMessage,
    Message,
    SystemMessage,
    ToolCall,
    ToolMessage,
)
from convoeval.schema.sample import MultiTurnSample

__all__ = ["from_deepeval", "to_deepeval_dict"]

_HINTS = "convoeval"
_CASE_KEY, _TURN_KEY, _TOOLS_KEY, _OUTPUT_KEY = (
    "deepeval_case",
    "deepeval_turn",
    "deepeval_tools",
    "deepeval_tool_output",
)
#: Case fields that are the sample's fields of the same name (`expected_outcome` is one too, and
#: also the sample's `reference` unless the hints say otherwise).
_SHARED = ("chatbot_role", "scenario", "user_description", "context")
_SAMPLE_ONLY = ("reference_tool_calls", "reference_topics", "rubrics", "available_tools")
_MESSAGES: TypeAdapter[list[Message]] = TypeAdapter(list[Message])
#: The fields of DeepEval's `Turn` (3.x and 4.x). A turn's other fields (an exchange's
#: `expected_output`, `context`, ...) ride in the hints: DeepEval's `Turn` would drop them.
_TURN_FIELDS = frozenset(
    {
        *("role", "content", "user_id", "retrieval_context", "tools_called"),
        *("mcp_tools_called", "mcp_resources_called", "mcp_prompts_called"),
        *("audio", "latency_ms", "interrupted", "provider_transcript"),
        *("metadata", "additional_metadata"),
    }
)


def from_deepeval(case: Any, **sample_fields: Any) -> MultiTurnSample:
    """A `MultiTurnSample` from a DeepEval `ConversationalTestCase` (object or JSON dict).

    Raises `ConversionError` naming each problem (`turns[2].tools_called[0].name: ...`).
    """
    data = plain(case)
    if not isinstance(data, Mapping) or "turns" not in data:
        raise ConversionError(
            [f"case: must be a ConversationalTestCase or its dict with 'turns', got {kind(data)}"]
        )
    case_fields = {k: v for k, v in data.items() if k != "turns" and v not in (None, [], {})}
    turns = as_list("turns", data["turns"])
    if not turns:
        raise ConversionError(["turns: is empty: a conversation needs at least one turn"])
    problems: list[str] = []
    messages: list[Message] = []
    origins: list[str] = []
    for index, raw in enumerate(turns):
        converted = _turn(f"turns[{index}]", plain(raw), problems)
        messages.extend(converted)
        origins.extend(f"turns[{index}]" for _ in converted)
    fields = _sample_fields(case_fields, problems)
    if problems:
        raise ConversionError(problems)
    return build_sample(messages, origins, {**fields, **sample_fields})


def to_deepeval_dict(sample: MultiTurnSample) -> dict[str, Any]:
    """The sample as a DeepEval `ConversationalTestCase` JSON dict (`Turn` style)."""
    metadata = dict(sample.metadata or {})
    case: dict[str, Any] = dict(metadata.pop(_CASE_KEY, None) or {})
    turns: list[dict[str, Any]] = []
    before: list[Message] = []
    run: list[Message] = []
    for message in [*sample.user_input, None]:
        if run and (message is None or isinstance(message, HumanMessage)):
            turns.append(_assistant_turn(run))
            run = []
        if message is None:
            break
        if isinstance(message, HumanMessage):
            turns.append(_user_turn(message, before))
            before = []
        elif isinstance(message, SystemMessage) and not run:
            before.append(message)
        else:
            run = [*before, message] if before and not run else [*run, message]
            before = []
    if before:
        turns.append(_assistant_turn(before))
    case["turns"] = turns
    if sample.id is not None:
        case["name"] = sample.id
    case.update(sample.model_dump(mode="json", include=set(_SHARED), exclude_none=True))
    outcome = sample.expected_outcome if sample.expected_outcome is not None else sample.reference
    if outcome is not None:
        case["expected_outcome"] = outcome
    extra = sample.model_dump(mode="json", include=set(_SAMPLE_ONLY), exclude_none=True)
    if sample.reference != outcome:
        extra["reference"] = sample.reference  # None too: it differs from expected_outcome
    if sample.expected_outcome is None and outcome is not None:
        extra["expected_outcome"] = None
    if metadata:
        extra["metadata"] = metadata
    if extra:
        _hint(case, {"sample": extra})
    return case


def _sample_fields(case: dict[str, Any], problems: list[str]) -> dict[str, Any]:
    fields: dict[str, Any] = {k: case.pop(k) for k in _SHARED if k in case}
    if "name" in case:
        fields["id"] = case.pop("name")
    if "expected_outcome" in case:
        fields["reference"] = fields["expected_outcome"] = case.pop("expected_outcome")
    hints = _pop_hints(case)
    sample = hints.get("sample") or {}
    metadata = dict(sample.get("metadata") or {})
    if case:
        metadata[_CASE_KEY] = case
    fields.update({k: v for k, v in sample.items() if k != "metadata"})
    if metadata:
        fields["metadata"] = metadata
    return fields


def _pop_hints(holder: dict[str, Any]) -> dict[str, Any]:
    """Take convoeval's hints out of the metadata (dropping it when it empties)."""
    key = _metadata_key(holder)
    extra = holder.get(key)
    if not isinstance(extra, Mapping) or _HINTS not in extra:
        return {}
    rest = {k: v for k, v in extra.items() if k != _HINTS}
    if rest:
        holder[key] = rest
    else:
        del holder[key]
    hints = extra[_HINTS]
    return dict(hints) if isinstance(hints, Mapping) else {}


def _hint(holder: dict[str, Any], hints: dict[str, Any]) -> None:
    key = _metadata_key(holder)
    extra = dict(holder.get(key) or {})
    extra[_HINTS] = {**extra.get(_HINTS, {}), **hints}
    holder[key] = extra


def _metadata_key(holder: Mapping[str, Any]) -> str:
    """`metadata` (DeepEval 4) when the case or turn has it, else `additional_metadata`: the
    name every DeepEval version reads (DeepEval 4 takes it as an alias of `metadata`)."""
    return "metadata" if "metadata" in holder else "additional_metadata"


def _turn(where: str, raw: Any, problems: list[str]) -> list[Message]:
    """The messages of one DeepEval turn (either style)."""
    if not isinstance(raw, Mapping) or not ({"role", "input"} & raw.keys()):
        problems.append(
            f"{where}: expected a Turn with 'role' and 'content', or an LLMTestCase with 'input'"
        )
        return []
    fields = {k: v for k, v in raw.items() if v not in (None, [], {})}
    hints = _pop_hints(fields)
    fields.update(hints.get("turn") or {})
    if "messages" in hints:
        return _copied(where, hints["messages"], problems)
    before = _copied(where, hints.get("before", []), problems)
    if "input" in raw:
        content, tools = fields.pop("input"), fields.pop("tools_called", None)
        output = fields.pop("actual_output", None)
        human = _human(where, content, fields, "input", problems)
        reply = _assistant(where, output or "", tools, {}, hints, problems)
        return [*before, *human, *(reply if output is not None or tools else [])]
    role = fields.pop("role")
    content = fields.pop("content", "")
    if role == "user":
        if "tools_called" in fields:
            problems.append(f"{where}.tools_called: a user turn cannot call tools")
        return [*before, *_human(where, content, fields, "content", problems)]
    if role != "assistant":
        problems.append(f"{where}.role: must be 'user' or 'assistant', got {role!r}")
        return []
    tools = fields.pop("tools_called", None)
    return [*before, *_assistant(where, content, tools, fields, hints, problems)]


def _human(
    where: str, content: Any, extra: dict[str, Any], key: str, problems: list[str]
) -> list[Message]:
    if not isinstance(content, str):
        problems.append(f"{where}.{key}: must be a string, got {kind(content)}")
        return []
    return [HumanMessage(content=content, metadata={_TURN_KEY: extra} if extra else None)]


def _assistant(
    where: str,
    content: Any,
    tools: Any,
    extra: dict[str, Any],
    hints: Mapping[str, Any],
    problems: list[str],
) -> list[Message]:
    """Messages of an assistant turn: calls, their outputs, then the reply."""
    if not isinstance(content, str):
        problems.append(f"{where}.content: must be a string, got {kind(content)}")
        return []
    meta: dict[str, Any] = {_TURN_KEY: extra} if extra else {}
    if not tools:
        return [AIMessage(content=content, metadata=meta or None)]
    calls, details, results = _tools(where, tools, hints.get("tool_call_ids"), problems)
    if any(details):
        meta[_TOOLS_KEY] = details
    if not results:
        return [AIMessage(content=content, tool_calls=calls, metadata=meta or None)]
    reply = [AIMessage(content=content)] if content else []
    return [AIMessage(content="", tool_calls=calls, metadata=meta or None), *results, *reply]


def _tools(
    where: str, tools: Any, ids: Any, problems: list[str]
) -> tuple[list[ToolCall], list[dict[str, Any]], list[Message]]:
    """(calls, per-call details, tool results) of `tools_called`."""
    calls: list[ToolCall] = []
    details: list[dict[str, Any]] = []
    results: list[Message] = []
    items = tools if isinstance(tools, list) else []
    if not isinstance(tools, list):
        problems.append(f"{where}.tools_called: must be a list, got {kind(tools)}")
    for position, item in enumerate(items):
        at = f"{where}.tools_called[{position}]"
        tool = plain(item)
        if not isinstance(tool, Mapping) or not isinstance(tool.get("name"), str):
            problems.append(f"{at}.name: a tool call needs a string 'name'")
            continue
        args = tool.get("input_parameters") or {}
        if not isinstance(args, Mapping):
            problems.append(f"{at}.input_parameters: must be an object, got {kind(args)}")
            continue
        call_id = ids[position] if isinstance(ids, list) and position < len(ids) else None
        calls.append(ToolCall(name=tool["name"], args=dict(args), id=call_id))
        skip = ("name", "input_parameters", "output")
        detail = {k: v for k, v in tool.items() if k not in skip and v is not None}
        if tool.get("input_parameters") is None:
            detail["input_parameters"] = None  # no parameters given, which is not `{}`
        details.append(detail)
        output = tool.get("output")
        if output is not None:
            text = output if isinstance(output, str) else json.dumps(output, ensure_ascii=False)
            meta = None if isinstance(output, str) else {_OUTPUT_KEY: output}
            results.append(ToolMessage(content=text, tool_call_id=call_id, metadata=meta))
    return calls, details, results


def _copied(where: str, raw: Any, problems: list[str]) -> list[Message]:
    """Messages copied verbatim into the hints (what DeepEval's turns cannot express)."""
    try:
        return _MESSAGES.validate_python(raw)
    except ValidationError as exc:
        problems.extend(f"{where}.additional_metadata.{_HINTS}: {e}" for e in describe_errors(exc))
        return []


def _user_turn(message: HumanMessage, before: list[Message]) -> dict[str, Any]:
    turn: dict[str, Any] = {"role": "user", "content": message.content}
    metadata = dict(message.metadata or {})
    if unknown := _turn_fields(turn, metadata.pop(_TURN_KEY, None) or {}):
        _hint(turn, {"turn": unknown})
    if metadata:
        _hint(turn, {"messages": _dump([*before, message])})
    elif before:
        _hint(turn, {"before": _dump(before)})
    return turn


def _assistant_turn(run: list[Message]) -> dict[str, Any]:
    """One assistant turn for a run of non-user messages; hints keep what it cannot hold."""
    first = run[0]
    extra = dict((first.metadata or {}).get(_TURN_KEY) or {})
    ais = [m for m in run if isinstance(m, AIMessage)]
    calls = [c for m in ais for c in m.tool_calls or []]
    details = [d for m in ais for d in (m.metadata or {}).get(_TOOLS_KEY, [])]
    outputs: dict[int, Any] = {}
    tool_messages = [m for m in run if isinstance(m, ToolMessage)]
    for position, message in enumerate(tool_messages):
        index = next(
            (i for i, c in enumerate(calls) if c.id is not None and c.id == message.tool_call_id),
            position,
        )
        outputs[index] = (message.metadata or {}).get(_OUTPUT_KEY, message.content)
    last = run[-1]
    content = last.content if isinstance(last, AIMessage) and not last.tool_calls else ""
    if len(ais) == 1 and ais[0].tool_calls:
        content = ais[0].content if not tool_messages else content
    tools = []
    for index, call in enumerate(calls):
        tool: dict[str, Any] = {"name": call.name, "input_parameters": call.args}
        tool.update(details[index] if index < len(details) else {})
        tool = {k: v for k, v in tool.items() if v is not None}
        if index in outputs:
            tool["output"] = outputs[index]
        tools.append(tool)
    turn: dict[str, Any] = {"role": "assistant", "content": content}
    unknown = _turn_fields(turn, extra)
    if tools:
        turn["tools_called"] = tools
    hints: dict[str, Any] = {"turn": unknown} if unknown else {}
    if any(c.id is not None for c in calls):
        hints["tool_call_ids"] = [c.id for c in calls]
    rebuilt = _assistant("", content, tools or None, extra, hints, [])
    if rebuilt != run:
        hints = {"messages": _dump(run)}
    if hints:
        _hint(turn, hints)
    return turn


def _turn_fields(turn: dict[str, Any], extra: Mapping[str, Any]) -> dict[str, Any]:
    """Set the fields DeepEval's `Turn` has on `turn`; return the others (for the hints)."""
    turn.update({k: v for k, v in extra.items() if k in _TURN_FIELDS})
    return {k: v for k, v in extra.items() if k not in _TURN_FIELDS}


def _dump(messages: list[Message]) -> list[dict[str, Any]]:
    return [m.model_dump(mode="json", exclude_none=True) for m in messages]
