"""Helpers shared by judge metrics: checks that keyed verdicts match what was asked, and ratios.

A judge answers "one verdict per item, keyed by the item"; `keyed_check` builds the step check that
finds missing, extra or repeated keys, so the judge layer re-asks instead of padding.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable, Hashable, Sequence
from typing import Any, Protocol


class KeyedInput(Protocol):
    """A step input that knows the keys its answer must hold, one verdict each, in order."""

    def expected_keys(self) -> Sequence[Hashable]:
        """The keys asked about."""
        ...


def keyed_check(key_field: str) -> Callable[[KeyedInput, Any], str | None]:
    """A step check: `output.verdicts` must hold exactly one verdict per `inputs.expected_keys()`,
    each verdict naming its key in `key_field`."""

    def check(inputs: KeyedInput, output: Any) -> str | None:
        expected = list(inputs.expected_keys())
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
