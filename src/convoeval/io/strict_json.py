"""Strict JSON for every reader: standard JSON only, bounded nesting, no duplicate keys.

Python's `json` accepts `NaN`, `Infinity` and numbers that overflow to infinity (`1e400`), keeps
the last of duplicate keys silently, and raises `RecursionError` on deeply nested input. Here
`loads` turns each of these into a `StrictJSONError`, and `sample_problems` checks the free-form
values of a converted sample (metadata, tool arguments: the only places a value of any depth or
type can sit) against the same rules, whether the record came from a file or from Python objects.
Every reader and `convert` (so `validate`, `run` and `evaluate()`) use these, so they accept and
refuse the same records.
"""

from __future__ import annotations

import json
import math
import re
import threading
from collections.abc import Iterator, Mapping
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from convoeval.schema.sample import MultiTurnSample

#: Containers (objects and lists) nested in one record at most, counting the record itself.
#: Well above any real conversation (a tool call's arguments can hold 58 levels), and well
#: below the depth at which Python's parser or pydantic's serializer give up.
MAX_DEPTH = 64
TOO_DEEP = f"nesting deeper than {MAX_DEPTH}"


class StrictJSONError(ValueError):
    """Text that is not strict JSON; the message says what (no file or line)."""


class ElementError(json.JSONDecodeError):
    """Bad JSON syntax inside element `element` (0-based) of a JSON array."""

    def __init__(self, exc: json.JSONDecodeError, element: int) -> None:
        super().__init__(exc.msg, exc.doc, exc.pos)
        self.element = element


_WS = re.compile(r"[ \t\n\r]*")
_TOKENS = re.compile(r'"(?:[^"\\]|\\.)*"|[\[\]{}]')


class _Duplicated(dict[str, Any]):
    """An object that had duplicate keys (the last value kept); `problems_of` reports it."""

    duplicates: list[str]


class _Refused(float):
    """A number strict JSON refuses (`NaN`, `Infinity`, `1e400`), kept with its text so that
    `problems_of` can report it with its path."""

    text: str


#: whether the current parse met something `problems_of` must report (duplicates, numbers)
_seen = threading.local()


