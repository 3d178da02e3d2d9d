"""ToolCallAccuracy: partial credit for calling the right tools with the right arguments.

Predicted calls (every tool call of every AIMessage, in order) are aligned with
`reference_tool_calls` (in order when `strict_order`, best matching otherwise); the score is the
sum of the matched pair scores / max(len(predicted), len(reference)), so missing and extra calls
both cost. No judge is needed.
"""

from __future__ import annotations

from typing import Any

from convoeval._text import nth
from convoeval.metrics._base import Ask, Metric, MetricResult
from convoeval.metrics._registry import register
from convoeval.metrics._tool_calls import (
    ArgComparator,
    PairScore,
    align_any_order,
    align_in_order,
    describe_call,
    named_calls,
    pair_score,
)
from convoeval.schema import MultiTurnSample, ToolCall


@register
class ToolCallAccuracy(Metric):
    """Aligned tool calls with partial credit per argument; missing and extra calls both cost."""

    name = "tool_call_accuracy"
    required = ("user_input", "reference_tool_calls")
    needs_llm = False
    uses_judge = False
    #: Passing means every expected call was made, with exactly the expected arguments.
    default_threshold = 1.0

    def __init__(
        self,
        strict_order: bool = True,
        arg_comparator: ArgComparator | None = None,
        *,
        threshold: float | None = None,
    ) -> None:
        super().__init__(threshold=threshold)
        self.strict_order = strict_order
        self.arg_comparator = arg_comparator

    def __repr__(self) -> str:
        return (
            f"ToolCallAccuracy(strict_order={self.strict_order!r}, "
            f"arg_comparator={self.arg_comparator!r}, threshold={self.threshold!r})"
        )

    def config(self) -> dict[str, Any]:
        """Order rule and the comparator (by its import path; None: typed deep equality)."""
        comparator = self.arg_comparator
        named = None
        if comparator is not None:
            module = getattr(comparator, "__module__", "?")
            named = f"{module}.{getattr(comparator, '__qualname__', type(comparator).__name__)}"
        return {"strict_order": self.strict_order, "arg_comparator": named}

    async def _score(self, sample: MultiTurnSample, ask: Ask) -> MetricResult:
        predicted = sample.predicted_tool_calls()
        reference = sample.reference_tool_calls or []
        details: dict[str, Any] = {
            "strict_order": self.strict_order,
            "predicted_calls": len(predicted),
            "reference_calls": len(reference),
        }
        if not predicted and not reference:
            details.update(matches=[], unmatched_predicted=[], unmatched_reference=[])
            return MetricResult(1.0, "No tool calls were expected and none were made.", details)
        scores = [[pair_score(p, r, self.arg_comparator) for r in reference] for p in predicted]
        align = align_in_order if self.strict_order else align_any_order
        pairs = align(scores)
        total = sum(scores[i][j].score for i, j in pairs)
        value = total / max(len(predicted), len(reference))
        matched_p = {i for i, _ in pairs}
        matched_r = {j for _, j in pairs}
        details["matches"] = [_match(i, j, predicted[i], scores[i][j]) for i, j in pairs]
        details["unmatched_predicted"] = [
            describe_call(call, i) for i, call in enumerate(predicted) if i not in matched_p
        ]
        details["unmatched_reference"] = [
            describe_call(call, j) for j, call in enumerate(reference) if j not in matched_r
        ]
        details["matched_score_sum"] = total
        return MetricResult(value, _reason(details, total, value), details)


def _match(i: int, j: int, call: ToolCall, pair: PairScore) -> dict[str, Any]:
    entry: dict[str, Any] = {"predicted": i, "reference": j, "name": call.name, "score": pair.score}
    for label, names in (
        ("differing_args", pair.differing),
        ("missing_args", pair.missing),
        ("extra_args", pair.extra),
    ):
        if names:
            entry[label] = names
    if pair.partial:
        entry["partial_args"] = pair.partial
    return entry


_PROBLEMS = {
    "differing_args": "wrong value for",
    "missing_args": "missing argument",
    "extra_args": "unexpected argument",
}


def _reason(details: dict[str, Any], total: float, value: float) -> str:
    matches = details["matches"]
    exact = sum(1 for m in matches if m["score"] == 1.0)
    parts = [
        f"{len(matches)} of {details['reference_calls']} expected calls matched "
        f"({exact} exactly) among {details['predicted_calls']} made"
        + (" (in order)." if details["strict_order"] else " (any order).")
    ]
    for m in matches:
        if m["score"] < 1.0:
            problems = [
                f"{text} {', '.join(m[label])}" for label, text in _PROBLEMS.items() if label in m
            ]
            where = f"{m['name']} (#{nth(m['predicted'])} vs expected #{nth(m['reference'])})"
            parts.append(f"{where} scored {m['score']:.3g}: " + "; ".join(problems) + ".")
    if details["unmatched_reference"]:
        parts.append(f"Missing: {named_calls(details['unmatched_reference'])}.")
    if details["unmatched_predicted"]:
        parts.append(f"Extra: {named_calls(details['unmatched_predicted'])}.")
    denominator = max(details["predicted_calls"], details["reference_calls"])
    parts.append(f"Score {total:.4g} / {denominator} = {value:.4g}.")
    return " ".join(parts)
