"""What a metric gives: `MetricResult` (scored, unscored or failed), and `ScoreResult`, the
float the Ragas-habit calls return.

Ragas's collections API returns an object whose `.value` and `.reason` its documentation prints,
while older Ragas code does arithmetic on a bare float. `ScoreResult`, a `float` subclass, serves
both: it is the number (arithmetic, comparisons, `float(r)`, JSON as a number) and keeps the
whole `MetricResult`.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Any, TypedDict

from convoeval.judges.protocol.base import Usage


class ErrorInfo(TypedDict):
    """Why a metric failed: the exception type name and its message."""

    type: str
    message: str


@dataclass(frozen=True)
class MetricResult:
    """One metric's outcome for one sample: scored, unscored (with a reason) or failed.

    - scored: `value` is a finite float;
    - unscored: `value` is None, `reason` says why, `error` is None (e.g. nothing to judge);
    - failed: `value` is None and `error` is set (e.g. the judge failed after its retries).
    NaN and infinity are rejected: a result never hides a failure in a number.
    """

    value: float | None
    reason: str | None = None
    details: dict[str, Any] = field(default_factory=dict)
    usage: Usage = field(default_factory=Usage)
    error: ErrorInfo | None = None

    def __post_init__(self) -> None:
        value = self.value
        if value is not None:
            if isinstance(value, bool) or not isinstance(value, int | float):
                raise TypeError(f"MetricResult.value must be a float or None, not {value!r}")
            if not math.isfinite(value):
                raise ValueError(
                    f"MetricResult.value must be a finite number, not {value!r}: "
                    "use value=None with a reason (unscored) or an error (failed)"
                )
            object.__setattr__(self, "value", float(value))
            if self.error is not None:
                raise ValueError("a failed MetricResult (error set) cannot carry a value")
        elif self.error is None and not self.reason:
            raise ValueError("an unscored MetricResult (value None, no error) needs a reason")

    @classmethod
    def unscored(
        cls, reason: str, details: dict[str, Any] | None = None, usage: Usage | None = None
    ) -> MetricResult:
        """A result that could not be scored for a stated reason (not an error)."""
        return cls(value=None, reason=reason, details=details or {}, usage=usage or Usage())

    @classmethod
    def failure(
        cls,
        error_type: str,
        message: str,
        details: dict[str, Any] | None = None,
        usage: Usage | None = None,
    ) -> MetricResult:
        """A result for a metric that failed (for example the judge gave up)."""
        return cls(
            value=None,
            reason=message,
            details=details or {},
            usage=usage or Usage(),
            error={"type": error_type, "message": message},
        )

    @property
    def scored(self) -> bool:
        """True when `value` is a number."""
        return self.value is not None

    @property
    def failed(self) -> bool:
        """True when the metric failed (an error is recorded)."""
        return self.error is not None

    def to_dict(self) -> dict[str, Any]:
        """A JSON-ready dict for results files."""
        return {
            "value": self.value,
            "reason": self.reason,
            "details": self.details,
            "usage": self.usage.as_dict(),
            "error": dict(self.error) if self.error is not None else None,
        }


class ScoreResult(float):
    """A scored `MetricResult` as a float: `.value`, `.reason`, `.details`, `.usage`, `.error`,
    `.scored`, `.failed` and the whole `.result`."""

    result: MetricResult

    @classmethod
    def of(cls, result: MetricResult) -> ScoreResult:
        """The float of a scored result (an unscored or failed one has no number to be)."""
        if result.value is None:
            raise ValueError(f"a result with no number cannot be a ScoreResult: {result.reason}")
        score = cls(result.value)
        score.result = result
        return score

    def __reduce__(self) -> tuple[Any, ...]:
        """Pickled as its result, so a copy keeps `.reason` and the rest."""
        return (ScoreResult.of, (self.result,))

    @property
    def value(self) -> float:
        """The score, as a plain float."""
        return float(self)

    @property
    def reason(self) -> str | None:
        """Why the metric gave this score."""
        return self.result.reason

    @property
    def details(self) -> dict[str, Any]:
        """The metric's details (verdicts, alignment, judge votes, ...)."""
        return self.result.details

    @property
    def usage(self) -> Usage:
        """What the judge spent on this score."""
        return self.result.usage

    @property
    def error(self) -> ErrorInfo | None:
        """Always None: a failed metric raises `MetricFailedError` instead of giving a number."""
        return self.result.error

    @property
    def scored(self) -> bool:
        """Always True: a `ScoreResult` is a number."""
        return self.result.scored

    @property
    def failed(self) -> bool:
        """Always False (see `error`)."""
        return self.result.failed