def _pairs(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
    result = dict(pairs)
    if len(result) == len(pairs):
        return result
    _seen.refused = True
    marked = _Duplicated(result)
    seen: set[str] = set()
    marked.duplicates = []
    for key, _ in pairs:
        if key in seen:
            marked.duplicates.append(key)
        seen.add(key)
    return marked


def _refused(text: str, value: float) -> _Refused:
    _seen.refused = True
    number = _Refused(value)
    number.text = text
    return number


def _constant(name: str) -> float:
    return _refused(name, float(name))


def _float(text: str) -> float:
    value = float(text)
    return _refused(text, value) if math.isinf(value) else value


def _non_finite(value: float) -> str:
    if isinstance(value, _Refused) and value.text not in ("NaN", "Infinity", "-Infinity"):
        return f"the number {value.text[:40]} is too large (it overflows to infinity)"
    name = "NaN" if math.isnan(value) else ("Infinity" if value > 0 else "-Infinity")
    return f"{name} is not valid JSON (only finite numbers are)"


_DECODER = json.JSONDecoder(object_pairs_hook=_pairs, parse_constant=_constant, parse_float=_float)


def loads(text: str | bytes, path: str = "") -> Any:
    """Parse strict JSON; `json.JSONDecodeError` for bad syntax, `StrictJSONError` otherwise,
    naming the path (`user_input[2]: duplicate key 'content' in one object`, `metadata.p: NaN
    is not valid JSON (only finite numbers are)`); `path` is where the text itself sits.
    """
    if isinstance(text, bytes):
        text = text.decode("utf-8")
    _seen.refused = False
    try:
        value = _DECODER.decode(text)
    except RecursionError:
        raise StrictJSONError(_at(path, TOO_DEEP)) from None
    if _seen.refused:
        raise StrictJSONError("; ".join(problems_of(value, path)))
    return value


def shallow(text: str, start: int = 0, end: int | None = None) -> bool:
    """Whether JSON text (or `text[start:end]`) surely nests at most `MAX_DEPTH` deep: it has no
    more opening brackets than that (a cheap count; brackets inside strings count too)."""
    stop = len(text) if end is None else end
    return text.count("{", start, stop) + text.count("[", start, stop) <= MAX_DEPTH


def array_elements(text: str) -> Iterator[tuple[Any, str | None, bool]]:
    """The records of a .json file: the elements of its array (or its one object), parsed one
    at a time, as (value, None, shallow) or (None, problem, True) when an element parses but is
    not strict JSON; `shallow` is `shallow()` of the element's text.

    Bad syntax raises `json.JSONDecodeError` (an `ElementError`, naming the 0-based element,
    inside the array); a file that is not an array or an object raises `StrictJSONError`.
    """
    start = _ws(text, 0)
    if not text.startswith(("[", "{"), start):
        value = loads(text)  # bad syntax raises here
        got = {str: "a string", bool: "a boolean", type(None): "null"}.get(type(value), "a number")
        raise StrictJSONError(f"a .json data file must hold an array of records, got {got}")
    if text.startswith("{", start):
        try:
            yield loads(text), None, shallow(text)
        except StrictJSONError as exc:
            yield None, str(exc), True
        return
    index, element = _ws(text, start + 1), 0
    if text.startswith("]", index):
        return _end(text, index + 1)
    while True:
        value, problem, end = _element(text, index, element)
        yield value, problem, problem is not None or shallow(text, index, end)
        index = end
        index = _ws(text, index)
        if text.startswith(",", index):
            index, element = _ws(text, index + 1), element + 1
        elif text.startswith("]", index):
            return _end(text, index + 1)
        else:
            raise ElementError(
                json.JSONDecodeError("Expecting ',' delimiter", text, index), element
            )


def _element(text: str, index: int, element: int) -> tuple[Any, str | None, int]:
    """(value, None, end) or (None, problem, end) of the array element at `index`."""
    _seen.refused = False
    try:
        value, end = _DECODER.raw_decode(text, index)
    except json.JSONDecodeError as exc:
        raise ElementError(exc, element) from None
    except RecursionError:
        return None, TOO_DEEP, _skip(text, index, element)
    if _seen.refused:
        return None, "; ".join(problems_of(value)), end
    return value, None, end


def _skip(text: str, index: int, element: int) -> int:
    """The end of the (too deep, so refused) array or object at `index`, found without parsing."""
    depth = 0
    for token in _TOKENS.finditer(text, index):
        if token.group() in ("[", "{"):
            depth += 1
        elif token.group() in ("]", "}"):
            depth -= 1
            if depth == 0:
                return token.end()
    raise ElementError(json.JSONDecodeError("Unterminated array", text, index), element)


def _ws(text: str, index: int) -> int:
    match = _WS.match(text, index)
    return match.end() if match else index


def _end(text: str, index: int) -> None:
    """Nothing but whitespace may follow the array."""
    index = _ws(text, index)
    if index != len(text):
        raise json.JSONDecodeError("Extra data", text, index)


def sample_problems(sample: MultiTurnSample) -> list[str]:
    """Check the free-form values of a sample (metadata, tool arguments, any other field that is
    not a typed model) with `problems_of`, at their depth within the record."""
    problems: list[str] = []
    for name, value in sample.__dict__.items():
        if value is None or type(value) is str:
            continue
        if name == "user_input":
            for index, message in enumerate(value):
                fields = message.__dict__
                if fields["metadata"]:
                    at = f"user_input[{index}].metadata"
                    problems += problems_of(fields["metadata"], at, 4)
                for position, call in enumerate(fields.get("tool_calls") or ()):
                    if call.args:
                        at = f"user_input[{index}].tool_calls[{position}].args"
                        problems += problems_of(call.args, at, 6)
        elif name == "reference_tool_calls":
            for position, call in enumerate(value):
                if call.args:
                    problems += problems_of(call.args, f"{name}[{position}].args", 4)
        elif name == "available_tools":
            for position, tool in enumerate(value):
                if tool.parameters:
                    at = f"{name}[{position}].function.parameters"
                    problems += problems_of(tool.parameters, at, 5)
        else:
            problems += problems_of(value, name, 2)
    return problems


def problems_of(value: Any, path: str = "", depth: int = 1) -> list[str]:
    """`path: problem` lines for a value: too deep, non-finite numbers, duplicate keys.

    `depth` is the level of `value` itself within its record (1: the record). Iterative (no
    recursion); at the first container deeper than `MAX_DEPTH` it stops with one problem that
    names `path` (the value's own path, not the long one down to that container).
    """
    if not _is_container(value):
        if isinstance(value, float) and not math.isfinite(value):
            return [_at(path, _non_finite(value))]
        return []
    problems: list[str] = []
    # (container, depth, parent entry, key in the parent): paths are built only for problems
    stack: list[tuple[Any, int, Any, Any]] = [(value, depth, None, None)]
    while stack:
        entry = stack.pop()
        node, level = entry[0], entry[1]
        if level > MAX_DEPTH:
            return [_at(path, TOO_DEEP)]
        if type(node) is _Duplicated:
            names = ", ".join(repr(k) for k in dict.fromkeys(node.duplicates))
            problems.append(_at(_path(entry, path), f"duplicate key {names} in one object"))
        mapping = type(node) is dict or (type(node) is not list and isinstance(node, Mapping))
        for key, child in node.items() if mapping else enumerate(node):
            kind = type(child)
            if kind is str or kind is int or kind is bool or child is None:
                continue
            if isinstance(child, float):  # _Refused, numpy's float64 too
                if not math.isfinite(child):
                    problems.append(_at(_path((None, 0, entry, key), path), _non_finite(child)))
            elif _is_container(child):
                stack.append((child, level + 1, entry, key))
    return problems


def _is_container(value: Any) -> bool:
    kind = type(value)
    return kind is dict or kind is list or isinstance(value, Mapping | list | tuple)


def _path(entry: tuple[Any, int, Any, Any], base: str) -> str:
    """`base.key[3].name` of a stack entry, following its parents."""
    parts: list[str] = []
    while entry[2] is not None:
        key = entry[3]
        parts.append(f"[{key}]" if isinstance(key, int) else f".{key}")
        entry = entry[2]
    return (base + "".join(reversed(parts))).removeprefix(".")


def _at(path: str, problem: str) -> str:
    return f"{path}: {problem}" if path else problem
