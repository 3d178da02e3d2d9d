"""ToolCallF1: precision and recall of tool calls counted as a multiset of (name, arguments).

A predicted call is a true positive when an identical reference call (same name, typed-equal
arguments) is still unmatched, so duplicates count. No calls expected and none made scores 1.0;
no rounding. No judge is needed. `compat="ragas"` computes Ragas's number instead: sets of
(name, arguments) under Python equality (duplicates collapse, 1 == 1.0 == True), both empty 0.0,
rounded to 4 decimals.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Hashable, Mapping
from typing import Any

from convoeval.metrics._base import Ask, Metric, MetricResult
from convoeval.metrics._compat import Compat, check_compat
from convoeval.metrics._registry import register
from convoeval.metrics._tool_calls import call_key, describe_call
from convoeval.schema import MultiTurnSample, ToolCall


@register
class ToolCallF1(Metric):
    """F1 of predicted vs reference tool calls as multisets of (name, arguments)."""

    name = "tool_call_f1"
    required = ("user_input", "reference_tool_calls")
    needs_llm = False
    uses_judge = False
    #: Passing means exactly the expected calls (as a multiset) were made.
    default_threshold = 1.0

    def __init__(self, *, compat: Compat = "convoeval", threshold: float | None = None) -> None:
        super().__init__(threshold=threshold)
        self.compat: Compat = check_compat(compat, "ToolCallF1")

    def __repr__(self) -> str:
        return f"ToolCallF1(compat={self.compat!r}, threshold={self.threshold!r})"

    def config(self) -> dict[str, Any]:
        """Only compat: calls compare by name and typed-equal arguments (or Ragas's way)."""
        return {"compat": self.compat}

    async def _score(self, sample: MultiTurnSample, ask: Ask) -> MetricResult:
        predicted = sample.predicted_tool_calls()
        reference = sample.reference_tool_calls or []
        if self.compat == "ragas":
            return _ragas_f1(predicted, reference)
        waiting: dict[Hashable, list[int]] = defaultdict(list)
        for j, call in enumerate(reference):
            waiting[call_key(call)].append(j)
        unmatched_predicted = []
        for i, call in enumerate(predicted):
            slots = waiting.get(call_key(call))
            if slots:
                slots.pop(0)
            else:
                unmatched_predicted.append(describe_call(call, i))
        left = sorted(j for slots in waiting.values() for j in slots)
        unmatched_reference = [describe_call(reference[j], j) for j in left]
        fp, fn = len(unmatched_predicted), len(unmatched_reference)
        tp = len(predicted) - fp
        details: dict[str, Any] = {
            "true_positives": tp,
            "false_positives": fp,
            "false_negatives": fn,
            "precision": tp / len(predicted) if predicted else None,
            "recall": tp / len(reference) if reference else None,
            "unmatched_predicted": unmatched_predicted,
            "unmatched_reference": unmatched_reference,
        }
        if not predicted and not reference:
            return MetricResult(1.0, "No tool calls were expected and none were made.", details)
        value = 2 * tp / (2 * tp + fp + fn)  # the harmonic mean of precision and recall
        return MetricResult(value, _reason(tp, fp, fn, details), details)


def _ragas_f1(predicted: list[ToolCall], reference: list[ToolCall]) -> MetricResult:
    """Ragas's F1: over sets of (name, arguments), Python equality, 0.0 when both are empty,
    rounded to 4 decimals."""
    made = {(c.name, _python_key(c.args)) for c in predicted}
    expected = {(c.name, _python_key(c.args)) for c in reference}
    tp, fp, fn = len(made & expected), len(made - expected), len(expected - made)
    precision = tp / (tp + fp) if tp + fp else 0.0
    recall = tp / (tp + fn) if tp + fn else 0.0
    f1 = 2 * precision * recall / (precision + recall) if precision + recall else 0.0
    details: dict[str, Any] = {
        "compat": "ragas",
        "true_positives": tp,
        "false_positives": fp,
        "false_negatives": fn,
        "precision": precision,
        "recall": recall,
    }
    reason = (
        f"{tp} distinct correct calls, {fp} not expected, {fn} expected but not made "
        "(Ragas's computation: distinct calls, rounded to 4 decimals)."
    )
    return MetricResult(round(f1, 4), reason, details)


def _python_key(value: Any) -> Hashable:
    """A hashable form of an argument value under Python equality (dicts by content, lists as
    tuples), as Ragas compares them."""
    if isinstance(value, Mapping):
        return frozenset((key, _python_key(item)) for key, item in value.items())
    if isinstance(value, list | tuple):
        return tuple(_python_key(item) for item in value)
    if isinstance(value, set | frozenset):
        return frozenset(_python_key(item) for item in value)
    return value if isinstance(value, Hashable) else repr(value)


def _reason(tp: int, fp: int, fn: int, details: dict[str, Any]) -> str:
    text = f"{tp} correct calls, {fp} not expected, {fn} expected but not made."
    if details["unmatched_predicted"]:
        names = ", ".join(c["name"] for c in details["unmatched_predicted"])
        text += f" Not expected (or wrong arguments): {names}."
    if details["unmatched_reference"]:
        names = ", ".join(c["name"] for c in details["unmatched_reference"])
        text += f" Missing: {names}."
    return text
