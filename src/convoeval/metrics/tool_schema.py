"""ToolSchemaCheck: every call names an available tool and its arguments fit the tool's schema.

The agent's calls (every tool call of every AIMessage) are checked against `available_tools`
(OpenAI function specs): a call of a tool not in the list is hallucinated; a call whose arguments
do not validate against the tool's JSON schema (`parameters`, checked with `jsonschema`, the draft
its `$schema` names, 2020-12 by default) is invalid, with the validator's messages. A tool whose
schema is itself invalid cannot check its calls: they are listed as unchecked. Score = valid calls
/ checked calls; no call made: 1.0. No judge is needed.
"""

from __future__ import annotations

from typing import Any

from convoeval.metrics._base import Ask, Metric, MetricResult
from convoeval.metrics._registry import register
from convoeval.metrics._tool_calls import describe_call, named_calls
from convoeval.schema import MultiTurnSample
from convoeval.schema.tools import ToolSpec

#: At most this many validator messages per call, each cut to this many characters (a huge enum
#: or a huge argument must not make a huge result).
MAX_ERRORS = 10
MAX_MESSAGE = 300


@register
class ToolSchemaCheck(Metric):
    """Every tool call names an available tool and its arguments validate against its schema."""

    name = "tool_schema_check"
    required = ("user_input", "available_tools")
    needs_llm = False
    uses_judge = False
    #: Passing means every call was to an available tool with valid arguments.
    default_threshold = 1.0

    def __init__(self, *, threshold: float | None = None) -> None:
        super().__init__(threshold=threshold)

    def config(self) -> dict[str, Any]:
        """No options: names must match exactly, arguments must validate."""
        return {}

    async def _score(self, sample: MultiTurnSample, ask: Ask) -> MetricResult:
        tools = {tool.name: tool for tool in sample.available_tools or []}
        validators: dict[str, Any] = {}
        bad_schemas: dict[str, str] = {}
        for name, tool in tools.items():
            try:
                validators[name] = _validator(tool)
            except _schema_failures() as exc:
                bad_schemas[name] = _short(f"invalid schema: {_message(exc)}")
        hallucinated: list[dict[str, Any]] = []
        invalid: list[dict[str, Any]] = []
        unchecked: list[dict[str, Any]] = []
        valid = 0
        calls = sample.predicted_tool_calls()
        for index, call in enumerate(calls):
            entry = describe_call(call, index)
            if call.name not in tools:
                entry["available"] = sorted(tools)[:20]
                hallucinated.append(entry)
            elif call.name in bad_schemas:
                entry["why"] = bad_schemas[call.name]
                unchecked.append(entry)
            else:
                errors = _errors(validators[call.name], call.args)
                if errors is None:
                    entry["why"] = "the validator could not check these arguments (nested too deep)"
                    unchecked.append(entry)
                elif errors:
                    entry["errors"] = errors
                    invalid.append(entry)
                else:
                    valid += 1
        details: dict[str, Any] = {
            "calls": len(calls),
            "valid": valid,
            "hallucinated": hallucinated,
            "invalid": invalid,
            "unchecked": unchecked,
            "invalid_schemas": bad_schemas,
        }
        checked = len(calls) - len(unchecked)
        if not calls:
            return MetricResult(1.0, "No tool call was made.", details)
        if checked == 0:
            return MetricResult.unscored(
                "No call could be checked: " + "; ".join(e["why"] for e in unchecked[:3]),
                details,
            )
        return MetricResult(valid / checked, _reason(details, checked), details)


def _schema_failures() -> tuple[type[Exception], ...]:
    """What an unusable schema raises. jsonschema loads with the first tool scored, not with
    the metrics package (it takes 40-100 ms, which `convoeval metrics` and a resumed run need not
    pay)."""
    import jsonschema.exceptions

    return (jsonschema.exceptions.SchemaError, RecursionError, TypeError, ValueError)


def _validator(tool: ToolSpec) -> Any:
    """A checked validator for the tool's arguments (no schema: the tool takes no arguments)."""
    import jsonschema
    import jsonschema.validators

    schema: Any = tool.parameters
    if schema is None:
        schema = {"type": "object", "maxProperties": 0}
    cls = jsonschema.validators.validator_for(schema, default=jsonschema.Draft202012Validator)
    cls.check_schema(schema)
    return cls(schema)


def _errors(validator: Any, args: dict[str, Any]) -> list[dict[str, str]] | None:
    """The validator's messages (path, message, keyword), at most `MAX_ERRORS`; None when the
    arguments could not be checked at all."""
    import jsonschema.exceptions
    import referencing.exceptions

    out: list[dict[str, str]] = []
    try:
        for error in validator.iter_errors(args):
            out.append(
                {
                    "path": _path(list(error.absolute_path)),
                    "message": _short(error.message),
                    "keyword": str(error.validator),
                }
            )
            if len(out) >= MAX_ERRORS:
                break
    except RecursionError:
        return None
    except (referencing.exceptions.Unresolvable, jsonschema.exceptions.SchemaError) as exc:
        # An unresolvable $ref (remote ones are never fetched): the schema is wrong.
        out.append({"path": "", "message": _short(f"cannot check: {_message(exc)}"), "keyword": ""})
    return out


def _path(parts: list[Any]) -> str:
    """`address.zip`, `flights[1].date`; the arguments themselves are `(arguments)`."""
    text = ""
    for part in parts:
        text += f"[{part}]" if isinstance(part, int) else (f".{part}" if text else str(part))
    return text or "(arguments)"


def _message(exc: BaseException) -> str:
    message = getattr(exc, "message", None)
    return str(message if isinstance(message, str) else exc) or type(exc).__name__


def _short(text: str) -> str:
    return text if len(text) <= MAX_MESSAGE else text[: MAX_MESSAGE - 3] + "..."


def _reason(details: dict[str, Any], checked: int) -> str:
    parts = [f"{details['valid']} of {checked} checked calls are valid."]
    if details["hallucinated"]:
        names = named_calls(details["hallucinated"][:10])
        parts.append(f"Not an available tool: {names}.")
    for call in details["invalid"][:10]:
        first = call["errors"][0]
        parts.append(f"{named_calls([call])} {first['path']}: {first['message']}.")
    if details["unchecked"]:
        parts.append(f"{len(details['unchecked'])} calls not checked (see details).")
    return " ".join(parts)
