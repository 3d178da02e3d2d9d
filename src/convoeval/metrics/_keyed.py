"""Helpers shared by judge metrics: checks that keyed verdicts match what was asked, and ratios.

A judge answers "one verdict per item, keyed by the item"; `keyed_check` builds the step check that
finds missing, extra or repeated keys, so the judge layer re-asks instead of padding.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable, Mapping
from typing import Any

from convoeval.judges.base import AnswerCheck


def keyed_check(items_input: str, key_field: str, key_of: Callable[[Any], Any]) -> AnswerCheck:
    """A step check: `output.verdicts` must hold exactly one verdict per item of `items_input`."""

    def check(inputs: Mapping[str, Any], output: Any) -> str | None:
        expected = [key_of(item) for item in inputs[items_input]]
        given = Counter(getattr(v, key_field) for v in output.verdicts)
        missing = [k for k in expected if k not in given]
        extra = [k for k in given if k not in expected]
        repeated = [k for k, n in given.items() if n > 1 and k in expected]
        problems = []
        if missing:
            problems.append(f"missing verdicts for {missing}")
        if extra:
            problems.append(f"verdicts for unknown {key_field} {extra}")
        if repeated:
            problems.append(f"more than one verdict for {repeated}")
        if not problems:
            return None
        return "; ".join(problems) + f" (give exactly one verdict for each of {expected})"

    return check


def ratio(hits: int, errors: int, empty_note: str) -> tuple[float, str | None]:
    """hits / (hits + errors); an empty denominator (no error of that kind possible) gives 1.0."""
    if hits + errors == 0:
        return 1.0, f"{empty_note}, so no error of this kind was possible: counted as 1.0"
    return hits / (hits + errors), None
