"""Comparators for `ToolCallAccuracy(arg_comparison_metric=...)`, under Ragas's names.

A comparator is called as `comparator(predicted_value, reference_value)` and returns a score in
[0, 1]. `ExactMatch()` is typed deep equality (on the strings Ragas mode passes, string
equality); `NonLLMStringSimilarity()` is 1 - the normalised distance of the values' text. The
distances are small implementations here rather than a new dependency (rapidfuzz) for 60 lines.
"""

from __future__ import annotations

import difflib
from collections.abc import Callable
from enum import StrEnum
from typing import Any

from convoeval.metrics._tool_calls import ArgComparator, values_equal

#: What `arg_comparison_metric=` takes: (predicted value, reference value) -> score in [0, 1].
ValueComparator = Callable[[Any, Any], float | bool]


class DistanceMeasure(StrEnum):
    """The string distances `NonLLMStringSimilarity` offers (Ragas's names)."""

    LEVENSHTEIN = "levenshtein"
    HAMMING = "hamming"
    JARO = "jaro"
    JARO_WINKLER = "jaro_winkler"


class ExactMatch:
    """1.0 when the two values are equal (typed deep equality), else 0.0 (Ragas's default)."""

    def __call__(self, predicted: Any, reference: Any) -> float:
        return 1.0 if values_equal(predicted, reference) else 0.0

    def __repr__(self) -> str:
        return "ExactMatch()"


class NonLLMStringSimilarity:
    """1 - normalised string distance between the values' text (a value that is not a string is
    compared by its `str()`, as Ragas does)."""

    def __init__(
        self, distance_measure: DistanceMeasure | str = DistanceMeasure.LEVENSHTEIN
    ) -> None:
        try:
            self.distance_measure = DistanceMeasure(
                distance_measure.value
                if isinstance(distance_measure, DistanceMeasure)
                else str(distance_measure).lower()
            )
        except ValueError:
            names = [m.value for m in DistanceMeasure]
            near = difflib.get_close_matches(str(distance_measure).lower(), names, n=1)
            hint = f" (did you mean {near[0]!r}?)" if near else ""
            raise ValueError(
                f"NonLLMStringSimilarity: distance_measure must be one of {', '.join(names)}, "
                f"not {distance_measure!r}{hint}"
            ) from None

    def __call__(self, predicted: Any, reference: Any) -> float:
        a = predicted if isinstance(predicted, str) else str(predicted)
        b = reference if isinstance(reference, str) else str(reference)
        return _SIMILARITY[self.distance_measure](a, b)

    def __repr__(self) -> str:
        return f"NonLLMStringSimilarity(distance_measure={self.distance_measure.value!r})"


def levenshtein_similarity(a: str, b: str) -> float:
    """1 - edit distance (insert, delete, substitute) / the longer length; 1.0 if both empty."""
    if not a and not b:
        return 1.0
    previous = list(range(len(b) + 1))
    for i, ca in enumerate(a, 1):
        current = [i]
        for j, cb in enumerate(b, 1):
            current.append(min(previous[j] + 1, current[j - 1] + 1, previous[j - 1] + (ca != cb)))
        previous = current
    return 1.0 - previous[-1] / max(len(a), len(b))


def hamming_similarity(a: str, b: str) -> float:
    """1 - differing positions / the longer length (the shorter string padded, so extra
    characters differ); 1.0 if both empty."""
    longest = max(len(a), len(b))
    if longest == 0:
        return 1.0
    same = sum(1 for x, y in zip(a, b, strict=False) if x == y)
    return same / longest


def jaro_similarity(a: str, b: str) -> float:
    """Jaro: characters matching within half the longer length, less half the transpositions."""
    if not a and not b:
        return 1.0
    if not a or not b:
        return 0.0
    window = max(max(len(a), len(b)) // 2 - 1, 0)
    used = [False] * len(b)
    matched_a = []
    for i, ca in enumerate(a):
        for j in range(max(0, i - window), min(len(b), i + window + 1)):
            if not used[j] and b[j] == ca:
                used[j] = True
                matched_a.append(ca)
                break
    m = len(matched_a)
    if m == 0:
        return 0.0
    matched_b = [b[j] for j in range(len(b)) if used[j]]
    transpositions = sum(1 for x, y in zip(matched_a, matched_b, strict=True) if x != y) / 2
    return (m / len(a) + m / len(b) + (m - transpositions) / m) / 3


def jaro_winkler_similarity(a: str, b: str) -> float:
    """Jaro plus a bonus for a common prefix (up to 4 characters, weight 0.1)."""
    jaro = jaro_similarity(a, b)
    prefix = 0
    for x, y in zip(a[:4], b[:4], strict=False):
        if x != y:
            break
        prefix += 1
    return jaro + prefix * 0.1 * (1.0 - jaro)


_SIMILARITY = {
    DistanceMeasure.LEVENSHTEIN: levenshtein_similarity,
    DistanceMeasure.HAMMING: hamming_similarity,
    DistanceMeasure.JARO: jaro_similarity,
    DistanceMeasure.JARO_WINKLER: jaro_winkler_similarity,
}


class ByValues:
    """A `ValueComparator` used where an `ArgComparator` (which also gets the argument's name)
    is expected; its errors name the `arg_comparison_metric` option."""

    option = "arg_comparison_metric"

    def __init__(self, comparator: ValueComparator) -> None:
        if not callable(comparator):
            raise TypeError(
                "ToolCallAccuracy: arg_comparison_metric must be ExactMatch(), "
                "NonLLMStringSimilarity() (from convoeval) or a function (predicted, reference) "
                f"-> float, not {type(comparator).__name__}"
            )
        self.comparator = comparator

    def __call__(self, name: str, predicted: Any, reference: Any) -> float | bool:
        return self.comparator(predicted, reference)


def describe(comparator: ArgComparator | ValueComparator | None) -> str | None:
    """A comparator for `config()`: ours by their repr, any other callable by its import path."""
    if comparator is None:
        return None
    if isinstance(comparator, ExactMatch | NonLLMStringSimilarity):
        return repr(comparator)
    module = getattr(comparator, "__module__", "?")
    return f"{module}.{getattr(comparator, '__qualname__', type(comparator).__name__)}"
