"""The root of convoeval's error tree: every "your input, data or judge is wrong" error is a
`ConvoevalError`, so callers (and the CLI) can tell them from bugs, which are anything else.
"""

from __future__ import annotations

import math
from collections.abc import Mapping


class ConvoevalError(Exception):
    """Base of every error convoeval raises on purpose (bad data, conversion, judge, results)."""


class UsageError(ConvoevalError, ValueError):
    """Options that cannot make a run: an unknown metric or option, a threshold out of range,
    judge options given with a Judge object, nothing to score."""


def one_spelling(given: Mapping[str, object]) -> object:
    """The value of one option given under its spellings (`given`: spelling -> value, the
    documented spelling first, None when not given); two spellings with different values are a
    `UsageError` naming both (README.md: every alias and the name it stands for)."""
    found = {name: value for name, value in given.items() if value is not None}
    values = list(found.values())
    if any(value != values[0] or type(value) is not type(values[0]) for value in values[1:]):
        said = " and ".join(f"{name}={value!r}" for name, value in found.items())
        raise UsageError(f"{said} are two spellings of one option: give one")
    return values[0] if values else None


def check_count(value: object, name: str, minimum: int = 1) -> int | None:
    """An option that counts (requests, samples, records, repeats): a whole number (not a bool)
    of at least `minimum`, or None; else a `UsageError` naming the option, as its CLI twin
    (`click.IntRange(min=...)`) says."""
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, int):
        raise UsageError(f"{name} must be a whole number, not {value!r}")
    if value < minimum:
        raise UsageError(f"{name} must be at least {minimum}, not {value}")
    return value


def check_limit(value: object, bounds: tuple[float, float] | None, what: str) -> float:
    """A pass mark or gate limit as a float: a number (not a bool), finite and within the
    metric's score range `bounds` (None: any); else a `UsageError` saying which. One rule for
    --threshold and --fail-under: a NaN limit would pass every gate, one outside the range none."""
    if isinstance(value, bool) or not isinstance(value, int | float):
        raise UsageError(f"{what} must be a number, not {value!r}")
    if not math.isfinite(value):
        raise UsageError(f"{what} must be a finite number, not {value!r}")
    if bounds is not None and not bounds[0] <= value <= bounds[1]:
        raise UsageError(
            f"{what} is {value:g}, outside its scores' range [{bounds[0]:g}, {bounds[1]:g}]"
        )
    return float(value)
