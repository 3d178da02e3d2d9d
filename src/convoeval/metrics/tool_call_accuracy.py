"""ToolCallAccuracy: partial credit for calling the right tools with the right arguments.

Predicted calls (every tool call of every AIMessage, in order) are aligned with
`reference_tool_calls` (in order when `strict_order`, best matching otherwise); the score is the
sum of the matched pair scores / max(len(predicted), len(reference)), so missing and extra calls
both cost. No judge is needed. `compat="ragas"` computes Ragas's number instead (`_ragas_score`).
"""

from __future__ import annotations

import warnings
from dataclasses import replace
from typing import Any

from convoeval._text import nth
from convoeval.metrics._base import Ask, Metric, MetricResult
from convoeval.metrics._comparators import ByValues, ValueComparator, describe
from convoeval.metrics._compat import Compat, check_compat
from convoeval.metrics._registry import register
from convoeval.metrics._tool_calls import (
    ArgComparator,
    PairScore,
    align_any_order,
    align_in_order,
    argument_score,
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
        arg_comparison_metric: ValueComparator | None = None,
        compat: Compat = "convoeval",
        threshold: float | None = None,
    ) -> None:
        if arg_comparator is not None and arg_comparison_metric is not None:
            raise ValueError(
                "ToolCallAccuracy: pass arg_comparator (name, predicted, reference) or "
                "arg_comparison_metric (predicted, reference), not both"
            )
        super().__init__(threshold=threshold)
        self.strict_order = strict_order
        self.arg_comparator = arg_comparator
        self.arg_comparison_metric = arg_comparison_metric
        self.compat: Compat = check_compat(compat, "ToolCallAccuracy")
        self._compare  # noqa: B018 -- checks arg_comparison_metric now, not at the first score

    @property
    def _compare(self) -> ArgComparator | None:
        """The per-argument comparator in use (None: typed deep equality). Read at each score,
        so Ragas's habit `metric.arg_comparison_metric = NonLLMStringSimilarity()` works."""
        chosen = self.arg_comparison_metric
        return self.arg_comparator if chosen is None else ByValues(chosen)

    def __repr__(self) -> str:
        return (
            f"ToolCallAccuracy(strict_order={self.strict_order!r}, "
            f"arg_comparator={self.arg_comparator!r}, "
            f"arg_comparison_metric={self.arg_comparison_metric!r}, compat={self.compat!r}, "
            f"threshold={self.threshold!r})"
        )

    def config(self) -> dict[str, Any]:
        """Order rule, the comparators (ours by repr, a function by its import path; None: typed
        deep equality) and compat."""
        return {
            "strict_order": self.strict_order,
            "arg_comparator": describe(self.arg_comparator),
            "arg_comparison_metric": describe(self.arg_comparison_metric),
            "compat": self.compat,
        }

    async def _score(self, sample: MultiTurnSample, ask: Ask) -> MetricResult:
        predicted = sample.predicted_tool_calls()
        reference = sample.reference_tool_calls or []
        notes = warn_like_ragas(len(predicted), len(reference))
        if self.compat == "ragas":
            return _with_notes(self._ragas_score(predicted, reference), notes)
        return _with_notes(self._our_score(predicted, reference), notes)

    def _our_score(self, predicted: list[ToolCall], reference: list[ToolCall]) -> MetricResult:
        details: dict[str, Any] = {
            "strict_order": self.strict_order,
            "predicted_calls": len(predicted),
            "reference_calls": len(reference),
        }
        if not predicted and not reference:
            details.update(matches=[], unmatched_predicted=[], unmatched_reference=[])
            return MetricResult(1.0, "No tool calls were expected and none were made.", details)
        scores = [[pair_score(p, r, self._compare) for r in reference] for p in predicted]
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

    def _ragas_score(self, predicted: list[ToolCall], reference: list[ToolCall]) -> MetricResult:
        """Ragas's number: 0 unless the name sequences agree (in order, or as sorted lists when
        not `strict_order`); then the mean over reference calls of the argument score of the
        predicted call at the same position (sorted by name first when not `strict_order`)."""
        details: dict[str, Any] = {
            "compat": "ragas",
            "strict_order": self.strict_order,
            "predicted_calls": len(predicted),
            "reference_calls": len(reference),
        }
        if not predicted and not reference:
            return MetricResult(1.0, "No tool calls were expected and none were made.", details)
        if not predicted or not reference:
            return MetricResult(0.0, "Ragas scores 0 when one side has no tool calls.", details)
        if not self.strict_order:
            predicted, reference = _by_name(predicted), _by_name(reference)
        names_p = [c.name for c in predicted]
        names_r = [c.name for c in reference]
        aligned = names_p == names_r if self.strict_order else sorted(names_p) == sorted(names_r)
        arg_scores = [
            self._ragas_args(p.args, r.args) if p.name == r.name else 0.0
            for p, r in zip(predicted, reference, strict=False)
        ]
        details.update(sequence_aligned=aligned, arg_scores=arg_scores)
        value = sum(arg_scores) / len(reference) if aligned else 0.0
        if not aligned:
            reason = "The tool names do not match the reference's " + (
                "sequence, so Ragas scores 0." if self.strict_order else "set, so Ragas scores 0."
            )
        else:
            reason = f"Names aligned; mean argument score {value:.4g} (Ragas's computation)."
        return MetricResult(value, reason, details)

    def _ragas_args(self, predicted: dict[str, Any], reference: dict[str, Any]) -> float:
        """Ragas's argument score: the mean over the reference's arguments of comparing the
        values as text (an argument the prediction lacks scores 0; extra ones are ignored)."""
        if not reference:
            return 1.0 if not predicted else 0.0
        total = 0.0
        for name, value in reference.items():
            if name in predicted:
                text_p, text_r = str(predicted[name]), str(value)
                if self._compare is None:
                    total += 1.0 if text_p == text_r else 0.0
                else:
                    total += argument_score(self._compare, name, text_p, text_r)
        return total / len(reference)


def warn_like_ragas(predicted: int, reference: int) -> list[str]:
    """Emit the `UserWarning`s Ragas emits for these call counts (whatever the compat mode) and
    return their texts for the reason."""
    if predicted == reference == 0:
        texts = []
    elif predicted == 0:
        texts = ["No tool calls found in the user input"]
    elif reference == 0:
        texts = ["Reference tool calls are empty but predictions exist"]
    elif predicted != reference:
        texts = [
            f"Length mismatch: predicted tool calls ({predicted}) vs reference tool calls "
            f"({reference}). Only the first {min(predicted, reference)} tool calls will be "
            "compared."
        ]
    else:
        texts = []
    for text in texts:
        warnings.warn(text, UserWarning, stacklevel=2)
    return texts


def _with_notes(result: MetricResult, notes: list[str]) -> MetricResult:
    """The result with Ragas's warnings appended to its reason and listed in `details`."""
    if not notes:
        return result
    reason = " ".join([result.reason or "", *(f"Warning: {n}." for n in notes)]).strip()
    return replace(result, reason=reason, details={**result.details, "warnings": notes})


def _by_name(calls: list[ToolCall]) -> list[ToolCall]:
    """Calls sorted as Ragas sorts them when not strict: by name, then argument name and text."""
    return sorted(calls, key=_ragas_sort_key)


def _ragas_sort_key(call: ToolCall) -> tuple[str, ...]:
    key = [call.name]
    for name in sorted(call.args):
        key += [name, str(call.args[name])]
    return tuple(key)


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
