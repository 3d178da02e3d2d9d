"""The root of convoeval's error tree: every "your input, data or judge is wrong" error is a
`ConvoevalError`, so callers (and the CLI) can tell them from bugs, which are anything else.
"""

from __future__ import annotations

import math
from collections.abc import Mapping

#: The errors `convoeval` exports (docs/errors.md): each shows its public name,
#: `convoeval.NAME`, in reprs and tracebacks, and pickles by it (the face loads it on use).
PUBLIC_ERRORS = frozenset(
    {
        "CaseTypeError",
        "CompareError",
        "ConversionError",
        "ConvoevalError",
        "DataError",
        "DataFileError",
        "JudgeAuthError",
        "JudgeConfigError",
        "JudgeError",
        "JudgeSpecError",
        "JudgeUnreachableError",
        "LabelsError",
        "MetricFailedError",
        "MissingFieldsError",
        "NothingToScoreError",
        "OfflineJudgeError",
        "RequiredFieldsError",
        "ResultsFileError",
        "TrialsError",
        "UsageError",
    }
)


class ConvoevalError(Exception):
    """Base of every error convoeval raises on purpose (bad data, conversion, judge, results)."""

    def __init_subclass__(cls, **kwargs: object) -> None:
        super().__init_subclass__(**kwargs)
        if cls.__name__ in PUBLIC_ERRORS:  # defined anywhere, shown where users import it
            cls.__module__ = "convoeval"

    def __reduce__(self) -> tuple[object, ...]:
        """Pickle by message and attributes, not by constructor arguments (errors that take
        their own, such as `MissingFieldsError(metric, fields)`, cross processes too)."""
        return (_restore, (type(self), self.args, self.__dict__))


def _restore(
    cls: type[ConvoevalError], args: tuple[object, ...], state: dict[str, object]
) -> ConvoevalError:
    """An unpickled error: its message and attributes, without calling its constructor."""
    error = cls.__new__(cls)
    error.args = args
    error.__dict__.update(state)
    return error


ConvoevalError.__module__ = "convoeval"


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
