"""Turning a judge's raw reply into a validated answer, with one re-ask: shared by every judge.

The LLM-judge core (every backend: OpenAI-compatible, fake) goes through `ask_validated`, and the
offline judge through `accept`, so parsing, schema validation, `step.check`, the cut-off
(finish_reason "length") rule and the re-ask message exist exactly once.
"""

from __future__ import annotations

import json
import math
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import Any, TypeVar

from pydantic import BaseModel, ValidationError

from convoeval.judges.protocol.base import JudgeError, Step

OutT = TypeVar("OutT", bound=BaseModel)

_MAX_ERRORS_SHOWN = 6


@dataclass(frozen=True)
class RawReply:
    """What a judge backend answered: the content (text, mapping or model) and why it stopped."""

    content: object
    finish_reason: str | None = None


@dataclass(frozen=True)
class Reask:
    """The second turn of a re-ask: the previous raw answer and the message quoting its problem."""

    previous: str
    message: str


#: One round trip to a backend; receives None on the first ask, the `Reask` on the second.
AskFn = Callable[[Reask | None], Awaitable[RawReply]]


class AnswerProblem(Exception):
    """Why a raw answer cannot be used (shown to the judge when re-asking)."""


def raw_text(content: object) -> str:
    """The raw answer as text, for re-asks and error messages."""
    if isinstance(content, str):
        return content
    if isinstance(content, BaseModel):
        return content.model_dump_json()
    try:
        return json.dumps(content, ensure_ascii=False, default=str)
    except (TypeError, ValueError):
        return repr(content)


def estimate_tokens(text: str) -> int:
    """A rough token count (about four characters a token) for servers that report no usage."""
    return math.ceil(len(text) / 4)


def schema_text(schema: dict[str, Any]) -> str:
    """An answer's JSON schema as prompt text (for servers without structured output)."""
    text = json.dumps(schema, ensure_ascii=False)
    return (
        "Reply with a single JSON object, and nothing else, that validates against this "
        f"JSON schema:\n{text}"
    )


def reask_message(problem: str) -> str:
    """The follow-up user message that quotes what was wrong with the previous answer."""
    return (
        f"Your previous answer could not be accepted: {problem}\n"
        "Answer the same question again. Reply only with a JSON object that follows the "
        "required output schema exactly."
    )


def _strip_fences(text: str) -> str:
    stripped = text.strip()
    if stripped.startswith("```"):
        first_newline = stripped.find("\n")
        body = stripped[first_newline + 1 :] if first_newline != -1 else ""
        if body.rstrip().endswith("```"):
            body = body.rstrip()[:-3]
        return body.strip()
    return stripped


def _describe_errors(error: ValidationError) -> str:
    parts: list[str] = []
    for item in error.errors(include_url=False)[:_MAX_ERRORS_SHOWN]:
        where = ".".join(str(p) for p in item.get("loc", ())) or "(answer)"
        parts.append(f"{where}: {item.get('msg', 'invalid')}")
    extra = error.error_count() - len(parts)
    if extra > 0:
        parts.append(f"and {extra} more")
    return "; ".join(parts)


def _embedded_object(text: str) -> str | None:
    start, end = text.find("{"), text.rfind("}")
    if start == -1 or end <= start or (start == 0 and end == len(text) - 1):
        return None
    return text[start : end + 1]


def _validate_text(step: Step[OutT], inputs: Any, text: str) -> OutT:
    if step.shape is None:
        return step.output.model_validate_json(text)
    try:
        data = json.loads(text)
    except ValueError:
        return step.output.model_validate_json(text)  # raises pydantic's "Invalid JSON" error
    return step.output.model_validate(step.decode(inputs, data))


def _parse(step: Step[OutT], inputs: Any, content: object) -> OutT:
    try:
        if isinstance(content, str):
            text = _strip_fences(content)
            try:
                return _validate_text(step, inputs, text)
            except ValidationError:
                inner = _embedded_object(text)  # prose around one JSON object (prompt-only mode)
                if inner is None:
                    raise
                try:
                    return _validate_text(step, inputs, inner)
                except ValidationError:
                    pass
                raise
        if isinstance(content, BaseModel):
            content = content.model_dump()
        return step.output.model_validate(step.decode(inputs, content))
    except ValidationError as exc:
        raise AnswerProblem(
            f"it does not match the output schema ({_describe_errors(exc)})"
        ) from exc


def accept(step: Step[OutT], inputs: Any, reply: RawReply) -> OutT:
    """Parse, validate and check one raw reply; raises `AnswerProblem` when it cannot be used."""
    try:
        output = _parse(step, inputs, reply.content)
    except AnswerProblem as exc:
        if reply.finish_reason == "length":
            raise AnswerProblem(
                "it was cut off at the token limit (finish_reason=length) before the JSON was "
                f"complete; give a shorter answer. Details: {exc}"
            ) from exc
        raise
    if step.check is not None:
        issue = step.check(inputs, output)
        if issue:
            raise AnswerProblem(f"it does not fit the question: {issue}")
    return output


async def ask_validated(step: Step[OutT], inputs: Any, ask: AskFn) -> OutT:
    """Ask once; on an unusable answer re-ask once quoting the problem; then raise `JudgeError`."""
    first = await ask(None)
    try:
        return accept(step, inputs, first)
    except AnswerProblem as exc:
        problem = str(exc)
    previous = raw_text(first.content)
    second = await ask(Reask(previous=previous, message=reask_message(problem)))
    try:
        return accept(step, inputs, second)
    except AnswerProblem as exc:
        raise JudgeError(
            step.name,
            f"no valid answer after one re-ask: {exc} (first answer: {problem})",
            raw=raw_text(second.content),
        ) from exc
