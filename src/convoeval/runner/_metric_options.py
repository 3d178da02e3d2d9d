"""The options of a `-m NAME:key=value` spec: which constructor parameters the command line can
set, and each value converted and checked by the parameter's annotation (a bool is true or false,
an int a whole number), so a typo is refused instead of reaching the metric as text.
"""

from __future__ import annotations

import collections.abc
import inspect
import json
import math
import types
import typing
from typing import Any

#: Parameters that are not metric options: the judge comes from --judge.
_NOT_OPTIONS = ("judge", "model")
_TRUE = ("true", "1")
_FALSE = ("false", "0")
_NULL = ("null", "none")


class OptionValueError(ValueError):
    """An option value that does not fit its parameter, or an option only Python can set."""


def parameters(cls: type[Any]) -> dict[str, inspect.Parameter]:
    """The constructor parameters a spec may name (annotations resolved where they can be)."""
    try:
        signature = inspect.signature(cls, eval_str=True)
    except (NameError, TypeError, AttributeError, SyntaxError):  # an annotation names the unknown
        signature = inspect.signature(cls)
    return {
        name: info
        for name, info in signature.parameters.items()
        if info.kind not in (info.VAR_POSITIONAL, info.VAR_KEYWORD) and name not in _NOT_OPTIONS
    }


def python_only(info: inspect.Parameter) -> bool:
    """Whether a parameter takes only a function (or None): text on a command line cannot be one."""
    members = [t for t in _members(info.annotation) if t is not type(None)]
    return bool(members) and all(_is_callable(t) for t in members)


def convert(key: str, text: str, info: inspect.Parameter) -> Any:
    """The value of `key=text` for its parameter; `OptionValueError` says what it must be."""
    members = _members(info.annotation)
    nullable = type(None) in members
    kinds = [t for t in members if t is not type(None) and not _is_callable(t)]
    if nullable and text.lower() in _NULL and kinds in ([bool], [int], [float]):
        return None
    if kinds == [bool]:
        if text.lower() in _TRUE + _FALSE:
            return text.lower() in _TRUE
        raise OptionValueError(f"{key} must be true or false, not {text!r}")
    if kinds == [int]:
        try:
            return int(text)
        except ValueError:
            raise OptionValueError(f"{key} must be a whole number, not {text!r}") from None
    if kinds == [float]:
        try:
            number = float(text)
        except ValueError:
            number = math.nan
        if not math.isfinite(number):
            raise OptionValueError(f"{key} must be a number, not {text!r}")
        return number
    if len(kinds) == 1 and typing.get_origin(kinds[0]) is typing.Literal:
        allowed = [str(v) for v in typing.get_args(kinds[0])]
        if text not in allowed:
            raise OptionValueError(f"{key} must be one of {', '.join(allowed)}, not {text!r}")
        return text
    return _scalar(text)


def _members(annotation: Any) -> list[Any]:
    """The types of a union annotation (`bool | None` -> [bool, NoneType]), else [annotation];
    [] when the parameter has none or it could not be resolved (a string)."""
    if annotation is inspect.Parameter.empty or isinstance(annotation, str):
        return []
    if typing.get_origin(annotation) in (typing.Union, types.UnionType):
        return list(typing.get_args(annotation))
    return [annotation]


def _is_callable(annotation: Any) -> bool:
    """Whether an annotation is `Callable[...]` (a function the user writes in Python)."""
    return collections.abc.Callable in (annotation, typing.get_origin(annotation))


def _scalar(text: str) -> Any:
    """A value of an option of no simple type: a JSON scalar (true, 3, 0.5, null, "x") when it
    parses, else the text."""
    if text.lower() in ("true", "false"):
        return text.lower() == "true"
    try:
        value = json.loads(text)
    except ValueError:
        return text
    return value if value is None or isinstance(value, bool | int | float | str) else text
